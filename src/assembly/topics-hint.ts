import { mainTopics } from '../retrieval/broad.js';
import { inline } from '../common/as-data.js';
import type { TagStore } from '../tags/tag-store.js';
import type { ThingJudge } from '../tags/thing-tags.js';
import type { Tokenizer } from '../contracts/types.js';

export const TOPICS_TAG = 'context-topics';
// Tags read beside each topic for the (at most three) other topics shown with it.
const CO_TAGS_READ = 8;

/**
 * The `<context-topics>` hint: stored topics (things, not wording: mainTopics) with how many exchanges carry them
 * and the things they most often come with, so the model knows what it can ask about. Cut to `maxTokens`.
 */
export async function topicsHint(stores: { tags: TagStore; things: ThingJudge }, conversationId: string, maxTokens: number, tokenizer: Tokenizer): Promise<string> {
  const { tags } = stores;
  const topics = await mainTopics(stores, conversationId, 16);
  if (topics.length === 0) return '';
  const named = new Set(topics.map((t) => t.tag));
  const lines: string[] = [];
  const head = `<${TOPICS_TAG}>\nTopics of earlier conversation that can be recalled (ask about them by name):`;
  const foot = `</${TOPICS_TAG}>`;
  let used = tokenizer.count(`${head}\n${foot}`);
  for (const t of topics) {
    // The other topics it most often comes with (most often first): things already judged, nothing more to read.
    const along = (await tags.coTags(conversationId, t.tag, CO_TAGS_READ)).filter((x) => named.has(x)).slice(0, 3);
    // Tag names come from stored text (and from an LLM tagger, or an app's aliases): one line each, neutralized.
    const line = `- ${inline(t.tag)} (${t.units} exchange${t.units === 1 ? '' : 's'})${along.length > 0 ? `: with ${along.map(inline).join(', ')}` : ''}`;
    const cost = tokenizer.count(line) + 1;
    if (used + cost > maxTokens) break;
    lines.push(line);
    used += cost;
  }
  return lines.length === 0 ? '' : `${head}\n${lines.join('\n')}\n${foot}`;
}
