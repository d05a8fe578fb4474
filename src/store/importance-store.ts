import { inJsonLists, jsonLists, limitsOf } from '../storage/limits.js';
import type { StorageDriver } from '../contracts/types.js';

/**
 * What decides what survives under pressure besides relevance and recency (seed 002): the user's pins and how often
 * a turn was recalled.
 */
export function createImportanceStore(driver: StorageDriver) {
  // Id lists go in as JSON (one parameter), in as many lists as the driver's string limit needs.
  const limits = limitsOf(driver);
  return {
    async pin(conversationId: string, turnId: string, nowIso: string): Promise<void> {
      // A pin and an unpin are kept with their times: sync merges them, the later one winning (SyncPin).
      await driver.batch([
        { sql: 'INSERT OR IGNORE INTO pins (conversation_id, turn_id, pinned_at) VALUES (?, ?, ?)', params: [conversationId, turnId, nowIso] },
        { sql: 'DELETE FROM sync_unpins WHERE conversation_id = ? AND turn_id = ?', params: [conversationId, turnId] },
      ]);
    },

    async unpin(conversationId: string, turnId: string): Promise<boolean> {
      const rows = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM pins WHERE conversation_id = ? AND turn_id = ?', [conversationId, turnId]);
      await driver.batch([
        { sql: 'DELETE FROM pins WHERE conversation_id = ? AND turn_id = ?', params: [conversationId, turnId] },
        { sql: 'INSERT OR REPLACE INTO sync_unpins (conversation_id, turn_id, unpinned_at) VALUES (?, ?, ?)', params: [conversationId, turnId, new Date().toISOString()] },
      ]);
      return Number(rows[0]?.n ?? 0) > 0;
    },

    async pinned(conversationId: string): Promise<string[]> {
      // Oldest pin first; pins of one millisecond by id, so replicas that synced list them alike.
      const rows = await driver.query<{ turn_id: string }>('SELECT turn_id FROM pins WHERE conversation_id = ? ORDER BY pinned_at, turn_id', [conversationId]);
      return rows.map((r) => r.turn_id);
    },

    /** Counts one more recall of each turn. */
    async recalled(conversationId: string, ids: readonly string[], nowMs: number): Promise<void> {
      if (ids.length === 0) return;
      // A repeated id counts once (IN), whichever list it falls in.
      await driver.batch(jsonLists([...new Set(ids)], limits).map((json) => ({
        sql: `INSERT INTO turn_recalls (turn_rowid, recalls, last_ms)
              SELECT rowid, 1, ? FROM turns WHERE conversation_id = ? AND id IN (SELECT value FROM json_each(?))
              ON CONFLICT (turn_rowid) DO UPDATE SET recalls = recalls + 1, last_ms = excluded.last_ms`,
        params: [nowMs, conversationId, json],
      })));
    },

    /** How often each turn was recalled (absent: never). */
    async recallCounts(conversationId: string, ids: readonly string[]): Promise<Map<string, number>> {
      if (ids.length === 0) return new Map();
      const rows = await inJsonLists([...new Set(ids)], limits, (json) => driver.query<{ id: string; recalls: number }>(
        `SELECT t.id AS id, r.recalls AS recalls FROM turns t JOIN turn_recalls r ON r.turn_rowid = t.rowid
         WHERE t.conversation_id = ? AND t.id IN (SELECT value FROM json_each(?))`, [conversationId, json]));
      return new Map(rows.map((r) => [r.id, Number(r.recalls)]));
    },
  };
}

export type ImportanceStore = ReturnType<typeof createImportanceStore>;
