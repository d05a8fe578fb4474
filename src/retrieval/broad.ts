import type { TurnStore } from '../store/turn-store.js';
import type { TagStat, TagStore } from '../tags/tag-store.js';
import type { RecallBlock } from './retriever.js';

/**
 * A tag on more than this share of a conversation's units is its background (the speakers' names, a phrase repeated in
 * every reply), not one of its topics: it tells no part of the conversation from another.
 */
export const BACKGROUND_SHARE = 0.3;
// Below this many units every tag is on a large share of them: no background can be told yet.
const BACKGROUND_MIN_UNITS = 10;

/**
 * The conversation's topics worth naming: tags on more than one unit that are not its background — unless the
 * background is all there is (a conversation about one thing only), as the question's tags do (retrieval/query.ts).
 */
export function mainTopics(vocabulary: readonly TagStat[], units: number, limit: number): TagStat[] {
  const repeated = vocabulary.filter((t) => t.units >= 2);
  const topics = repeated.filter((t) => units < BACKGROUND_MIN_UNITS || t.units / units <= BACKGROUND_SHARE);
  return (topics.length > 0 ? topics : repeated).slice(0, limit);
}

/**
 * A wide view for broad questions ("what did we discuss?"): where each main topic started and where it was last
 * touched, then units evenly spread over the conversation, in that order of preference.
 */
export async function sampleBroad(stores: { turns: TurnStore; tags: TagStore }, conversationId: string, exclude: ReadonlySet<number>, limit: number): Promise<RecallBlock[]> {
  const units = await stores.tags.unitCount(conversationId);
  const topics = mainTopics(await stores.tags.vocabulary(conversationId, 200), units, 12);
  const picks: { seq: number; reason: string; tags: string[] }[] = [];
  const seen = new Set<number>();
  const pick = (seq: number, reason: string, tags: string[]) => {
    if (seen.has(seq) || exclude.has(seq)) return;
    seen.add(seq);
    picks.push({ seq, reason, tags });
  };
  for (const t of topics) pick(t.firstSeq, `broad question: where topic "${t.tag}" started`, [t.tag]);
  for (const t of topics) pick(t.lastSeq, `broad question: where topic "${t.tag}" was last discussed`, [t.tag]);
  const total = await stores.turns.turnCount(conversationId);
  const spread = Math.max(1, limit);
  const spots = Array.from({ length: spread }, (_, i) => Math.floor((i * total) / spread));
  const starts = await stores.tags.unitOf(conversationId, spots);
  for (const s of spots) pick(starts.get(s)?.unitSeq ?? s, 'broad question: a sample across the conversation', []);
  const chosen = picks.slice(0, limit);
  const wanted = chosen.flatMap((p) => [p.seq, p.seq + 1]);
  const bySeq = new Map((await stores.turns.bySeqs(conversationId, wanted)).map((t) => [t.seq, t]));
  return chosen.flatMap((p, i) => {
    const hit = bySeq.get(p.seq);
    if (!hit) return [];
    const next = bySeq.get(p.seq + 1);
    const pair = hit.role === 'user' && next?.role === 'assistant' && !exclude.has(next.seq) ? [next] : [];
    return [{ unitSeq: p.seq, hits: [hit], pair, adjacent: [], scores: { rank: i + 1 }, tags: p.tags, priority: 5, reason: p.reason }];
  });
}
