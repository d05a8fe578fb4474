// What a relay's devices and its Durable Object say to each other: the operations, their arguments and answers, and
// the limits both sides keep. Every blob is ciphertext the devices made (base64 on the wire); the object stores and
// serves it by position and by opaque names, and never holds a key. See surfaces/sync-relay.ts for what is inside.

/** Where relayEndpoint answers unless its `path` says otherwise. */
export const RELAY_PATH = '/v1/pagewise/relay';

/** The operations a relay object serves (relayEndpoint and relayStub pass nothing else). */
export const RELAY_OPS = ['state', 'check', 'read', 'states', 'push', 'put', 'pieces'] as const;
export type RelayOp = (typeof RELAY_OPS)[number];

/** The largest blob one call stores (a log entry: one pushed batch), in bytes. */
export const MAX_BLOB_BYTES = 16_000_000;
/** The largest piece of an attachment's bytes one blob holds (the engine sends 512 KiB at most). */
export const MAX_PIECE_BYTES = 4_000_000;
/** Bytes XChaCha20-Poly1305 adds to what it seals: the 24-byte nonce in front, the 16-byte tag behind. */
export const SEAL_OVERHEAD = 40;
/** Attachments named at once (what `missing` lists, what one `pieces` or `put` call carries). */
export const MAX_ATTACHMENTS = 64;
/** Other slots of a device that `state` gives (a sync's `elsewhere`: the 8 last updated). */
export const OTHER_SLOTS = 8;
/** Attachment references registered by one push (a batch of 2,000 turns with a few parts each). */
export const MAX_REFS = 10_000;

/**
 * A relay object as its callers reach it: one operation of RELAY_OPS with its arguments (plain JSON, blobs in base64).
 * A `PagewiseRelay` stub (`relayStub(env.RELAY, name)`) is one; so is what relayEndpoint serves over HTTP.
 */
export interface RelayTarget {
  call(op: string, args: unknown): unknown;
}

/** A stored blob's position and bytes, as `read` gives log entries. */
export interface RelayEntry {
  seq: number;
  /** The entry's random id: the receipt a device's cursor carries for it. */
  eid: string;
  /** The device that pushed it (a replica id). */
  device: string;
  blob: string;
}

/** An attachment the relay was told of and does not hold whole. */
export interface RelayMissing {
  key: string;
  /** Its encrypted reference (what the attachment is, for the devices). */
  ref: string;
  have: number;
}

/** `state`: who the relay is, whether a key was set, and what it keeps for a device under one slot. */
export interface RelayStateAnswer {
  relay: string;
  /** The key check a device sealed when the relay was first used (null: none yet). */
  check: string | null;
  /** The last log position. */
  end: number;
  cursor: string | null;
  others: { slot: string; cursor: string }[];
  missing: RelayMissing[];
}

export interface RelayReadAnswer {
  relay: string;
  end: number;
  /** The id of the entry at `mark` (null: there is none — the log was rewound or replaced). */
  mark: string | null;
  entries: RelayEntry[];
  /** More entries for this device lie past the last one given. */
  more: boolean;
}

export interface RelayStatesAnswer {
  relay: string;
  states: { device: string; slot: string; blob: string }[];
}

export interface RelayPushAnswer {
  relay: string;
  /** False when `entry.seq` was not the next position (another device pushed first): seal it again for `end + 1`. */
  ok: boolean;
  end: number;
  missing: RelayMissing[];
}

export interface RelayPutAnswer {
  relay: string;
  /** Per piece: how many bytes of its attachment the relay now holds, and whether this piece made it whole. */
  results: { key: string; have: number; size: number; whole: boolean }[];
  missing: RelayMissing[];
}

export interface RelayPiecesAnswer {
  relay: string;
  attachments: { key: string; ref: string; size: number; pieces: { start: number; len: number; blob: string }[] }[];
}
