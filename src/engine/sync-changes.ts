// Sync's read side: who this replica is, how far it has read a peer, and a batch of its changes after a receiver's
// cursor — tombstones first (a receiver must hear of a forget before it is offered what was forgotten), then turns,
// then, with the last batch, pins and manual aliases.
import { checkObject } from './support.js';
import { PagewiseError } from '../contracts/errors.js';
import { DEFAULT_BATCH_BYTES, DEFAULT_BATCH_TURNS, MAX_BATCH_TURNS, readConversationFilter, readCount } from '../common/sync.js';
import { describe, readArray, readRecord } from '../common/messages.js';
import { toBase64 } from '../common/parts.js';
import type { AttachmentStore } from '../store/attachment-store.js';
import { utf8Bytes } from '../storage/limits.js';
import type { ChangeRow, SyncStore } from '../store/sync-store.js';
import type { TreeStore } from '../store/tree.js';
import type { SyncAttachmentPiece, SyncBatch, SyncCursor, SyncMissing, SyncRequest, SyncState, SyncTurn } from '../contracts/types-sync.js';

const MODULE = 'sync';
/** Tombstones per batch (ids and hashes: small). */
const TOMBSTONES_PER_BATCH = 2000;

export interface SyncReadDeps {
  sync: SyncStore;
  tree: TreeStore;
  attachments: AttachmentStore;
  serial: <T>(fn: () => Promise<T>) => Promise<T>;
}

/** Attachments a sync asks for (or says it lacks) at once, at most. */
export const MISSING_PER_ASK = 64;

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path} ${message}`, { path });
}

/** A replica id as both sides name them: a short printable string. */
export function readReplicaId(value: unknown, path: string, allowEmpty = false): string {
  if (typeof value !== 'string' || (!allowEmpty && value.length === 0) || value.length > 128 || !/^[\x21-\x7e]*$/.test(value)) {
    invalid(path, `must be a replica id as syncState() gives it (got ${describe(value)}).`);
  }
  return value;
}

export function readCursor(value: unknown, path: string): SyncCursor {
  const o = readRecord(value, path, 'INVALID_ARGUMENT', MODULE);
  const ok = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (!o || !ok(o.turns) || !ok(o.tombstones)) invalid(path, `must be a cursor { turns, tombstones } as syncState() gives it (got ${describe(value)}).`);
  return { turns: o.turns as number, tombstones: o.tombstones as number };
}

function syncTurn(r: ChangeRow): SyncTurn {
  const t: SyncTurn = {
    conversationId: r.conversation_id, id: r.id, role: r.role as SyncTurn['role'], content: JSON.parse(r.content) as SyncTurn['content'],
    createdAt: r.created_at, contentHash: r.content_hash, origin: r.origin, ord: Number(r.ord),
  };
  if (r.name !== null) t.name = r.name;
  if (r.tool_calls !== null) t.toolCalls = JSON.parse(r.tool_calls) as SyncTurn['toolCalls'];
  if (r.tool_call_id !== null) t.toolCallId = r.tool_call_id;
  if (r.branch !== '') t.branch = { start: r.branch, after: r.fork_after ?? '' };
  if (r.fork_branch !== null && r.fork_ord !== null) t.fork = { branch: r.fork_branch, ord: Number(r.fork_ord) };
  return t;
}

/** `[{ id, from }]` as a sync names attachments it lacks: checked (INVALID_ARGUMENT otherwise). */
export function readMissing(value: unknown, path: string): SyncMissing[] {
  const list = readArray(value, path, 'INVALID_ARGUMENT', MODULE);
  if (!list || list.length > MISSING_PER_ASK) invalid(path, `must be an array of at most ${MISSING_PER_ASK} { id, from } (got ${describe(value)}).`);
  return list.map((raw, i) => {
    const m = readRecord(raw, `${path}[${i}]`, 'INVALID_ARGUMENT', MODULE);
    if (!m || typeof m.id !== 'string' || !/^[0-9a-f]{64}$/.test(m.id) || typeof m.from !== 'number' || !Number.isSafeInteger(m.from) || m.from < 0) {
      invalid(`${path}[${i}]`, `must be { id: an attachment's id, from: a byte offset } (got ${describe(raw)}).`);
    }
    return { id: m.id, from: m.from };
  });
}

/** What this replica lacks: attachments its turns refer to, with how much of each it has. */
async function missingHere(attachments: AttachmentStore, conversations: readonly string[] | null): Promise<SyncMissing[]> {
  const ids = await attachments.missing(conversations, MISSING_PER_ASK);
  return Promise.all(ids.map(async (id) => ({ id, from: await attachments.received(id) })));
}

/**
 * Pieces of the attachments asked for, from where the receiver is, within `maxBytes` (at least one piece): only
 * attachments stored whole here that a shareable turn of the conversations refers to (a private turn's stay).
 */
async function pieces(attachments: AttachmentStore, wanted: SyncMissing[], conversations: readonly string[] | null, maxBytes: number): Promise<SyncAttachmentPiece[]> {
  const out: SyncAttachmentPiece[] = [];
  let used = 0;
  for (const w of wanted) {
    if (out.length > 0 && used >= maxBytes) break;
    const info = (await attachments.stored([w.id])).get(w.id);
    if (!info || w.from >= info.size || !(await attachments.shareable(w.id, conversations))) continue;
    const got = await attachments.range(w.id, w.from, Math.max(1, maxBytes - used));
    if (!got) continue;
    out.push({ id: w.id, mediaType: info.mediaType, size: info.size, start: got.start, data: toBase64(got.bytes) });
    used += got.bytes.length;
  }
  return out;
}

export function syncReadApi(d: SyncReadDeps) {
  return {
    syncState(peer: string, conversations?: string[]): Promise<SyncState> {
      return d.serial(async () => {
        const id = readReplicaId(peer, 'peer', true);
        const filter = readConversationFilter(conversations) ?? null;
        const missing = await missingHere(d.attachments, filter);
        return { replica: await d.sync.replica(), cursor: id === '' ? { turns: 0, tombstones: 0 } : await d.sync.cursor(id, filter), ...(missing.length > 0 ? { missing } : {}) };
      });
    },

    syncChanges(request: SyncRequest): Promise<SyncBatch> {
      return d.serial(async () => {
        const o = checkObject(request, 'syncChanges');
        const to = readReplicaId(o.to, 'request.to');
        const cursor = readCursor(o.cursor, 'request.cursor');
        const conversations = readConversationFilter(o.conversations, 'request.conversations') ?? null;
        const maxTurns = readCount(o.maxTurns, 'request.maxTurns', DEFAULT_BATCH_TURNS, MAX_BATCH_TURNS);
        const maxBytes = readCount(o.maxBytes, 'request.maxBytes', DEFAULT_BATCH_BYTES);
        const from = await d.sync.replica();
        if (to === from) invalid('request.to', `is this replica itself (${describe(from)}); a replica does not sync with itself.`);
        const batch: SyncBatch = { format: 'pagewise-sync', version: 1, from, to, conversations, cursor: { ...cursor }, more: false, tombstones: [], turns: [], pins: [], aliases: [] };
        if (o.attachments !== undefined) return { ...batch, attachments: await pieces(d.attachments, readMissing(o.attachments, 'request.attachments'), conversations, maxBytes) };
        const tombstones = await d.sync.tombstones(cursor.tombstones, conversations, TOMBSTONES_PER_BATCH + 1);
        for (const t of tombstones.slice(0, TOMBSTONES_PER_BATCH)) {
          batch.tombstones.push(t.tombstone);
          batch.cursor.tombstones = t.rowid;
        }
        // Turns only once every tombstone before them is sent.
        if (tombstones.length > TOMBSTONES_PER_BATCH) return { ...batch, more: true };
        const rows = await d.sync.changedTurns(cursor.turns, to, conversations, maxTurns + 1);
        let bytes = 0;
        for (const [i, r] of rows.entries()) {
          const size = utf8Bytes(r.content) + utf8Bytes(r.tool_calls ?? '') + 256;
          if (i === maxTurns || (i > 0 && bytes + size > maxBytes)) return { ...batch, more: true };
          batch.turns.push(syncTurn(r));
          batch.cursor.turns = Number(r.rowid);
          bytes += size;
        }
        // The last batch: pins and manual aliases whole (the receiver keeps what changed).
        batch.pins = await d.sync.pins(conversations);
        batch.aliases = await d.sync.aliases(conversations);
        const heads = await d.tree.registers(conversations);
        if (heads.length > 0) batch.heads = heads.map((h) => ({ conversationId: h.conversationId, messageId: h.turnId, ord: h.ord, origin: h.origin, at: h.at }));
        return batch;
      });
    },
  };
}
