import { type TurnRecord, type TurnStore } from '../store/turn-store.js';
import { stemsOf } from '../text/fts-words.js';
import type { TagRules } from '../tags/tag-rules.js';
import type { TagStore } from '../tags/tag-store.js';
import type { ScoreParts } from '../contracts/types.js';
import { ftsMatch } from '../text/fts-words.js';
import { type QueryIntent, namesPositionOnly } from './intent.js';
import { type Asks, COLUMN, DATE_WORDS, type Feature, FEATURES, SHIPPED_WEIGHTS, probabilities } from './ranking.js';

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
  /** The ranker's probability that this turn is what the question asks about: packed by value per token. */
  value?: number;
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
  /** Blocks wanted: each channel brings PER_CHANNEL× as many candidates, and RETURNED× as many blocks come back. */
  limit: number;
  rules: TagRules;
  nowMs: number;
  /** Turns most similar in meaning (embedding search), best first. */
  vector?: ReadonlyArray<{ seq: number; score: number }>;
  /** What the question asks for (a time, a count, what the assistant said). */
  asks?: Asks;
  /** Cosine of given turns to the question (every loaded candidate); absent without embeddings. */
  scoreVector?: (seqs: readonly number[]) => Promise<ReadonlyMap<number, number>>;
  /** The similarity from which a turn is called related in meaning (the manifest's reason). */
  threshold?: number;
  /** The ranking weights, in FEATURES order (the shipped ones by default). */
  weights?: Float64Array;
  /** Sees every candidate's features (retraining the ranker on labelled conversations). */
  trace?: (candidates: RankTrace) => void;
}

/** Every candidate of one question: its turn and its features (FEATURES order). */
export interface RankTrace {
  conversationId: string;
  candidates: { id: string; seq: number; features: number[] }[];
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

// Candidates each channel brings, per block wanted (BM25, vectors, tags, the time asked about).
export const PER_CHANNEL = 4;

// Blocks returned, per block wanted: packing by value per token chooses among them.
const RETURNED = 10;

// Reciprocal rank fusion's constant in the floor features (Cormack et al. 2009).
const RRF_K = 60;

function round(x: number): number {
  return Number(x.toPrecision(4));
}

/** A tagged unit the question's tags matched: its span and its score. */
interface TagUnit { from: number; to: number; score: number; tags: string[] }

/** What the channels found: the seeds (candidates), and each channel's score per seq. */
interface Channels {
  seeds: Set<number>;
  bm25: Map<number, number>;
  bm25Rank: Map<number, number>;
  tagUnits: TagUnit[];
  /** Each seq's tagged unit (the first, best, that covers it). */
  unitOfSeq: Map<number, TagUnit>;
  window: Set<number>;
  /** The turns the position the question names brought ("at the beginning", "lately"). */
  position: Set<number>;
}

/** BM25, vectors, tags, the time window and the position the question names: each one's candidates and scores. */
async function channels(stores: Stores, q: RecallQuery, over: number, count: number): Promise<Channels> {
  const seeds = new Set<number>();
  const add = (s: number) => { if (s >= 0 && !q.exclude.has(s)) seeds.add(s); };
  const match = ftsMatch(q.terms);
  const bm25Rows = match ? await stores.turns.search(q.conversationId, match, over + q.exclude.size) : [];
  const bm25 = new Map<number, number>();
  const bm25Rank = new Map<number, number>();
  for (const h of bm25Rows) {
    if (q.exclude.has(h.seq) || bm25.size >= over) continue;
    bm25Rank.set(h.seq, bm25.size);
    bm25.set(h.seq, h.score);
    add(h.seq);
  }
  for (const h of (q.vector ?? []).slice(0, over)) add(h.seq);
  const tagRows = await stores.tags.matchUnits(q.conversationId, q.tagWeights, over);
  const tagUnits = tagRows.map((r) => ({ from: r.unitSeq, to: Math.min(r.endSeq, r.unitSeq + 7), score: r.score, tags: r.tags }));
  for (const u of tagUnits.slice(0, Math.ceil(over / 4))) for (let s = u.from; s <= u.to; s++) add(s);
  const window = new Set<number>();
  if (q.intent.window) {
    for (const s of await stores.turns.inWindow(q.conversationId, q.intent.window.fromMs, q.intent.window.toMs, 4 * over)) window.add(s);
    [...window].slice(0, over).forEach(add);
  }
  const subject = [...q.tagWeights.keys()].some((t) => !namesPositionOnly(t));
  const position = new Set<number>();
  if (q.intent.position && (!subject || seeds.size === 0)) {
    // "How did our conversation begin?" names no subject: the conversation's own first (or last) turns.
    const from = q.intent.position === 'latest' ? Math.max(0, count - over) : 0;
    for (let s = from; s < from + over && s < count; s++) if (!q.exclude.has(s)) { add(s); position.add(s); }
  }
  const unitOfSeq = new Map<number, TagUnit>();
  for (const u of tagUnits) for (let s = u.from; s <= u.to; s++) if (!unitOfSeq.has(s)) unitOfSeq.set(s, u);
  return { seeds, bm25, bm25Rank, tagUnits, unitOfSeq, window, position };
}

/** What features read besides the channels: the turns (candidates and their neighbours), cosines, the question. */
interface FeatureContext {
  q: RecallQuery;
  ch: Channels;
  bySeq: ReadonlyMap<number, TurnRecord>;
  cos: ReadonlyMap<number, number>;
  cosRank: ReadonlyMap<number, number>;
  words: ReadonlySet<string>;
  speakers: ReadonlySet<string>;
  lastSeq: number;
  asks: Asks;
}

/** The candidates' feature rows (FEATURES order) and their coverage of the question's words. */
function featureRows(candidates: readonly TurnRecord[], c: FeatureContext): Float64Array[] {
  const { q, ch } = c;
  const maxBm25 = Math.max(0, ...ch.bm25.values());
  const maxTag = Math.max(0, ...ch.tagUnits.map((u) => u.score));
  const coverage = new Map<number, number>();
  const coverageOf = (s: number): number => {
    let v = coverage.get(s);
    if (v === undefined) {
      const t = q.exclude.has(s) ? undefined : c.bySeq.get(s);
      v = t && c.words.size > 0 ? [...stemsOf(t.text)].filter((w) => c.words.has(w)).length / c.words.size : 0;
      coverage.set(s, v);
    }
    return v;
  };
  const bm25N = (s: number) => (maxBm25 > 0 ? (ch.bm25.get(s) ?? 0) / maxBm25 : 0);
  // Latest first: whether a later candidate matches at least as well, in words and in meaning. Coverage takes few
  // values (k of the question's words), so the best later cosine is kept per value: linear in the candidates.
  const superseded = new Set<number>();
  const bestLater = new Map<number, number>();
  for (const t of [...candidates].filter((x) => coverageOf(x.seq) > 0).sort((a, b) => b.seq - a.seq)) {
    const cov = coverageOf(t.seq);
    const cosT = c.cos.get(t.seq) ?? 0;
    for (const [level, best] of bestLater) if (level >= cov && best >= cosT - 0.05) { superseded.add(t.seq); break; }
    bestLater.set(cov, Math.max(bestLater.get(cov) ?? -Infinity, cosT));
  }
  return candidates.map((t) => {
    const row = new Float64Array(FEATURES.length);
    const set = (f: Feature, v: number) => { row[COLUMN.get(f)!] = v; };
    const br = ch.bm25Rank.get(t.seq);
    const vr = c.cosRank.get(t.seq);
    const bm25Rrf = br === undefined ? 0 : RRF_K / (RRF_K + br + 1);
    const vecRrf = vr === undefined ? 0 : RRF_K / (RRF_K + vr + 1);
    const cos = c.cos.get(t.seq) ?? 0;
    const unit = ch.unitOfSeq.get(t.seq);
    const recency = t.seq / c.lastSeq;
    set('bm25Rrf', bm25Rrf);
    set('vecRrf', vecRrf);
    set('bm25', bm25N(t.seq));
    set('cos', cos);
    set('tag', unit && maxTag > 0 ? unit.score / maxTag : 0);
    set('nbBm25', Math.max(bm25N(t.seq - 1), bm25N(t.seq + 1)));
    set('nbCos', Math.max(c.cos.get(t.seq - 1) ?? 0, c.cos.get(t.seq + 1) ?? 0));
    set('nbCoverage', Math.max(coverageOf(t.seq - 1), coverageOf(t.seq + 1)));
    set('user', t.role === 'user' ? 1 : 0);
    set('length', Math.log1p(t.text.length) / Math.log(1000));
    set('question', /\?\s*$/.test(t.text) ? 1 : 0);
    set('recency', recency);
    set('speaker', c.speakers.has(t.name?.toLowerCase() ?? '') ? 1 : 0);
    set('inWindow', ch.window.has(t.seq) ? 1 : 0);
    set('early', q.intent.position === 'earliest' ? 1 - recency : 0);
    set('late', q.intent.position === 'latest' ? recency : 0);
    set('coverage', coverageOf(t.seq));
    set('both', bm25Rrf * vecRrf);
    set('whenDate', c.asks.when && DATE_WORDS.test(t.text) ? 1 : 0);
    set('howMany', c.asks.count && /\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|twice|once|dozen)\b/i.test(t.text) ? 1 : 0);
    set('assistantAsked', c.asks.assistant && t.role === 'assistant' ? 1 : 0);
    set('superseded', superseded.has(t.seq) ? 1 : 0);
    return row;
  });
}

/** The turns the channels found and those either side of them, loaded, with their cosines to the question. */
async function candidateTurns(stores: Stores, q: RecallQuery, ch: Channels) {
  const wanted = new Set<number>();
  for (const s of ch.seeds) for (const d of [-1, 0, 1]) if (s + d >= 0) wanted.add(s + d);
  const bySeq = new Map<number, TurnRecord>();
  for (const t of await stores.turns.bySeqs(q.conversationId, [...wanted].sort((a, b) => a - b))) bySeq.set(t.seq, t);
  // Turns the request sends anyway are no candidates, and say nothing about their neighbours either.
  const loaded = [...bySeq.keys()].filter((s) => !q.exclude.has(s));
  const cos = new Map<number, number>(q.scoreVector ? await q.scoreVector(loaded) : []);
  const cosRank = new Map([...cos].sort((a, b) => b[1] - a[1] || b[0] - a[0]).map(([s], i) => [s, i]));
  const candidates = [...bySeq.values()].filter((t) => !q.exclude.has(t.seq));
  return { bySeq, cos, cosRank, candidates };
}

/** Why a turn was recalled, in words: the channels that found it (or the match beside it). */
function reasonFor(row: Float64Array, tags: readonly string[], threshold: number, atPosition: boolean): string {
  const f = (name: Feature) => row[COLUMN.get(name)!]!;
  const parts: string[] = [];
  if (f('tag') > 0 && tags.length > 0) parts.push(`tags ${tags.slice(0, 4).join(', ')}`);
  if (f('bm25') > 0) parts.push('keywords (BM25)');
  if (f('cos') >= threshold) parts.push('meaning (embedding)');
  if (f('speaker') > 0) parts.push('the speaker named');
  if (f('inWindow') > 0 || atPosition) parts.push('the time asked about');
  if (parts.length === 0) parts.push(f('nbBm25') > 0 || f('nbCos') >= threshold ? 'the turn beside a match' : 'the ranking');
  return `matched ${parts.join(' + ')}`;
}

/**
 * Candidate turns from every channel (BM25, vectors, tags, the time and speaker the question names, the turns beside
 * them), each described by the same features and ranked by one learned scorer; each becomes a block whose `value`
 * is its probability, for packing by value per token.
 */
export async function recall(stores: Stores, q: RecallQuery): Promise<RecallResult> {
  const over = q.limit * PER_CHANNEL;
  const count = await stores.turns.turnCount(q.conversationId);
  const ch = await channels(stores, q, over, count);
  const focus = stemsOf([...q.terms, ...q.tagWeights.keys()].join(' ').replace(/-/g, ' '));
  if (ch.seeds.size === 0) return { blocks: [], expired: [], focus };
  const { bySeq, cos, cosRank, candidates } = await candidateTurns(stores, q, ch);
  const lastSeq = Math.max(1, count - 1);
  const context: FeatureContext = { q, ch, bySeq, cos, cosRank, words: stemsOf(q.terms.join(' ')), speakers: new Set(q.speakers.map((s) => s.toLowerCase())), lastSeq, asks: q.asks ?? { when: false, count: false, assistant: false } };
  const rows = featureRows(candidates, context);
  q.trace?.({ conversationId: q.conversationId, candidates: candidates.map((t, i) => ({ id: t.id, seq: t.seq, features: [...rows[i]!] })) });
  const p = probabilities(rows, q.weights ?? SHIPPED_WEIGHTS);
  const order = candidates.map((_, i) => i).sort((a, b) => p[b]! - p[a]! || candidates[b]!.seq - candidates[a]!.seq).slice(0, q.limit * RETURNED);
  const chosen = order.map((i) => candidates[i]!);
  const unitOf = await stores.tags.unitOf(q.conversationId, chosen.map((t) => t.seq));
  const unitTags = await stores.tags.tagsOf(q.conversationId, [...new Set([...unitOf.values()].map((u) => u.unitSeq))]);
  const queryTags = new Set(q.tagWeights.keys());
  const blocks: RecallBlock[] = [];
  const expired: RecallBlock[] = [];
  for (const i of order) {
    const t = candidates[i]!;
    const row = rows[i]!;
    const f = (name: Feature) => row[COLUMN.get(name)!]!;
    const own = unitTags.get(unitOf.get(t.seq)?.unitSeq ?? t.seq) ?? { tags: [], related: [] };
    const unit = ch.unitOfSeq.get(t.seq);
    const matched = unit?.tags ?? [];
    const tags = [...matched.filter((x) => queryTags.has(x)), ...own.tags.filter((x) => !matched.includes(x))];
    const verdict = q.rules.judge([...own.tags, ...own.related], t.createdMs, q.nowMs);
    const scores: ScoreParts = { score: round(p[i]!), priority: verdict.priority };
    if (unit && f('tag') > 0) scores.tagIdf = round(unit.score);
    if (ch.bm25.has(t.seq)) scores.bm25 = round(ch.bm25.get(t.seq)!);
    if (cos.has(t.seq)) scores.vector = round(cos.get(t.seq)!);
    if (f('speaker') > 0) scores.speaker = true;
    if (f('inWindow') > 0 || ch.position.has(t.seq)) scores.time = true;
    if (!ch.seeds.has(t.seq)) scores.neighbour = true;
    const block: RecallBlock = { unitSeq: t.seq, hits: [t], pair: [], adjacent: [], scores, tags, priority: verdict.priority, reason: reasonFor(row, matched, q.threshold ?? 0.3, ch.position.has(t.seq)), value: p[i]! };
    (verdict.expired ? expired : blocks).push(block);
  }
  blocks.forEach((b, i) => { b.scores.rank = i + 1; });
  return { blocks, expired, focus };
}
