import { inListSize, limitsOf } from '../storage/limits.js';
import { chunks, inChunks, placeholders } from '../store/turn-store.js';
import type { StorageDriver } from '../contracts/types.js';
import { createSummaryHierarchy } from './summary-hierarchy.js';
import { createSummaryLookups } from './summary-lookups.js';
import { type SummaryRecord, selectSummaries } from './summary-rows.js';

export type { NewSummary, SummaryRecord } from './summary-rows.js';

/**
 * Who makes summaries now: the summarizer's name and version, and how its fallback signs what it writes when the
 * summarizer fails (`extractive (llm:… failed)`; null when the summarizer is the fallback itself). A summary the
 * fallback made stands: the LLM is not asked again for it.
 */
export interface Maker {
  name: string;
  version: number;
  fallbackPrefix: string | null;
}

// A summary made by another summarizer or version: parameters n, n + 1, n + 2 are the name, the version and the
// fallback's prefix (makerParams).
const old = (n: number) => `NOT (made_by = ?${n} AND prompt_version = ?${n + 1}) AND (?${n + 2} IS NULL OR substr(made_by, 1, length(?${n + 2})) <> ?${n + 2})`;
const makerParams = (m: Maker) => [m.name, m.version, m.fallbackPrefix];

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

    /**
     * Rewrites a summary's text in place (regeneration): its tags only grow. Only while it is still stored (a forget
     * or a move to another branch may have removed it while its new text was written): otherwise nothing changes.
     */
    async rewrite(s: SummaryRecord, text: string, tokens: number, madeBy: string, version: number, tags: string[], related: string[]): Promise<void> {
      const all = [...tags, ...related];
      const stored = 'SELECT rowid FROM summaries WHERE rowid = ? AND id = ?';
      await driver.batch([
        { sql: `DELETE FROM summaries_fts WHERE rowid = (${stored})`, params: [s.rowid, s.id] },
        // The text changed: its vector is re-embedded by the background queue.
        { sql: `DELETE FROM embeddings WHERE conversation_id = ? AND kind = 'summary' AND ref = (${stored})`, params: [s.conversationId, s.rowid, s.id] },
        { sql: 'UPDATE summaries SET text = ?, tokens = ?, made_by = ?, prompt_version = ?, tags = ?, related = ?, stale = 0 WHERE rowid = ? AND id = ?',
          params: [text, tokens, madeBy, version, JSON.stringify(tags), JSON.stringify(related), s.rowid, s.id] },
        { sql: `INSERT INTO summaries_fts (rowid, text, tags) SELECT rowid, ?, ? FROM summaries WHERE rowid = ? AND id = ?`, params: [text, all.join(' '), s.rowid, s.id] },
        ...(s.kind === 'segment' ? [{ sql: `INSERT OR IGNORE INTO summary_tags (conversation_id, tag, summary_rowid) SELECT ?, value, ? FROM json_each(?) WHERE EXISTS (${stored})`,
          params: [s.conversationId, s.rowid, JSON.stringify(all), s.rowid, s.id] }] : []),
      ]);
    },

    /** The newest conversation (last updated first) holding a summary another summarizer or version made; null: none. */
    async outdatedConversation(maker: Maker): Promise<string | null> {
      const rows = await driver.query<{ id: string }>(
        `SELECT c.id AS id FROM conversations c WHERE EXISTS (SELECT 1 FROM summaries WHERE conversation_id = c.id AND ${old(1)})
         ORDER BY c.updated_at DESC, c.id LIMIT 1`, makerParams(maker));
      return rows[0]?.id ?? null;
    },

    /**
     * Up to `limit` of the conversation's summaries another summarizer or version made, in the order a rebuild
     * takes them: segments first, then each level of roll-ups (made from the level below), tag summaries last.
     */
    outdated(conversationId: string, maker: Maker, limit: number): Promise<SummaryRecord[]> {
      return selectSummaries(driver, `conversation_id = ?1 AND ${old(2)} ORDER BY kind = 'tag', level, first_seq LIMIT ?5`, [conversationId, ...makerParams(maker), limit]);
    },

    /** Summaries in all, and those the current summarizer (or its fallback) made: two counts, no text read. */
    async versions(maker: Maker): Promise<{ total: number; done: number }> {
      const rows = await driver.query<{ total: number; old: number }>(
        `SELECT (SELECT COUNT(*) FROM summaries) AS total, (SELECT COUNT(*) FROM summaries WHERE ${old(1)}) AS old`, makerParams(maker));
      const total = Number(rows[0]?.total ?? 0);
      return { total, done: total - Number(rows[0]?.old ?? 0) };
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
