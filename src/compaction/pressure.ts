import { CACHED_CONVERSATIONS, Lru } from '../common/cache.js';
import { prefixLength, storedTextTokens } from '../store/stored-tokens.js';
import { TOKENS_PER_MESSAGE, countCacheKey } from '../tokens/chat-format.js';
import type { CompactorDeps } from './compactor-types.js';

/** Where a conversation stands: tokens of its active history and what bounds it. */
export interface Pressure {
  tokens: number;
  prefixEnd: number;
  watermark: number;
  turnCount: number;
}

/** The monitor of seed 000: a conversation's pressure, and the threshold it crossed. */
export function createPressureGauge(d: Pick<CompactorDeps, 'turns' | 'summaries' | 'tokenizer' | 'settings'>) {
  const s = d.settings;
  // The active history's turn tokens as last measured: from the watermark to `end` (exclusive), per conversation.
  const measured = new Lru<string, { watermark: number; end: number; tokens: number }>(CACHED_CONVERSATIONS);

  const pressure = async (conversationId: string): Promise<Pressure> => {
    const tok = await d.tokenizer();
    const head = await d.turns.range(conversationId, 0, 16);
    const prefixEnd = prefixLength(head);
    const state = await d.summaries.state(conversationId);
    const watermark = Math.max(prefixEnd, state?.watermark ?? 0);
    const turnCount = await d.turns.turnCount(conversationId);
    const key = countCacheKey(tok);
    let active: number | null = null;
    if (key !== null) {
      // Turns are only appended and their counts never change: the sum is carried forward from the last measure,
      // adding the turns stored since (a full recount only when the watermark moved).
      const last = measured.get(conversationId);
      const more = last && last.watermark === watermark ? await d.summaries.turnTokensFrom(conversationId, last.end, key, TOKENS_PER_MESSAGE) : null;
      const all = more && last ? { tokens: last.tokens + more.tokens, turns: last.end - watermark + more.turns }
        : await d.summaries.turnTokensFrom(conversationId, watermark, key, TOKENS_PER_MESSAGE);
      if (all) {
        active = all.tokens;
        measured.set(conversationId, { watermark, end: watermark + all.turns, tokens: all.tokens });
      }
    }
    if (active === null) {
      const rest = await d.turns.range(conversationId, watermark, 1_000_000);
      const counts = await storedTextTokens(d.turns, tok, rest);
      active = rest.reduce((n, t) => n + counts.get(t.rowid)! + TOKENS_PER_MESSAGE, 0);
    }
    const prefix = [...(await storedTextTokens(d.turns, tok, head.slice(0, prefixEnd))).values()].reduce((n, c) => n + c + TOKENS_PER_MESSAGE, 0);
    const frontier = (await d.summaries.frontier(conversationId)).reduce((n, x) => n + x.tokens, 0);
    return { tokens: prefix + frontier + active, prefixEnd, watermark, turnCount };
  };

  /** The threshold crossed, if any. */
  const due = (p: Pressure): 'hard' | 'soft' | null => {
    if (p.tokens > s.hardThreshold * s.contextWindow) return 'hard';
    if (p.tokens > s.softThreshold * s.contextWindow) return 'soft';
    if (s.nSum !== null && p.turnCount - p.watermark - s.protectedRecentTurns >= s.nSum) return 'soft';
    return null;
  };

  return {
    /** Drops what is cached of a conversation (its turns were removed: forget). */
    uncache(conversationId: string): void {
      measured.delete(conversationId);
    },
    pressure,
    due,
  };
}

export type PressureGauge = ReturnType<typeof createPressureGauge>;
