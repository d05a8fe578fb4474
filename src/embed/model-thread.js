// @ts-check
// Node: the embedding model in a worker thread (started by transformers.ts), so that model runs never block the
// engine's thread. Plain JavaScript: a worker thread loads it without a build step.
import { availableParallelism } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { expose } from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { createModelHost } from './model-host.js';

const host = createModelHost();
// Beside the engine's thread: leave it a core (onnxruntime would otherwise start one spinning thread per core).
const threads = Math.max(1, Math.min(4, availableParallelism() - 1));

if (parentPort) {
  expose({
    ...host,
    /** @type {typeof host.load} */
    load: (config, onProgress) => host.load({ threads, ...config }, onProgress),
  }, nodeEndpoint(parentPort));
}
