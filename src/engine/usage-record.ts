// What a Memory call that returned adds to the persisted counters (engine/usage.ts wraps the calls).
//
// Persisting: what a call adds is read right after it returns (the stored path's tokens: one statement and no slot, so
// no call admitted meanwhile holds its answer back) and kept in memory. The buffer is written in one transaction (an
// upsert per conversation, only for a conversation stored then) after `flushCalls` recorded calls (the call that fills
// it waits for the write) or FLUSH_MS after the first unwritten one, before a call that may remove conversations, when
// stats() reads the table, and at close() (settle()): no count is lost at close. A commit per call would cost a file
// database one more sync per hook, so 64 calls share one there; Durable Object SQL commits cost nothing apart (writes
// coalesce behind the output gate), so there every call writes before it returns and an evicted object loses none.
import type { AssembledContext, CompactionReport, StorageDriver, Tokenizer, TurnReport } from '../contracts/types.js';
import type { RebuildStatus } from '../contracts/types-ops.js';
import type { Background } from '../common/background.js';
import { Lru } from '../common/cache.js';
import type { TurnStore } from '../store/turn-store.js';
import type { EngineQueue } from './queue.js';
import type { CallSpan, Telemetry, TelemetryOption } from './telemetry.js';
import { type Deltas, compactionDeltas, requestDeltas, savedDeltas, sumDeltas, turnDeltas } from './usage-figures.js';
import type { UsageStore } from './usage-store.js';

// Calls that may remove a conversation whole: what is buffered is written first, so that figures of a conversation
// forgotten and then stored again under its id do not land on the new one. And the database's bytes (a backup, a
// rekey): they hold every figure counted so far.
const REMOVERS = new Set(['forget', 'import', 'applyRetention', 'maintain', 'sync', 'applySync', 'exportDatabase', 'rekey']);
const FLUSH_CALLS = 64;
const FLUSH_MS = 1000;
// Conversations whose first requests wait (in memory) for their first stored turn.
const WAITING = 1000;
const INJECTED = ['prefix', 'history', 'message', 'overhead', 'recall', 'summary', 'topics', 'search', 'attachments'] as const;

export interface UsageDeps {
  driver: StorageDriver;
  store: TurnStore;
  tokenizer: () => Promise<Tokenizer>;
  queue: EngineQueue;
  background: Background;
  /** The rebuilds under way (memory.stats().rebuilds). */
  rebuildStatus?: () => Promise<RebuildStatus[]>;
  telemetry?: TelemetryOption;
  /** Recorded calls whose figures are written together (default 64; 1: each call writes before it returns). */
  flushCalls?: number;
}

/** An own data property's value (never a getter's or an accessor's: the engine reads its input once). */
function plain(o: unknown, key: string): unknown {
  if (typeof o !== 'object' || o === null) return undefined;
  try {
    // Array.isArray throws on a revoked Proxy too.
    if (Array.isArray(o)) return undefined;
    const desc = Object.getOwnPropertyDescriptor(o, key);
    return desc && 'value' in desc ? desc.value : undefined;
  } catch {
    return undefined;
  }
}

// Where a method names its conversation: the argument at `at`, a string or (`field`) its `conversationId`. Methods
// not listed take their first argument, a string or an object with `conversationId`; null: they name none.
const WHERE: Record<string, { at: number; field: boolean } | null> = {
  callTool: { at: 2, field: true },
  'aliases.add': { at: 2, field: true }, 'aliases.remove': { at: 1, field: true }, 'aliases.list': { at: 0, field: true }, 'aliases.suggest': { at: 1, field: true },
  sync: null, syncState: null, syncChanges: null, applySync: null, import: null, exportDatabase: null, rekey: null, conversations: null,
  flush: null, tools: null, maintain: null, applyRetention: null, retentionLog: null, close: null,
};

/** The conversation a call named (read after the call, from plain data only), when it is a string. */
export function conversationOf(method: string, args: readonly unknown[]): string | null {
  const where = WHERE[method];
  if (where === null) return null;
  const a = args[where?.at ?? 0];
  const id = typeof a === 'string' && !where?.field ? a : plain(a, 'conversationId');
  return typeof id === 'string' && id.length <= 1024 ? id : null;
}

/** Figures not written yet, per conversation, and their writes; nothing once closed. */
function createBuffer(counters: UsageStore, flushCalls: number) {
  const buffer = new Map<string, Deltas>();
  let buffered = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> = Promise.resolve();
  let closed = false;

  const write = async (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    buffered = 0;
    if (closed || buffer.size === 0) return;
    const entries = new Map(buffer);
    buffer.clear();
    try {
      await counters.add(entries);
    } catch {
      // Kept for the next write, with no timer of its own: a driver that keeps failing is not retried on its own.
      for (const [id, deltas] of entries) keep(id, deltas, false);
    }
  };
  /** Writes the buffer; one write at a time, in order. */
  const flush = (): Promise<void> => (writing = writing.then(write, write));

  /** Buffers a call's figures; the write they complete, if they do. */
  function keep(conversationId: string, deltas: Deltas, count = true): Promise<void> | null {
    if (closed) return null;
    buffer.set(conversationId, sumDeltas(buffer.get(conversationId) ?? {}, deltas));
    if (!count) return null;
    if (++buffered >= flushCalls) return flush();
    if (timer === undefined) {
      timer = setTimeout(() => void flush(), FLUSH_MS);
      // Node: a pending write does not keep the process alive (close() writes it).
      (timer as { unref?: () => void }).unref?.();
    }
    return null;
  }

  /** Nothing is kept or written any more (the driver is about to close). */
  const close = (): void => {
    closed = true;
    clearTimeout(timer);
    timer = undefined;
    buffer.clear();
  };

  return { keep, flush, close };
}

export function createRecorder(d: UsageDeps, counters: UsageStore, telemetry: Telemetry | null) {
  const recording = new Set<Promise<unknown>>();
  // Requests on a conversation with nothing stored: counted with it once its first turns are (the onTurnComplete that
  // follows), never if none are. In memory only: a restart or an eviction in between loses them.
  const waiting = new Lru<string, Deltas>(WAITING);
  const { keep, flush, close } = createBuffer(counters, d.flushCalls ?? FLUSH_CALLS);

  /** Tracks a recording until its figures are buffered (or written, when they fill the buffer). */
  const track = <T>(run: Promise<T>, fallback: T): Promise<T> => {
    const kept = run.catch(() => fallback);
    recording.add(kept);
    void kept.then(() => recording.delete(kept));
    return kept;
  };

  /** Adds a call's figures to the buffer, with the conversation's waiting ones; the write they complete, if they do.
   * Synchronous, so a call whose figures are known when it returns returns as soon as one that records nothing. */
  const add = (conversationId: string, deltas: Deltas): Promise<void> | null => {
    const early = waiting.get(conversationId);
    waiting.delete(conversationId);
    return keep(conversationId, early ? sumDeltas(early, deltas) : deltas);
  };

  /** Counts the path's uncounted turns in the background, a slice per slot (the requests until then are unmeasured). */
  const countLater = (conversationId: string, tokenizer: Tokenizer): void => {
    const atomic = d.queue.keyed(conversationId);
    d.background.later(`usage-count:${conversationId}`, async () => {
      while (await atomic(() => counters.countPath(conversationId, tokenizer)));
    }, conversationId);
  };

  /** The request's figures, and the stored path's tokens against what it carried, read right after it (one statement). */
  const inboundDeltas = async (ctx: AssembledContext): Promise<Deltas> => {
    const deltas = requestDeltas(ctx);
    const tokenizer = await d.tokenizer();
    const path = await counters.pathTokens(ctx.conversationId, tokenizer);
    if (path.stored && path.tokens === null) countLater(ctx.conversationId, tokenizer);
    sumDeltas(deltas, savedDeltas(ctx, path.tokens));
    if (path.stored) await add(ctx.conversationId, { ...deltas });
    else waiting.set(ctx.conversationId, sumDeltas(waiting.get(ctx.conversationId) ?? {}, deltas));
    return deltas;
  };

  async function inbound(ctx: AssembledContext, span: CallSpan): Promise<void> {
    const done = await track(inboundDeltas(ctx), {} as Deltas);
    const b = ctx.budget;
    span.set({ 'pagewise.tokens.total': b.total, 'pagewise.tokens.memory': b.memory, 'pagewise.tokens.history': b.history, 'pagewise.budget.available': b.available, 'pagewise.recall.entries': done['recall.entries'] ?? 0, 'pagewise.tokens.saved': done['tokens.saved'] ?? 0 });
    for (const kind of INJECTED) telemetry?.tokens(kind, done[`tokens.${kind}`] ?? 0);
    telemetry?.saved(done['tokens.saved'] ?? 0);
  }

  return {
    /** A call begins: a removal first waits until what is recorded so far is written. */
    began: (method: string): Promise<void> | null => (REMOVERS.has(method) ? drain() : null),

    /** What a call that returned adds (persisted before it returns: the write to wait for, if any); its span's figures. */
    record(method: string, args: readonly unknown[], value: unknown, span: CallSpan): Promise<void> | null {
      if (method === 'onMessageInbound') return inbound(value as AssembledContext, span);
      if (method === 'onTurnComplete') {
        const report = value as TurnReport;
        span.set({ 'pagewise.turns.stored': report.stored, 'pagewise.turns.skipped': report.skipped, 'pagewise.turns.total': report.totalTurns, 'pagewise.compaction.turns': report.compaction?.turnsCompacted ?? 0 });
        return add(report.conversationId, sumDeltas(turnDeltas(report), report.compaction ? compactionDeltas(report.compaction) : {}));
      }
      if (method === 'compact' && value) return compacted(value as CompactionReport);
      if (method === 'regenerateSummaries') {
        const id = conversationOf(method, args);
        const n = (value as { regenerated: number }).regenerated;
        if (id !== null && n > 0) return add(id, { 'summaries.regenerated': n });
      }
      // flush()'s reports were counted when their background jobs ended (compacted()).
      return null;
    },

    /** Counts a compaction's report (a background job's when it ends: in a Durable Object, written before it ends). */
    compacted,

    /** Resolves once every recording started (and those started meanwhile) has been written. */
    drain,

    /** Forgets the conversation's waiting figures (the engine moved or removed its turns). */
    uncache: (conversationId: string): void => { waiting.delete(conversationId); },

    /** Writes nothing more: the driver closes next. */
    close,
  };

  function compacted(report: CompactionReport): Promise<void> | null {
    const deltas = compactionDeltas(report);
    return Object.keys(deltas).length > 0 ? add(report.conversationId, deltas) : null;
  }

  async function drain(): Promise<void> {
    while (recording.size > 0) await Promise.all([...recording]);
    await flush();
  }
}
