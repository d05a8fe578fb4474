// @ts-check
// Names shared by the model host, the engine side and pagewise/vite (kept apart so that importing them does not pull
// the model code into the engine's bundle).

/** The shipped default: `@pagewise/all-minilm-l6-v2` (8-bit all-MiniLM-L6-v2). */
export const DEFAULT_MODEL = 'all-MiniLM-L6-v2';
export const DEFAULT_MODEL_PACKAGE = '@pagewise/all-minilm-l6-v2';
/** Where the browser defaults read from (`pagewise/vite` serves them there, from your own origin). */
export const MODELS_URL = '/pagewise/models/';
export const ORT_WASM_URL = '/pagewise/ort/';
/**
 * The ONNX runtime file transformers.js' browser build loads: onnxruntime-web's WebGPU bundle (its JS glue built in)
 * runs the asyncify WASM for WebGPU and WASM alike; the other variants are never requested.
 */
export const ORT_WASM_FILES = ['ort-wasm-simd-threaded.asyncify.wasm'];
