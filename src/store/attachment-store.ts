// The SQL of attachments (schema 10): bytes stored once per SHA-256, in pieces by byte offset that fit the storage's
// row limit; which turns refer to which attachment; what is referred to but not here (sync fetches it). The engine
// decides when; this file reads and builds statements for its callers' transactions.
import { limitsOf } from '../storage/limits.js';
import type { SqlValue, Statement, StorageDriver, StorageLimits } from '../contracts/types.js';
import { type MediaFacts, probeMedia } from '../common/media-probe.js';

/** Bytes per stored piece at most: well within the edge's 2 MB rows, and a sync batch's default 1 MB. */
const PIECE_BYTES = 512 * 1024;

/** A stored attachment's facts. */
export interface AttachmentInfo {
  id: string;
  mediaType: string;
  size: number;
  /** What its bytes say of themselves: pixels, pages, duration (read once, when it is stored whole). */
  facts: MediaFacts;
}

/** An attachment to store: its id (the SHA-256 of `bytes`, hex) and media type. */
export interface NewAttachment {
  id: string;
  mediaType: string;
  bytes: Uint8Array;
  /** What the bytes say of themselves, where the caller read it already (else read here: a PDF's pages take a scan). */
  facts?: MediaFacts;
}

const toBytes = (v: SqlValue | ArrayBuffer): Uint8Array => (v instanceof Uint8Array ? v : v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(0));

const infoOf = (r: { id: string; media_type: string; size: number; facts: string }): AttachmentInfo =>
  ({ id: r.id, mediaType: r.media_type, size: Number(r.size), facts: JSON.parse(r.facts) as MediaFacts });

/** `IN (SELECT value FROM json_each(?))`: any number of ids as one bound value. */
const IDS = 'IN (SELECT value FROM json_each(?))';

/** Bytes per stored piece on a storage with these limits. */
export function pieceSize(limits: StorageLimits): number {
  return Math.max(1024, Math.min(PIECE_BYTES, limits.maxRowBytes - 1024));
}

/** Statements that store `bytes` of attachment `id` from byte `start`, in pieces (a piece already there is kept). */
export function pieceStatements(piece: number, id: string, start: number, bytes: Uint8Array): Statement[] {
  const out: Statement[] = [];
  for (let at = 0; at < bytes.length; at += piece) {
    out.push({ sql: 'INSERT OR IGNORE INTO attachment_chunks (attachment_id, start, data) VALUES (?, ?, ?)', params: [id, start + at, bytes.slice(at, at + piece)] });
  }
  return out;
}

/** The statement that marks an attachment stored whole (every byte there, its hash checked), with what its bytes say. */
export function completeStatement(a: NewAttachment, nowIso: string): Statement {
  return {
    sql: 'INSERT OR IGNORE INTO attachments (id, media_type, size, facts, created_at) VALUES (?, ?, ?, ?, ?)',
    params: [a.id, a.mediaType, a.bytes.length, JSON.stringify(a.facts ?? probeMedia(a.bytes, a.mediaType)), nowIso],
  };
}

/**
 * Statements that store attachments whole (a repeat stores nothing: their pieces and rows are ignored when present).
 * The caller checked each id is the SHA-256 of its bytes.
 */
export function putAttachmentStatements(piece: number, attachments: readonly NewAttachment[], nowIso: string): Statement[] {
  return attachments.flatMap((a) => [
    ...pieceStatements(piece, a.id, 0, a.bytes),
    completeStatement(a, nowIso),
  ]);
}

/** The statement that records that a turn (by conversation and id, stored in the same transaction) refers to `id`. */
export function attachmentRefStatement(conversationId: string, turnId: string, id: string): Statement {
  return {
    sql: 'INSERT OR IGNORE INTO attachment_refs (turn_rowid, attachment_id, conversation_id) VALUES ((SELECT rowid FROM turns WHERE conversation_id = ? AND id = ?), ?, ?)',
    params: [conversationId, turnId, id, conversationId],
  };
}

/** The statement that removes the refs of removed turns (by row id, one JSON parameter). */
export function attachmentRefRemoval(rowids: readonly number[]): Statement {
  return { sql: `DELETE FROM attachment_refs WHERE turn_rowid ${IDS}`, params: [JSON.stringify(rowids)] };
}

/** Statements that remove every attachment no turn refers to any more (after attachmentRefRemoval). */
export const ATTACHMENT_SWEEP: readonly Statement[] = [
  { sql: 'DELETE FROM attachment_chunks WHERE attachment_id NOT IN (SELECT attachment_id FROM attachment_refs)' },
  { sql: 'DELETE FROM attachments WHERE id NOT IN (SELECT attachment_id FROM attachment_refs)' },
];

export function createAttachmentStore(driver: StorageDriver) {
  const piece = pieceSize(limitsOf(driver));

  /** Of `ids`, the attachments stored whole here, with their facts. */
  async function stored(ids: readonly string[]): Promise<Map<string, AttachmentInfo>> {
    if (ids.length === 0) return new Map();
    const rows = await driver.query<{ id: string; media_type: string; size: number; facts: string }>(`SELECT id, media_type, size, facts FROM attachments WHERE id ${IDS}`, [JSON.stringify([...new Set(ids)])]);
    return new Map(rows.map((r) => [r.id, infoOf(r)]));
  }

  /**
   * Bytes of an attachment from byte `from` (anywhere inside a piece), up to about `maxBytes` (at least the rest of the
   * first piece), or null when none are there.
   */
  async function range(id: string, from: number, maxBytes: number): Promise<{ start: number; bytes: Uint8Array } | null> {
    const out: Uint8Array[] = [];
    let length = 0;
    const [first] = await driver.query<{ start: number; data: SqlValue }>('SELECT start, data FROM attachment_chunks WHERE attachment_id = ? AND start <= ? ORDER BY start DESC LIMIT 1', [id, from]);
    if (!first) return null;
    const head = toBytes(first.data).subarray(from - Number(first.start));
    if (head.length === 0) return null;
    out.push(head);
    length += head.length;
    let next = from + head.length;
    while (length < maxBytes) {
      // One piece per query: a whole attachment is never held twice in the storage's answer.
      const [row] = await driver.query<{ data: SqlValue }>('SELECT data FROM attachment_chunks WHERE attachment_id = ? AND start = ?', [id, next]);
      if (!row) break;
      const data = toBytes(row.data);
      if (data.length === 0 || length + data.length > maxBytes) break;
      out.push(data);
      length += data.length;
      next += data.length;
    }
    const bytes = new Uint8Array(length);
    let at = 0;
    for (const b of out) { bytes.set(b, at); at += b.length; }
    return { start: from, bytes };
  }

  return {
    /** Bytes per piece on this storage. */
    piece,
    stored,
    range,

    /** Statements that store attachments whole (see putAttachmentStatements). */
    putStatements: (attachments: readonly NewAttachment[], nowIso: string) => putAttachmentStatements(piece, attachments, nowIso),

    /** Statements that store a piece received by sync, from byte `start`. */
    pieceStatements: (id: string, start: number, bytes: Uint8Array) => pieceStatements(piece, id, start, bytes),

    /** Whether a turn of the conversation (of any: null) refers to the attachment. */
    async referenced(conversationId: string | null, id: string): Promise<boolean> {
      const rows = await driver.query<{ n: number }>(
        `SELECT COUNT(*) AS n FROM attachment_refs WHERE attachment_id = ?${conversationId === null ? '' : ' AND conversation_id = ?'}`,
        conversationId === null ? [id] : [id, conversationId]);
      return Number(rows[0]?.n ?? 0) > 0;
    },

    /** Of `ids`, those a turn of the conversation refers to. */
    async named(conversationId: string, ids: readonly string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const rows = await driver.query<{ id: string }>(`SELECT DISTINCT attachment_id AS id FROM attachment_refs WHERE conversation_id = ? AND attachment_id ${IDS}`, [conversationId, JSON.stringify([...new Set(ids)])]);
      return new Set(rows.map((r) => r.id));
    },

    /** Whether a turn that may leave this replica (not private) of the conversations (all: null) refers to the attachment. */
    async shareable(id: string, conversations: readonly string[] | null): Promise<boolean> {
      const rows = await driver.query<{ n: number }>(
        `SELECT COUNT(*) AS n FROM attachment_refs r JOIN turns t ON t.rowid = r.turn_rowid AND t.private = 0 WHERE r.attachment_id = ?${conversations ? ` AND r.conversation_id ${IDS}` : ''}`,
        conversations ? [id, JSON.stringify(conversations)] : [id]);
      return Number(rows[0]?.n ?? 0) > 0;
    },

    /** How many bytes of an attachment are here as one run from byte 0 (where a resumed transfer goes on). */
    async received(id: string): Promise<number> {
      const rows = await driver.query<{ start: number; len: number }>('SELECT start, length(data) AS len FROM attachment_chunks WHERE attachment_id = ? ORDER BY start', [id]);
      let next = 0;
      for (const r of rows) {
        if (Number(r.start) !== next) break;
        next += Number(r.len);
      }
      return next;
    },

    /** A whole attachment's bytes and facts, or null when it is not stored whole here. */
    async read(id: string): Promise<(AttachmentInfo & { bytes: Uint8Array }) | null> {
      const info = (await stored([id])).get(id);
      if (!info) return null;
      const all = await range(id, 0, Number.MAX_SAFE_INTEGER);
      return all && all.bytes.length === info.size ? { ...info, bytes: all.bytes } : null;
    },

    /** Attachments the turns of the conversations (all: null) refer to whose bytes are not here whole, at most `limit`. */
    async missing(conversations: readonly string[] | null, limit: number): Promise<string[]> {
      const c = conversations ? { sql: ` AND r.conversation_id ${IDS}`, params: [JSON.stringify(conversations)] } : { sql: '', params: [] };
      const rows = await driver.query<{ id: string }>(
        `SELECT DISTINCT r.attachment_id AS id FROM attachment_refs r WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.id = r.attachment_id)${c.sql} ORDER BY 1 LIMIT ?`,
        [...c.params, limit]);
      return rows.map((r) => r.id);
    },

    /** Every attachment the conversation's turns refer to that is stored whole here. */
    async ofConversation(conversationId: string): Promise<AttachmentInfo[]> {
      const rows = await driver.query<{ id: string; media_type: string; size: number; facts: string }>(
        'SELECT DISTINCT a.id, a.media_type, a.size, a.facts FROM attachment_refs r JOIN attachments a ON a.id = r.attachment_id WHERE r.conversation_id = ? ORDER BY a.id', [conversationId]);
      return rows.map(infoOf);
    },
  };
}

export type AttachmentStore = ReturnType<typeof createAttachmentStore>;
