// Schema migration 14: sync on real devices, continued. Part of a released migration once shipped: never edit, add
// a later migration instead.
export const DEVICES_MIGRATION: readonly string[] = [
  // The turns received from each peer, newest first: shown to that peer at the handshake, so a replica restored
  // from a backup or copied finds itself even when the receipts that would have shown it are gone
  // (engine/sync-changes.ts), and what this replica removed, by hash (it never held a turn it removed since).
  `CREATE INDEX turns_by_via ON turns (via) WHERE via <> ''`,
  `CREATE INDEX sync_removed_by_hash ON sync_removed (content_hash)`,
  // What was removed, by turn (from this version on): a copy of it that comes back (pushed by a device restored from
  // a backup that still held it, once the forget's tombstone was compacted) is refused, and its forget is written
  // again for the device to hear of.
  `ALTER TABLE sync_removed ADD COLUMN conversation_id TEXT`,
  `ALTER TABLE sync_removed ADD COLUMN turn_id TEXT`,
  `ALTER TABLE sync_removed ADD COLUMN ord INTEGER`,
  `CREATE INDEX sync_removed_by_turn ON sync_removed (conversation_id, turn_id) WHERE conversation_id IS NOT NULL`,
  // A message's forget outlives its tombstone: compaction deletes the tombstone (peers no longer need to read it), but
  // what it forgot stays known here by id, hash and clock, so a copy a restored device pushes later (one this replica
  // may never have held) is refused like the removed ones.
  `CREATE TABLE sync_forgot (conversation_id TEXT NOT NULL, turn_id TEXT NOT NULL, content_hash TEXT NOT NULL, ord INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, turn_id, content_hash, ord)) WITHOUT ROWID`,
  `CREATE TRIGGER sync_tombstones_kept AFTER DELETE ON sync_tombstones WHEN OLD.turn_id <> '' BEGIN
    INSERT OR IGNORE INTO sync_forgot (conversation_id, turn_id, content_hash, ord) VALUES (OLD.conversation_id, OLD.turn_id, OLD.content_hash, OLD.origin_ord);
  END`,
  // Ids a peer left because it found a copy shared them: whoever still syncs under one is that copy.
  `CREATE TABLE sync_left (peer TEXT PRIMARY KEY, told_at TEXT NOT NULL) WITHOUT ROWID`,
  // The cursors (with their receipts) a replica kept of its peers before it renewed, under the id it had then
  // (`receiver`): no longer where it reads from (it reads every peer from the start), still proof to each peer of how
  // far it had read that peer's forgets, so a renewal does not make a peer that compacted them ask for a resync.
  `CREATE TABLE sync_peers_before (peer TEXT NOT NULL, scope TEXT NOT NULL, receiver TEXT NOT NULL, turns INTEGER NOT NULL,
    tombstones INTEGER NOT NULL, receipt TEXT NOT NULL, PRIMARY KEY (peer, scope, receiver)) WITHOUT ROWID`,
  // And how far each peer had proved it read this replica's forgets then (sync_acks): a peer's history does not go
  // back because this one's did, so that still counts after the renewal.
  `CREATE TABLE sync_acks_before (peer TEXT NOT NULL, scope TEXT NOT NULL, shown INTEGER NOT NULL, PRIMARY KEY (peer, scope)) WITHOUT ROWID`,
  // Order keys no receiver takes, stored before schema 12 bounded them: past the last Date (MAX_ORD), or more than
  // the largest maxClockSkewMs (a year) ahead of this clock. A batch stamped 2^53-1 was accepted, and every later
  // write in its conversation stepped past it (then stayed at MAX_ORD): those turns, forgets and checkouts were held
  // aside by every receiver, or refused with the whole batch. They cannot be read around — the key orders the
  // conversation, so a turn keyed by its time of writing would sort before them, not after —, so each conversation's
  // far keys are rewritten in their order (no turn moves: positions and what was derived from them stay), after its
  // other keys: to when each was stored here (a turn; the hostile one too, which is kept and syncs like the others),
  // made (a forget) or chosen (a checkout), or one past the key before it when that is later. A fork key follows its
  // turn. A peer that holds a copy of such a turn sets it back to when it stored it: the two may differ.
  `CREATE TABLE sync_key_clock (now INTEGER NOT NULL)`,
  // The clock, or the last time a turn was stored here when that is later: a device whose clock was reset (to 1970, a
  // dead battery) at the upgrade must not take every key for one from the future.
  `INSERT INTO sync_key_clock (now) VALUES (MAX(CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER),
    COALESCE((SELECT CAST(ROUND((julianday(MAX(stored_at)) - 2440587.5) * 86400000) AS INTEGER) FROM turns), 0)))`,
  `CREATE TABLE sync_key_repair (conversation_id TEXT NOT NULL, old INTEGER NOT NULL, at TEXT, new INTEGER, PRIMARY KEY (conversation_id, old)) WITHOUT ROWID`,
  `INSERT INTO sync_key_repair (conversation_id, old, at) SELECT conversation_id, k, MIN(at) FROM (
    SELECT t.conversation_id, t.origin_ord AS k, t.stored_at AS at FROM conversations c CROSS JOIN turns t
      WHERE t.conversation_id = c.id AND t.origin_ord > (SELECT now + 31536000000 FROM sync_key_clock)
    UNION ALL SELECT conversation_id, origin_ord, forgotten_at FROM sync_tombstones WHERE origin_ord > (SELECT now + 31536000000 FROM sync_key_clock)
    UNION ALL SELECT conversation_id, ord, at FROM branch_heads WHERE ord > (SELECT now + 31536000000 FROM sync_key_clock)
    UNION ALL SELECT conversation_id, top_ord, NULL FROM sync_floors WHERE top_ord > (SELECT now + 31536000000 FROM sync_key_clock)
  ) GROUP BY conversation_id, k`,
  `INSERT OR IGNORE INTO sync_key_repair (conversation_id, old)
    SELECT DISTINCT t.conversation_id, t.fork_ord FROM (SELECT DISTINCT conversation_id FROM sync_key_repair) r CROSS JOIN turns t
    WHERE t.conversation_id = r.conversation_id AND t.fork_ord > (SELECT now + 31536000000 FROM sync_key_clock)`,
  `INSERT OR REPLACE INTO sync_key_repair (conversation_id, old, at, new)
    WITH low AS (SELECT conversation_id, MIN(old) AS low FROM sync_key_repair GROUP BY conversation_id),
    below AS (SELECT l.conversation_id, MAX(
        COALESCE((SELECT MAX(origin_ord) FROM turns WHERE conversation_id = l.conversation_id AND origin_ord < l.low), 0),
        COALESCE((SELECT MAX(fork_ord) FROM turns WHERE conversation_id = l.conversation_id AND fork_ord < l.low), 0),
        COALESCE((SELECT MAX(origin_ord) FROM sync_tombstones WHERE conversation_id = l.conversation_id AND origin_ord < l.low), 0),
        COALESCE((SELECT MAX(ord) FROM branch_heads WHERE conversation_id = l.conversation_id AND ord < l.low), 0),
        COALESCE((SELECT MAX(top_ord) FROM sync_floors WHERE conversation_id = l.conversation_id AND top_ord < l.low), 0)) AS top FROM low l),
    ranked AS (SELECT k.conversation_id, k.old, k.at, b.top, ROW_NUMBER() OVER (PARTITION BY k.conversation_id ORDER BY k.old) AS r,
        MIN(COALESCE(CAST(ROUND((julianday(k.at) - 2440587.5) * 86400000) AS INTEGER), 0), (SELECT now FROM sync_key_clock)) AS ms
      FROM sync_key_repair k JOIN below b ON b.conversation_id = k.conversation_id)
    SELECT conversation_id, old, at, r + MAX(top, MAX(ms - r) OVER (PARTITION BY conversation_id ORDER BY old ROWS UNBOUNDED PRECEDING)) FROM ranked`,
  `DROP TRIGGER turns_verbatim`,
  `UPDATE turns SET origin_ord = (SELECT new FROM sync_key_repair k WHERE k.conversation_id = turns.conversation_id AND k.old = turns.origin_ord)
    WHERE (conversation_id, origin_ord) IN (SELECT conversation_id, old FROM sync_key_repair)`,
  `UPDATE turns SET fork_ord = (SELECT new FROM sync_key_repair k WHERE k.conversation_id = turns.conversation_id AND k.old = turns.fork_ord)
    WHERE conversation_id IN (SELECT conversation_id FROM sync_key_repair) AND fork_ord IN (SELECT old FROM sync_key_repair k WHERE k.conversation_id = turns.conversation_id)`,
  `CREATE TRIGGER turns_verbatim BEFORE UPDATE OF rowid, conversation_id, id, role, name, content, tool_calls, tool_call_id, created_at, created_ms, stored_at, content_hash, text, private, origin_ord, via, branch, fork_after, fork_branch, fork_ord ON turns
    BEGIN SELECT RAISE(ABORT, 'pagewise turns are append-only and verbatim: only their local position (seq) may move'); END`,
  `UPDATE sync_tombstones SET origin_ord = (SELECT new FROM sync_key_repair k WHERE k.conversation_id = sync_tombstones.conversation_id AND k.old = sync_tombstones.origin_ord)
    WHERE (conversation_id, origin_ord) IN (SELECT conversation_id, old FROM sync_key_repair)`,
  `UPDATE branch_heads SET ord = (SELECT new FROM sync_key_repair k WHERE k.conversation_id = branch_heads.conversation_id AND k.old = branch_heads.ord)
    WHERE (conversation_id, ord) IN (SELECT conversation_id, old FROM sync_key_repair)`,
  `UPDATE sync_floors SET top_ord = (SELECT new FROM sync_key_repair k WHERE k.conversation_id = sync_floors.conversation_id AND k.old = sync_floors.top_ord)
    WHERE (conversation_id, top_ord) IN (SELECT conversation_id, old FROM sync_key_repair)`,
  `DROP TABLE sync_key_repair`,
  `DROP TABLE sync_key_clock`,
];
