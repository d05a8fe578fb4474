// memory.stats()'s figures: what one call's result adds to the persisted counters (by name, as usage_counters keeps
// them), the counters read back as UsageCounters, and the in-memory figures (latency, calls, errors).
import type { AssembledContext, CompactionReport, LatencyStats, ManifestEntry, RecallSignal, TurnReport, UsageCounters } from '../contracts/types.js';
import { Lru } from '../common/cache.js';
import { LatencyWindow } from '../search/stats.js';

/** Calls each method's latency window keeps. */
export const LATENCY_WINDOW = 1024;
// Conversations whose errors are kept apart (the whole memory's are kept whatever the number).
const ERROR_CONVERSATIONS = 1000;

export type Deltas = Record<string, number>;

const SIGNALS: readonly RecallSignal[] = ['tags', 'bm25', 'vector', 'speaker', 'time', 'neighbour', 'pin', 'broad', 'otherBranch', 'ranking'];
const TOKEN_KINDS = ['total', 'prefix', 'history', 'message', 'overhead', 'memory', 'recall', 'summary', 'topics', 'search', 'attachments', 'wholeHistory', 'saved', 'unmeasured'] as const;

/**
 * Why a recalled excerpt is there, from its manifest entry: the scores the ranker set, and for the blocks it did not
 * rank, their reason (a pin's and a broad question's sample are only told apart there).
 */
export function signalsOf(e: ManifestEntry): RecallSignal[] {
  const s = e.scores;
  const out: RecallSignal[] = [];
  if (s.tagIdf !== undefined) out.push('tags');
  if (s.bm25 !== undefined) out.push('bm25');
  if (s.vector !== undefined) out.push('vector');
  if (s.speaker) out.push('speaker');
  if (s.time) out.push('time');
  if (s.neighbour) out.push('neighbour');
  if (e.reason.startsWith('pinned')) out.push('pin');
  if (e.reason.startsWith('broad question')) out.push('broad');
  if (e.otherBranch) out.push('otherBranch');
  if (out.length === 0) out.push('ranking');
  return out;
}

/** What one assembled request adds: tokens by kind (budget and manifest), recall by signal. */
export function requestDeltas(ctx: AssembledContext): Deltas {
  const b = ctx.budget;
  const d: Deltas = {
    'calls.onMessageInbound': 1, 'tokens.total': b.total, 'tokens.prefix': b.prefix, 'tokens.history': b.history, 'tokens.message': b.message,
    'tokens.overhead': b.overhead, 'tokens.memory': b.memory, 'tokens.topics': b.topics, 'tokens.search': b.search,
  };
  const add = (name: string, n: number) => { d[name] = (d[name] ?? 0) + n; };
  for (const e of ctx.manifest) {
    if (e.kind === 'recall' || e.kind === 'summary' || e.kind === 'attachments') add(`tokens.${e.kind}`, e.tokens);
    if (e.kind !== 'recall') continue;
    add('recall.entries', 1);
    add('recall.turns', e.sourceIds.length);
    for (const s of signalsOf(e)) add(`recall.${s}`, 1);
  }
  return d;
}

/** The stored history's tokens against what the request carried in its place (see TokenUsage.saved). */
export function savedDeltas(ctx: AssembledContext, wholeHistory: number | null): Deltas {
  if (wholeHistory === null) return { 'tokens.unmeasured': 1 };
  const carried = ctx.budget.prefix + ctx.budget.history + ctx.budget.memory;
  return { 'tokens.wholeHistory': wholeHistory, 'tokens.saved': Math.max(0, wholeHistory - carried) };
}

export function turnDeltas(report: TurnReport): Deltas {
  return { 'calls.onTurnComplete': 1, 'turns.stored': report.stored };
}

export function compactionDeltas(r: CompactionReport): Deltas {
  if (r.turnsCompacted === 0 && r.summariesMade === 0) return {};
  return { 'compaction.runs': 1, 'compaction.turns': r.turnsCompacted, 'compaction.summaries': r.summariesMade, 'compaction.freed': Math.max(0, r.tokensFreed) };
}

export function sumDeltas(into: Deltas, more: Deltas): Deltas {
  for (const [k, v] of Object.entries(more)) into[k] = (into[k] ?? 0) + v;
  return into;
}

/** The persisted counters as `memory.stats().usage`. */
export function countersOf(m: ReadonlyMap<string, number>): UsageCounters {
  const n = (name: string) => m.get(name) ?? 0;
  return {
    calls: { onMessageInbound: n('calls.onMessageInbound'), onTurnComplete: n('calls.onTurnComplete') },
    tokens: Object.fromEntries(TOKEN_KINDS.map((k) => [k, n(`tokens.${k}`)])) as unknown as UsageCounters['tokens'],
    recall: { entries: n('recall.entries'), turns: n('recall.turns'), bySignal: Object.fromEntries(SIGNALS.map((s) => [s, n(`recall.${s}`)])) as Record<RecallSignal, number> },
    turnsStored: n('turns.stored'),
    compaction: { runs: n('compaction.runs'), turnsCompacted: n('compaction.turns'), summariesMade: n('compaction.summaries'), tokensFreed: n('compaction.freed') },
    summariesRegenerated: n('summaries.regenerated'),
  };
}

type ByCode = Map<string, Map<string, number>>;
const bump = (m: ByCode, method: string, code: string) => {
  let codes = m.get(method);
  if (!codes) m.set(method, (codes = new Map()));
  codes.set(code, (codes.get(code) ?? 0) + 1);
};
const plain = (m: ByCode | undefined) => Object.fromEntries([...(m ?? [])].map(([method, codes]) => [method, Object.fromEntries(codes)]));

/** Figures kept in memory since the memory opened: latency and calls per method, errors by method and code. */
export class CallFigures {
  readonly since = new Date().toISOString();
  private readonly latency = new Map<string, LatencyWindow>();
  private readonly calls = new Map<string, number>();
  private readonly errors: ByCode = new Map();
  private readonly errorsOf = new Lru<string, ByCode>(ERROR_CONVERSATIONS);

  ended(method: string, ms: number, conversationId: string | null, errorCode?: string): void {
    let w = this.latency.get(method);
    if (!w) this.latency.set(method, (w = new LatencyWindow(LATENCY_WINDOW)));
    w.push(ms);
    this.calls.set(method, (this.calls.get(method) ?? 0) + 1);
    if (errorCode === undefined) return;
    bump(this.errors, method, errorCode);
    if (conversationId === null) return;
    let mine = this.errorsOf.get(conversationId);
    if (!mine) this.errorsOf.set(conversationId, (mine = new Map()));
    bump(mine, method, errorCode);
  }

  latencyMs(): Record<string, LatencyStats> {
    return Object.fromEntries([...this.latency].map(([method, w]) => [method, w.summary()]));
  }

  callCounts(): Record<string, number> {
    return Object.fromEntries(this.calls);
  }

  errorCounts(conversationId: string | null): Record<string, Record<string, number>> {
    return plain(conversationId === null ? this.errors : this.errorsOf.get(conversationId));
  }
}
