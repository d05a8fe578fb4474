import { mainTopics } from '../retrieval/broad.js';
import { inline } from '../text/as-data.js';
import type { TagStore } from '../tags/tag-store.js';
import type { Tokenizer } from '../types.js';

export const TOPICS_TAG = 'context-topics';

/**
 * The `<context-topics>` hint: stored topics with how many exchanges carry them and the tags they most often come
 * with, so the model knows what it can ask about. Cut to `maxTokens`.
 */
export async function topicsHint(tags: TagStore, conversationId: string, maxTokens: number, tokenizer: Tokenizer): Promise<string> {
  const units = await tags.unitCount(conversationId);
  const topics = mainTopics(await tags.vocabulary(conversationId, 300), units, 16);
  if (topics.length === 0) return '';
  const lines: string[] = [];
  const head = `<${TOPICS_TAG}>\nTopics of earlier conversation that can be recalled (ask about them by name):`;
  const foot = `</${TOPICS_TAG}>`;
  let used = tokenizer.count(`${head}\n${foot}`);
  for (const t of topics) {
    const along = await tags.coTags(conversationId, t.tag, 3);
    // Tag names come from stored text (and from an LLM tagger, or an app's aliases): one line each, neutralized.
    const line = `- ${inline(t.tag)} (${t.units} exchange${t.units === 1 ? '' : 's'})${along.length > 0 ? `: with ${along.map(inline).join(', ')}` : ''}`;
    const cost = tokenizer.count(line) + 1;
    if (used + cost > maxTokens) break;
    lines.push(line);
    used += cost;
  }
  return lines.length === 0 ? '' : `${head}\n${lines.join('\n')}\n${foot}`;
}
