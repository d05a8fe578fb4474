import { type TurnRecord, type TurnStore } from '../store/turn-store.js';
import { stemsOf } from '../text/fts-words.js';
import { candidates } from '../tags/key-phrases.js';
import type { TagRules } from '../tags/tag-rules.js';
import type { TagStore } from '../tags/tag-store.js';
import type { ScoreParts } from '../contracts/types.js';
import { ftsMatch } from '../text/fts-words.js';
import { type Fused, type RankedList, fuse } from './fusion.js';
import { type QueryIntent, namesPositionOnly } from './intent.js';

/**
 * A recalled candidate: the turns that matched (`hits`), the turns that complete them (`pair`: a question's
 * answer, an answer's question) and, where the budget allows, the `adjacent` ones around them.
 */
export interface RecallBlock {
  unitSeq: number;
  hits: TurnRecord[];
  pair: TurnRecord[];
  adjacent: TurnRecord[];
  scores: ScoreParts;
  tags: string[];
  priority: number;
  reason: string;
  /**
   * Past the blocks wanted: taken only with the recall budget they leave (hits, then the turns that complete them,
   * then neighbours), so that a conversation of short messages fills its budget with what ranks next.
   */
  spare?: boolean;
  /** From a branch the conversation left (off the path to its head). */
  otherBranch?: true;
}

export interface RecallQuery {
  conversationId: string;
  /** Query words for BM25, rare ones first. */
  terms: readonly string[];
  /** Canonical query tag → IDF weight (related tags already at half weight). */
  tagWeights: ReadonlyMap<string, number>;
  /** Speakers the question names (as stored). */
  speakers: readonly string[];
  intent: QueryIntent;
  /** Seqs already in the assembled history: never recalled twice. */
  exclude: ReadonlySet<number>;
  /** Blocks wanted; each signal overfetches 3×. */
  limit: number;
  rules: TagRules;
  nowMs: number;
  /** Turns similar in meaning (embedding search, above the threshold), best first. */
  vector?: ReadonlyArray<{ seq: number; score: number }>;
}

export interface RecallResult {
  blocks: RecallBlock[];
  /** Index tokens of the question's words and matched tags: what a long recalled turn is cut around. */
  focus?: ReadonlySet<string>;
  /** Blocks left out because all their tags' TTLs expired. */
  expired: RecallBlock[];
}

interface Stores {
  turns: TurnStore;
  tags: TagStore;
}

// Reciprocal rank fusion's constant for the BM25 list.
const BM25_K = 10;

// Reciprocal rank fusion's constant for the embedding list.
const VECTOR_K = 10;

// Units expanded into blocks beyond the `limit` wanted.
const EXTRA = 8;

// Spare blocks, per block wanted: what fills a budget the first blocks leave (real chats: 16 blocks of three short
// messages took 1,440 of ~2,200 memory tokens; REALTALK report part evidence 0.601 → 0.629, LoCoMo unchanged).
const SPARE_PER_BLOCK = 3;

function round(x: number): number {
  return Number(x.toPrecision(4));
}

/** The turn that completes a hit: a question brings its answer, an answer (or a tool result) the turn before it. */
function pairOf(hit: TurnRecord, bySeq: ReadonlyMap<number, TurnRecord>): TurnRecord | undefined {
  if (hit.role === 'user') {
    const next = bySeq.get(hit.seq + 1);
    return next?.role === 'assistant' ? next : undefined;
  }
  if (hit.role === 'assistant' || hit.role === 'tool') {
    const prev = bySeq.get(hit.seq - 1);
    return prev && (prev.role === 'user' || prev.role === 'assistant') ? prev : undefined;
  }
  return undefined;
}

/** Unit → seq range bookkeeping shared by the signals: where each unit ends, and which of its turns were hit. */
interface Units {
  end: Map<number, number>;
  hits: Map<number, Set<number>>;
}

/** Widens a unit's known end to at least `endSeq` (the farthest end any signal saw wins). */
function extend(units: Units, unitSeq: number, endSeq: number): void {
  units.end.set(unitSeq, Math.max(units.end.get(unitSeq) ?? endSeq, endSeq));
}

/** What every signal found: the ranked lists to fuse, and each signal's score per unit. */
interface Signals {
  lists: RankedList[];
  units: Units;
  tagScore: Map<number, { score: number; tags: string[] }>;
  bm25Score: Map<number, number>;
  vectorScore: Map<number, number>;
}

/** Turn-level hits (BM25, vectors) as a unit-level list: a unit ranks by its best turn. */
async function byUnit(stores: Stores, conversationId: string, units: Units, hits: ReadonlyArray<{ seq: number; score: number }>) {
  const unitOf = await stores.tags.unitOf(conversationId, hits.map((h) => h.seq));
  const score = new Map<number, number>();
  const ordered: number[] = [];
  for (const h of hits) {
    const u = unitOf.get(h.seq) ?? { unitSeq: h.seq, endSeq: h.seq };
    extend(units, u.unitSeq, u.endSeq);
    const set = units.hits.get(u.unitSeq) ?? new Set<number>();
    set.add(h.seq);
    units.hits.set(u.unitSeq, set);
    if (!score.has(u.unitSeq)) { score.set(u.unitSeq, h.score); ordered.push(u.unitSeq); }
  }
  return { score, ordered };
}

/** The tag, BM25 and embedding lists (each overfetching to `over`), then the time list over what they found. */
async function gatherSignals(stores: Stores, q: RecallQuery, over: number): Promise<Signals> {
  const lists: RankedList[] = [];
  const units: Units = { end: new Map(), hits: new Map() };

  const tagRows = await stores.tags.matchUnits(q.conversationId, q.tagWeights, over);
  const tagScore = new Map<number, { score: number; tags: string[] }>();
  for (const r of tagRows) {
    units.end.set(r.unitSeq, r.endSeq);
    tagScore.set(r.unitSeq, { score: r.score, tags: r.tags });
  }
  lists.push({ name: 'tags', units: tagRows.map((r) => r.unitSeq) });

  const match = ftsMatch(q.terms);
  const bm25Rows = match ? await stores.turns.search(q.conversationId, match, over + q.exclude.size) : [];
  const bm25 = bm25Rows.filter((h) => !q.exclude.has(h.seq)).slice(0, over);
  const { score: bm25Score, ordered: bm25Units } = await byUnit(stores, q.conversationId, units, bm25);
  // BM25's head is sharper than the tags' (whose ties fall back to recency): measured best at k = 10 on both benches.
  lists.push({ name: 'bm25', units: bm25Units, k: BM25_K });

  const vectorScore = new Map<number, number>();
  if (q.vector && q.vector.length > 0) {
    const hits = q.vector.filter((h) => !q.exclude.has(h.seq)).slice(0, over);
    const { score, ordered } = await byUnit(stores, q.conversationId, units, hits);
    for (const [u, v] of score) vectorScore.set(u, v);
    lists.push({ name: 'vector', units: ordered, k: VECTOR_K });
  }

  const found = [...new Set([...tagRows.map((r) => r.unitSeq), ...bm25Units, ...vectorScore.keys()])];
  const time = await timeList(stores, q, over, units, found);
  if (time) lists.push(time);
  return { lists, units, tagScore, bm25Score, vectorScore };
}

/** Time: the span the question names, or the position it points at, over what the other signals `found`. */
async function timeList(stores: Stores, q: RecallQuery, over: number, units: Units, found: readonly number[]): Promise<RankedList | null> {
  if (q.intent.window) {
    const inWindow = new Set<number>();
    const seqs = await stores.turns.inWindow(q.conversationId, q.intent.window.fromMs, q.intent.window.toMs, 4 * over);
    const windowUnits = await stores.tags.unitOf(q.conversationId, seqs);
    for (const s of seqs) {
      const u = windowUnits.get(s) ?? { unitSeq: s, endSeq: s };
      if (q.exclude.has(s)) continue;
      extend(units, u.unitSeq, u.endSeq);
      inWindow.add(u.unitSeq);
    }
    const topical = found.filter((u) => inWindow.has(u));
    return { name: 'time', units: [...topical, ...[...inWindow].filter((u) => !topical.includes(u))].slice(0, over) };
  }
  if (!q.intent.position) return null;
  // "What did we decide about the API at the start?" names a subject: the earliest (or latest) units that match it.
  // "How did our conversation begin?" names none (no stored tag): the conversation's own first (or last) units.
  const subject = [...q.tagWeights.keys()].some((t) => !namesPositionOnly(t));
  let ordered = subject ? [...found].sort((a, b) => a - b) : [];
  if (ordered.length === 0) {
    const from = q.intent.position === 'latest' ? Math.max(0, (await stores.turns.turnCount(q.conversationId)) - over) : 0;
    const first = await stores.turns.range(q.conversationId, from, over);
    const firstUnits = await stores.tags.unitOf(q.conversationId, first.map((t) => t.seq));
    ordered = [...new Set(first.filter((t) => !q.exclude.has(t.seq)).map((t) => firstUnits.get(t.seq)?.unitSeq ?? t.seq))];
    for (const t of first) units.end.set(firstUnits.get(t.seq)?.unitSeq ?? t.seq, firstUnits.get(t.seq)?.endSeq ?? t.seq);
  }
  if (q.intent.position === 'latest') ordered.reverse();
  return { name: 'time', units: ordered.slice(0, over) };
}

/** A unit's last seq as expanded: at most 7 turns past its first. */
function unitLast(units: Units, unit: number): number {
  return Math.min(units.end.get(unit) ?? unit, unit + 7);
}

/** What building a block needs beside the fused unit: the signals, the turns loaded and the units' own tags. */
interface BlockContext {
  q: RecallQuery;
  signals: Signals;
  bySeq: ReadonlyMap<number, TurnRecord>;
  unitTags: Awaited<ReturnType<TagStore['tagsOf']>>;
  queryTags: ReadonlySet<string>;
  lastSeq: number;
}

/** A fused unit expanded into its hits, pair and neighbours, scored and judged by the tag rules; null when none of its turns is left. */
function blockOf(f: Fused, c: BlockContext): { block: RecallBlock; expired: boolean } | null {
  const { q, signals, bySeq } = c;
  const end = unitLast(signals.units, f.unit);
  const unitTurns: TurnRecord[] = [];
  for (let s = f.unit; s <= end; s++) { const t = bySeq.get(s); if (t && !q.exclude.has(s)) unitTurns.push(t); }
  if (unitTurns.length === 0) return null;
  const matched = signals.tagScore.get(f.unit)?.tags ?? [];
  let hits = [...(signals.units.hits.get(f.unit) ?? [])].flatMap((s) => (bySeq.has(s) && !q.exclude.has(s) ? [bySeq.get(s)!] : []));
  if (hits.length === 0) {
    // A tag (or time) hit names the unit, not a turn: take the turns whose own words carry a matched tag.
    hits = unitTurns.filter((t) => matched.some((tag) => candidates(t.text).has(tag)));
    if (hits.length === 0) hits = [unitTurns[0]!];
  }
  const hitSet = new Set(hits.map((t) => t.seq));
  const pair = [...new Set(hits.map((h) => pairOf(h, bySeq)).filter((t): t is TurnRecord => !!t && !hitSet.has(t.seq) && !q.exclude.has(t.seq)))];
  const taken = new Set([...hitSet, ...pair.map((t) => t.seq)]);
  const adjacent = [...taken].flatMap((s) => [s - 1, s + 1]).filter((s) => !taken.has(s) && !q.exclude.has(s) && bySeq.has(s))
    .filter((s, i, all) => all.indexOf(s) === i).map((s) => bySeq.get(s)!);
  const own = c.unitTags.get(f.unit) ?? { tags: [], related: [] };
  const tags = [...matched.filter((t) => c.queryTags.has(t)), ...own.tags.filter((t) => !matched.includes(t))];
  const lastMs = Math.max(...unitTurns.map((t) => t.createdMs));
  const verdict = q.rules.judge([...own.tags, ...own.related], lastMs, q.nowMs);
  const recency = 0.9 + 0.1 * (f.unit / c.lastSeq);
  const scores: ScoreParts = { fusion: round(f.score), recency: round(recency), priority: verdict.priority };
  const ts = signals.tagScore.get(f.unit);
  if (ts) scores.tagIdf = round(ts.score);
  const b = signals.bm25Score.get(f.unit);
  if (b !== undefined) scores.bm25 = round(b);
  const v = signals.vectorScore.get(f.unit);
  if (v !== undefined) scores.vector = round(v);
  if (f.lists.includes('speaker')) scores.speaker = true;
  if (f.lists.includes('time')) scores.time = true;
  const block: RecallBlock = { unitSeq: f.unit, hits, pair, adjacent, scores, tags, priority: verdict.priority, reason: reasonFor(f.lists, matched) };
  return { block, expired: verdict.expired };
}

/**
 * Ranks stored units by tag overlap (Σ IDF), BM25, named speakers and the time the question points at, fused by
 * reciprocal rank; expands each into its hits, pair and neighbours.
 */
export async function recall(stores: Stores, q: RecallQuery): Promise<RecallResult> {
  const over = q.limit * 3;
  const signals = await gatherSignals(stores, q, over);
  const { lists, units } = signals;

  // The speaker signal reads the hit turns of every candidate; only the best few are then expanded into blocks.
  const fused = fuse(lists);
  const top = fused.slice(0, Math.max(over, q.limit));
  const bySeq = new Map<number, TurnRecord>();
  const load = async (seqs: Iterable<number>) => {
    const missing = [...new Set(seqs)].filter((s) => s >= 0 && !bySeq.has(s));
    for (const t of await stores.turns.bySeqs(q.conversationId, missing)) bySeq.set(t.seq, t);
  };
  const speakers = new Set(q.speakers.map((s) => s.toLowerCase()));
  let final = fused;
  if (speakers.size > 0) {
    await load(top.flatMap((f) => [...(units.hits.get(f.unit) ?? [f.unit])]));
    const bySpeaker = top.filter((f) => [...(units.hits.get(f.unit) ?? [f.unit])].some((s) => speakers.has(bySeq.get(s)?.name?.toLowerCase() ?? '')));
    lists.push({ name: 'speaker', units: bySpeaker.map((f) => f.unit) });
    final = fuse(lists);
  }
  // A few more than wanted: tag rules may still expire some. Then the spare ones, in fused order.
  const chosen = final.slice(0, q.limit * (1 + SPARE_PER_BLOCK) + EXTRA);
  await load(chosen.flatMap((f) => {
    const end = unitLast(units, f.unit);
    return Array.from({ length: end - f.unit + 3 }, (_, i) => f.unit - 1 + i);
  }));
  const unitTags = await stores.tags.tagsOf(q.conversationId, chosen.map((f) => f.unit));
  const context: BlockContext = { q, signals, bySeq, unitTags, queryTags: new Set(q.tagWeights.keys()), lastSeq: Math.max(1, ...top.map((f) => f.unit)) };

  const blocks: RecallBlock[] = [];
  const spares: RecallBlock[] = [];
  const expired: RecallBlock[] = [];
  for (const [i, f] of chosen.entries()) {
    const built = blockOf(f, context);
    if (built) (built.expired ? expired : i < q.limit + EXTRA ? blocks : spares).push(built.block);
  }
  const ranked = covering(blocks, stemsOf(q.terms.join(' ')));
  const spare = [...ranked.slice(q.limit), ...spares].slice(0, q.limit * SPARE_PER_BLOCK);
  for (const b of spare) b.spare = true;
  const all = [...ranked.slice(0, q.limit), ...spare];
  all.forEach((b, i) => { b.scores.rank = i + 1; });
  const focus = stemsOf([...q.terms, ...q.tagWeights.keys()].join(' ').replace(/-/g, ' '));
  return { blocks: all, expired, focus };
}

// How much a block that brings question words no better-ranked block has is preferred (a question about two things
// should recall both, not the first one twice).
const NOVELTY = 3;

/**
 * Orders blocks by tag-rule priority, then greedily by fused score × recency × (1 + NOVELTY × the share of the
 * question's words that the block's hits add to those already covered).
 */
function covering(blocks: readonly RecallBlock[], words: ReadonlySet<string>): RecallBlock[] {
  const base = (b: RecallBlock) => b.scores.fusion! * b.scores.recency!;
  const left = [...blocks].sort((a, b) => b.priority - a.priority || base(b) - base(a));
  if (words.size < 2) return left;
  const has = new Map(left.map((b) => [b, [...stemsOf(b.hits.map((t) => t.text).join(' '))].filter((w) => words.has(w))]));
  const covered = new Set<string>();
  const out: RecallBlock[] = [];
  while (left.length > 0) {
    let best = 0;
    let bestScore = -1;
    for (let i = 0; i < left.length && left[i]!.priority === left[0]!.priority; i++) {
      const fresh = has.get(left[i]!)!.filter((w) => !covered.has(w)).length;
      const score = base(left[i]!) * (1 + NOVELTY * (fresh / words.size));
      if (score > bestScore) { best = i; bestScore = score; }
    }
    const [b] = left.splice(best, 1);
    for (const w of has.get(b!)!) covered.add(w);
    out.push(b!);
  }
  return out;
}

function reasonFor(lists: readonly string[], matched: readonly string[]): string {
  const parts: string[] = [];
  if (lists.includes('tags')) parts.push(`tags ${matched.slice(0, 4).join(', ')}`);
  if (lists.includes('bm25')) parts.push('keywords (BM25)');
  if (lists.includes('vector')) parts.push('meaning (embedding)');
  if (lists.includes('speaker')) parts.push('the speaker named');
  if (lists.includes('time')) parts.push('the time asked about');
  return `matched ${parts.join(' + ')}`;
}
