/**
 * pagewise/client: the memory in a Web Worker, on SQLite in OPFS, from the page: `connect()` gives the same API as
 * `createMemory()`.
 *
 * @module pagewise/client
 */
import { type Remote, proxy, releaseProxy, wrap } from 'comlink';
import { installErrorTransfer } from './surfaces/comlink-errors.js';
import type { Memory } from './engine/engine.js';
import { PagewiseError } from './contracts/errors.js';
import { forwardMemory, invokeMemory } from './contracts/memory-methods.js';
import { withSync } from './common/sync.js';
import type { StorageStatus, WorkerApi, WorkerCallbacks, WorkerMemoryOptions } from './surfaces/worker-protocol.js';

export type { StorageStatus, WorkerMemoryOptions, WorkerStorageOptions } from './surfaces/worker-protocol.js';
export type { Memory } from './engine/engine.js';
export { isPagewiseError, PagewiseError } from './contracts/errors.js';
export { braveSearch, searxng, tavily } from './search/providers.js';
export { remoteMemory, type RemoteMemory, type RemoteMemoryOptions } from './surfaces/sync-http.js';
export { relayPeer, type RelayPeer, type RelayPeerOptions } from './surfaces/sync-relay.js';
export type { RelayTarget } from './storage/relay-protocol.js';
export type * from './contracts/types-sync.js';
export type * from './contracts/types-search.js';

/** Options of `connect()`: the engine's options (plain data) plus which worker to run it in. */
export interface ConnectOptions extends WorkerMemoryOptions, WorkerCallbacks {
  /**
   * A worker that called `serveMemory()` from `pagewise/worker`. Default: pagewise's own worker entry, which
   * bundlers that understand `new Worker(new URL(…, import.meta.url))` (Vite, webpack 5) pick up.
   */
  worker?: Worker;
  /**
   * Called once, before `connect()` resolves, when OPFS could not open and `fallback: 'memory'` runs the memory in
   * memory instead: tell the person that nothing will survive a reload. `memory.storage` says the same afterwards.
   */
  onStorageFallback?: (status: StorageStatus) => void;
}

/** What `connect()` gives: the Memory API, and where the memory lives. */
export interface ConnectedMemory extends Memory {
  /**
   * Where the memory lives: `{ vfs: 'opfs-sahpool', persistent: true }` normally; after a fallback
   * `{ vfs: 'memory', persistent: false, fallbackReason }` — everything is gone after a reload.
   */
  readonly storage: StorageStatus;
}

function defaultWorker(): Worker {
  return new Worker(new URL('../worker/entry.js', import.meta.url), { type: 'module', name: 'pagewise' });
}

/**
 * Starts the engine in a Web Worker (SQLite on OPFS, survives reloads) and returns an object whose methods match
 * `createMemory()`'s one for one. Errors keep their `code` across the boundary.
 *
 * Where OPFS cannot open (a private window, an old browser) it fails with `STORAGE_UNAVAILABLE`, unless
 * `fallback: 'memory'`: then it runs in memory for the session, `memory.storage.persistent` is `false`,
 * `onStorageFallback` is called and a warning is logged.
 *
 * @example
 * import { connect } from 'pagewise/client';
 * const memory = await connect({ contextWindow: 32_000 });
 * const ctx = await memory.onMessageInbound({ conversationId: 'c1', message: { role: 'user', content: 'Hi' } });
 */
export async function connect(options: ConnectOptions = {}): Promise<ConnectedMemory> {
  installErrorTransfer();
  const { worker: given, onEmbeddingProgress, onModelProgress, onStorageFallback, ...engineOptions } = options;
  if (onStorageFallback !== undefined && typeof onStorageFallback !== 'function') {
    throw new PagewiseError('INVALID_OPTIONS', 'client', '`onStorageFallback` must be a function.', { path: 'onStorageFallback' });
  }

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
  let opened: StorageStatus | undefined;
  try {
    opened = await Promise.race([remote.open({ preloadEmbedder: true, ...engineOptions }, onEmbeddingProgress && proxy(onEmbeddingProgress), onModelProgress && proxy(onModelProgress)), failed]);
  } catch (error) {
    shutdown();
    throw error;
  }
  failed.catch(() => undefined);
  // A worker of an older serveMemory() answers nothing: it ran on OPFS (it had no fallback).
  const storage: StorageStatus = Object.freeze(opened ?? { vfs: 'opfs-sahpool', persistent: true, fallbackReason: null });
  if (storage.fallbackReason !== null) {
    console.warn(`[pagewise] [client] OPFS could not open, so this memory runs in memory for this session: nothing will survive a reload. (${storage.fallbackReason})`);
    // The app's handler must not undo the connection: a throw is reported, not passed on.
    try { onStorageFallback?.(storage); } catch (error) { queueMicrotask(() => { throw error; }); }
  }
  let closed = false;
  // After close() the proxy is released; answer like the in-process engine does.
  // An argument the structured clone cannot copy (a function, a symbol) fails on this side, before the worker sees it.
  const open = <T>(call: () => Promise<T>): Promise<T> => closed
    ? Promise.reject(new PagewiseError('ENGINE_CLOSED', 'client', 'This memory is closed; call connect() again to continue.'))
    : Promise.resolve().then(call).catch((error: unknown) => {
      if ((error as { name?: unknown } | null)?.name !== 'DataCloneError') throw error;
      throw new PagewiseError('INVALID_ARGUMENT', 'client', `An argument cannot be sent to the worker (${(error as Error).message}): pass plain data — strings, numbers, arrays and plain objects, no functions or symbols.`, { cause: error });
    });
  // sync runs here, in the page, over the worker's three sync methods (the other side may be remoteMemory()).
  return withSync({
    storage,
    ...forwardMemory((path, args) => open(() => invokeMemory(remote, path, args))),
    async close() {
      if (closed) return;
      closed = true;
      try { await remote.close(); } finally { shutdown(); }
    },
  });
}
