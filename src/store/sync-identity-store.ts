// The SQL of sync's identity (engine/sync-identity.ts): the turns received from a peer, shown back to it; what this
// replica removed; the ids it left and kept proof under; and the ids peers said they left. The engine decides.
import type { Statement, StorageDriver } from '../contracts/types.js';
import type { SyncCursor, SyncReceived } from '../contracts/types-sync.js';
import { scopeKey } from './sync-acks.js';

export function createSyncIdentity(driver: StorageDriver) {
  return {
    /**
     * The shareable turns this replica stores that it received from `peer`, the newest first:
     * shown to `peer` at the handshake, which checks it holds them (see `lacksAny`).
     */
    async receivedFrom(peer: string, limit: number): Promise<SyncReceived[]> {
      // Of every conversation, whatever the sync's filter: each is the same proof, and a filter would walk the index
      // past every turn of the others.
      const rows = await driver.query<{ conversation_id: string; id: string; content_hash: string }>(
        `SELECT conversation_id, id, content_hash FROM turns WHERE via = ? AND via <> '' AND private = 0 ORDER BY rowid DESC LIMIT ?`, [peer, limit]);
      return rows.map((r) => ({ conversationId: r.conversation_id, id: r.id, contentHash: r.content_hash }));
    },

    /**
     * Whether any of `turns` (what a peer received from this replica) is neither stored here nor was ever removed here
     * (forget, retention and a resync's sweep all record what they remove in sync_removed; forgets from before that
     * record existed left their tombstones): a history that never held it — this database is a copy or a restored
     * backup of the replica that sent it.
     */
    async lacksAny(turns: readonly SyncReceived[]): Promise<boolean> {
      if (turns.length === 0) return false;
      const rows = await driver.query<{ n: number }>(
        `SELECT COUNT(*) AS n FROM json_each(?) j WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = j.value ->> 0 AND t.content_hash = j.value ->> 2 AND t.id = j.value ->> 1)
           AND NOT EXISTS (SELECT 1 FROM sync_removed r WHERE r.content_hash = j.value ->> 2)
           AND NOT EXISTS (SELECT 1 FROM sync_tombstones s WHERE s.conversation_id = j.value ->> 0 AND (s.turn_id = '' OR (s.turn_id = j.value ->> 1 AND s.content_hash = j.value ->> 2)))`,
        [JSON.stringify(turns.map((t) => [t.conversationId, t.id, t.contentHash]))]);
      return Number(rows[0]?.n ?? 0) > 0;
    },

    /** The ids this replica answered to before it renewed, the newest first (at most 8). */
    async previousIds(): Promise<string[]> {
      const rows = await driver.query<{ value: string }>("SELECT value FROM pagewise_meta WHERE key = 'replica:previous'");
      return rows[0] ? (JSON.parse(rows[0].value) as string[]).slice(-8).reverse() : [];
    },

    /** How far `peer` had proved it read this replica's forgets (reading `conversations`) before this replica renewed. */
    async ackedBefore(peer: string, conversations: readonly string[] | null): Promise<number> {
      const rows = await driver.query<{ shown: number }>('SELECT shown FROM sync_acks_before WHERE peer = ? AND scope = ?', [peer, scopeKey(conversations)]);
      return Number(rows[0]?.shown ?? 0);
    },

    /** The secret this replica signed with under an id it left (null: none kept). */
    async secretOf(id: string): Promise<string | null> {
      const rows = await driver.query<{ value: string }>('SELECT value FROM pagewise_meta WHERE key = ?', [`sync:secret:${id}`]);
      return rows[0]?.value ?? null;
    },

    /** The cursors this replica kept of `peer` before it renewed, each with the id it had then (`receiver`); the 8 newest ids. */
    async cursorsBefore(peer: string): Promise<{ conversations: string[] | null; cursor: SyncCursor; receiver: string }[]> {
      const rows = await driver.query<{ scope: string; receiver: string; turns: number; tombstones: number; receipt: string }>(
        'SELECT scope, receiver, turns, tombstones, receipt FROM sync_peers_before WHERE peer = ? ORDER BY tombstones DESC LIMIT 8', [peer]);
      return rows.map((r) => ({
        conversations: r.scope === '*' ? null : JSON.parse(r.scope) as string[], receiver: r.receiver,
        cursor: { turns: Number(r.turns), tombstones: Number(r.tombstones), receipt: r.receipt },
      }));
    },

    /** Whether a peer said a replica left `id` on finding it shared it with a copy (whoever still answers to it is one). */
    async isLeft(id: string): Promise<boolean> {
      return (await driver.query('SELECT 1 FROM sync_left WHERE peer = ?', [id])).length > 0;
    },

    /**
     * A new identity for this replica (a copy or a restored backup found itself): its own turns and checkouts keep the
     * id they were written under, a new id and secret are made, its cursors of its peers are dropped, and the renewal
     * is recorded. One transaction.
     */
    renewStatements(previous: string, replica: string, secret: string, reason: string, nowIso: string): Statement[] {
      return [
        // What it read of each peer under the old id stays as proof of it (sync_peers_before), and the old secret
        // with it: the receipts peers keep of what they read of it under that id are signed with it.
        {
          sql: `INSERT OR REPLACE INTO sync_peers_before (peer, scope, receiver, turns, tombstones, receipt)
                SELECT peer, scope, ?, turns, tombstones, receipt FROM sync_peers WHERE receipt <> ''`,
          params: [previous],
        },
        { sql: "INSERT OR REPLACE INTO pagewise_meta (key, value) SELECT 'sync:secret:' || ?, value FROM pagewise_meta WHERE key = 'sync:secret'", params: [previous] },
        {
          sql: `INSERT INTO sync_acks_before (peer, scope, shown) SELECT peer, scope, shown FROM sync_acks WHERE true
                ON CONFLICT (peer, scope) DO UPDATE SET shown = MAX(shown, excluded.shown)`,
        },
        { sql: "UPDATE turns SET origin = ? WHERE origin = ''", params: [previous] },
        { sql: "UPDATE branch_heads SET origin = ? WHERE origin = ''", params: [previous] },
        { sql: "UPDATE pagewise_meta SET value = ? WHERE key = 'replica'", params: [replica] },
        { sql: "INSERT OR REPLACE INTO pagewise_meta (key, value) VALUES ('sync:secret', ?)", params: [secret] },
        // It reads every peer from the start again too: a copy may have read past rows it was kept from (the ones
        // another holder of its id had sent), and what it has already is skipped.
        { sql: 'DELETE FROM sync_peers' },
        { sql: "INSERT OR REPLACE INTO pagewise_meta (key, value) VALUES ('replica:renewed', ?)", params: [JSON.stringify({ previous, replica, reason, at: nowIso })] },
        // Every id it left, told to each peer it syncs with from now on (previousIds): a copy still answering to one
        // is found by any peer it meets.
        {
          sql: "INSERT OR REPLACE INTO pagewise_meta (key, value) VALUES ('replica:previous', json_insert(COALESCE((SELECT value FROM pagewise_meta WHERE key = 'replica:previous'), '[]'), '$[#]', ?))",
          params: [previous],
        },
      ];
    },

    /** Ids a peer says it left (its previousIds), remembered here (the 1,024 newest). */
    leftStatements(ids: readonly string[], nowIso: string): Statement[] {
      return [
        {
          sql: 'INSERT INTO sync_left (peer, told_at) SELECT value, ? FROM json_each(?) WHERE true ON CONFLICT (peer) DO UPDATE SET told_at = excluded.told_at',
          params: [nowIso, JSON.stringify(ids)],
        },
        { sql: 'DELETE FROM sync_left WHERE peer NOT IN (SELECT peer FROM sync_left ORDER BY told_at DESC, peer LIMIT 1024)' },
      ];
    },
  };
}
