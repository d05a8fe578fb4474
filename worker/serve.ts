/**
 * pagewise/worker: `serveMemory()`, for a worker module of your own that `connect()` from `pagewise/client` talks to.
 *
 * @module pagewise/worker
 */
import { expose, wrap } from 'comlink';
import { installErrorTransfer } from '../src/surfaces/comlink-errors.js';
import { type Memory, createMemory } from '../src/engine/engine.js';
import { PagewiseError } from '../src/contracts/errors.js';
import { describe } from '../src/common/messages.js';
import { sqliteWasm } from '../src/storage/sqlite-wasm.js';
import { useJsTiktoken } from '../src/tokens/js-tiktoken.js';
import { forwardMemory, invokeMemory } from '../src/contracts/memory-methods.js';
import type { EncryptionOptions, StorageDriver, StorageOption } from '../src/contracts/types.js';
import type { EncryptedDriver } from '../src/storage/crypt-driver.js';
import type { StorageStatus, WorkerApi, WorkerCallbacks, WorkerMemoryOptions } from '../src/surfaces/worker-protocol.js';

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
  useJsTiktoken();
  let memory: Memory | undefined;
  // Another tab owns the OPFS database: calls go to it over a BroadcastChannel until this worker can own it.
  let owner: Tab | undefined;
  // This worker owns the database: it serves the other tabs' workers.
  let serving: BroadcastChannel | undefined;
  // The driver this worker opened: an encrypted one checks another tab's key before that tab may use it.
  let driver: EncryptedDriver | undefined;
  const ready = (): Memory => {
    if (memory) return memory;
    if (owner) return owner.memory;
    throw new PagewiseError('ENGINE_CLOSED', 'worker', 'The worker has no open memory: call connect() first (or again after close()).');
  };
  const api: WorkerApi = {
    async open(options: WorkerMemoryOptions, onEmbeddingProgress?: WorkerCallbacks['onEmbeddingProgress'], onModelProgress?: WorkerCallbacks['onModelProgress']) {
      if (memory || owner) throw new PagewiseError('INVALID_ARGUMENT', 'worker', 'This worker already serves a memory; use one worker per connect().');
      const { storage, fallback = 'none', encryption, ...rest } = options ?? {};
      if (encryption !== undefined && overrides.storage) {
        throw new PagewiseError('INVALID_OPTIONS', 'worker', 'This worker serves its own storage (serveMemory({ storage })): give `encryption` to that storage, not to connect().', { path: 'encryption' });
      }
      const sealed = encryption === undefined ? {} : { encryption };
      if (fallback !== 'none' && fallback !== 'memory') {
        throw new PagewiseError('INVALID_OPTIONS', 'worker', `\`fallback\` must be "memory" (run in memory for the session when OPFS cannot open) or "none" (the default: fail with STORAGE_UNAVAILABLE); got ${describe(fallback)}.`, { path: 'fallback' });
      }
      const opfs = !overrides.storage && (storage?.vfs ?? 'opfs-sahpool') === 'opfs-sahpool';
      const channelName = `pagewise-tabs:${storage?.directory ?? '.pagewise'}/${storage?.filename ?? 'pagewise.sqlite3'}`;
      // Callbacks are Comlink proxies: fire and forget (a page that went away must not stall the engine).
      const make = (factory: () => Promise<StorageDriver> = sqliteWasm({ vfs: 'opfs-sahpool', ...storage, ...sealed })) => createMemory({
        ...rest,
        storage: overrides.storage ?? (async () => (driver = await factory() as EncryptedDriver)),
        ...(onEmbeddingProgress ? { onEmbeddingProgress: (p) => { void Promise.resolve(onEmbeddingProgress(p)).catch(() => undefined); } } : {}),
        ...(onModelProgress ? { onModelProgress: (p) => { void Promise.resolve(onModelProgress(p)).catch(() => undefined); } } : {}),
      });
      const own = (m: Memory) => {
        memory = m;
        if (!opfs || typeof BroadcastChannel !== 'function') return;
        serving = new BroadcastChannel(channelName);
        // Another tab's worker presents its key first (checkKey): a tab without the key gets the error it would get
        // opening the file itself.
        const checkKey = (e: EncryptionOptions | null) => driver?.opensWith(e) ?? 'ok';
        expose(new Proxy(m, { get: (target, p, receiver) => (p === 'checkKey' ? checkKey : Reflect.get(target, p, receiver)) }), serving);
      };
      const status: StorageStatus = overrides.storage ? { vfs: 'custom', persistent: null, fallbackReason: null }
        : { vfs: opfs ? 'opfs-sahpool' : 'memory', persistent: opfs, fallbackReason: null };
      try {
        own(await make());
      } catch (error) {
        if (opfs && (error as { code?: unknown }).code === 'STORAGE_UNAVAILABLE') {
          // SQLite itself not loading is no case for a fallback (the in-memory database needs it too): no hint then.
          if (fallback !== 'memory') {
            if (!/Could not load @sqlite\.org/.test((error as Error).message)) (error as Error).message += ' To run in memory for this session instead (nothing kept after a reload), pass fallback: "memory" to connect().';
            throw error;
          }
          // OPFS cannot open here: the same engine on an in-memory database, reported as such (never silently).
          try {
            memory = await make(sqliteWasm({ vfs: 'memory', ...sealed }));
          } catch {
            throw error;
          }
          return { vfs: 'memory', persistent: false, fallbackReason: (error as Error).message.replace(/^\[pagewise\] \[[^\]]*\] /, '') };
        }
        const locks = (globalThis.navigator as Navigator | undefined)?.locks;
        if (!opfs || !locks || typeof BroadcastChannel !== 'function' || (error as { code?: unknown }).code !== 'STORAGE_LOCKED') throw error;
        // One tab owns an OPFS database at a time (opfs-sahpool): this one reaches it through the owner, and takes
        // the database over when the owner goes (its lock is released when its memory closes or its tab does).
        owner = follow(channelName);
        const tab = owner;
        const verdict = await tab.checkKey(encryption ?? null);
        if (verdict !== 'ok') {
          owner = undefined;
          tab.gone();
          throw verdict === 'KEY_REQUIRED'
            ? new PagewiseError('KEY_REQUIRED', 'worker', 'The database is encrypted (another tab has it open): connect with its key (encryption: { key } or { passphrase }).')
            : new PagewiseError('WRONG_KEY', 'worker', 'The key given does not open this database (another tab has it open with its own key). Nothing was changed.');
        }
        void (async () => {
          while (owner === tab) {
            await locks.request(`pagewise:${storage?.directory ?? '.pagewise'}`, { signal: tab.stop.signal }, () => undefined).catch(() => undefined);
            if (owner !== tab) return;
            try {
              const m = await make();
              if (owner !== tab) { await m.close(); return; }
              owner = undefined;
              tab.gone();
              own(m);
              return;
            } catch (cause) {
              // Another waiting tab took it first: follow that one.
              if ((cause as { code?: unknown }).code !== 'STORAGE_LOCKED') { owner = undefined; tab.gone(); return; }
            }
          }
        })();
      }
      return status;
    },
    ...forwardMemory((path, args) => invokeMemory(ready(), path, args)),
    async close() {
      const m = memory;
      memory = undefined;
      serving?.close();
      serving = undefined;
      owner?.gone();
      owner = undefined;
      await m?.close();
    },
  };
  expose(api);
}

/** The memory of the tab that owns the database, reached over a BroadcastChannel. */
interface Tab {
  memory: Memory;
  stop: AbortController;
  /** What the owning tab says of this tab's key (see checkKey in serveMemory). */
  checkKey(encryption: EncryptionOptions | null): Promise<'ok' | 'WRONG_KEY' | 'KEY_REQUIRED'>;
  /** Ends this follower: pending calls fail with a typed error, the channel closes. */
  gone(): void;
}

function follow(channelName: string): Tab {
  const channel = new BroadcastChannel(channelName);
  const remote = wrap<Memory>(channel);
  const stop = new AbortController();
  const pending = new Set<(error: Error) => void>();
  // A call in flight when the owner goes would never be answered: it fails instead, and may be sent again.
  const call = <T>(fn: () => Promise<T>): Promise<T> => new Promise<T>((resolve, reject) => {
    if (stop.signal.aborted) { reject(ownerGone()); return; }
    pending.add(reject);
    fn().then(resolve, reject).finally(() => pending.delete(reject));
  });
  const memory = { ...forwardMemory((path, args) => call(() => invokeMemory(remote, path, args))), close: () => Promise.resolve() } as Memory;
  return {
    memory, stop,
    checkKey: (e) => call(() => (remote as unknown as { checkKey: Tab['checkKey'] }).checkKey(e)),
    gone() {
      stop.abort();
      for (const reject of pending) reject(ownerGone());
      pending.clear();
      // Not releaseProxy(): Comlink's release message would make the owner stop serving every tab.
      channel.close();
    },
  };
}

function ownerGone(): PagewiseError {
  return new PagewiseError('WORKER_FAILED', 'worker', 'The tab that owned the database closed while this call was under way; this tab takes the database over now. Send the call again.');
}
