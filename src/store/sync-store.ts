// The SQL of sync (issue 28): this replica's id, its changes after a receiver's cursor, the tombstones forget leaves,
// the cursors a receiver keeps per sender, and the turns' order keys. The engine's sync (engine/sync*.ts) decides;
// this file only reads and builds statements.
import type { SqlValue, Statement, StorageDriver } from '../contracts/types.js';
import type { SyncAlias, SyncCursor, SyncPin, SyncTombstone, SyncTurn } from '../contracts/types-sync.js';
import type { ChatMessage } from '../contracts/types.js';
import type { TurnRow } from './turn-store.js';
import { NEXT_ORD, NEXT_ROWID, OFF_PATH_SEQ, ORIGIN, nextOrdParams } from './order.js';
import type { Place } from './tree.js';
import { attachmentRefStatement } from './attachment-store.js';
import { sha256Hex } from '../common/parts.js';
import { createSyncAcks, createSyncResyncs, scopeKey } from './sync-acks.js';
import { createSyncIdentity } from './sync-identity-store.js';

export type { TombstoneFloor } from './sync-acks.js';

const ORD = 'origin_ord';

/** A turn as syncChanges reads it: the stored row's columns that travel, with its origin and order key. */
export type ChangeRow = Pick<TurnRow, 'rowid' | 'conversation_id' | 'id' | 'role' | 'name' | 'content' | 'tool_calls' | 'tool_call_id' | 'created_at' | 'content_hash'> & {
  [key: string]: SqlValue;
  origin: string;
  ord: number;
  branch: string;
  fork_after: string | null;
  fork_branch: string | null;
  fork_ord: number | null;
};

type TombstoneRow = { rowid: number; conversation_id: string; turn_id: string; content_hash: string; origin_ord: number; forgotten_at: string };

/** `AND conversation_id IN (…)` as one JSON parameter (any number of conversations, one bound value). */
function inConversations(conversations: readonly string[] | null, column = 'conversation_id'): { sql: string; params: SqlValue[] } {
  return conversations ? { sql: ` AND ${column} IN (SELECT value FROM json_each(?))`, params: [JSON.stringify(conversations)] } : { sql: '', params: [] };
}


/** What sync reads: this replica's id and cursors, its changes, tombstones, the order of a conversation, pins, aliases. */
function createSyncReads(driver: StorageDriver) {
  return {
    async replica(): Promise<string> {
      const rows = await driver.query<{ value: string }>("SELECT value FROM pagewise_meta WHERE key = 'replica'");
      return rows[0]!.value;
    },

    async cursor(peer: string, conversations: readonly string[] | null): Promise<SyncCursor> {
      const rows = await driver.query<{ turns: number; tombstones: number; receipt: string }>('SELECT turns, tombstones, receipt FROM sync_peers WHERE peer = ? AND scope = ?', [peer, scopeKey(conversations)]);
      const r = rows[0];
      return { turns: Number(r?.turns ?? 0), tombstones: Number(r?.tombstones ?? 0), ...(r?.receipt ? { receipt: r.receipt } : {}) };
    },

    /** The cursors kept for `peer` under other conversation filters than `conversations` (the 8 last updated). */
    async otherCursors(peer: string, conversations: readonly string[] | null): Promise<{ conversations: string[] | null; cursor: SyncCursor }[]> {
      const rows = await driver.query<{ scope: string; turns: number; tombstones: number; receipt: string }>(
        'SELECT scope, turns, tombstones, receipt FROM sync_peers WHERE peer = ? AND scope <> ? ORDER BY updated_at DESC LIMIT 8', [peer, scopeKey(conversations)]);
      return rows.map((r) => ({
        conversations: r.scope === '*' ? null : JSON.parse(r.scope) as string[],
        cursor: { turns: Number(r.turns), tombstones: Number(r.tombstones), ...(r.receipt ? { receipt: r.receipt } : {}) },
      }));
    },

    /**
     * Shareable turns after row `after` (never private ones, nor those received from `to`), by row id. Not filtered by
     * origin: a turn `to` wrote reaches it back only by another path (then it is skipped there by its id and hash),
     * while a copy of `to` that took a new id gets every turn written under the old one. `to` null: a resync's, all.
     */
    async changedTurns(after: number, to: string | null, conversations: readonly string[] | null, limit: number): Promise<ChangeRow[]> {
      const c = inConversations(conversations);
      return await driver.query<ChangeRow>(
        `SELECT rowid, conversation_id, id, role, name, content, tool_calls, tool_call_id, created_at, content_hash, ${ORIGIN} AS origin, ${ORD} AS ord, branch, fork_after, fork_branch, fork_ord
         FROM turns WHERE rowid > ? AND private = 0 AND via <> ?2${c.sql} ORDER BY rowid LIMIT ?`, [after, to ?? ' ', ...c.params, limit]);
    },

    async tombstones(after: number, conversations: readonly string[] | null, limit: number): Promise<{ rowid: number; tombstone: SyncTombstone }[]> {
      const c = inConversations(conversations);
      const rows = await driver.query<TombstoneRow>(`SELECT rowid, conversation_id, turn_id, content_hash, origin_ord, forgotten_at FROM sync_tombstones WHERE rowid > ?${c.sql} ORDER BY rowid LIMIT ?`, [after, ...c.params, limit]);
      return rows.map((r) => ({
        rowid: Number(r.rowid),
        tombstone: r.turn_id === ''
          ? { conversationId: r.conversation_id, ord: Number(r.origin_ord), forgottenAt: r.forgotten_at }
          : { conversationId: r.conversation_id, id: r.turn_id, contentHash: r.content_hash, ord: Number(r.origin_ord), forgottenAt: r.forgotten_at },
      }));
    },

    /**
     * The clock of the conversation's last whole forget (turns with a lower key are forgotten; 0: none), and for each
     * of `ids` that was forgotten: the message's content hash and the clock of the forget (a copy of that message
     * written before it is forgotten).
     */
    async forgotten(conversationId: string, ids: readonly string[]): Promise<{ before: number; turns: Map<string, { hash: string; ord: number; removed?: true }[]> }> {
      const e = await driver.query<{ before: number }>("SELECT COALESCE(MAX(origin_ord), 0) AS before FROM sync_tombstones WHERE conversation_id = ? AND turn_id = ''", [conversationId]);
      const rows = await driver.query<{ turn_id: string; content_hash: string; origin_ord: number; removed: number }>(
        `SELECT turn_id, content_hash, origin_ord, 0 AS removed FROM sync_tombstones WHERE conversation_id = ?1 AND turn_id IN (SELECT value FROM json_each(?2)) AND turn_id <> ''
         UNION ALL SELECT turn_id, content_hash, ord + 1, 1 FROM sync_removed WHERE conversation_id = ?1 AND turn_id IN (SELECT value FROM json_each(?2))
         UNION ALL SELECT turn_id, content_hash, ord, 1 FROM sync_forgot WHERE conversation_id = ?1 AND turn_id IN (SELECT value FROM json_each(?2))`,
        [conversationId, JSON.stringify(ids)]);
      // A turn removed here by a forget, or named by a forget whose tombstone was compacted since, counts as forgotten
      // (up to its own key, or the forget's clock).
      const turns = new Map<string, { hash: string; ord: number; removed?: true }[]>();
      for (const r of rows) turns.set(r.turn_id, [...(turns.get(r.turn_id) ?? []), { hash: r.content_hash, ord: Number(r.origin_ord), ...(Number(r.removed) === 1 ? { removed: true as const } : {}) }]);
      return { before: Number(e[0]?.before ?? 0), turns };
    },

    /**
     * Stored turns a tombstone covers: written before the conversation was forgotten whole (an order key below
     * `before`), or a message named (same id and content) written before its forget (a copy stored again later is a
     * new message).
     */
    async covered(conversationId: string, before: number, turns: readonly SyncTombstone[]): Promise<{ rowid: number; seq: number; id: string; text: string; name: string | null }[]> {
      // The named ones found by their id (an index seek each), not by scanning the list for every turn.
      const named = JSON.stringify(turns.map((t) => [t.id, t.contentHash, t.ord]));
      return await driver.query(
        `SELECT rowid, seq, id, text, name FROM turns WHERE conversation_id = ?1 AND ${ORD} < ?2
         UNION SELECT t.rowid, t.seq, t.id, t.text, t.name FROM json_each(?3) j
           JOIN turns t ON t.conversation_id = ?1 AND t.id = j.value ->> 0 AND t.content_hash = j.value ->> 1 AND t.${ORD} < j.value ->> 2
         ORDER BY seq`,
        [conversationId, before, named]);
    },

    /** Of `ids`, the stored turns of the conversation, with their content hashes (one JSON parameter, no content read). */
    async storedHashes(conversationId: string, ids: readonly string[]): Promise<Map<string, string>> {
      const rows = await driver.query<{ id: string; content_hash: string }>('SELECT id, content_hash FROM turns WHERE conversation_id = ? AND id IN (SELECT value FROM json_each(?))', [conversationId, JSON.stringify(ids)]);
      return new Map(rows.map((r) => [r.id, r.content_hash]));
    },

    /** Pin states of the conversations (all: null) — pins and unpins with their times. */
    async pins(conversations: readonly string[] | null): Promise<SyncPin[]> {
      const c = inConversations(conversations);
      // Not a private turn's: its id stays where it was written too.
      const shared = (table: string) => `NOT EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = ${table}.conversation_id AND t.id = ${table}.turn_id AND t.private = 1)`;
      const pinned = await driver.query<{ conversation_id: string; turn_id: string; pinned_at: string }>(`SELECT conversation_id, turn_id, pinned_at FROM pins WHERE ${shared('pins')}${c.sql} ORDER BY conversation_id, turn_id`, c.params);
      const unpinned = await driver.query<{ conversation_id: string; turn_id: string; unpinned_at: string }>(`SELECT conversation_id, turn_id, unpinned_at FROM sync_unpins WHERE ${shared('sync_unpins')}${c.sql} ORDER BY conversation_id, turn_id`, c.params);
      return [
        ...pinned.map((p) => ({ conversationId: p.conversation_id, messageId: p.turn_id, pinned: true, at: p.pinned_at })),
        ...unpinned.map((p) => ({ conversationId: p.conversation_id, messageId: p.turn_id, pinned: false, at: p.unpinned_at })),
      ];
    },

    /** Manual aliases of the conversations (all, with the global ones: null). */
    async aliases(conversations: readonly string[] | null): Promise<SyncAlias[]> {
      const c = inConversations(conversations);
      const rows = await driver.query<{ conversation_id: string; alias: string; tag: string; created_at: string; removed: number }>(
        `SELECT conversation_id, alias, tag, created_at, 0 AS removed FROM tag_aliases WHERE source = 'manual'${c.sql}
         UNION ALL SELECT conversation_id, alias, '', removed_at, 1 FROM sync_alias_removals WHERE 1 = 1${c.sql} ORDER BY 1, 2`, [...c.params, ...c.params]);
      return rows.map((r) => ({ conversationId: r.conversation_id === '' ? null : r.conversation_id, alias: r.alias, tag: r.tag, createdAt: r.created_at, ...(Number(r.removed) === 1 ? { removed: true as const } : {}) }));
    },
  };
}

/** What makes a copy find itself and keeps a wrong clock's changes aside: the secret, the rows receipts name, held changes. */
function createSyncChecks(driver: StorageDriver) {
  return {
    /**
     * The secret this replica signs its receipts with (never leaves it; a copy of the database shares it). A database
     * that held turns before schema 12 has none yet: it is derived, once, from what only copies of it share — its id
     * and its first turn's id and local storage time (never sent to a peer) — so that copies made before the upgrade,
     * each upgraded on its own, still recognise each other's receipts.
     */
    async secret(): Promise<string> {
      const rows = await driver.query<{ value: string }>("SELECT value FROM pagewise_meta WHERE key = 'sync:secret'");
      if (rows[0]) return rows[0].value;
      const basis = await driver.query<{ value: string }>(
        `SELECT (SELECT value FROM pagewise_meta WHERE key = 'replica') || COALESCE((SELECT ' ' || stored_at || ' ' || id FROM turns ORDER BY rowid LIMIT 1), '') AS value`);
      const derived = await sha256Hex(new TextEncoder().encode(`pagewise sync secret\n${basis[0]!.value}`));
      await driver.batch([{ sql: "INSERT OR IGNORE INTO pagewise_meta (key, value) VALUES ('sync:secret', ?)", params: [derived] }]);
      return (await driver.query<{ value: string }>("SELECT value FROM pagewise_meta WHERE key = 'sync:secret'"))[0]!.value;
    },

    /** Whether this replica holds (or forgot) the shareable turn at row `rowid` with that hash: what a receipt names. */
    async hasTurnRow(rowid: number, hash: string): Promise<boolean> {
      const rows = await driver.query('SELECT 1 FROM turns WHERE rowid = ?1 AND content_hash = ?2 UNION ALL SELECT 1 FROM sync_removed WHERE rowid = ?1 AND content_hash = ?2', [rowid, hash]);
      return rows.length > 0;
    },

    /**
     * The clock this replica stored a forget under, when it has it already (matched by what it forgets and when it
     * was made): a forget taken as made on arrival (its sender's clock ahead) keeps that clock when it comes again.
     */
    async storedForgetOrd(t: SyncTombstone): Promise<number | null> {
      const rows = await driver.query<{ ord: number }>('SELECT MIN(origin_ord) AS ord FROM sync_tombstones WHERE conversation_id = ? AND turn_id = ? AND content_hash = ? AND forgotten_at = ?',
        [t.conversationId, t.id ?? '', t.contentHash ?? '', t.forgottenAt]);
      return rows[0]?.ord === null || rows[0]?.ord === undefined ? null : Number(rows[0].ord);
    },

    /** Whether this replica's tombstone at row `rowid` is that one. */
    async hasTombstoneRow(rowid: number, t: SyncTombstone): Promise<boolean> {
      const rows = await driver.query('SELECT 1 FROM sync_tombstones WHERE rowid = ? AND conversation_id = ? AND turn_id = ? AND content_hash = ? AND origin_ord = ?',
        [rowid, t.conversationId, t.id ?? '', t.contentHash ?? '', t.ord]);
      return rows.length > 0;
    },

    /** Held changes whose clock this replica has reached (`bound`: its time plus the skew it allows), oldest first. */
    async due(bound: number, limit: number): Promise<{ rowid: number; item: string; peer: string }[]> {
      return await driver.query(`SELECT rowid, item, peer FROM sync_held WHERE ord <= ? ORDER BY ord, rowid LIMIT ?`, [bound, limit]);
    },

    /** How many changes are held, and how far ahead of `now` the furthest is (ms). */
    async held(now: number): Promise<{ count: number; aheadMs: number }> {
      const rows = await driver.query<{ n: number; top: number | null }>('SELECT COUNT(*) AS n, MAX(ord) AS top FROM sync_held');
      return { count: Number(rows[0]?.n ?? 0), aheadMs: Math.max(0, Number(rows[0]?.top ?? now) - now) };
    },
  };
}

/** The statements sync writes (in its callers' transactions): cursors, tombstones, received turns, pin states. */
function createSyncWrites() {
  return {
    /**
     * The statement that records how far this replica has read `peer` (in the batch's own transaction). A cursor
     * without a receipt never replaces one with it: `peer` signs every cursor it serves past the start, so an unsigned
     * one comes from a token holder setting it back, and would take away this replica's proof of what it read.
     */
    saveCursor(peer: string, conversations: readonly string[] | null, cursor: SyncCursor, nowIso: string): Statement {
      return {
        sql: `INSERT INTO sync_peers (peer, scope, turns, tombstones, receipt, updated_at) VALUES (?, ?, ?, ?, ?, ?)
              ON CONFLICT (peer, scope) DO UPDATE SET turns = excluded.turns, tombstones = excluded.tombstones, receipt = excluded.receipt, updated_at = excluded.updated_at
              WHERE excluded.receipt <> '' OR sync_peers.receipt = ''`,
        params: [peer, scopeKey(conversations), cursor.turns, cursor.tombstones, cursor.receipt ?? '', nowIso],
      };
    },


    /** A change stamped too far ahead, kept as received until this replica's clock reaches it. */
    holdStatement(conversationId: string, turnId: string, ord: number, item: unknown, peer: string, nowIso: string): Statement {
      return {
        sql: "INSERT OR IGNORE INTO sync_held (conversation_id, kind, turn_id, ord, item, peer, held_at) VALUES (?, 'turn', ?, ?, ?, ?, ?)",
        params: [conversationId, turnId, ord, JSON.stringify(item), peer, nowIso],
      };
    },

    /** Held changes released (by row id, one JSON parameter). */
    releaseStatement(rowids: readonly number[]): Statement {
      return { sql: 'DELETE FROM sync_held WHERE rowid IN (SELECT value FROM json_each(?))', params: [JSON.stringify(rowids)] };
    },

    /** Held turns a forget covers, as `covered` finds stored ones: written before `before`, or named and written before their forget. */
    dropHeldStatement(conversationId: string, before: number, named: readonly SyncTombstone[]): Statement {
      return {
        sql: `DELETE FROM sync_held WHERE conversation_id = ?1 AND kind = 'turn' AND (ord < ?2 OR rowid IN (
                SELECT h.rowid FROM json_each(?3) j JOIN sync_held h ON h.conversation_id = ?1 AND h.kind = 'turn' AND h.turn_id = j.value ->> 0
                WHERE h.item ->> 'contentHash' = j.value ->> 1 AND h.ord < j.value ->> 2))`,
        params: [conversationId, before, JSON.stringify(named.map((t) => [t.id, t.contentHash, t.ord]))],
      };
    },

    /** A local forget's removal of held turns: the whole conversation's, or those with these ids. */
    forgetHeldStatement(conversationId: string, ids: readonly string[] | null): Statement {
      return ids === null
        ? { sql: "DELETE FROM sync_held WHERE conversation_id = ? AND kind = 'turn'", params: [conversationId] }
        : { sql: "DELETE FROM sync_held WHERE conversation_id = ? AND kind = 'turn' AND turn_id IN (SELECT value FROM json_each(?))", params: [conversationId, JSON.stringify(ids)] };
    },

    /** Records a tombstone (an insert that a repeat ignores). */
    tombstoneStatement(t: SyncTombstone): Statement {
      return t.id === undefined
        ? { sql: "INSERT OR IGNORE INTO sync_tombstones (conversation_id, turn_id, content_hash, origin_ord, forgotten_at) VALUES (?, '', '', ?, ?)", params: [t.conversationId, t.ord, t.forgottenAt] }
        : { sql: 'INSERT OR IGNORE INTO sync_tombstones (conversation_id, turn_id, content_hash, origin_ord, forgotten_at) VALUES (?, ?, ?, ?, ?)', params: [t.conversationId, t.id, t.contentHash ?? '', t.ord, t.forgottenAt] };
    },

    /**
     * forget's tombstones for turns being removed (by row id), written in forget's transaction — never for private
     * ones —: each message's id and content hash, and the forget's clock (the conversation's next order key).
     */
    forgetTurnsStatement(conversationId: string, rowids: readonly number[], nowIso: string): Statement {
      return {
        sql: `INSERT OR IGNORE INTO sync_tombstones (conversation_id, turn_id, content_hash, origin_ord, forgotten_at)
              SELECT conversation_id, id, content_hash, ${NEXT_ORD}, ? FROM turns WHERE private = 0 AND rowid IN (SELECT value FROM json_each(?))`,
        params: [...nextOrdParams(Date.parse(nowIso), conversationId), nowIso, JSON.stringify(rowids)],
      };
    },

    /**
     * forget's tombstone for a whole conversation: the clock of the forget (the conversation's next order key). Every
     * turn of it with a lower key goes, on every replica that hears of it — turns written offline elsewhere before
     * then too; a turn written after hearing of it has a higher key (NEXT_ORD counts the forgets) and stays.
     */
    forgetConversationStatement(conversationId: string, nowIso: string): Statement {
      return {
        sql: `INSERT OR IGNORE INTO sync_tombstones (conversation_id, turn_id, content_hash, origin_ord, forgotten_at) VALUES (?, '', '', ${NEXT_ORD}, ?)`,
        params: [conversationId, ...nextOrdParams(Date.parse(nowIso), conversationId), nowIso],
      };
    },

    /**
     * A received turn stored at `seq`, verbatim with its origin and order key, indexed for full-text search
     * and with its token count (the statements append() writes for a turn written here).
     */
    insertTurn(conversationId: string, t: SyncTurn & { message: ChatMessage; text: string; createdMs: number; place: Place }, via: string, countKey: string | null, tokens: number, nowIso: string): Statement[] {
      const m = t.message;
      const p = t.place;
      const out: Statement[] = [{
        // Off the path: the move that follows in the same transaction gives it its place.
        sql: `INSERT INTO turns (rowid, conversation_id, seq, id, role, name, content, tool_calls, tool_call_id, created_at, created_ms, stored_at, content_hash, text, private, origin, origin_ord, via, branch, fork_after, fork_branch, fork_ord)
              VALUES (${NEXT_ROWID}, ?, ${OFF_PATH_SEQ} - ${NEXT_ROWID}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
        params: [conversationId, t.id, m.role, m.name ?? null, JSON.stringify(m.content ?? null), m.toolCalls ? JSON.stringify(m.toolCalls) : null,
          m.toolCallId ?? null, t.createdAt, t.createdMs, nowIso, t.contentHash, t.text, t.origin, t.ord, via, p.branch, p.forkAfter, p.forkBranch, p.forkOrd],
      }, {
        sql: 'INSERT INTO turns_fts (rowid, text, name) VALUES ((SELECT rowid FROM turns WHERE conversation_id = ? AND id = ?), ?, ?)',
        params: [conversationId, t.id, t.text, m.name ?? ''],
      }];
      if (countKey !== null) {
        out.push({ sql: 'INSERT INTO turn_tokens (turn_rowid, encoding, tokens) VALUES ((SELECT rowid FROM turns WHERE conversation_id = ? AND id = ?), ?, ?)', params: [conversationId, t.id, countKey, tokens] });
      }
      // The attachments it names (their bytes travel apart: until they arrive, they are missing here).
      const refs = Array.isArray(m.content) ? [...new Set(m.content.flatMap((p) => ('attachment' in p && typeof p.attachment === 'string' ? [p.attachment] : [])))] : [];
      for (const id of refs) out.push(attachmentRefStatement(conversationId, t.id, id));
      return out;
    },
  };
}

export function createSyncStore(driver: StorageDriver) {
  return { ...createSyncReads(driver), ...createSyncChecks(driver), ...createSyncWrites(), ...createSyncIdentity(driver), ...createSyncAcks(driver), ...createSyncResyncs(driver) };
}

export type SyncStore = ReturnType<typeof createSyncStore>;
