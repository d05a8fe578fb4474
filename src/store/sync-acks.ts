// Tombstone compaction's SQL (schema 13): how far each peer has read this replica, the floors compaction leaves, and
// a resync under way. The engine decides (engine/sync-compaction.ts); this file only reads and builds statements.
import type { SqlValue, Statement, StorageDriver } from '../contracts/types.js';
import type { SyncCursor } from '../contracts/types-sync.js';

/** The floor compaction leaves: the highest tombstone row deleted, and the highest clock of those deleted (0: none). */
export interface TombstoneFloor {
  rowid: number;
  ord: number;
}

/** Peers whose acknowledgments are kept (the most recently heard from); one dropped counts as away. */
const MAX_PEERS = 64;
/** Conversation filters kept per peer (besides every conversation's). */
const MAX_SCOPES = 16;

/** The scope a receiver keys its cursor by: the sorted conversation filter, or '*' for all. */
export const scopeKey = (conversations: readonly string[] | null): string => (conversations ? JSON.stringify(conversations) : '*');

/** `AND <column> IN (…)` as one JSON parameter (any number of conversations, one bound value). */
function within(conversations: readonly string[] | null, column: string): { sql: string; params: SqlValue[] } {
  return conversations ? { sql: ` AND ${column} IN (SELECT value FROM json_each(?))`, params: [JSON.stringify(conversations)] } : { sql: '', params: [] };
}

type MarkedRow = { rowid: number; seq: number; id: string; text: string; name: string | null; conversation_id: string };

/** Tombstone compaction (schema 13): how far each peer has read this replica, and the floors. */
export function createSyncAcks(driver: StorageDriver) {
  return {
    /**
     * The floor a reader of `conversations` must pass: of every conversation (null: the highest of all), or the
     * highest of those conversations' own.
     */
    async floor(conversations: readonly string[] | null = null): Promise<TombstoneFloor> {
      if (conversations) {
        const rows = await driver.query<{ r: number | null; o: number | null }>('SELECT MAX(top_row) AS r, MAX(top_ord) AS o FROM sync_floors WHERE conversation_id IN (SELECT value FROM json_each(?))', [JSON.stringify(conversations)]);
        return { rowid: Number(rows[0]?.r ?? 0), ord: Number(rows[0]?.o ?? 0) };
      }
      const rows = await driver.query<{ value: string }>("SELECT value FROM pagewise_meta WHERE key = 'sync:floor'");
      const f = rows[0] ? JSON.parse(rows[0].value) as TombstoneFloor : { rowid: 0, ord: 0 };
      return { rowid: Number(f.rowid), ord: Number(f.ord) };
    },

    /** The floors of those conversations that have one. */
    async floors(conversationIds: readonly string[]): Promise<Map<string, TombstoneFloor>> {
      const rows = await driver.query<{ conversation_id: string; top_row: number; top_ord: number }>(
        'SELECT conversation_id, top_row, top_ord FROM sync_floors WHERE conversation_id IN (SELECT value FROM json_each(?))', [JSON.stringify(conversationIds)]);
      return new Map(rows.map((r) => [r.conversation_id, { rowid: Number(r.top_row), ord: Number(r.top_ord) }]));
    },

    /**
     * The tombstone row `peer` last showed it has read up to, reading `conversations` (0: none, or not a known peer),
     * or had shown before this replica renewed when that is further (schema 14).
     */
    async acked(peer: string, conversations: readonly string[] | null = null): Promise<number> {
      const rows = await driver.query<{ shown: number | null }>(
        'SELECT MAX(shown) AS shown FROM (SELECT shown FROM sync_acks WHERE peer = ?1 AND scope = ?2 UNION ALL SELECT shown FROM sync_acks_before WHERE peer = ?1 AND scope = ?2)',
        [peer, scopeKey(conversations)]);
      return Number(rows[0]?.shown ?? 0);
    },

    /** The lowest tombstone row read by the peers of every conversation acknowledged since `sinceIso` ('': all); null: none. */
    async compactBound(sinceIso: string): Promise<number | null> {
      const rows = await driver.query<{ n: number | null }>("SELECT MIN(tombstones) AS n FROM sync_acks WHERE scope = '*' AND acked_at >= ?", [sinceIso]);
      return rows[0]?.n === null || rows[0]?.n === undefined ? null : Number(rows[0].n);
    },

    /**
     * The next `limit` tombstones of single messages at or below row `upTo` (a whole conversation's stay: one row per
     * forget of a conversation, and what covers turns written offline that no replica has seen): their last row and
     * highest clock, or null when none is left. The last row stays: a new tombstone's row id follows it (never one
     * a peer's cursor has passed).
     */
    async compactable(upTo: number, limit: number): Promise<TombstoneFloor | null> {
      const rows = await driver.query<{ rowid: number | null; ord: number | null }>(
        `SELECT MAX(rowid) AS rowid, MAX(origin_ord) AS ord FROM (SELECT rowid, origin_ord FROM sync_tombstones
         WHERE rowid <= MIN(?, (SELECT MAX(rowid) FROM sync_tombstones) - 1) AND turn_id <> '' ORDER BY rowid LIMIT ?)`, [upTo, limit]);
      return rows[0]?.rowid === null || rows[0]?.rowid === undefined ? null : { rowid: Number(rows[0].rowid), ord: Number(rows[0].ord) };
    },

    /** Deletes single messages' tombstones up to `to` (a row `compactable` gave); the floors rise with them (schema trigger). */
    compactStatements(to: TombstoneFloor): Statement[] {
      return [{ sql: "DELETE FROM sync_tombstones WHERE rowid <= ? AND turn_id <> ''", params: [to.rowid] }];
    },

    /**
     * How far `peer` shows it has read this replica reading `conversations` (its signed cursor), and when; only the
     * MAX_PEERS peers heard from last are kept, MAX_SCOPES filters each.
     */
    ackStatements(peer: string, conversations: readonly string[] | null, cursor: SyncCursor, nowIso: string): Statement[] {
      return [
        {
          sql: `INSERT INTO sync_acks (peer, scope, shown, tombstones, acked_at) VALUES (?, ?, ?, 0, ?)
                ON CONFLICT (peer, scope) DO UPDATE SET shown = excluded.shown, tombstones = MIN(tombstones, excluded.shown), acked_at = excluded.acked_at`,
          params: [peer, scopeKey(conversations), cursor.tombstones, nowIso],
        },
        { sql: `DELETE FROM sync_acks WHERE peer NOT IN (SELECT peer FROM sync_acks GROUP BY peer ORDER BY MAX(acked_at) DESC, peer LIMIT ${MAX_PEERS})` },
        {
          sql: `DELETE FROM sync_acks WHERE peer = ?1 AND scope <> '*' AND scope NOT IN (SELECT scope FROM sync_acks WHERE peer = ?1 AND scope <> '*' ORDER BY acked_at DESC, scope LIMIT ${MAX_SCOPES})`,
          params: [peer],
        },
      ];
    },

    /** This replica has read all of `peer`'s tombstones since it showed its cursor: what it showed now counts. */
    settleAckStatement(peer: string): Statement {
      return { sql: "UPDATE sync_acks SET tombstones = shown WHERE peer = ? AND scope = '*'", params: [peer] };
    },
  };
}

/** A resync under way (schema 13): its record, and the received turns it may let go. */
export function createSyncResyncs(driver: StorageDriver) {
  return {
    /** The shareable turns received from others (of `conversations`; null: all): what a resync may let go. */
    async resyncCount(conversations: readonly string[] | null): Promise<number> {
      const c = within(conversations, 'conversation_id');
      const rows = await driver.query<{ n: number }>(`SELECT COUNT(*) AS n FROM turns WHERE private = 0 AND via <> ''${c.sql}`, c.params);
      return Number(rows[0]?.n ?? 0);
    },

    /** Whether a resync with `peer` for `conversations` is under way (started, its last batch not yet in). */
    async resyncing(peer: string, conversations: readonly string[] | null): Promise<boolean> {
      return (await driver.query('SELECT 1 FROM sync_resyncs WHERE peer = ? AND scope = ?', [peer, scopeKey(conversations)])).length > 0;
    },

    /**
     * A resync's start, one transaction: it is recorded, the turns received from others are marked (nothing goes yet),
     * and this replica's cursor for `peer` under that filter is dropped, so `peer` is read from the start. (Its cursors
     * under other filters stay: nothing is let go that `peer` still holds.)
     */
    startResyncStatements(peer: string, conversations: readonly string[] | null, nowIso: string): Statement[] {
      const scope = scopeKey(conversations);
      const c = within(conversations, 'conversation_id');
      return [
        { sql: 'INSERT OR IGNORE INTO sync_resyncs (peer, scope, started_at) VALUES (?, ?, ?)', params: [peer, scope, nowIso] },
        { sql: `INSERT OR IGNORE INTO sync_resync_marks (peer, scope, turn_rowid) SELECT ?, ?, rowid FROM turns WHERE private = 0 AND via <> ''${c.sql}`, params: [peer, scope, ...c.params] },
        { sql: 'DELETE FROM sync_peers WHERE peer = ? AND scope = ?', params: [peer, scope] },
      ];
    },

    /** Whether a resync with `peer` is under way for any conversation filter. */
    async resyncingAny(peer: string): Promise<boolean> {
      return (await driver.query('SELECT 1 FROM sync_resyncs WHERE peer = ? LIMIT 1', [peer])).length > 0;
    },

    /**
     * A cursor from the start for `peer`, kept when none is (in the transaction of the first tombstones received from
     * it): a replica that hears from a peer no longer compacts as one alone (schema trigger sync_tombstones_alone).
     */
    heardStatement(peer: string, conversations: readonly string[] | null, nowIso: string): Statement {
      return { sql: "INSERT OR IGNORE INTO sync_peers (peer, scope, turns, tombstones, receipt, updated_at) VALUES (?, ?, 0, 0, '', ?)", params: [peer, scopeKey(conversations), nowIso] };
    },

    /** Turns `peer` sent (by conversation, id and hash, one JSON parameter): no longer marked, in any resync with it. */
    unmarkStatement(peer: string, turns: readonly { conversationId: string; id: string; contentHash: string }[]): Statement {
      return {
        sql: `DELETE FROM sync_resync_marks WHERE peer = ? AND turn_rowid IN (SELECT t.rowid FROM json_each(?) j
                JOIN turns t ON t.conversation_id = j.value ->> 0 AND t.id = j.value ->> 1 AND t.content_hash = j.value ->> 2)`,
        params: [peer, JSON.stringify(turns.map((t) => [t.conversationId, t.id, t.contentHash]))],
      };
    },

    /** Still-marked turns of the resync (the peer's last batch is in: it no longer holds them), by conversation. */
    async markedRows(peer: string, conversations: readonly string[] | null, limit: number): Promise<MarkedRow[]> {
      return await driver.query<MarkedRow>(
        `SELECT t.rowid, t.seq, t.id, t.text, t.name, t.conversation_id FROM sync_resync_marks m JOIN turns t ON t.rowid = m.turn_rowid
         WHERE m.peer = ? AND m.scope = ? ORDER BY t.conversation_id, t.rowid LIMIT ?`, [peer, scopeKey(conversations), limit]);
    },

    /** Marks of turns let go (in their removal's transaction). */
    unmarkRowsStatement(peer: string, conversations: readonly string[] | null, rowids: readonly number[]): Statement {
      return { sql: 'DELETE FROM sync_resync_marks WHERE peer = ? AND scope = ? AND turn_rowid IN (SELECT value FROM json_each(?))', params: [peer, scopeKey(conversations), JSON.stringify(rowids)] };
    },

    /** The resync is over: its marks (of turns gone meanwhile) and its record go. */
    endResyncStatements(peer: string, conversations: readonly string[] | null): Statement[] {
      const scope = scopeKey(conversations);
      return [
        { sql: 'DELETE FROM sync_resync_marks WHERE peer = ? AND scope = ?', params: [peer, scope] },
        { sql: 'DELETE FROM sync_resyncs WHERE peer = ? AND scope = ?', params: [peer, scope] },
      ];
    },
  };
}
