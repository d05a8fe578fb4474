// Which words a conversation's turns hold, for the web search's query: what memory knows, what is private, how a name
// was used before.
import type { StorageDriver } from '../contracts/types.js';
import { ftsMatch } from '../text/fts-words.js';

export function turnWords(driver: StorageDriver) {
  return {
    /**
     * Which of `words` occur (as the index stems them) in the conversation's turns — every branch — that are private
     * (`private: true`) or not: what a web query must leave out, or what memory already knows.
     */
    async wordsIn(conversationId: string, words: readonly string[], privateTurns: boolean): Promise<Set<string>> {
      const found = new Set<string>();
      for (const word of words) {
        const match = ftsMatch([word]);
        if (!match) continue;
        const rows = await driver.query<{ n: number }>(
          `SELECT 1 AS n FROM turns_fts JOIN turns t ON t.rowid = turns_fts.rowid WHERE turns_fts MATCH ? AND t.conversation_id = ? AND t.private = ? LIMIT 1`,
          [match, conversationId, privateTurns ? 1 : 0]);
        if (rows.length > 0) found.add(word);
      }
      return found;
    },

    /** Texts of at most `limit` of the conversation's non-private turns holding `word` (as the index stems it). */
    async textsWith(conversationId: string, word: string, limit: number): Promise<string[]> {
      const match = ftsMatch([word]);
      if (!match) return [];
      const rows = await driver.query<{ text: string }>(
        `SELECT t.text AS text FROM turns_fts JOIN turns t ON t.rowid = turns_fts.rowid WHERE turns_fts MATCH ? AND t.conversation_id = ? AND t.private = 0 LIMIT ?`,
        [match, conversationId, limit]);
      return rows.map((r) => String(r.text));
    },

    /** The conversation's private turns' text, newest first, up to `maxChars` characters. */
    async privateText(conversationId: string, maxChars: number): Promise<string> {
      const rows = await driver.query<{ text: string }>(`SELECT text FROM turns WHERE conversation_id = ? AND private = 1 ORDER BY rowid DESC LIMIT 50000`, [conversationId]);
      let out = '';
      for (const r of rows) { if (out.length >= maxChars) break; out += `${String(r.text)}\n`; }
      return out.slice(0, maxChars);
    },
  };
}
