/**
 * Sync's handshake: who a replica is, how far it has read a peer, and the proof that shows a replica is a copy (a
 * copied file, a restored backup). Re-exported by types-sync.ts.
 */
/**
 * How far a receiving replica has read a sender's changes: the sender's turn and tombstone row positions. Kept by
 * the receiver, per sender and per conversation filter, saved right after the batch's turns (a batch whose cursor
 * was not saved is sent again, and its stored turns are skipped).
 */
export interface SyncCursor {
  turns: number;
  tombstones: number;
  /**
   * The sender's receipt for this cursor: the rows it reached, signed with a secret only the sender (and copies of
   * its database) hold. Opaque to the receiver. A cursor whose receipt the sender did not give (forged, or kept from
   * before receipts) makes the sender start over from the beginning (what the receiver has is skipped); one that
   * names rows the sender's history does not hold tells the sender it is a copy or a restored backup.
   */
  receipt?: string;
}

/** An attachment a replica's turns refer to whose bytes it lacks, and how many of them it has (from byte 0). */
export interface SyncMissing {
  id: string;
  from: number;
}

/** A replica's answer to "who are you, and how far have you read `peer`?". */
export interface SyncState {
  /** This replica's id: random, made when its database was created (or first migrated to sync). */
  replica: string;
  /** How far this replica has received `peer`'s changes (for the conversation filter asked about). */
  cursor: SyncCursor;
  /** Attachments its turns refer to whose bytes it lacks (the first 64): what a sync fetches first. */
  missing?: SyncMissing[];
  /**
   * Other cursors for the handshake to show the peer (`seenElsewhere`), at most 16: those this replica keeps for
   * `peer` under other conversation filters (the 8 last updated), so a copy is found whichever conversations it syncs;
   * those it kept of `peer` before it renewed, under the id it had then (`receiver`), so the peer may find itself a
   * copy too and sees how far it was read; and, when told the ids `peer` left (`left`), those it keeps of `peer` under
   * them (`sender`). The last two are proof of how far each side read the other's forgets: a renewal does not make a
   * peer that compacted its forgets ask for a resync.
   */
  elsewhere?: SyncElsewhere[];
  /**
   * The newest turns (up to 16) this replica stores that it received from `peer`, for the handshake to show the peer
   * (`seenTurns`): a peer that neither holds one nor ever removed it is a copy or a restored backup that lost them,
   * found even when the receipts that would have shown it are gone (a forged cursor, a batch delivered late).
   */
  received?: SyncReceived[];
  /**
   * The ids this replica answered to before it took a new one (the 8 newest), for the handshake to tell the peer
   * (`left`): the peer remembers them, and a copy still answering to one is told so wherever it syncs (`twin`).
   */
  previous?: string[];
  /**
   * Set when a replica that answered to the id `peer` said it left that id because a copy shared it: `peer` is that
   * copy (or a restored backup of it), and takes a new id. Before it does, the turns it pushed under the shared id
   * are not offered back to it, whoever wrote them.
   */
  twin?: true;
  /** Set when this call found the replica to be a copy and gave it a new id (`replica`): the id it had, and why. */
  renewed?: SyncRenewal;
  /** Turns received stamped too far ahead of this replica's clock, waiting for it (see SyncClock). */
  held?: number;
  /**
   * Set when `peer` must resync with this replica before they sync again: this replica deleted forgets (tombstones)
   * that `peer` has not read in these conversations — it was away longer than `tombstoneRetentionDays`, or it is new
   * here — so copies of forgotten turns it may hold could come back. Only shown when the call was shown `seen`.
   */
  resyncRequired?: true;
  /** What `options.resync` did: the received turns this replica marked (`started`), or would mark (`check`). */
  resync?: { turns: number; started: boolean };
  /**
   * A resync of this replica with `peer` (for these conversations) is under way: the pull from `peer` goes on with
   * `SyncRequest.resync`, and its last batch ends it.
   */
  resyncing?: true;
}

/**
 * A replica that took a new id: the database was copied or restored from a backup, so another replica had the same
 * id with another history (`copy`: found by a peer's receipt naming rows this one never held, by turns the peer
 * received from this id that this one never held, or because a peer heard that another replica left this id on
 * finding a copy; `same-id`: the peer itself has the id). Nothing is lost: its turns keep the id they were written under, and the next syncs move
 * everything between it and each peer once (what is there already is skipped).
 */
export interface SyncRenewal {
  previous: string;
  replica: string;
  reason: 'copy' | 'same-id';
}

/** A cursor a replica keeps of a peer, shown back to that peer (SyncState.elsewhere). */
export interface SyncElsewhere {
  conversations: string[] | null;
  cursor: SyncCursor;
  /** The id the replica that keeps it had when it was read, when not its id now. */
  receiver?: string;
  /** The id the peer had when it was read (one it left), when not its id now. */
  sender?: string;
}

/** A turn a replica received from a peer, as it names it back to that peer (never its text). */
export interface SyncReceived {
  conversationId: string;
  id: string;
  contentHash: string;
}

/** What `syncState` is told besides the peer: checks that make a replica that is a copy find out. */
export interface SyncStateOptions {
  /**
   * How far `peer` says it has read this replica (its `syncState(thisReplica).cursor`): this replica checks the
   * receipt against its own history, and takes a new id when it reads another one (a copy, a restored backup).
   */
  seen?: SyncCursor;
  /** What `peer` says it read of this replica under other conversation filters (its `syncState().elsewhere`). */
  seenElsewhere?: SyncElsewhere[];
  /**
   * What `peer` says it received from this replica (its `syncState().received`): one this history never held means a
   * copy. Only in-process, the worker and a Durable Object stub honour it; the sync endpoint ignores it (anyone can
   * name a turn).
   */
  seenTurns?: SyncReceived[];
  /** Ids `peer` says it answered to before it renewed (its `syncState().previous`): remembered here (see `twin`). */
  left?: string[];
  /**
   * The peer says this replica's id was left by a replica that found a copy (its `syncState().twin`): this one is a
   * copy and takes a new id. Only in-process, the worker and a Durable Object stub honour it; the sync endpoint
   * ignores it.
   */
  seenTwin?: boolean;
  /**
   * Take a new id now (the peer has this one). Only in-process, the worker and a Durable Object stub honour it; the
   * sync endpoint ignores it (a caller over HTTP cannot make the edge renew).
   */
  renew?: boolean;
  /**
   * Start a resync with `peer` for these conversations (in-process, the worker and a Durable Object stub; the sync
   * endpoint ignores it): 'start' marks every turn of them this replica received from others — nothing goes yet —
   * and drops its cursor for `peer` under these conversations, so the pull (with `SyncRequest.resync`) reads it from
   * the start; each turn `peer` sends is unmarked, and what is still marked when its last batch is applied goes
   * (`peer` no longer holds it). This replica's own turns are never let go. 'check' only counts what 'start' marks.
   */
  resync?: 'check' | 'start';
}
