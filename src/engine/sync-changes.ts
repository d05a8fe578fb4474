// Sync's read side: who this replica is, how far it has read a peer, and a batch of its changes after a receiver's
// cursor — tombstones first (a receiver must hear of a forget before it is offered what was forgotten), then turns,
// then, with the last batch, pins and manual aliases.
import { checkObject } from './support.js';
import { PagewiseError } from '../contracts/errors.js';
import { DEFAULT_BATCH_BYTES, DEFAULT_BATCH_TURNS, MAX_BATCH_TURNS, readConversationFilter, readCount } from '../common/sync.js';
import { describe, readArray, readRecord, validateConversationId } from '../common/messages.js';
import { toBase64 } from '../common/parts.js';
import type { AttachmentStore } from '../store/attachment-store.js';
import { utf8Bytes } from '../storage/limits.js';
import type { ChangeRow, SyncStore } from '../store/sync-store.js';
import { scopeKey } from '../store/sync-acks.js';
import type { TreeStore } from '../store/tree.js';
import type { SyncAttachmentPiece, SyncBatch, SyncCursor, SyncElsewhere, SyncMissing, SyncReceived, SyncRequest, SyncState, SyncStateOptions, SyncTurn } from '../contracts/types-sync.js';
import type { StorageDriver } from '../contracts/types.js';
import { renew, signReceipt, verifyCursor, type CursorVerdict, type ReceiptRows } from './sync-identity.js';
import { acknowledge, behind, resyncRequired } from './sync-compaction.js';

const MODULE = 'sync';
/**
 * The turns received from a peer shown back to it at each handshake: the newest ones, so a copy that lacks what was
 * synced from its twin (which arrived after everything it holds) finds itself even when that twin synced since.
 */
const RECEIVED_SHOWN = 16;
/** The other cursors a handshake shows, at most (SyncState.elsewhere). */
const ELSEWHERE_SHOWN = 16;
/** Tombstones per batch (ids and hashes: small). */
const TOMBSTONES_PER_BATCH = 2000;

export interface SyncReadDeps {
  driver: StorageDriver;
  sync: SyncStore;
  tree: TreeStore;
  attachments: AttachmentStore;
  serial: <T>(fn: () => Promise<T>) => Promise<T>;
  /** A resync's start here (sync-compaction.ts's resyncStart): marks what it may let go, or counts it (`check`). */
  resync?: { start: (peer: string, filter: readonly string[] | null, check: boolean) => Promise<number> };
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
  const receipt = o?.receipt;
  if (!o || !ok(o.turns) || !ok(o.tombstones) || (receipt !== undefined && (typeof receipt !== 'string' || receipt.length > 4096 || !/^[\x21-\x7e]*$/.test(receipt)))) {
    invalid(path, `must be a cursor { turns, tombstones, receipt? } as syncState() gives it (got ${describe(value)}).`);
  }
  return { turns: o.turns as number, tombstones: o.tombstones as number, ...(typeof receipt === 'string' && receipt !== '' ? { receipt } : {}) };
}

type Seen = SyncElsewhere;

/** Turns a peer shows back (SyncState.received), at most RECEIVED_SHOWN. */
function readSeenTurns(value: unknown): SyncReceived[] {
  const path = 'options.seenTurns';
  const list = value === undefined ? [] : readArray(value, path, 'INVALID_ARGUMENT', MODULE);
  if (!list || list.length > RECEIVED_SHOWN) invalid(path, `must be at most ${RECEIVED_SHOWN} { conversationId, id, contentHash }, as syncState().received gives them (got ${describe(value)}).`);
  return list.map((raw, i) => {
    const t = readRecord(raw, `${path}[${i}]`, 'INVALID_ARGUMENT', MODULE);
    if (!t || typeof t.id !== 'string' || t.id.length === 0 || t.id.length > 1024 || typeof t.contentHash !== 'string' || !/^[0-9a-f]{64}$/.test(t.contentHash)) {
      invalid(`${path}[${i}]`, `must be { conversationId, id, contentHash } as syncState().received gives it (got ${describe(raw)}).`);
    }
    return { conversationId: validateConversationId(t.conversationId, `${path}[${i}].conversationId`), id: t.id, contentHash: t.contentHash };
  });
}

/** Ids a peer says it left (SyncState.previous), at most 8. */
function readLeft(value: unknown): string[] {
  const list = value === undefined ? [] : readArray(value, 'options.left', 'INVALID_ARGUMENT', MODULE);
  if (!list || list.length > 8) invalid('options.left', `must be at most 8 replica ids, as syncState().previous gives them (got ${describe(value)}).`);
  return list.map((id, i) => readReplicaId(id, `options.left[${i}]`));
}

type StateOptions = { seen: Seen[]; seenTurns: SyncReceived[]; seenTwin: boolean; left: string[]; renew: boolean; resync?: 'check' | 'start' };

function readStateOptions(value: unknown, filter: string[] | null): StateOptions {
  if (value === undefined) return { seen: [], seenTurns: [], seenTwin: false, left: [], renew: false };
  const o = readRecord(value, 'options', 'INVALID_ARGUMENT', MODULE);
  if (!o) invalid('options', `must be { seen?, seenElsewhere?, renew?, resync? } (got ${describe(value)}).`);
  if (o.renew !== undefined && typeof o.renew !== 'boolean') invalid('options.renew', `must be true or false (got ${describe(o.renew)}).`);
  if (o.seenTwin !== undefined && typeof o.seenTwin !== 'boolean') invalid('options.seenTwin', `must be true or false (got ${describe(o.seenTwin)}).`);
  if (o.resync !== undefined && o.resync !== 'check' && o.resync !== 'start') invalid('options.resync', `must be 'check' or 'start' (got ${describe(o.resync)}).`);
  const seen: Seen[] = o.seen === undefined ? [] : [{ conversations: filter, cursor: readCursor(o.seen, 'options.seen') }];
  const elsewhere = o.seenElsewhere === undefined ? [] : readArray(o.seenElsewhere, 'options.seenElsewhere', 'INVALID_ARGUMENT', MODULE);
  if (!elsewhere || elsewhere.length > ELSEWHERE_SHOWN) invalid('options.seenElsewhere', `must be at most ${ELSEWHERE_SHOWN} { conversations, cursor }, as syncState().elsewhere gives them (got ${describe(o.seenElsewhere)}).`);
  for (const [i, raw] of elsewhere.entries()) {
    const e = readRecord(raw, `options.seenElsewhere[${i}]`, 'INVALID_ARGUMENT', MODULE);
    if (!e) invalid(`options.seenElsewhere[${i}]`, `must be { conversations, cursor } (got ${describe(raw)}).`);
    seen.push({
      conversations: readConversationFilter(e.conversations, `options.seenElsewhere[${i}].conversations`) ?? null, cursor: readCursor(e.cursor, `options.seenElsewhere[${i}].cursor`),
      ...(e.receiver === undefined ? {} : { receiver: readReplicaId(e.receiver, `options.seenElsewhere[${i}].receiver`) }),
      ...(e.sender === undefined ? {} : { sender: readReplicaId(e.sender, `options.seenElsewhere[${i}].sender`) }),
    });
  }
  return {
    seen, seenTurns: readSeenTurns(o.seenTurns), seenTwin: o.seenTwin === true, left: readLeft(o.left), renew: o.renew === true,
    ...(o.resync === undefined ? {} : { resync: o.resync as 'check' | 'start' }),
  };
}

/**
 * The cursors shown to `peer` besides its own: those kept for it under other filters, those kept of it before this
 * replica renewed (under the id it had then), and those kept of it under the ids it says it left (`left`).
 */
async function elsewhereOf(sync: SyncStore, peer: string, filter: string[] | null, left: readonly string[]): Promise<SyncElsewhere[]> {
  const before = await sync.cursorsBefore(peer);
  const of = await Promise.all(left.map(async (sender) => ({ conversations: filter, cursor: await sync.cursor(sender, filter), sender })));
  const other = await sync.otherCursors(peer, filter);
  return [...before, ...of.filter((e) => e.cursor.receipt !== undefined), ...other].slice(0, ELSEWHERE_SHOWN);
}

/** Whether a peer's receipts name rows this history never held (it is a copy of the replica the peer read). */
async function isCopy(sync: SyncStore, peer: string, seen: readonly Seen[]): Promise<boolean> {
  // A cursor read of an id this replica left is judged as it was: it renewed since.
  for (const s of seen) if (s.sender === undefined && (await verifyCursor(sync, s.cursor, s.receiver ?? peer, s.conversations)).kind === 'diverged') return true;
  return false;
}

/**
 * How far `peer` has read this replica's forgets reading `filter`, as it proves it: the cursor it shows (`seen`), or
 * one it kept of this replica before either of them renewed (under its old id, or of this one's), signed here and
 * read in these rows — a renewal starts their cursors over, not what each had read of the other. The verdict of the
 * proof that counts (for `acknowledge`), and the cursor.
 */
async function readOf(d: SyncReadDeps, peer: string, seen: SyncCursor, evidence: readonly Seen[], filter: string[] | null): Promise<{ verdict: CursorVerdict; cursor: SyncCursor; own: CursorVerdict }> {
  const own = await verifyCursor(d.sync, seen, peer, filter);
  let best = { verdict: own, cursor: seen };
  for (const e of evidence) {
    if (e.sender === undefined && (e.receiver === undefined || e.receiver === peer)) continue;
    if (scopeKey(e.conversations) !== scopeKey(filter) || (best.verdict.kind === 'ok' && e.cursor.tombstones <= best.cursor.tombstones)) continue;
    const verdict = await verifyCursor(d.sync, e.cursor, e.receiver ?? peer, filter, e.sender);
    if (verdict.kind === 'ok') best = { verdict, cursor: e.cursor };
  }
  return { ...best, own };
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

/**
 * What a peer's `seen` (how far it has read this replica, reading `filter`) makes this replica do: record it, and
 * tell the peer to resync when it has not read what was compacted in those conversations.
 */
async function afterSeen(d: SyncReadDeps, peer: string, seen: SyncCursor, evidence: readonly Seen[], filter: string[] | null, renewing: boolean): Promise<Pick<SyncState, 'resyncRequired'>> {
  const { verdict, cursor, own } = await readOf(d, peer, seen, evidence, filter);
  await acknowledge(d.driver, d.sync, peer, cursor, verdict, filter);
  // What `peer` proved it read before the renewal this call makes, or before an earlier one, still holds as far as it
  // still shows a cursor this replica signed then (under this id, or one it left), whatever rows it names: this
  // replica's history going back does not take the peer's reads back, but a peer restored from a backup no longer
  // shows that cursor. What it proved of this id since is only what it shows now.
  const proved = renewing ? await d.sync.acked(peer, filter) : await d.sync.ackedBefore(peer, filter);
  const before = Math.min(proved, await stillShows(d, peer, own.kind === 'ok' || own.kind === 'diverged' ? seen.tombstones : 0, evidence, filter));
  // A receipt this replica cannot open for this scope and reader is never one a peer's own database holds (a restored
  // one shows an older receipt of its own, or none): it was put there; the peer is judged by what it proved.
  const put = verdict.kind === 'unknown' && seen.receipt !== undefined ? await d.sync.acked(peer, filter) : 0;
  const read = Math.max(verdict.kind === 'ok' ? cursor.tombstones : 0, before, put);
  return (await behind(d.sync, read, filter)) ? { resyncRequired: true } : {};
}

/**
 * How far `peer` still shows it read this replica, by a cursor it keeps of this id (`shown`: how far its own reaches,
 * signed here, 0 if not) or of one it left whose receipt this replica signed (its rows maybe another history's: this
 * one is a copy, or renewed since).
 */
async function stillShows(d: SyncReadDeps, peer: string, shown: number, evidence: readonly Seen[], filter: string[] | null): Promise<number> {
  let most = shown;
  for (const e of evidence) {
    if (e.sender === undefined || scopeKey(e.conversations) !== scopeKey(filter) || e.cursor.tombstones <= most) continue;
    const v = await verifyCursor(d.sync, e.cursor, e.receiver ?? peer, filter, e.sender);
    if (v.kind === 'ok' || v.kind === 'diverged') most = e.cursor.tombstones;
  }
  return most;
}

/** This replica's start of a resync with `peer` (`options.resync`), and whether one is under way. */
async function resyncHere(d: SyncReadDeps, peer: string, filter: string[] | null, step: 'check' | 'start' | undefined): Promise<Pick<SyncState, 'resync' | 'resyncing'>> {
  let out: Pick<SyncState, 'resync' | 'resyncing'> = {};
  if (step !== undefined) {
    if (!d.resync || peer === '') invalid('options.resync', d.resync ? 'needs the peer to resync with.' : 'is not available on this memory.');
    out = { resync: { turns: await d.resync.start(peer, filter, step === 'check'), started: step === 'start' } };
  }
  return peer !== '' && (await d.sync.resyncing(peer, filter)) ? { ...out, resyncing: true } : out;
}

export function syncReadApi(d: SyncReadDeps) {
  return {
    async syncState(peer: string, conversations?: string[], options?: SyncStateOptions): Promise<SyncState> {
      return await d.serial(async () => {
        const id = readReplicaId(peer, 'peer', true);
        const filter = readConversationFilter(conversations) ?? null;
        const o = readStateOptions(options, filter);
        // A peer's receipt naming rows this history never held, a turn it received from this id that this history
        // never held, or its word that another replica left this id because of a copy: this database is a copy of the
        // one it read (a copied file, a restored backup).
        const diverged = id !== '' && (o.seenTwin || (await isCopy(d.sync, id, o.seen)) || (await d.sync.lacksAny(o.seenTurns)));
        if (id !== '' && o.left.length > 0) await d.driver.batch(d.sync.leftStatements(o.left, new Date().toISOString()));
        // How far `peer` read this replica's forgets, judged before it renews: the proofs are signed under this id.
        const shown = id !== '' && options?.seen !== undefined ? o.seen[0]!.cursor : undefined;
        const read = shown ? await afterSeen(d, id, shown, o.seen.slice(1), filter, o.renew || diverged) : {};
        const renewed = o.renew || diverged ? await renew(d.driver, d.sync, o.renew ? 'same-id' : 'copy') : undefined;
        const missing = await missingHere(d.attachments, filter);
        const held = (await d.sync.held(Date.now())).count;
        const after = { ...read, ...(await resyncHere(d, id, filter, o.resync)) };
        // What this replica read of `peer` before it renewed, under its old id (renewal keeps it): evidence that the
        // peer may be a copy itself, and of how far it read the peer.
        const elsewhere = id === '' ? [] : await elsewhereOf(d.sync, id, filter, o.left);
        const received = id === '' ? [] : await d.sync.receivedFrom(id, RECEIVED_SHOWN);
        const previous = await d.sync.previousIds();
        const twin = id !== '' && (await d.sync.isLeft(id));
        return {
          ...after,
          replica: await d.sync.replica(), cursor: id === '' ? { turns: 0, tombstones: 0 } : await d.sync.cursor(id, filter),
          ...(elsewhere.length > 0 ? { elsewhere } : {}), ...(missing.length > 0 ? { missing } : {}), ...(renewed ? { renewed } : {}), ...(held > 0 ? { held } : {}),
          ...(received.length > 0 ? { received } : {}), ...(previous.length > 0 ? { previous } : {}), ...(twin ? { twin: true as const } : {}),
        };
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
        // A cursor this replica did not give (forged, kept from before receipts) or that reads another history: from the start.
        const verdict = await verifyCursor(d.sync, cursor, to, conversations);
        const start = verdict.kind === 'ok' ? cursor : { turns: 0, tombstones: 0 };
        if (o.resync !== undefined && typeof o.resync !== 'boolean') invalid('request.resync', `must be true or false (got ${describe(o.resync)}).`);
        const resync = o.resync === true;
        // Below the floor compaction left, a reader may hold copies of turns forgotten here: read without a resync, its
        // cursor stays below the floor (the handshake keeps telling it to resync; what it pushes meanwhile is refused).
        const floor = await d.sync.floor(conversations);
        // A reader that proved it read past the floor (a cursor kept from before one of them renewed, acknowledged at
        // the handshake) passes it as a resync's does: what is below was compacted, and it read it.
        const passes = resync || (start.tombstones < floor.rowid && (await d.sync.acked(to, conversations)) >= floor.rowid);
        const held = !passes && start.tombstones < floor.rowid;
        const rows: ReceiptRows = verdict.kind === 'ok' ? verdict.rows : { turn: null, tombstone: null };
        const batch: SyncBatch = {
          format: 'pagewise-sync', version: 1, from, to, conversations, cursor: { turns: start.turns, tombstones: start.tombstones }, more: false, tombstones: [], turns: [], pins: [], aliases: [],
          ...(resync ? { resync: true as const } : {}),
        };
        if (o.attachments !== undefined) return { ...batch, cursor: { ...cursor }, attachments: await pieces(d.attachments, readMissing(o.attachments, 'request.attachments'), conversations, maxBytes) };
        const signed = async (b: SyncBatch): Promise<SyncBatch> => {
          if (held && b.cursor.tombstones >= floor.rowid) {
            // A page of tombstones that could only be read again and again: the reader must resync to go on.
            if (b.turns.length === 0 && b.more) throw resyncRequired(to, from);
            b.cursor.tombstones = floor.rowid - 1;
            rows.tombstone = floor.rowid > 1 ? { rowid: floor.rowid - 1, tombstone: null } : null;
          }
          if (b.cursor.turns === 0 && b.cursor.tombstones === 0) return b;
          return { ...b, cursor: { ...b.cursor, receipt: await signReceipt(await d.sync.secret(), { replica: from, receiver: to, conversations }, b.cursor, rows) } };
        };
        const tombstones = await d.sync.tombstones(start.tombstones, conversations, TOMBSTONES_PER_BATCH + 1);
        for (const t of tombstones.slice(0, TOMBSTONES_PER_BATCH)) {
          batch.tombstones.push(t.tombstone);
          batch.cursor.tombstones = t.rowid;
          rows.tombstone = t;
        }
        // Turns only once every tombstone before them is sent.
        if (tombstones.length > TOMBSTONES_PER_BATCH) return await signed({ ...batch, more: true });
        // Every tombstone left is sent: a resync's reader passes the floor (what was compacted, it need not read).
        if (passes && batch.cursor.tombstones < floor.rowid) {
          batch.cursor.tombstones = floor.rowid;
          rows.tombstone = { rowid: floor.rowid, tombstone: null };
        }
        const changed = await d.sync.changedTurns(start.turns, resync ? null : to, conversations, maxTurns + 1);
        let bytes = 0;
        for (const [i, r] of changed.entries()) {
          const size = utf8Bytes(r.content) + utf8Bytes(r.tool_calls ?? '') + 256;
          if (i === maxTurns || (i > 0 && bytes + size > maxBytes)) return await signed({ ...batch, more: true });
          batch.turns.push(syncTurn(r));
          batch.cursor.turns = Number(r.rowid);
          rows.turn = { rowid: Number(r.rowid), hash: r.content_hash };
          bytes += size;
        }
        // The last batch: pins and manual aliases whole (the receiver keeps what changed).
        batch.pins = await d.sync.pins(conversations);
        batch.aliases = await d.sync.aliases(conversations);
        const heads = await d.tree.registers(conversations);
        if (heads.length > 0) batch.heads = heads.map((h) => ({ conversationId: h.conversationId, messageId: h.turnId, ord: h.ord, origin: h.origin, at: h.at }));
        return await signed(batch);
      });
    },
  };
}
