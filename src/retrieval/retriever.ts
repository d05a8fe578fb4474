import type { ScoreParts } from '../types.js';
import type { TurnRecord, TurnStore } from '../store/turn-store.js';
import { ftsMatch, queryTerms } from './fts-query.js';

/** A run of consecutive turns recalled together: a hit and the neighbours that complete it. */
export interface RecallBlock {
  turns: TurnRecord[];
  /** Seq of the turn that matched. */
  hitSeq: number;
  scores: ScoreParts;
  reason: string;
}

export interface RecallQuery {
  conversationId: string;
  text: string;
  /** Seqs already in the assembled history: never recalled twice. */
  exclude: ReadonlySet<number>;
  /** How many hits to fetch before expansion and budgeting. */
  limit: number;
}

/**
 * The turn that completes a hit: a question brings its answer, an answer its question. A tool result brings the
 * call it answers. Other neighbours are left to the budget.
 */
function pairSeq(t: TurnRecord): number | null {
  if (t.role === 'user') return t.seq + 1;
  if (t.role === 'assistant' || t.role === 'tool') return t.seq - 1;
  return null;
}

function isPair(hit: TurnRecord, other: TurnRecord | undefined): other is TurnRecord {
  if (!other) return false;
  if (hit.role === 'user') return other.role === 'assistant';
  if (hit.role === 'assistant') return other.role === 'user' || (other.role === 'assistant' && !!other.toolCalls);
  return hit.role === 'tool' && other.role === 'assistant';
}

/**
 * BM25 over stored turns for the query's words and speaker names, each hit expanded with its pair. Blocks come back
 * best first; overlapping blocks are merged into the better one.
 */
export async function recallByKeywords(store: TurnStore, q: RecallQuery): Promise<RecallBlock[]> {
  const match = ftsMatch(queryTerms(q.text));
  if (!match) return [];
  const hits = (await store.search(q.conversationId, match, q.limit + q.exclude.size))
    .filter((h) => !q.exclude.has(h.seq))
    .slice(0, q.limit);
  if (hits.length === 0) return [];
  const wanted = new Set<number>();
  for (const h of hits) { wanted.add(h.seq); wanted.add(h.seq + 1); wanted.add(h.seq - 1); }
  const bySeq = new Map((await store.bySeqs(q.conversationId, [...wanted].filter((s) => s >= 0))).map((t) => [t.seq, t]));
  const taken = new Set<number>();
  const blocks: RecallBlock[] = [];
  hits.forEach((h, i) => {
    const hit = bySeq.get(h.seq);
    if (!hit || taken.has(hit.seq)) return;
    const ps = pairSeq(hit);
    const pair = ps === null ? undefined : bySeq.get(ps);
    const turns = [hit];
    if (isPair(hit, pair) && !q.exclude.has(pair.seq) && !taken.has(pair.seq)) turns.push(pair);
    turns.sort((a, b) => a.seq - b.seq);
    for (const t of turns) taken.add(t.seq);
    blocks.push({
      turns,
      hitSeq: hit.seq,
      scores: { bm25: round(h.score), rank: i + 1 },
      reason: turns.length > 1
        ? `keyword match (BM25 rank ${i + 1}) with its ${hit.role === 'user' ? 'answer' : 'question'}`
        : `keyword match (BM25 rank ${i + 1})`,
    });
  });
  return blocks;
}

function round(x: number): number {
  return Number(x.toPrecision(4));
}
