/**
 * Sync: one memory across a person's devices and the edge. The shapes replicas exchange and what `memory.sync()`
 * takes and reports. What moves: canonical turns (verbatim, with their metadata), forget tombstones (ids and hashes,
 * never text), pins and manual aliases. What never moves: private turns, and everything derived (tags, summaries,
 * vectors, statistics), which each replica rebuilds from its own turns.
 */
import type { ExportedTurn } from './types-data.js';
import type { SyncCursor, SyncMissing, SyncRenewal, SyncState, SyncStateOptions } from './types-sync-state.js';

export type * from './types-sync-state.js';

/** What `syncChanges` is asked for. */
export interface SyncRequest {
  /** The replica the batch is for: turns that came from it are not sent back. */
  to: string;
  /** Where to start: what the receiver's `syncState(sender).cursor` says. */
  cursor: SyncCursor;
  /** Only these conversations (default: all). */
  conversations?: string[];
  /** At most this many turns in the batch (1–2,000; default 500). */
  maxTurns?: number;
  /** About this many bytes of turns in the batch at most (default 1,000,000); one turn is always sent whole. */
  maxBytes?: number;
  /**
   * Instead of turns: the bytes of these attachments, each from byte `from` (what the receiver's `missing` says),
   * within `maxBytes`. Only attachments a shareable turn of the conversations refers to are sent.
   */
  attachments?: SyncMissing[];
  /**
   * A resync's pull: every shareable turn, those received from `to` too, and a cursor that passes the forgets this
   * replica has compacted. Without it, a cursor below them is held there (and the reader told to resync). The sync
   * endpoint ignores it.
   */
  resync?: boolean;
}

/**
 * A piece of an attachment's bytes as it travels: attachments move apart from the turns that name them (a turn
 * names its attachment by id), once, by id, in pieces within a batch's size — so within the edge's row limit.
 */
export interface SyncAttachmentPiece {
  id: string;
  mediaType: string;
  /** The whole attachment's size in bytes. */
  size: number;
  /** The piece's first byte. */
  start: number;
  /** The piece's bytes, base64. */
  data: string;
}

/**
 * A turn as it travels: the stored original as `export` gives it (never a private one), with its conversation, its
 * hash, and where it was first written.
 */
export interface SyncTurn extends Omit<ExportedTurn, 'private'> {
  conversationId: string;
  /** SHA-256 of the message as stored (the receiver checks it). */
  contentHash: string;
  /** The replica the turn was first written on, and its order key there (the converged order's first key). */
  origin: string;
  ord: number;
  /** On a branch other than the first: the branch the one it follows is on, and that message's order key (so the branch keeps its place where that message never arrives). */
  fork?: { branch: string; ord: number };
}

/**
 * A conversation's checkout, as it travels: the message a user switched to ('' : the start), at the conversation's
 * clock. Every replica's head is the later of it and the last message written (by order key), so the branch a person
 * was last on is current everywhere.
 */
export interface SyncHead {
  conversationId: string;
  messageId: string;
  ord: number;
  origin: string;
  at: string;
}

/**
 * A forget, as it travels: ids, hashes and a clock, never text. `ord` is the clock of the forget: the conversation's
 * next order key on the replica that forgot. With `id`: that message (same id and content) wherever a copy of it was
 * written before the forget (its order key below `ord`). Without `id`: the whole conversation — every turn of it
 * written before the forget, on every replica, including turns written offline that the forgetting replica never
 * saw; a turn written after a replica heard of the forget has a higher key and stays.
 */
export interface SyncTombstone {
  conversationId: string;
  id?: string;
  contentHash?: string;
  ord: number;
  forgottenAt: string;
}

/**
 * A pin's state: the latest of pin and unpin (by time; a tie pins). A replica holding the same state takes the later
 * time too, so every replica lists pins alike (oldest first).
 */
export interface SyncPin {
  conversationId: string;
  messageId: string;
  pinned: boolean;
  at: string;
}

/**
 * A manual alias, or its removal: for one alias the later of them wins (a tie: an alias over a removal, then the
 * greater tag). A replica holding the same state takes the later time too.
 */
export interface SyncAlias {
  /** null: a global alias (only in a sync of every conversation). */
  conversationId: string | null;
  alias: string;
  /** What it reads as ('' for a removal). */
  tag: string;
  /** When it was made, or removed. */
  createdAt: string;
  removed?: true;
}

/** One batch of a replica's changes, as `syncChanges` gives it and `applySync` takes it. */
export interface SyncBatch {
  format: 'pagewise-sync';
  version: 1;
  /** The sender's replica id, and the receiver's. */
  from: string;
  to: string;
  /** The conversations filter the batch was read with (null: all); the receiver keeps its cursor under it. */
  conversations: string[] | null;
  /** Where the next batch starts (the receiver stores it with this batch). */
  cursor: SyncCursor;
  /** More changes are waiting after this batch. */
  more: boolean;
  tombstones: SyncTombstone[];
  turns: SyncTurn[];
  /** Pins and aliases travel whole with the last batch (`more: false`). */
  pins: SyncPin[];
  aliases: SyncAlias[];
  /** Checkouts, whole with the last batch. */
  heads?: SyncHead[];
  /** Read for a resync (SyncRequest.resync): the receiver's resync with the sender ends with the last batch. */
  resync?: true;
  /** Pieces of attachments' bytes, when the request asked for them (then the batch carries no turns). */
  attachments?: SyncAttachmentPiece[];
}

/** A turn a replica did not store (see SyncApplied.conflicts). */
export interface SyncConflict {
  conversationId: string;
  id: string;
  reason: 'id' | 'too-large';
}

/** What one `applySync` did. */
export interface SyncApplied {
  /** Turns stored (the rest were there already, or forgotten here). */
  turns: number;
  /** Turns removed here by the batch's tombstones. */
  forgotten: number;
  /** Conversations whose turns changed. */
  conversations: string[];
  /**
   * Turns refused, each with why: `id` — a stored turn of that conversation has the same id and other content (give
   * messages ids unique across devices, such as UUIDs); `too-large` — its row is over this storage's row limit.
   */
  conflicts: SyncConflict[];
  /** Pins and aliases whose state changed here. */
  pins: number;
  aliases: number;
  /** Attachments whose bytes are now here whole. */
  attachments?: number;
  /**
   * Attachments this replica would not take: over its `maxAttachmentBytes`, or bytes that did not match their id
   * (none of them kept). The sync does not ask for them again in the same run.
   */
  refused?: string[];
  /** Attachments the turns here refer to whose bytes are still lacking (the first 64). */
  missing?: SyncMissing[];
  /** What this replica's clock did with the batch: see SyncClock. */
  clock?: SyncClock;
  /** The last batch of a resync: received turns let go here because the sender no longer holds them. */
  resynced?: number;
}

/**
 * Changes stamped more than `maxClockSkewMs` ahead of the receiver's clock (the sender's clock is ahead, or the batch
 * is forged). `held`: turns kept aside, not applied, until the receiver's clock reaches them (then a later sync
 * applies them). `clamped`: forgets taken as made now — they remove what the receiver held, not what others write
 * while the sender's clock runs ahead. `refused`: turns beyond the 10,000 a replica holds, or held ones that no longer
 * pass its checks (let go). `aheadMs`: how far ahead the furthest one was. Checkouts, pins and aliases from too far
 * ahead are left out (they travel whole with every sync). A device that sees any of these should have its clock fixed.
 */
export interface SyncClock {
  held: number;
  clamped: number;
  refused: number;
  aheadMs: number;
}

/** Progress of a running sync, after each batch. */
export interface SyncProgress {
  direction: 'pull' | 'push';
  batches: number;
  turns: number;
  bytes: number;
}

export interface SyncOptions {
  /** Only these conversations (default: all). */
  conversations?: string[];
  /** Turns per batch (default 500). */
  batchTurns?: number;
  /** Bytes of turns per batch (default 1,000,000). */
  batchBytes?: number;
  onProgress?: (progress: SyncProgress) => void;
  /** Stops between batches (what was applied stays; the next sync resumes there). */
  signal?: AbortSignal;
  /**
   * Resync this replica with `other` when the sync says it must (`SyncReport.resync`): it pulls everything `other`
   * holds again, then lets go of the turns it had received that `other` no longer holds (forgotten there). Nothing
   * goes before the pull is complete; a resync stopped half-way goes on at the next sync. Its own turns always stay.
   * With `conversations`, only those conversations resync.
   */
  resync?: boolean;
}

/**
 * A sync that stopped before moving anything: `replica` must resync with `with` — `with` has deleted forgets that
 * `replica` never read, so copies of forgotten turns `replica` may hold must not travel. Run
 * `memory.sync(other, { resync: true })` on `replica` (with `other` the memory whose id is `with`).
 */
export interface SyncResync {
  replica: string;
  with: string;
  /** The received turns `replica` would check against `with` (those `with` no longer holds go; its own turns stay). */
  turns: number;
  /**
   * Each side deleted forgets the other never read, so neither can take the other's turns, and a resync cannot help:
   * nothing moved and nothing was let go. Keep one of the two, and replace the other with a new, empty memory synced
   * from it (`export` and `import` can bring a conversation across, with whatever was forgotten in it).
   */
  both?: true;
}

/** What `memory.sync(other)` moved. Syncing again at once moves nothing. */
export interface SyncReport {
  /** Turns stored on the other replica, and on this one. */
  pushed: number;
  pulled: number;
  /** Turns removed by tombstones, on both sides. */
  forgotten: number;
  /** Conversations whose turns changed, on either side. */
  conversations: string[];
  conflicts: SyncConflict[];
  /** Pins and aliases changed, on either side. */
  pins: number;
  aliases: number;
  /** Attachments whose bytes moved whole, both ways. */
  attachments: number;
  batches: number;
  /** Bytes of the batches as JSON, both ways. */
  bytes: number;
  ms: number;
  /** Replicas that found themselves to be copies and took a new id in this sync (then it moved everything once). */
  renewed: SyncRenewal[];
  /** Changes either side took otherwise because they are stamped too far ahead of its clock (see SyncClock). */
  clock: SyncClock;
  /** Set when the sync stopped because a side must resync first (see SyncResync); nothing else moved. */
  resync?: SyncResync;
  /** Received turns let go at the end of a resync because the side resynced with no longer holds them (forgotten there). */
  resynced?: number;
}

/**
 * The methods a sync peer answers: every Memory has them (in-process, the worker client, a Durable Object stub),
 * and so does `remoteMemory(url, { token })`.
 */
export interface SyncPeer {
  syncState(peer: string, conversations?: string[], options?: SyncStateOptions): Promise<SyncState>;
  syncChanges(request: SyncRequest): Promise<SyncBatch>;
  applySync(batch: SyncBatch): Promise<SyncApplied>;
}
