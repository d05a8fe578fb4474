import { type Remote, proxy, releaseProxy, wrap } from 'comlink';
import { installErrorTransfer } from './_comlink-errors.js';
import type { Memory } from './engine.js';
import { PagewiseError } from './errors.js';
import { forwardMemory, invokeMemory } from './memory-methods.js';
import type { WorkerApi, WorkerCallbacks, WorkerMemoryOptions } from './worker-protocol.js';

export type { WorkerMemoryOptions, WorkerStorageOptions } from './worker-protocol.js';
export type { Memory } from './engine.js';
export { isPagewiseError, PagewiseError } from './errors.js';

/** Options of `connect()`: the engine's options (plain data) plus which worker to run it in. */
export interface ConnectOptions extends WorkerMemoryOptions, WorkerCallbacks {
  /**
   * A worker that called `serveMemory()` from `pagewise/worker`. Default: pagewise's own worker entry, which
   * bundlers that understand `new Worker(new URL(…, import.meta.url))` (Vite, webpack 5) pick up.
   */
  worker?: Worker;
}

function defaultWorker(): Worker {
  return new Worker(new URL('../worker/entry.js', import.meta.url), { type: 'module', name: 'pagewise' });
}

/**
 * Starts the engine in a Web Worker (SQLite on OPFS, survives reloads) and returns an object whose methods match
 * `createMemory()`'s one for one. Errors keep their `code` across the boundary.
 *
 * @example
 * import { connect } from 'pagewise/client';
 * const memory = await connect({ contextWindow: 32_000 });
 * const ctx = await memory.onMessageInbound({ conversationId: 'c1', message: { role: 'user', content: 'Hi' } });
 */
export async function connect(options: ConnectOptions = {}): Promise<Memory> {
  installErrorTransfer();
  const { worker: given, onEmbeddingProgress, onModelProgress, ...engineOptions } = options;

  const worker = given ?? defaultWorker();
  const remote: Remote<WorkerApi> = wrap<WorkerApi>(worker);
  const failed = new Promise<never>((_, reject) => {
    worker.addEventListener('error', (event) => {
      reject(new PagewiseError('WORKER_FAILED', 'client', `The pagewise worker failed to start: ${(event as ErrorEvent).message ?? 'unknown error'}. Check that the worker module loads (see the browser console).`));
    }, { once: true });
  });
  const shutdown = (): void => {
    remote[releaseProxy]();
    worker.terminate();
  };
  try {
    await Promise.race([remote.open({ preloadEmbedder: true, ...engineOptions }, onEmbeddingProgress && proxy(onEmbeddingProgress), onModelProgress && proxy(onModelProgress)), failed]);
  } catch (error) {
    shutdown();
    throw error;
  }
  failed.catch(() => undefined);
  let closed = false;
  // After close() the proxy is released; answer like the in-process engine does.
  // An argument the structured clone cannot copy (a function, a symbol) fails on this side, before the worker sees it.
  const open = <T>(call: () => Promise<T>): Promise<T> => closed
    ? Promise.reject(new PagewiseError('ENGINE_CLOSED', 'client', 'This memory is closed; call connect() again to continue.'))
    : Promise.resolve().then(call).catch((error: unknown) => {
      if ((error as { name?: unknown } | null)?.name !== 'DataCloneError') throw error;
      throw new PagewiseError('INVALID_ARGUMENT', 'client', `An argument cannot be sent to the worker (${(error as Error).message}): pass plain data — strings, numbers, arrays and plain objects, no functions or symbols.`, { cause: error });
    });
  return {
    ...forwardMemory((path, args) => open(() => invokeMemory(remote, path, args))),
    async close() {
      if (closed) return;
      closed = true;
      try { await remote.close(); } finally { shutdown(); }
    },
  };
}
