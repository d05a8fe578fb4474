// relayPeer(url, { key, token }): sync through an edge that cannot read. The relay looks like one more replica with
// its own id, so `memory.sync(relayPeer(…))` runs the sync as with any memory; but every batch is sealed on the device
// with a key the relay never sees, and the relay (a PagewiseRelay object) keeps a log of ciphertext and opaque cursors.
// Pushing a batch appends it to the log (sealed for its position) with the pusher's cursor; pulling reads the entries
// after the device's place, opens them, leaves out the device's own, and hands them on as one batch.
import { PagewiseError } from '../contracts/errors.js';
import type { SyncApplied, SyncAttachmentPiece, SyncBatch, SyncCursor, SyncMissing, SyncOptions, SyncPeer, SyncReport, SyncRequest, SyncState, SyncStateOptions } from '../contracts/types-sync.js';
import { describe, readArray, readRecord } from '../common/messages.js';
import { DEFAULT_BATCH_BYTES, DEFAULT_BATCH_TURNS, MAX_BATCH_TURNS, readConversationFilter, readCount, withSync } from '../common/sync.js';
import { fromBase64, isAttachmentPart, toBase64 } from '../common/parts.js';
import type { ContentPart } from '../contracts/types.js';
import type { RelayPiecesAnswer, RelayPushAnswer, RelayPutAnswer, RelayReadAnswer, RelayStatesAnswer, RelayTarget } from '../storage/relay-protocol.js';
import { MAX_ATTACHMENTS, MAX_REFS } from '../storage/relay-protocol.js';
import type { RelayHttpOptions } from './relay-transport.js';
import { RelaySession } from './relay-session.js';
import { assemble, cursorOf, mergeStates, positionOf, type EntryBody, type OpenEntry, type Position, type StateBody } from './relay-batch.js';

const MODULE = 'sync-relay';
const ZERO: SyncCursor = { turns: 0, tombstones: 0 };
/** How often a push is sealed again for the next position when other devices pushed first. */
const PUSH_TRIES = 16;
/** The least a read asks the relay for (an entry is one pushed batch: about batchBytes). */
const MIN_READ_BYTES = 256_000;

export interface RelayPeerOptions extends RelayHttpOptions {
  /**
   * The relay's key: 32 random bytes (`crypto.getRandomValues(new Uint8Array(32))`), the same on every device of the
   * person, kept where the relay cannot read it. It never leaves the device: what is sent is sealed with keys derived
   * from it. A relay first used with one key answers another with WRONG_KEY.
   */
  key: Uint8Array;
  /** The bearer token relayEndpoint accepts (sent as `Authorization: Bearer <token>`). Or `headers`. */
  token?: string;
  /** Headers on every request (a session cookie, an access token of another scheme); not `authorization` with `token`. */
  headers?: Record<string, string>;
  /** The fetch to use (default the global one). */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** Per request; default 60,000 ms. */
  timeoutMs?: number;
  /** Allow plain `http://` to a host that is not this machine (the token travels unencrypted; the data stays sealed). */
  allowHttp?: boolean;
  /** The longest reply read, in bytes (default 64,000,000). */
  maxReplyBytes?: number;
}

/** What `relayPeer()` gives: a sync peer that seals everything it sends, and `sync` from this side. */
export interface RelayPeer extends SyncPeer {
  /** The endpoint's URL, or null for a relay reached by RPC (`relayStub`). */
  readonly url: string | null;
  sync(other: SyncPeer, options?: SyncOptions): Promise<SyncReport>;
}

interface CursorBody { conversations: string[] | null; cursor: SyncCursor }
interface RefBody { id: string; mediaType: string }

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path} ${message}`, { path });
}

function record(value: unknown, path: string): Record<string, unknown> {
  const r = readRecord(value, path, 'INVALID_ARGUMENT', MODULE);
  if (!r) invalid(path, `must be an object (got ${describe(value)}).`);
  return r;
}

function list<T = Record<string, unknown>>(value: unknown, path: string, max = Number.MAX_SAFE_INTEGER): T[] {
  const l = readArray(value, path, 'INVALID_ARGUMENT', MODULE);
  if (!l || l.length > max) invalid(path, `must be an array${max < Number.MAX_SAFE_INTEGER ? ` of at most ${max}` : ''} (got ${describe(value)}).`);
  return l.map((x, i) => record(x, `${path}[${i}]`)) as T[];
}

function readDevice(value: unknown, path: string, allowEmpty = false): string {
  if (typeof value !== 'string' || (!allowEmpty && value === '') || value.length > 128 || !/^[\x21-\x7e]*$/.test(value)) invalid(path, `must be a replica id as syncState() gives it (got ${describe(value)}).`);
  return value;
}

function readCursor(value: unknown, path: string): SyncCursor {
  const c = record(value, path);
  const ok = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (!ok(c.turns) || !ok(c.tombstones) || (c.receipt !== undefined && (typeof c.receipt !== 'string' || c.receipt.length > 4096 || !/^[\x21-\x7e]*$/.test(c.receipt)))) {
    invalid(path, `must be a cursor { turns, tombstones, receipt? } as syncState() gives it (got ${describe(value)}).`);
  }
  return { turns: c.turns as number, tombstones: c.tombstones as number, ...(typeof c.receipt === 'string' && c.receipt !== '' ? { receipt: c.receipt } : {}) };
}

const ATTACHMENT_ID = /^[0-9a-f]{64}$/;
const utf8 = new TextEncoder();

function randomEid(): string {
  return toBase64(crypto.getRandomValues(new Uint8Array(18))).replace(/\+/g, '-').replace(/\//g, '_');
}

async function syncState(r: RelaySession, peer: string, conversations?: string[], options?: SyncStateOptions): Promise<SyncState> {
  const id = readDevice(peer, 'peer', true);
  const filter = readConversationFilter(conversations) ?? null;
  if (options !== undefined && !readRecord(options, 'options', 'INVALID_ARGUMENT', MODULE)) invalid('options', `must be an object (got ${describe(options)}).`);
  const slot = r.slotOf(filter);
  const s = await r.meet(id === '' ? {} : { device: id, slot });
  if (id === '') return { replica: s.relay, cursor: { ...ZERO } };
  const cursor = s.cursor === null ? { ...ZERO } : r.open<CursorBody>(s.cursor, `cursor:${slot}:${id}`).cursor;
  const elsewhere = s.others.map((x) => r.open<CursorBody>(x.cursor, `cursor:${x.slot}:${id}`)).filter((e) => e.cursor.receipt !== undefined);
  const missing = r.missingOf(s.missing);
  return { replica: s.relay, cursor, ...(elsewhere.length > 0 ? { elsewhere } : {}), ...(missing.length > 0 ? { missing } : {}) };
}

/** The pieces of attachments asked for, from the relay's, opened and cut where the receiver's bytes end. */
async function pieces(r: RelaySession, wanted: SyncMissing[], maxBytes: number): Promise<SyncAttachmentPiece[]> {
  const keyed = new Map(wanted.map((w) => [r.keyOf(w.id), w]));
  const answer = await r.call<RelayPiecesAnswer>('pieces', { want: [...keyed].map(([key, w]) => ({ key, from: w.from })), maxBytes });
  const out: SyncAttachmentPiece[] = [];
  for (const a of answer.attachments) {
    const w = keyed.get(a.key);
    const ref = w && r.open<RefBody>(a.ref, `ref:${a.key}`);
    if (!w || ref!.id !== w.id) continue;
    for (const p of a.pieces) {
      const bytes = r.keys.open(fromBase64(p.blob), `piece:${a.key}:${p.start}`);
      const skip = Math.max(0, w.from - p.start);
      if (skip < bytes.length) out.push({ id: w.id, mediaType: ref!.mediaType, size: a.size, start: p.start + skip, data: toBase64(bytes.subarray(skip)) });
    }
  }
  return out;
}

function readWanted(value: unknown): SyncMissing[] {
  return list(value, 'request.attachments', MAX_ATTACHMENTS).map((m, i) => {
    if (typeof m.id !== 'string' || !ATTACHMENT_ID.test(m.id) || typeof m.from !== 'number' || !Number.isSafeInteger(m.from) || m.from < 0) invalid(`request.attachments[${i}]`, `must be { id, from } (got ${describe(m)}).`);
    return { id: m.id, from: m.from };
  });
}

/**
 * The log entries after the receiver's place, opened, its own left out, as one batch; with the last, the other
 * devices' pins, aliases and checkouts merged. A place the log no longer holds (rewound, replaced): from the start.
 */
async function syncChanges(r: RelaySession, request: SyncRequest): Promise<SyncBatch> {
  const q = record(request, 'request');
  const to = readDevice(q.to, 'request.to');
  const cursor = readCursor(q.cursor, 'request.cursor');
  const filter = readConversationFilter(q.conversations, 'request.conversations') ?? null;
  const maxTurns = readCount(q.maxTurns, 'request.maxTurns', DEFAULT_BATCH_TURNS, MAX_BATCH_TURNS);
  const maxBytes = readCount(q.maxBytes, 'request.maxBytes', DEFAULT_BATCH_BYTES);
  const from = await r.ensure();
  if (to === from) invalid('request.to', `is the relay itself (${describe(from)}); a replica does not sync with itself.`);
  const batch: SyncBatch = { format: 'pagewise-sync', version: 1, from, to, conversations: filter, cursor: { ...cursor }, more: false, tombstones: [], turns: [], pins: [], aliases: [] };
  if (q.attachments !== undefined) {
    const wanted = readWanted(q.attachments);
    return { ...batch, attachments: wanted.length === 0 ? [] : await pieces(r, wanted, maxBytes) };
  }
  const read = (p: Position) => r.call<RelayReadAnswer>('read', { device: to, after: p.seq, include: p.off > 0, mark: p.seq, maxBytes: Math.max(maxBytes, MIN_READ_BYTES) });
  let start = positionOf(cursor);
  let page = await read(start);
  if (start.seq > 0 && (start.eid === undefined || page.mark !== start.eid)) {
    start = { seq: 0, off: 0 };
    page = await read(start);
  }
  r.end = Math.max(r.end, page.end);
  const entries: OpenEntry[] = page.entries.filter((e) => e.device !== to).map((e) => ({ seq: e.seq, eid: e.eid, ...r.open<EntryBody>(e.blob, `log:${e.seq}:${e.eid}:${e.device}`) }));
  const wanted = filter === null ? null : new Set(filter);
  const got = assemble(entries, start, wanted, maxTurns, maxBytes);
  Object.assign(batch, { cursor: cursorOf(got.pos), more: got.cut || page.more, tombstones: got.tombstones, turns: got.turns });
  if (batch.more) return batch;
  const states = await r.call<RelayStatesAnswer>('states', { device: to });
  const merged = mergeStates(states.states.filter((s) => s.device !== to).map((s) => r.open<StateBody>(s.blob, `state:${s.slot}:${s.device}`)), wanted);
  return { ...batch, pins: merged.pins, aliases: merged.aliases, ...(merged.heads.length > 0 ? { heads: merged.heads } : {}) };
}

/** Attachments the turns name, each with its reference sealed (what the relay lists while it lacks their bytes). */
function refsOf(r: RelaySession, turns: readonly Record<string, unknown>[]) {
  const ids = new Map<string, string>();
  for (const t of turns) {
    if (!Array.isArray(t.content)) continue;
    for (const p of t.content as ContentPart[]) {
      if (isAttachmentPart(p) && typeof p.attachment === 'string' && ATTACHMENT_ID.test(p.attachment)) ids.set(p.attachment, typeof p.mediaType === 'string' ? p.mediaType : '');
    }
  }
  return [...ids].slice(0, MAX_REFS).map(([id, mediaType]) => ({ key: r.keyOf(id), ref: r.seal({ id, mediaType } satisfies RefBody, `ref:${r.keyOf(id)}`) }));
}

async function putPieces(r: RelaySession, raw: Record<string, unknown>[]): Promise<SyncApplied> {
  const put = raw.map((p, i) => {
    const at = `batch.attachments[${i}]`;
    if (typeof p.id !== 'string' || !ATTACHMENT_ID.test(p.id)) invalid(`${at}.id`, `must be an attachment's id (got ${describe(p.id)}).`);
    if (typeof p.data !== 'string' || typeof p.mediaType !== 'string' || !Number.isSafeInteger(p.start) || !Number.isSafeInteger(p.size)) invalid(at, 'must be a piece { id, mediaType, size, start, data } as syncChanges() gives it.');
    const key = r.keyOf(p.id);
    const bytes = fromBase64(p.data);
    return { key, start: p.start, len: bytes.length, size: p.size, blob: toBase64(r.keys.seal(bytes, `piece:${key}:${p.start as number}`)), ...(p.start === 0 ? { ref: r.seal({ id: p.id, mediaType: p.mediaType }, `ref:${key}`) } : {}) };
  }).filter((p) => p.len > 0);
  const answer = await r.call<RelayPutAnswer>('put', { pieces: put });
  const missing = r.missingOf(answer.missing);
  return { turns: 0, forgotten: 0, conversations: [], conflicts: [], pins: 0, aliases: 0, attachments: answer.results.filter((x) => x.whole).length, ...(missing.length > 0 ? { missing } : {}) };
}

/**
 * A device's batch kept: its tombstones and turns appended to the log (sealed for the next place; sealed again for
 * the one after when another device pushed first), its cursor — and with its last batch, its pins, aliases and
 * checkouts — under its slot, in one transaction of the relay's. Attachments' pieces are kept by their opaque name.
 */
async function applySync(r: RelaySession, raw: SyncBatch): Promise<SyncApplied> {
  const b = record(raw, 'batch');
  if (b.format !== 'pagewise-sync' || b.version !== 1) invalid('batch', `is not a pagewise sync batch version 1 (format ${describe(b.format)}, version ${describe(b.version)}); pass what syncChanges() returned.`);
  const device = readDevice(b.from, 'batch.from');
  const me = await r.ensure();
  if (b.to !== me) invalid('batch.to', `is ${describe(b.to)}, not this relay (${describe(me)}): the batch was read for another replica; nothing was stored.`);
  if (typeof b.more !== 'boolean') invalid('batch.more', `must be true or false (got ${describe(b.more)}).`);
  const filter = readConversationFilter(b.conversations, 'batch.conversations') ?? null;
  const cursor = readCursor(b.cursor, 'batch.cursor');
  if (b.attachments !== undefined) return putPieces(r, list(b.attachments, 'batch.attachments', MAX_ATTACHMENTS));
  const tombstones = list(b.tombstones, 'batch.tombstones');
  const turns = list(b.turns, 'batch.turns', MAX_BATCH_TURNS);
  const slot = r.slotOf(filter);
  const base = { device, slot, cursor: r.seal({ conversations: filter, cursor } satisfies CursorBody, `cursor:${slot}:${device}`), refs: refsOf(r, turns) };
  const state = b.more ? {} : { state: r.seal({ conversations: filter, pins: list(b.pins, 'batch.pins'), aliases: list(b.aliases, 'batch.aliases'), heads: b.heads === undefined ? [] : list(b.heads, 'batch.heads') }, `state:${slot}:${device}`) };
  let answer: RelayPushAnswer | undefined;
  if (tombstones.length + turns.length === 0) answer = await r.call<RelayPushAnswer>('push', { ...base, ...state });
  else {
    const body = utf8.encode(JSON.stringify({ tombstones, turns }));
    for (let tries = 0; !answer?.ok; tries++) {
      if (tries === PUSH_TRIES) throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `Other devices pushed to the relay ${PUSH_TRIES} times while this one tried to; nothing of this batch was stored. Run the sync again.`);
      const seq = r.end + 1;
      const eid = randomEid();
      answer = await r.call<RelayPushAnswer>('push', { ...base, ...state, entry: { seq, eid, blob: toBase64(r.keys.seal(body, `log:${seq}:${eid}:${device}`)) } });
      r.end = answer.end;
    }
  }
  const missing = r.missingOf(answer.missing);
  const conversations = [...new Set(turns.map((t) => String(t.conversationId)))].sort();
  return { turns: turns.length, forgotten: 0, conversations, conflicts: [], pins: 0, aliases: 0, ...(missing.length > 0 ? { missing } : {}) };
}

/**
 * A sync peer through a relay: a `relayEndpoint` at `url` (with `token` or `headers`), or a relay object reached by
 * RPC (`relayStub(env.RELAY, name)`). Everything it sends is sealed with `key` (XChaCha20-Poly1305); the relay stores
 * and serves ciphertext and opaque cursors only. Pass it to any memory's `sync`: devices that sync with the same relay
 * and key converge as if they synced with each other. A relay written with another key is WRONG_KEY, before anything
 * is applied.
 *
 * @example
 * import { createMemory, relayPeer } from 'pagewise';
 * const key = loadKeyFromTheKeychain(); // 32 bytes, the same on every device; never sent anywhere
 * const memory = await createMemory();
 * const report = await memory.sync(relayPeer('https://edge.example/v1/pagewise/relay', { key, token: process.env.PAGEWISE_TOKEN! }));
 */
export function relayPeer(target: string | RelayTarget, options: RelayPeerOptions): RelayPeer {
  const o = readRecord(options, 'options', 'INVALID_OPTIONS', MODULE);
  if (!o) throw new PagewiseError('INVALID_OPTIONS', MODULE, `relayPeer(url, { key, token }) takes an options object (got ${describe(options)}).`, { path: 'options' });
  const r = new RelaySession(target, o);
  return withSync({
    url: r.url,
    syncState: (peer: string, conversations?: string[], options?: SyncStateOptions) => syncState(r, peer, conversations, options),
    syncChanges: (request: SyncRequest) => syncChanges(r, request),
    applySync: (batch: SyncBatch) => applySync(r, batch),
  });
}
