import { chunks, inChunks, placeholders } from '../store/turn-store.js';
import type { SqlValue, StorageDriver } from '../contracts/types.js';
import { type NewSummary, type SummaryRecord, insertSummary, selectSummaries } from './summary-rows.js';

// The summaries of one kind (?2) and level (?3) not rolled up: those after the newest rolled-up one (a roll-up always
// takes the oldest of its level not rolled up yet).
const UNROLLED = `conversation_id = ?1 AND kind = ?2 AND level = ?3 AND parent_id IS NULL AND first_seq >
  COALESCE((SELECT first_seq FROM summaries WHERE conversation_id = ?1 AND kind = ?2 AND level = ?3 AND parent_id IS NOT NULL
            ORDER BY first_seq DESC LIMIT 1), -1)`;

/**
 * The memory hierarchy as compaction moves it: the watermark, the frontier (what is not rolled up yet) and the
 * statements that commit a segment, a roll-up or a tag summary's next version. `per`: values per IN list beside
 * the conversation id.
 */
export function createSummaryHierarchy(driver: StorageDriver, per: number) {
  const select = (where: string, params: SqlValue[]): Promise<SummaryRecord[]> => selectSummaries(driver, where, params);

  const master = async (conversationId: string): Promise<SummaryRecord | null> => {
    const rows = await select("conversation_id = ? AND kind = 'master' AND parent_id IS NULL ORDER BY level DESC, first_seq DESC, rowid DESC LIMIT 1", [conversationId]);
    return rows[0] ?? null;
  };

  return {
    /** The first seq not compacted (null before the first compaction) and how many compactions ran. */
    async state(conversationId: string): Promise<{ watermark: number; events: number } | null> {
      const rows = await driver.query<{ watermark: number; events: number }>('SELECT watermark, events FROM compaction_state WHERE conversation_id = ?', [conversationId]);
      return rows[0] ? { watermark: Number(rows[0].watermark), events: Number(rows[0].events) } : null;
    },

    /**
     * Summaries not rolled up yet (segments, roll-ups, the master), oldest first: the compacted past, whole.
     *
     * Read level by level without visiting what was rolled up (every onTurnComplete measures the frontier, and a long
     * conversation has thousands of rolled-up summaries): a roll-up always takes the oldest summaries of its level
     * that are not rolled up, so at each level those not rolled up are the ones after the newest rolled-up one, and
     * only the newest master is not rolled up.
     */
    async frontier(conversationId: string): Promise<SummaryRecord[]> {
      const out: SummaryRecord[] = [];
      for (let level = 1; ; level++) {
        const kind = level === 1 ? 'segment' : 'rollup';
        const rows = await select(UNROLLED, [conversationId, kind, level]);
        out.push(...rows);
        if (rows.length > 0) continue;
        // Levels in use run from 1 up without gaps: stop at the first level with no summary at all.
        const any = await driver.query('SELECT 1 FROM summaries WHERE conversation_id = ? AND kind = ? AND level = ? LIMIT 1', [conversationId, kind, level]);
        if (any.length === 0 && level > 1) break;
      }
      const current = await master(conversationId);
      if (current) out.push(current);
      return out.sort((a, b) => a.firstSeq - b.firstSeq || b.level - a.level);
    },

    /** The oldest `limit` summaries of `level` not rolled up yet (segments at level 1, roll-ups above), oldest first. */
    unrolled(conversationId: string, level: number, limit: number): Promise<SummaryRecord[]> {
      return select(`${UNROLLED} ORDER BY first_seq LIMIT ?4`, [conversationId, level === 1 ? 'segment' : 'rollup', level, limit]);
    },

    /** The master summary not rolled up (the newest one), if any. */
    master,

    /** Whether any of `ids` was rolled up already (by another compaction). */
    async rolledUp(conversationId: string, ids: readonly string[]): Promise<boolean> {
      const rows = await inChunks(ids, (chunk) => driver.query(
        `SELECT 1 FROM summaries WHERE conversation_id = ? AND id IN (${placeholders(chunk.length)}) AND parent_id IS NOT NULL LIMIT 1`, [conversationId, ...chunk]), per);
      return rows.length > 0;
    },

    /**
     * One segment's compaction, atomically: the summary, its index rows and the watermark. (The tag summaries of its
     * tags fold it in afterwards: each knows the last segment it folded.)
     */
    async commitSegment(s: NewSummary, watermark: number, nowIso: string): Promise<void> {
      await driver.batch([
        ...insertSummary(s),
        { sql: `INSERT INTO compaction_state (conversation_id, watermark, events, updated_at) VALUES (?, ?, 0, ?)
                ON CONFLICT (conversation_id) DO UPDATE SET watermark = excluded.watermark, updated_at = excluded.updated_at`, params: [s.conversationId, watermark, nowIso] },
      ]);
    },

    /** Counts a finished compaction. */
    async countEvent(conversationId: string, nowIso: string): Promise<void> {
      await driver.batch([{ sql: 'UPDATE compaction_state SET events = events + 1, updated_at = ? WHERE conversation_id = ?', params: [nowIso, conversationId] }]);
    },

    /** A roll-up (or the master) and the summaries it rolls up, atomically. */
    async commitRollup(s: NewSummary, childIds: readonly string[]): Promise<void> {
      await driver.batch([
        ...insertSummary(s),
        ...chunks(childIds, per).map((chunk) => (
          { sql: `UPDATE summaries SET parent_id = ? WHERE conversation_id = ? AND id IN (${placeholders(chunk.length)})`, params: [s.id, s.conversationId, ...chunk] })),
      ]);
    },

    /**
     * A tag summary: the first of its tag, or the next version of `previousId`, which it folds in (the previous
     * one is kept, rolled up into it, like an earlier master). False, and nothing written, when another compaction
     * wrote the tag's next version first.
     */
    async foldTagSummary(s: NewSummary, previousId: string | null): Promise<boolean> {
      const current = await driver.query<{ id: string }>(
        "SELECT id FROM summaries WHERE conversation_id = ? AND tag = ? AND kind = 'tag' AND parent_id IS NULL", [s.conversationId, s.tag ?? null]);
      if ((current[0]?.id ?? null) !== previousId) return false;
      await driver.batch([
        ...insertSummary(s),
        ...(previousId ? [{ sql: 'UPDATE summaries SET parent_id = ? WHERE conversation_id = ? AND id = ?', params: [s.id, s.conversationId, previousId] }] : []),
      ]);
      return true;
    },
  };
}
