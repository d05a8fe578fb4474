import type { SummaryStore } from './summary-store.js';
import type { VectorHit } from '../embed/vector-index.js';
import type { QueryIntent } from '../retrieval/intent.js';
import type { SummaryCandidate } from '../assembly/assembler.js';

// Candidates read for a broad question (the tag summaries of the most used tags) and a temporal one (the earliest
// segments): more than their share of the recall budget holds (at most 256 tokens a tag summary, 32 or more a segment),
// and not every summary of a long conversation, each rendered and counted.
const BROAD_TAG_SUMMARIES = 32;
const TEMPORAL_SEGMENTS = 64;

/**
 * Summaries to page in for a question, in priority order, and the share of the recall budget they may take: broad
 * questions get the tag summaries and the master, temporal ones the segments earliest first, others the summaries
 * similar in meaning and then the frontier, in the room the excerpts leave.
 */
export async function summaryPlan(
  summaries: SummaryStore, conversationId: string, intent: QueryIntent, similar: readonly VectorHit[] = [],
): Promise<{ candidates: SummaryCandidate[]; share: number }> {
  const { broad, temporal } = intent;
  const frontier = await summaries.frontier(conversationId);
  if (frontier.length === 0) return { candidates: [], share: 0 };
  if (broad) {
    const tags = await summaries.mainTagSummaries(conversationId, BROAD_TAG_SUMMARIES);
    return { share: 0.6, candidates: [
      ...tags.map((x) => ({ summary: x, reason: `broad question: summary of topic "${x.tag}" (set cover of the compacted turns)` })),
      ...frontier.filter((x) => x.kind === 'master').map((x) => ({ summary: x, reason: 'broad question: master summary of the compacted past' })),
    ] };
  }
  if (temporal) {
    // "At the beginning": the earliest segments first (seed 000); "most recently": the newest first; "in June": the
    // segments of that span, earliest first (none: the turns recalled for the span are all there is).
    const window = intent.window ? { from: new Date(intent.window.fromMs).toISOString(), to: new Date(intent.window.toMs).toISOString() } : undefined;
    const order = !window && intent.position === 'latest' ? 'newest' : 'earliest';
    const segments = await summaries.segments(conversationId, TEMPORAL_SEGMENTS, order, window);
    const what = window ? `of ${JSON.stringify(intent.window!.text)}` : order === 'newest' ? 'newest first' : 'earliest first';
    return { share: 0.5, candidates: segments.map((x) => ({ summary: x, reason: `temporal question: segment summaries ${what}` })) };
  }
  // Summaries similar in meaning to the question come first, alone (a summary brings no neighbours). For a specific
  // question every summary takes only the room the excerpts leave: the verbatim evidence comes first (LoCoMo with
  // USE-Lite: evidence 0.842 with a fifth of the budget reserved for summaries, 0.870 with leftovers only).
  const score = new Map(similar.map((h) => [h.ref, h.score]));
  // In the search's own order (score, then the newer row on a tie), not the order SQL happened to return equal scores in.
  const rank = new Map(similar.map((h, i) => [h.ref, i]));
  const close = (await summaries.byRowids(conversationId, [...score.keys()])).sort((a, b) => rank.get(a.rowid)! - rank.get(b.rowid)!);
  const first = close.map((x) => ({ summary: x, leftover: true, reason: `summary similar in meaning (cosine ${score.get(x.rowid)!.toFixed(2)}) of turns ${x.firstSeq}-${x.lastSeq}, in the room the excerpts left` }));
  // Seed 003's order: the newest summaries first (continuity), then the master (everything older), then the rest.
  const newest = [...frontier].sort((a, b) => b.lastSeq - a.lastSeq).filter((x) => !score.has(x.rowid));
  const master = newest.filter((x) => x.kind === 'master');
  const ordered = [...newest.slice(0, 1).filter((x) => x.kind !== 'master'), ...master, ...newest.slice(1).filter((x) => x.kind !== 'master')];
  // The frontier is there for continuity: it gets what the excerpts leave (the question's evidence comes first).
  return { share: 0.2, candidates: [...first, ...ordered.map((x) => ({ summary: x, leftover: true, reason: `level-${x.level} summary of compacted turns ${x.firstSeq}-${x.lastSeq} (continuity, in the room the excerpts left)` }))] };
}
