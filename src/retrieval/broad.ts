import type { TurnStore } from '../store/turn-store.js';
import type { TagStat, TagStore } from '../tags/tag-store.js';
import type { ThingJudge } from '../tags/thing-tags.js';
import type { RecallBlock } from './retriever.js';

/**
 * A tag on more than this share of a conversation's units is its background (the speakers' names, a phrase repeated in
 * every reply), not one of its topics: it tells no part of the conversation from another.
 */
export const BACKGROUND_SHARE = 0.3;
// Below this many units every tag is on a large share of them: no background can be told yet.
const BACKGROUND_MIN_UNITS = 10;

// Tags judged for a topics list, per topic asked for: most used tags are mostly things; a conversation whose most
// used words are its wording still gets its list without reading its whole vocabulary.
const JUDGED_PER_TOPIC = 4;

/**
 * The conversation's topics worth naming: tags on more than one unit that are not its background — unless the
 * background is all there is (a conversation about one thing only), as the question's tags do (retrieval/query.ts) —
 * and that name things (people, places, objects, activities), not the wording around them (`noted`, `appreciate`).
 * Most used first; at most `limit`.
 */
export async function mainTopics(stores: { tags: TagStore; things: ThingJudge }, conversationId: string, limit: number): Promise<TagStat[]> {
  const units = await stores.tags.unitCount(conversationId);
  // Background tags come first (most used): each unit carries at most 8 tags, so they are a few dozen at most.
  const vocabulary = await stores.tags.vocabulary(conversationId, limit * JUDGED_PER_TOPIC + 200);
  const repeated = vocabulary.filter((t) => t.units >= 2);
  const topics = repeated.filter((t) => units < BACKGROUND_MIN_UNITS || t.units / units <= BACKGROUND_SHARE);
  const pool = (topics.length > 0 ? topics : repeated).slice(0, limit * JUDGED_PER_TOPIC);
  const kept: TagStat[] = [];
  for (let at = 0; at < pool.length && kept.length < limit;) {
    const batch = pool.slice(at, at + limit - kept.length);
    at += batch.length;
    const verdicts = await stores.things.judge(conversationId, batch);
    kept.push(...batch.filter((_, i) => verdicts[i]));
  }
  return kept;
}

/**
 * A wide view for broad questions ("what did we discuss?"): where each main topic started and where it was last
 * touched, then units evenly spread over the conversation, in that order of preference.
 */
export async function sampleBroad(stores: { turns: TurnStore; tags: TagStore; things: ThingJudge }, conversationId: string, exclude: ReadonlySet<number>, limit: number): Promise<RecallBlock[]> {
  const topics = await mainTopics(stores, conversationId, 12);
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
