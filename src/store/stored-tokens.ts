// Token counts of stored turns, cached in the store per encoding: what history views and compaction pressure read.
import type { Tokenizer } from '../contracts/types.js';
import { countCacheKey } from '../tokens/chat-format.js';
import { sentMessageText } from '../tokens/message-cost.js';
import type { TurnRecord, TurnStore } from './turn-store.js';

/** How many leading messages are system messages: the prefix, always sent and never compacted. */
export function prefixLength(roles: readonly { role: string }[]): number {
  let n = 0;
  while (n < roles.length && roles[n]!.role === 'system') n++;
  return n;
}

/**
 * Token counts of the text stored turns are sent as (text, reasoning, tool calls; attachments are counted apart), from
 * the cache, counting (and caching) the ones missing.
 */
export async function storedTextTokens(store: TurnStore, tokenizer: Tokenizer, turns: readonly TurnRecord[]): Promise<Map<number, number>> {
  const key = countCacheKey(tokenizer);
  const counts = key === null ? new Map<number, number>() : await store.tokenCounts(turns.map((t) => t.rowid), key);
  const missing = new Map<number, number>();
  for (const t of turns) {
    if (!counts.has(t.rowid)) missing.set(t.rowid, tokenizer.count(sentMessageText(t)));
  }
  if (missing.size > 0) {
    if (key !== null) await store.saveTokenCounts(missing, key);
    for (const [k, v] of missing) counts.set(k, v);
  }
  return counts;
}
