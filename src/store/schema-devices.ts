// Schema migration 14: sync on real devices, continued. Part of a released migration once shipped: never edit, add
// a later migration instead.
export const DEVICES_MIGRATION: readonly string[] = [
  // The turns received from each peer, newest first: shown to that peer at the handshake, so a replica restored
  // from a backup or copied finds itself even when the receipts that would have shown it are gone
  // (engine/sync-changes.ts), and what this replica removed, by hash (it never held a turn it removed since).
  `CREATE INDEX turns_by_via ON turns (via) WHERE via <> ''`,
  `CREATE INDEX sync_removed_by_hash ON sync_removed (content_hash)`,
  // Ids a peer left because it found a copy shared them: whoever still syncs under one is that copy.
  `CREATE TABLE sync_left (peer TEXT PRIMARY KEY, told_at TEXT NOT NULL) WITHOUT ROWID`,
];
