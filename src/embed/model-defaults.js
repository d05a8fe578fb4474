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
 * The ONNX runtime where the model runs on WASM: onnxruntime-web's plain build (14.3 MB), its JS glue imported from
 * `mjs` (the glue built into transformers.js' `onnxruntime-web/webgpu` bundle is the asyncify one, which cannot run
 * this binary).
 */
export const ORT_WASM_CPU = { mjs: 'ort-wasm-simd-threaded.mjs', wasm: 'ort-wasm-simd-threaded.wasm' };
/** Where the browser has a WebGPU adapter: the asyncify build (26.9 MB) whose glue the bundle carries. */
export const ORT_WASM_WEBGPU = 'ort-wasm-simd-threaded.asyncify.wasm';
/** Everything pagewise/vite serves under ORT_WASM_URL; a page requests one of the two runtimes, never both. */
export const ORT_WASM_FILES = [ORT_WASM_CPU.mjs, ORT_WASM_CPU.wasm, ORT_WASM_WEBGPU];
