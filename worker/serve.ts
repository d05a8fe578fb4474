import { expose } from 'comlink';
import { installErrorTransfer } from '../src/_comlink-errors.js';
import { type Memory, createMemory } from '../src/engine.js';
import { PagewiseError } from '../src/errors.js';
import { sqliteWasm } from '../src/storage/sqlite-wasm.js';
import type { StorageOption } from '../src/types.js';
import type { WorkerApi, WorkerCallbacks, WorkerMemoryOptions } from '../src/worker-protocol.js';

/**
 * Serves the engine from inside a dedicated worker, on OPFS by default. Call it once in your worker module;
 * `connect()` from `pagewise/client` talks to it.
 *
 * @example
 * // my-memory.worker.ts
 * import { serveMemory } from 'pagewise/worker';
 * serveMemory();
 * // page: connect({ worker: new Worker(new URL('./my-memory.worker.ts', import.meta.url), { type: 'module' }) })
 */
export function serveMemory(overrides: { storage?: StorageOption } = {}): void {
  installErrorTransfer();
  let memory: Memory | undefined;
  const ready = (): Memory => {
    if (!memory) throw new PagewiseError('ENGINE_CLOSED', 'worker', 'The worker has no open memory: call connect() first (or again after close()).');
    return memory;
  };
  const api: WorkerApi = {
    async open(options: WorkerMemoryOptions, onEmbeddingProgress?: WorkerCallbacks['onEmbeddingProgress'], onModelProgress?: WorkerCallbacks['onModelProgress']) {
      if (memory) throw new PagewiseError('INVALID_ARGUMENT', 'worker', 'This worker already serves a memory; use one worker per connect().');
      const { storage, ...rest } = options ?? {};
      // Callbacks are Comlink proxies: fire and forget (a page that went away must not stall the engine).
      memory = await createMemory({
        ...rest,
        storage: overrides.storage ?? sqliteWasm({ vfs: 'opfs-sahpool', ...storage }),
        ...(onEmbeddingProgress ? { onEmbeddingProgress: (p) => { void Promise.resolve(onEmbeddingProgress(p)).catch(() => undefined); } } : {}),
        ...(onModelProgress ? { onModelProgress: (p) => { void Promise.resolve(onModelProgress(p)).catch(() => undefined); } } : {}),
      });
    },
    onMessageInbound: (input) => ready().onMessageInbound(input),
    onTurnComplete: (input) => ready().onTurnComplete(input),
    conversations: () => ready().conversations(),
    turns: (conversationId, range) => ready().turns(conversationId, range),
    tags: (conversationId) => ready().tags(conversationId),
    aliases: {
      add: (alias, tag, scope) => ready().aliases.add(alias, tag, scope),
      remove: (alias, scope) => ready().aliases.remove(alias, scope),
      list: (scope) => ready().aliases.list(scope),
      suggest: (limit, scope) => ready().aliases.suggest(limit, scope),
    },
    compact: (conversationId) => ready().compact(conversationId),
    flush: () => ready().flush(),
    summaries: (conversationId, filter) => ready().summaries(conversationId, filter),
    regenerateSummaries: (conversationId, options) => ready().regenerateSummaries(conversationId, options),
    pin: (conversationId, messageId) => ready().pin(conversationId, messageId),
    unpin: (conversationId, messageId) => ready().unpin(conversationId, messageId),
    pins: (conversationId) => ready().pins(conversationId),
    tools: () => ready().tools(),
    callTool: (name, args, context) => ready().callTool(name, args, context),
    costReport: (conversationId) => ready().costReport(conversationId),
    embeddingStatus: (conversationId) => ready().embeddingStatus(conversationId),
    forget: (input) => ready().forget(input),
    export: (conversationId) => ready().export(conversationId),
    import: (data) => ready().import(data),
    exportDatabase: () => ready().exportDatabase(),
    async close() {
      const m = memory;
      memory = undefined;
      await m?.close();
    },
  };
  expose(api);
}
