// Migration 13's statements for tombstone compaction and resync (store/sync-acks.ts reads and writes these tables).
// Part of a released migration once shipped: never edit, add a later migration instead.
export const SYNC_COMPACTION_MIGRATION: readonly string[] = [
  // How far each peer showed it read this replica's tombstones (`shown`), per conversation filter ('*': all), counted
  // (`tombstones`) once this replica read the peer's own after that; tombstones all recent peers count in a sync of
  // every conversation are compacted (store/sync-acks.ts).
  `CREATE TABLE sync_acks (peer TEXT NOT NULL, scope TEXT NOT NULL, shown INTEGER NOT NULL, tombstones INTEGER NOT NULL, acked_at TEXT NOT NULL,
    PRIMARY KEY (peer, scope)) WITHOUT ROWID`,
  // The floor compaction leaves in each conversation (its highest tombstone row and clock deleted): a reader of some
  // conversations is judged by theirs only. Raised by every tombstone of a single message deleted (only compaction does).
  `CREATE TABLE sync_floors (conversation_id TEXT PRIMARY KEY, top_row INTEGER NOT NULL, top_ord INTEGER NOT NULL) WITHOUT ROWID`,
  `CREATE TRIGGER sync_tombstones_floor AFTER DELETE ON sync_tombstones WHEN OLD.turn_id <> '' BEGIN
    INSERT INTO sync_floors (conversation_id, top_row, top_ord) VALUES (OLD.conversation_id, OLD.rowid, OLD.origin_ord)
      ON CONFLICT (conversation_id) DO UPDATE SET top_row = MAX(top_row, excluded.top_row), top_ord = MAX(top_ord, excluded.top_ord);
    INSERT INTO pagewise_meta (key, value) VALUES ('sync:floor', json_object('rowid', OLD.rowid, 'ord', OLD.origin_ord))
      ON CONFLICT (key) DO UPDATE SET value = json_object('rowid', MAX(OLD.rowid, value ->> 'rowid'), 'ord', MAX(OLD.origin_ord, value ->> 'ord'));
  END`,
  // A replica no peer has read (no acknowledgment, no cursor) keeps only its last single message's tombstone: nobody
  // can hold a copy it covers, and a newcomer is judged by the floor (one with nothing to let go joins as ever).
  `CREATE TRIGGER sync_tombstones_alone AFTER INSERT ON sync_tombstones
    WHEN NEW.turn_id <> '' AND NOT EXISTS (SELECT 1 FROM sync_acks) AND NOT EXISTS (SELECT 1 FROM sync_peers) BEGIN
    DELETE FROM sync_tombstones WHERE rowid < NEW.rowid AND turn_id <> ''
      AND rowid > COALESCE((SELECT value ->> 'rowid' FROM pagewise_meta WHERE key = 'sync:floor'), 0);
  END`,
  // A resync under way with a peer (for a conversation filter): the received turns it may let go (`marks`), each
  // unmarked when the peer sends it again; what is still marked once the peer's last batch is in goes.
  `CREATE TABLE sync_resyncs (peer TEXT NOT NULL, scope TEXT NOT NULL, started_at TEXT NOT NULL, PRIMARY KEY (peer, scope)) WITHOUT ROWID`,
  `CREATE TABLE sync_resync_marks (peer TEXT NOT NULL, scope TEXT NOT NULL, turn_rowid INTEGER NOT NULL, PRIMARY KEY (peer, scope, turn_rowid)) WITHOUT ROWID`,
];
