/**
 * pagewise/edge: the engine in Cloudflare Workers and Durable Objects. One Durable Object per conversation (or per
 * user) keeps that memory on its own SQLite, next to its compute; no shared database.
 *
 * @module pagewise/edge
 */
import { DurableObject, RpcTarget } from 'cloudflare:workers';
import { type Memory, createMemory } from './engine/engine.js';
import { ERROR_CODES, PagewiseError, type PagewiseErrorCode } from './contracts/errors.js';
import { readArray, readRecord, validateConversationId } from './common/messages.js';
import { ALIAS_METHODS, MEMORY_METHODS, type MethodPath, forwardMemory } from './contracts/memory-methods.js';
import { durableObjectSql } from './storage/durable-object.js';
import type { CompactionReport, MemoryOptions } from './contracts/types.js';
import { edgeEmbedder } from './embed/workers-ai.js';
import { withSync } from './common/sync.js';
import { checkResultSize } from './common/pages.js';
import { relayStore, type RelayStore } from './storage/relay-store.js';
import type { RelayTarget } from './storage/relay-protocol.js';

export { edgeEmbedder, workersAiEmbedder, type EdgeEmbeddingEnv, type WorkersAiLike } from './embed/workers-ai.js';

export { durableObjectSql, type DurableObjectStorageLike } from './storage/durable-object.js';
export { createMemory, type Memory } from './engine/engine.js';
export { braveSearch, searxng, tavily } from './search/providers.js';
export { PagewiseError, isPagewiseError } from './contracts/errors.js';
export { bearerAuth, memoryProxy, proxyConversationKey, type MemoryProxyOptions, type ProxyCaller, type UpstreamOptions, type WaitUntil } from './surfaces/proxy.js';
export { SYNC_PATH, remoteMemory, syncEndpoint, type RemoteMemory, type RemoteMemoryOptions, type SyncEndpointOptions } from './surfaces/sync-http.js';
export type * from './contracts/types-sync.js';
export { RELAY_PATH, relayEndpoint, type RelayEndpointOptions } from './surfaces/relay-endpoint.js';
export { relayPeer, type RelayPeer, type RelayPeerOptions } from './surfaces/sync-relay.js';
export type { RelayTarget } from './storage/relay-protocol.js';

// Calls that leave background work (tagging is done inline; compaction and vectors are not).
// A conversation's own retention (setRetention) is applied from the alarm such a call sets too.
const WRITES = new Set(['onTurnComplete', 'import', 'forget', 'compact', 'regenerateSummaries', 'applySync', 'checkout', 'setRetention']);
// When the alarm that finishes background work fires: after the calls of a burst, not during them.
const ALARM_MS = 5_000;
// Turns of compaction per event (a write's background work, or one alarm): ~0.6 ms of CPU per turn at 50,000 turns
// in workerd, so a slice stays far under an object's 30 s of CPU per event (README: Against the platform's limits).
const SLICE_TURNS = 4_096;
// When the alarm that takes the next slice fires.
const NEXT_SLICE_MS = 100;
// Where an object keeps the conversations whose compaction stopped at a slice (kept across evictions).
const UNFINISHED = 'pagewise:unfinished';

// Workers RPC keeps an error's message and name, not its other fields: a PagewiseError crosses as this prefix.
const WIRE = /^PagewiseError\(([A-Z_]+)(?: ([^)\s]*))?\) /;

function toWire(error: unknown): unknown {
  if (!(error instanceof PagewiseError)) return error;
  return new Error(`PagewiseError(${error.code}${error.path !== undefined ? ` ${encodeURIComponent(error.path)}` : ''}) ${error.message}`);
}

function fromWire(error: unknown): unknown {
  const message = (error as Error | null)?.message;
  const m = typeof message === 'string' ? WIRE.exec(message) : null;
  if (!m || !ERROR_CODES.includes(m[1] as PagewiseErrorCode)) return error;
  const e = new PagewiseError(m[1] as PagewiseErrorCode, 'edge', '', m[2] ? { path: decodeURIComponent(m[2]) } : undefined);
  Object.defineProperty(e, 'message', { value: message!.slice(m[0].length) });
  return e;
}

// How a call that names another conversation than an object's own goes through.
const ROUTE_ONE = 'route each conversation to its own object (namespace.idFromName(conversationId), or memoryStub(namespace, conversationId)), sync it with { conversations: [conversationId] }, or set scope: \'user\'.';

// Where an alias method takes its scope ({ conversationId }): its last argument.
const SCOPE_AT: Readonly<Record<string, number>> = { add: 2, remove: 1, list: 0, suggest: 1 };

/**
 * The conversations a call names, where the engine will read them: callTool's context (never the tool's own
 * arguments, which are the model's and may name anything), an alias method's scope, each conversation an import
 * carries, a sync call's (below), else the first argument (an id, or an input object's conversationId). A value of
 * another shape names none here and is refused by the engine with its typed error.
 */
function conversationsNamed(path: MethodPath, args: readonly unknown[]): unknown[] {
  if (path[0] === 'aliases') return [field(args[SCOPE_AT[path[1] ?? ''] ?? 0], 'conversationId', 'scope')];
  if (path[0] === 'callTool') return [field(args[2], 'conversationId', 'context')];
  if (path[0] === 'import') return importedConversations(args).map((c, i) => field(c, 'id', `data.conversations[${i}]`));
  if (path[0] === 'syncState') return [];
  if (path[0] === 'syncChanges') return readArray(field(args[0], 'conversations', 'request'), 'request.conversations', 'INVALID_ARGUMENT', 'edge') ?? [];
  if (path[0] === 'applySync') return batchConversations(args[0]);
  return [typeof args[0] === 'string' ? args[0] : field(args[0], 'conversationId', 'input')];
}

/**
 * The conversations a sync batch touches: its filter, and each turn's, tombstone's, pin's and conversation alias's
 * (a global alias, null, names none), so that an object serving one conversation refuses a batch of another.
 */
function batchConversations(batch: unknown): unknown[] {
  const list = (key: string) => readArray(field(batch, key, 'batch'), `batch.${key}`, 'INVALID_ARGUMENT', 'edge') ?? [];
  const named = [...list('conversations')];
  for (const key of ['turns', 'tombstones', 'pins', 'aliases']) {
    list(key).forEach((item, i) => named.push(field(item, 'conversationId', `batch.${key}[${i}]`)));
  }
  return named.filter((id) => id !== null);
}

/** A field of caller input read once (a throwing getter or revoked Proxy is a typed error). */
function field(value: unknown, key: string, at: string): unknown {
  return readRecord(value, at, 'INVALID_ARGUMENT', 'edge')?.[key];
}

/** The conversations an import call carries (none when it carries no array: the engine refuses it, typed). */
function importedConversations(args: readonly unknown[]): unknown[] {
  return readArray(field(args[0], 'conversations', 'data'), 'data.conversations', 'INVALID_ARGUMENT', 'edge') ?? [];
}

/** Options of a PagewiseMemory object. */
export interface PagewiseMemoryOptions extends Omit<MemoryOptions, 'storage'> {
  /**
   * `conversation` (default): the object serves the one conversation it was first asked about (route with
   * `idFromName(conversationId)`); any other is refused. `user`: any number of conversations (route by user).
   */
  scope?: 'conversation' | 'user';
  /**
   * The most turns one `import` call may carry (default 10,000). An object has 30 s of CPU per request by default:
   * measured in workerd, 2,000 turns take 0.64 s and 50,000 in one call 56 s, over the limit. A larger import is
   * refused before anything is written: import one conversation per call, and a longer conversation's first turns
   * only, then append the rest with `onTurnComplete` in batches (ids and `createdAt` are kept) and its pins with `pin`.
   */
  maxImportTurns?: number;
}

/**
 * compact()'s arguments with a bound: one slice per event unless the caller gave `maxTurns` (the alarm goes on
 * from there). Options that are not an object are left for the engine to refuse.
 */
function sliced(args: unknown[], options: PagewiseMemoryOptions): unknown[] {
  const slice = options.backgroundSliceTurns === undefined ? SLICE_TURNS : options.backgroundSliceTurns;
  if (slice === null) return args;
  if (args[1] === undefined) return [args[0], { maxTurns: slice }];
  const given = readRecord(args[1], 'options', 'INVALID_ARGUMENT', 'edge');
  return given && given.maxTurns === undefined ? [args[0], { ...given, maxTurns: slice }] : args;
}

/** The compaction reports a call's result carries (flush's list, compact's report, onTurnComplete's). */
function reportsIn(path: MethodPath, result: unknown): CompactionReport[] {
  if (path.length !== 1) return [];
  if (path[0] === 'flush' && Array.isArray(result)) return result as CompactionReport[];
  if (path[0] === 'compact') return result ? [result as CompactionReport] : [];
  const compaction = path[0] === 'onTurnComplete' ? (result as { compaction?: CompactionReport | null } | null)?.compaction : null;
  return compaction ? [compaction] : [];
}

const MAX_IMPORT_TURNS = 10_000;
const HOUR_MS = 3_600_000;

/**
 * How long after a slice with nothing left the next retention check falls due: with the `retention` option (even `{}`,
 * for conversations' own policies from setRetention), its interval, an hour by default; without it, none (an object
 * with nothing to do takes no alarms).
 */
function retentionInterval(options: PagewiseMemoryOptions): number | null {
  const r = options.retention;
  if (!r) return null;
  return r.intervalMs === undefined ? HOUR_MS : r.intervalMs;
}

/** Refuses an import whose turns, over all its conversations, are more than one call may carry at the edge. */
function checkImportSize(args: readonly unknown[], max: number): void {
  let turns = 0;
  importedConversations(args).forEach((c, i) => { turns += readArray(field(c, 'turns', `data.conversations[${i}]`), `data.conversations[${i}].turns`, 'INVALID_ARGUMENT', 'edge')?.length ?? 0; });
  if (turns > max) {
    throw new PagewiseError('INVALID_ARGUMENT', 'edge', `This import carries ${turns} turns; one call may carry at most ${max} at the edge (30 s of CPU per request). Import one conversation per call, and of a longer one its first ${max} turns, then append the rest with onTurnComplete in batches (ids and createdAt are kept) and its pins with pin(); or raise maxImportTurns in options().`, { path: 'data.conversations' });
  }
}

/**
 * A Durable Object serving the Memory API over Workers RPC, on its own SQLite. Extend it to choose options from
 * `env` (an embedder on `env.AI`, the window of your model); route with `memoryStub(env.MEMORY, conversationId)`.
 * Background work (compaction, embedding) goes on after a call returns, kept alive with `ctx.waitUntil`.
 *
 * @example
 * export class Memory extends PagewiseMemory {
 *   options(env: Env) { return { contextWindow: 128_000, embedder: workersAiEmbedder(env.AI) }; }
 * }
 *
 * @hideconstructor
 */
export class PagewiseMemory<Env = unknown> extends DurableObject<Env> {
  #memory: Promise<Memory> | undefined;
  // The alarm's work under way.
  #alarm: Promise<void> | undefined;

  /**
   * The engine's options for this object; override to read them from `env`. Default: the embedder `env` offers
   * (Workers AI as `env.AI`, else an OpenAI-compatible endpoint in `env.PAGEWISE_EMBEDDINGS_URL`), else tags + BM25.
   */
  options(env: Env): PagewiseMemoryOptions {
    return { embedder: edgeEmbedder(env as never) };
  }

  #open(): Promise<Memory> {
    if (!this.#memory) {
      const { scope: _scope, maxImportTurns: _max, ...options } = this.options(this.env);
      // No Node model threads here: without an embedder given, memory runs on tags and full-text search.
      // Compaction a slice per event: the rest goes on from the alarm (#slice).
      // Maintenance (retention, rebuilds after an upgrade) a slice per alarm, never in a request's event.
      this.#memory = createMemory({ embedder: false, backgroundSliceTurns: SLICE_TURNS, ...options, maintenance: 'manual', storage: durableObjectSql(this.ctx.storage) });
      this.#memory.catch(() => { this.#memory = undefined; });
      // An object woken after an upgrade (or with a retention policy) starts its alarms at once.
      void this.#memory.then(async () => { if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + NEXT_SLICE_MS); }, () => undefined);
    }
    return this.#memory;
  }

  /** In conversation scope, the one conversation this object serves (kept in its storage). */
  #check(path: MethodPath, args: unknown[], options: PagewiseMemoryOptions): void {
    if ((options.scope ?? 'conversation') !== 'conversation') return;
    const named = conversationsNamed(path, args);
    const ids = new Set<string>();
    named.forEach((id) => { if (id !== undefined) ids.add(validateConversationId(id)); });
    // Several at once (an import or a sync batch of two conversations) is refused before any is kept as the served one.
    if (ids.size > 1) {
      const some = [...ids].slice(0, 3).map((id) => JSON.stringify(id)).join(', ');
      throw new PagewiseError('INVALID_CONVERSATION_ID', 'edge', `This call names ${ids.size} conversations (${some}${ids.size > 3 ? ', …' : ''}) and this object serves one: ${ROUTE_ONE}`);
    }
    for (const id of ids) this.#serve(id);
  }

  #serve(conversationId: string): void {
    const kv = this.ctx.storage.kv;
    const served = kv.get<string>('pagewise:conversation');
    if (served === undefined) kv.put('pagewise:conversation', conversationId);
    else if (served !== conversationId) {
      throw new PagewiseError('INVALID_CONVERSATION_ID', 'edge', `This object serves one conversation, not ${JSON.stringify(conversationId)}: ${ROUTE_ONE}`);
    }
  }

  /**
   * Finishes background work a call left (after an eviction, the object wakes up for it), then compacts one slice of
   * a conversation whose compaction stopped at its slice, and sets the next alarm while any is left: a long backlog
   * (an import, the rebuild after a forget) takes several alarms, each far under an event's CPU limit.
   */
  async alarm(): Promise<void> {
    // An alarm that fires while one runs (the next slice's, set meanwhile) leaves the work to it: that one sets the
    // next alarm when it ends, so two slices of one conversation never run at once.
    if (this.#alarm) return this.#alarm;
    this.#alarm = this.#slice().finally(() => { this.#alarm = undefined; });
    return this.#alarm;
  }

  async #slice(): Promise<void> {
    const memory = await this.#open();
    this.#notice(await memory.flush());
    const [next] = this.#unfinished();
    if (next !== undefined) {
      // A conversation that is gone, or a pass that failed, leaves the list: its next write calls for a pass again.
      const report = await memory.compact(...(sliced([next], this.options(this.env)) as [string])).catch(() => null);
      if (!report?.more) this.#setUnfinished(this.#unfinished().filter((id) => id !== next));
      this.#notice(await memory.flush());
    }
    // One slice of maintenance (retention, rebuilds after an upgrade) per alarm; the next alarm takes the next.
    const upkeep = await memory.maintain().catch(() => null);
    if (this.#unfinished().length > 0 || upkeep?.more) await this.ctx.storage.setAlarm(Date.now() + NEXT_SLICE_MS);
    else {
      // Retention is checked again after its interval, a rebuild tried again after its wait, with nothing written meanwhile.
      const due = [retentionInterval(this.options(this.env)), upkeep?.nextInMs ?? null].filter((ms): ms is number => ms !== null);
      if (due.length > 0) await this.#alarmBy(Date.now() + Math.min(...due));
    }
  }

  /** Sets the alarm for `at` unless one is due sooner (a write's, set while this slice ran, is not pushed back). */
  async #alarmBy(at: number): Promise<void> {
    const set = await this.ctx.storage.getAlarm();
    if (set === null || set > at) await this.ctx.storage.setAlarm(at);
  }

  #unfinished(): string[] {
    return this.ctx.storage.kv.get<string[]>(UNFINISHED) ?? [];
  }

  #setUnfinished(ids: string[]): void {
    if (ids.length > 0) this.ctx.storage.kv.put(UNFINISHED, ids);
    else this.ctx.storage.kv.delete(UNFINISHED);
  }

  /** Keeps the conversations whose reports say `more` for the alarm, and sets it soon. */
  #notice(reports: readonly CompactionReport[]): void {
    const more = reports.filter((r) => r.more).map((r) => r.conversationId);
    if (more.length === 0) return;
    this.#setUnfinished([...new Set([...this.#unfinished(), ...more])]);
    this.ctx.waitUntil(this.ctx.storage.setAlarm(Date.now() + NEXT_SLICE_MS));
  }

  /**
   * Runs one Memory method (what the generated RPC methods call).
   *
   * @internal
   */
  async call(path: MethodPath, args: unknown[]): Promise<unknown> {
    try {
      const options = this.options(this.env);
      this.#check(path, args, options);
      if (path[0] === 'import') checkImportSize(args, options.maxImportTurns ?? MAX_IMPORT_TURNS);
      if (path[0] === 'compact') args = sliced(args, options);
      const memory = await this.#open();
      const target = path.length === 2 ? (memory.aliases as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[path[1]]!
        : (memory as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[path[0]]!;
      if (typeof target !== 'function') throw new PagewiseError('INVALID_ARGUMENT', 'edge', `No Memory method ${path.join('.')}.`);
      const result = await target(...args);
      if (path.length === 1) checkResultSize(path[0], args, result);
      this.#notice(reportsIn(path, result));
      // What the call left to do in the background (compaction, vectors) finishes after the reply; an alarm takes it
      // up again if the object is evicted before it is done (waitUntil does not outlive the object).
      if (WRITES.has(path[0])) {
        this.ctx.waitUntil(memory.flush().then((reports) => this.#notice(reports), () => undefined));
        if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + ALARM_MS);
      }
      return result;
    } catch (error) {
      throw toWire(error);
    }
  }
}

// Workers RPC calls methods of the class: one per Memory method, from the one list.
for (const name of MEMORY_METHODS) {
  Object.defineProperty(PagewiseMemory.prototype, name, {
    value(this: PagewiseMemory, ...args: unknown[]) { return this.call([name], args); }, writable: true, configurable: true,
  });
}

class Aliases extends RpcTarget {
  constructor(private readonly object: PagewiseMemory) { super(); }
}
for (const name of ALIAS_METHODS) {
  Object.defineProperty(Aliases.prototype, name, {
    value(this: Aliases, ...args: unknown[]) { return (this as unknown as { object: PagewiseMemory }).object.call(['aliases', name], args); }, writable: true, configurable: true,
  });
}
Object.defineProperty(PagewiseMemory.prototype, 'aliases', { get(this: PagewiseMemory) { return new Aliases(this); }, configurable: true });

/** A Durable Object namespace, structurally. */
export interface MemoryNamespaceLike {
  idFromName(name: string): unknown;
  get(id: never): unknown;
}

/**
 * The Memory API of a conversation's object (`idFromName(conversationId)`, or `objectName` for per-user objects),
 * with errors rebuilt as PagewiseError (code and path kept). `close()` does nothing: the object lives on.
 */
export function memoryStub(namespace: MemoryNamespaceLike, objectName: string): Memory {
  const stub = namespace.get(namespace.idFromName(objectName) as never) as { call(path: MethodPath, args: unknown[]): Promise<unknown> };
  // sync runs here, in the calling Worker, over the object's three sync methods.
  return withSync({
    ...forwardMemory((path, args) => stub.call(path, args).catch((e: unknown) => { throw fromWire(e); })),
    close: () => Promise.resolve(),
  });
}

/**
 * A relay for end-to-end encrypted sync (`relayPeer`): a Durable Object that stores and serves the ciphertext batches
 * and opaque cursors a person's devices seal with a key it never sees. It holds no engine and reads nothing: one
 * object per user (`relayStub(env.RELAY, 'user:' + id)`), served over HTTP by `relayEndpoint`.
 *
 * @example
 * export { PagewiseRelay as Relay } from 'pagewise/edge'; // wrangler: a new_sqlite_classes migration for "Relay"
 *
 * @hideconstructor
 */
export class PagewiseRelay<Env = unknown> extends DurableObject<Env> {
  #store: RelayStore | undefined;

  /**
   * Runs one relay operation (what relayStub and relayEndpoint call).
   *
   * @internal
   */
  async call(op: string, args: unknown): Promise<unknown> {
    try {
      this.#store ??= relayStore(this.ctx.storage);
      return this.#store.call(op, args);
    } catch (error) {
      throw toWire(error);
    }
  }
}

/**
 * A user's relay object by name, for `relayEndpoint({ relay })` or `relayPeer(stub, { key })` inside a Worker, with
 * errors rebuilt as PagewiseError.
 */
export function relayStub(namespace: MemoryNamespaceLike, objectName: string): RelayTarget {
  const stub = namespace.get(namespace.idFromName(objectName) as never) as { call(op: string, args: unknown): Promise<unknown> };
  return { call: (op, args) => stub.call(op, args).catch((e: unknown) => { throw fromWire(e); }) };
}
