import { inListSize, limitsOf } from '../storage/limits.js';
import { chunks, inChunks, placeholders } from '../store/turn-store.js';
import type { StorageDriver } from '../contracts/types.js';
import { createSummaryHierarchy } from './summary-hierarchy.js';
import { createSummaryLookups } from './summary-lookups.js';
import type { SummaryRecord } from './summary-rows.js';

export type { NewSummary, SummaryRecord } from './summary-rows.js';

/**
 * Every SQL statement of the memory hierarchy: the watermark and the summaries of every level. The hierarchy as
 * compaction moves it and the lookups of the other layers are built on their own; regeneration and the token
 * measure are here.
 */
export function createSummaryStore(driver: StorageDriver) {
  const limits = limitsOf(driver);
  // Values per IN list beside the conversation id (a roll-up's UPDATE binds its id too).
  const per = inListSize(limits, 2);

  return {
    ...createSummaryHierarchy(driver, per),
    ...createSummaryLookups(driver, per),

    /** Rewrites a summary's text in place (regeneration): its tags only grow. */
    async rewrite(s: SummaryRecord, text: string, tokens: number, madeBy: string, version: number, tags: string[], related: string[]): Promise<void> {
      const all = [...tags, ...related];
      await driver.batch([
        { sql: 'DELETE FROM summaries_fts WHERE rowid = ?', params: [s.rowid] },
        // The text changed: its vector is re-embedded by the background queue.
        { sql: "DELETE FROM embeddings WHERE conversation_id = ? AND kind = 'summary' AND ref = ?", params: [s.conversationId, s.rowid] },
        { sql: 'UPDATE summaries SET text = ?, tokens = ?, made_by = ?, prompt_version = ?, tags = ?, related = ?, stale = 0 WHERE rowid = ?',
          params: [text, tokens, madeBy, version, JSON.stringify(tags), JSON.stringify(related), s.rowid] },
        { sql: 'INSERT INTO summaries_fts (rowid, text, tags) VALUES (?, ?, ?)', params: [s.rowid, text, all.join(' ')] },
        ...(s.kind === 'segment' ? [{ sql: 'INSERT OR IGNORE INTO summary_tags (conversation_id, tag, summary_rowid) SELECT ?, value, ? FROM json_each(?)', params: [s.conversationId, s.rowid, JSON.stringify(all)] }] : []),
      ]);
    },

    async markStale(conversationId: string, ids: readonly string[] | null): Promise<number> {
      if (ids === null) {
        const rows = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM summaries WHERE conversation_id = ?', [conversationId]);
        await driver.batch([{ sql: 'UPDATE summaries SET stale = 1 WHERE conversation_id = ?', params: [conversationId] }]);
        return Number(rows[0]?.n ?? 0);
      }
      const unique = [...new Set(ids)];
      const counts = await inChunks(unique, (chunk) => driver.query<{ n: number }>(
        `SELECT COUNT(*) AS n FROM summaries WHERE conversation_id = ? AND id IN (${placeholders(chunk.length)})`, [conversationId, ...chunk]), per);
      // One transaction, one statement per slice of the list.
      await driver.batch(chunks(unique, per).map((chunk) => ({
        sql: `UPDATE summaries SET stale = 1 WHERE conversation_id = ? AND id IN (${placeholders(chunk.length)})`, params: [conversationId, ...chunk] })));
      return counts.reduce((n, r) => n + Number(r.n ?? 0), 0);
    },

    /**
     * Tokens of the turns from `fromSeq` on, from the count cache (markup included), and how many turns they are;
     * null when some are not cached.
     */
    /** The ids of the non-system turns at positions `from`…`to` now (a move to another branch changes them). */
    async turnIds(conversationId: string, from: number, to: number): Promise<string[]> {
      return (await driver.query<{ id: string }>("SELECT id FROM turns WHERE conversation_id = ? AND seq BETWEEN ? AND ? AND role <> 'system' ORDER BY seq", [conversationId, from, to])).map((r) => r.id);
    },

    async turnTokensFrom(conversationId: string, fromSeq: number, encoding: string, perMessage: number): Promise<{ tokens: number; turns: number } | null> {
      const rows = await driver.query<{ n: number; counted: number; tokens: number | null }>(
        `SELECT COUNT(*) AS n, COUNT(c.tokens) AS counted, SUM(c.tokens) AS tokens FROM turns t
         LEFT JOIN turn_tokens c ON c.turn_rowid = t.rowid AND c.encoding = ? WHERE t.conversation_id = ? AND t.seq >= ?`,
        [encoding, conversationId, fromSeq]);
      const r = rows[0]!;
      if (Number(r.n) !== Number(r.counted)) return null;
      return { tokens: Number(r.tokens ?? 0) + perMessage * Number(r.n), turns: Number(r.n) };
    },
  };
}

export type SummaryStore = ReturnType<typeof createSummaryStore>;
