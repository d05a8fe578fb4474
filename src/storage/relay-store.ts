// A relay's storage on Durable Object SQL: the log of ciphertext batches the devices push (by position and the device
// that pushed each), per device and slot an opaque cursor and state, and attachments' bytes by an opaque name, in
// pieces. It knows nothing of turns or conversations: every blob is sealed by the devices, and it holds no key.
// Within Durable Object SQL's limits: blobs in rows of 1 MB (rows hold 2 MB), a few bound parameters per statement.
import { PagewiseError } from '../contracts/errors.js';
import { describe, readArray, readRecord } from '../common/messages.js';
import { fromBase64, toBase64 } from '../common/parts.js';
import type { DurableObjectStorageLike } from './durable-object.js';
import {
  MAX_ATTACHMENTS, MAX_BLOB_BYTES, MAX_PIECE_BYTES, MAX_REFS, OTHER_SLOTS, RELAY_OPS, SEAL_OVERHEAD,
  type RelayEntry, type RelayMissing, type RelayOp, type RelayPiecesAnswer, type RelayPushAnswer, type RelayPutAnswer,
  type RelayReadAnswer, type RelayStateAnswer, type RelayStatesAnswer,
} from './relay-protocol.js';

const MODULE = 'relay';
/** Bytes of a blob per row. */
const PART = 1_000_000;
/** Log rows looked at per `read` (the rest: `more`). */
const READ_ROWS = 256;
/** A cursor blob is small (a cursor and the conversation filter it is kept under). */
const MAX_CURSOR_BYTES = 1_000_000;
/** The most bytes of blobs one answer carries beyond its first (an object has 128 MB of memory). */
const MAX_ANSWER_BYTES = 8_000_000;
/** The most bytes of state blobs one `states` answer carries. */
const MAX_STATES_BYTES = 32_000_000;

const SCHEMA = [
  'CREATE TABLE IF NOT EXISTS relay_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)',
  'CREATE TABLE IF NOT EXISTS relay_log (seq INTEGER PRIMARY KEY, device TEXT NOT NULL, eid TEXT NOT NULL, size INTEGER NOT NULL, at INTEGER NOT NULL)',
  'CREATE TABLE IF NOT EXISTS relay_slots (device TEXT NOT NULL, slot TEXT NOT NULL, cursor BLOB NOT NULL, state_bytes INTEGER NOT NULL DEFAULT 0, at INTEGER NOT NULL, PRIMARY KEY (device, slot))',
  'CREATE TABLE IF NOT EXISTS relay_attachments (key TEXT PRIMARY KEY, ref BLOB NOT NULL, size INTEGER, have INTEGER NOT NULL DEFAULT 0, at INTEGER NOT NULL)',
  'CREATE TABLE IF NOT EXISTS relay_pieces (key TEXT NOT NULL, start INTEGER NOT NULL, len INTEGER NOT NULL, PRIMARY KEY (key, start))',
  'CREATE TABLE IF NOT EXISTS relay_blobs (owner TEXT NOT NULL, part INTEGER NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY (owner, part))',
];

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path} ${message}`, { path });
}

function record(value: unknown, path: string): Record<string, unknown> {
  const r = readRecord(value, path, 'INVALID_ARGUMENT', MODULE);
  if (!r) invalid(path, `must be an object (got ${describe(value)}).`);
  return r;
}

function list(value: unknown, path: string, max: number): unknown[] {
  const l = readArray(value, path, 'INVALID_ARGUMENT', MODULE);
  if (!l || l.length > max) invalid(path, `must be an array of at most ${max} items (got ${describe(value)}).`);
  return l;
}

const text = (pattern: RegExp, what: string) => (value: unknown, path: string): string => {
  if (typeof value !== 'string' || !pattern.test(value)) invalid(path, `must be ${what} (got ${describe(value)}).`);
  return value;
};
/** A device: a replica id (a short printable string). */
const device = text(/^[\x21-\x7e]{1,128}$/, 'a device\'s replica id');
/** An opaque name the devices derive (a slot, an attachment): 64 hex digits. */
const name = text(/^[0-9a-f]{64}$/, 'an opaque name of 64 hex digits, as relayPeer derives it');
const eid = text(/^[A-Za-z0-9_-]{16,64}$/, 'an entry id of 16 to 64 characters [A-Za-z0-9_-]');

function int(value: unknown, path: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) invalid(path, `must be a whole number from ${min} to ${max} (got ${describe(value)}).`);
  return value;
}

/** A sealed blob from base64, at least the seal's overhead and at most `max` bytes. */
function blob(value: unknown, path: string, max: number): Uint8Array {
  if (typeof value !== 'string' || value.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) invalid(path, 'must be a sealed blob in base64, as relayPeer makes it.');
  if ((value.length / 4) * 3 > max + 2) {
    throw new PagewiseError('MESSAGE_TOO_LARGE', MODULE, `${path} is over ${max} bytes, what the relay stores in one blob: sync with smaller batches (options.batchBytes).`, { path });
  }
  const bytes = fromBase64(value);
  if (bytes.length < SEAL_OVERHEAD || bytes.length > max) invalid(path, `must be a sealed blob of ${SEAL_OVERHEAD} to ${max} bytes (got ${bytes.length}).`);
  return bytes;
}

const buffer = (b: Uint8Array): ArrayBuffer => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
const bytesOf = (v: unknown): Uint8Array => (v instanceof ArrayBuffer ? new Uint8Array(v) : ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(0));
const owner = (...parts: (string | number)[]): string => JSON.stringify(parts);

function randomId(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return `relay-${Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')}`;
}

/** One relay's storage: `call(op, args)` runs an operation of RELAY_OPS, each in one transaction. */
export interface RelayStore {
  call(op: string, args: unknown): unknown;
}

/** What the operations share: the SQL, the relay's id, blobs in rows, the attachments it lacks. */
interface Ctx {
  storage: DurableObjectStorageLike;
  relay: string;
  exec(query: string, ...params: unknown[]): void;
  rows(query: string, ...params: unknown[]): Record<string, unknown>[];
  one(query: string, ...params: unknown[]): Record<string, unknown> | undefined;
  end(): number;
  putBlob(key: string, bytes: Uint8Array): void;
  getBlob(key: string): string;
  missing(): RelayMissing[];
}

function context(storage: DurableObjectStorageLike): Ctx {
  const sql = storage.sql;
  const rows = (query: string, ...params: unknown[]) => sql.exec(query, ...params).toArray();
  const one = (query: string, ...params: unknown[]): Record<string, unknown> | undefined => rows(query, ...params)[0];
  storage.transactionSync(() => {
    for (const s of SCHEMA) sql.exec(s);
    sql.exec('INSERT OR IGNORE INTO relay_meta (key, value) VALUES (\'id\', ?)', randomId());
  });
  return {
    storage, rows, one,
    relay: String(one('SELECT value FROM relay_meta WHERE key = \'id\'')!.value),
    exec: (query, ...params) => { sql.exec(query, ...params); },
    end: () => Number(one('SELECT COALESCE(MAX(seq), 0) AS n FROM relay_log')!.n),
    putBlob(key, bytes) {
      sql.exec('DELETE FROM relay_blobs WHERE owner = ?', key);
      for (let at = 0, part = 0; at < bytes.length; at += PART, part++) {
        sql.exec('INSERT INTO relay_blobs (owner, part, bytes) VALUES (?, ?, ?)', key, part, buffer(bytes.subarray(at, at + PART)));
      }
    },
    getBlob(key) {
      const parts = rows('SELECT bytes FROM relay_blobs WHERE owner = ? ORDER BY part', key).map((r) => bytesOf(r.bytes));
      const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) { out.set(p, at); at += p.length; }
      return toBase64(out);
    },
    missing: () => rows('SELECT key, ref, have FROM relay_attachments WHERE size IS NULL OR have < size ORDER BY at, key LIMIT ?', MAX_ATTACHMENTS)
      .map((r) => ({ key: String(r.key), ref: toBase64(bytesOf(r.ref)), have: Number(r.have) })),
  };
}

/** Who the relay is, its key check, and the cursor blobs a device keeps under a slot and the others. */
function state(c: Ctx, a: Record<string, unknown>): RelayStateAnswer {
  const who = a.device === undefined || a.device === null ? null : device(a.device, 'args.device');
  const slot = who === null ? null : name(a.slot, 'args.slot');
  const check = c.one('SELECT value FROM relay_meta WHERE key = \'check\'');
  const own = who === null ? undefined : c.one('SELECT cursor FROM relay_slots WHERE device = ? AND slot = ?', who, slot);
  const others = who === null ? [] : c.rows('SELECT slot, cursor FROM relay_slots WHERE device = ? AND slot != ? ORDER BY at DESC, slot LIMIT ?', who, slot, OTHER_SLOTS)
    .map((r) => ({ slot: String(r.slot), cursor: toBase64(bytesOf(r.cursor)) }));
  return { relay: c.relay, check: check ? String(check.value) : null, end: c.end(), cursor: own ? toBase64(bytesOf(own.cursor)) : null, others, missing: c.missing() };
}

/** The key check, kept the first time one is given: every device opens the one stored. */
function check(c: Ctx, a: Record<string, unknown>): { relay: string; check: string } {
  const sealed = blob(a.blob, 'args.blob', 1024);
  c.exec('INSERT OR IGNORE INTO relay_meta (key, value) VALUES (\'check\', ?)', toBase64(sealed));
  return { relay: c.relay, check: String(c.one('SELECT value FROM relay_meta WHERE key = \'check\'')!.value) };
}

/** Log entries after a place that another device pushed, within about `maxBytes` (one at least). */
function read(c: Ctx, a: Record<string, unknown>): RelayReadAnswer {
  const who = device(a.device, 'args.device');
  const after = int(a.after, 'args.after', 0);
  const from = a.include === true ? after : after + 1;
  const maxBytes = Math.min(int(a.maxBytes, 'args.maxBytes', 1), MAX_ANSWER_BYTES);
  const mark = int(a.mark, 'args.mark', 0);
  const marked = mark > 0 ? c.one('SELECT eid FROM relay_log WHERE seq = ?', mark) : undefined;
  const found = c.rows('SELECT seq, device, eid, size FROM relay_log WHERE seq >= ? AND device != ? ORDER BY seq LIMIT ?', from, who, READ_ROWS);
  const entries: RelayEntry[] = [];
  let used = 0;
  for (const r of found) {
    if (entries.length > 0 && used + Number(r.size) > maxBytes) break;
    entries.push({ seq: Number(r.seq), eid: String(r.eid), device: String(r.device), blob: c.getBlob(owner('l', Number(r.seq))) });
    used += Number(r.size);
  }
  const last = entries.at(-1)?.seq ?? from - 1;
  const more = c.one('SELECT 1 AS x FROM relay_log WHERE seq > ? AND device != ? LIMIT 1', last, who) !== undefined;
  return { relay: c.relay, end: c.end(), mark: marked ? String(marked.eid) : null, entries, more };
}

/** The state blobs of every other device. */
function states(c: Ctx, a: Record<string, unknown>): RelayStatesAnswer {
  const who = device(a.device, 'args.device');
  const slots = c.rows('SELECT device, slot FROM relay_slots WHERE device != ? AND state_bytes > 0 ORDER BY device, slot', who);
  const size = Number(c.one('SELECT COALESCE(SUM(state_bytes), 0) AS n FROM relay_slots WHERE device != ?', who)!.n);
  if (size > MAX_STATES_BYTES) {
    throw new PagewiseError('STORAGE_FULL', MODULE, `The other devices' pins, aliases and checkouts take ${size} bytes here, over the ${MAX_STATES_BYTES} one answer carries: each conversation filter a device syncs with keeps its own; delete this relay object and sync into a new one.`);
  }
  return { relay: c.relay, states: slots.map((r) => ({ device: String(r.device), slot: String(r.slot), blob: c.getBlob(owner('s', String(r.device), String(r.slot))) })) };
}

/**
 * A device's push, in one transaction: the entry at the next place (refused, `ok: false`, when another device took it),
 * the device's cursor and state under its slot, the attachments the entry's turns name.
 */
function push(c: Ctx, a: Record<string, unknown>): RelayPushAnswer {
  const who = device(a.device, 'args.device');
  const slot = name(a.slot, 'args.slot');
  const cursor = blob(a.cursor, 'args.cursor', MAX_CURSOR_BYTES);
  const sealedState = a.state === undefined ? null : blob(a.state, 'args.state', MAX_BLOB_BYTES);
  const e = a.entry === undefined ? null : record(a.entry, 'args.entry');
  const entry = e && { seq: int(e.seq, 'args.entry.seq', 1), eid: eid(e.eid, 'args.entry.eid'), blob: blob(e.blob, 'args.entry.blob', MAX_BLOB_BYTES) };
  const refs = (a.refs === undefined ? [] : list(a.refs, 'args.refs', MAX_REFS)).map((raw, i) => {
    const r = record(raw, `args.refs[${i}]`);
    return { key: name(r.key, `args.refs[${i}].key`), ref: blob(r.ref, `args.refs[${i}].ref`, 4096) };
  });
  return c.storage.transactionSync((): RelayPushAnswer => {
    const last = c.end();
    if (entry && entry.seq !== last + 1) return { relay: c.relay, ok: false, end: last, missing: [] };
    const now = Date.now();
    if (entry) {
      c.exec('INSERT INTO relay_log (seq, device, eid, size, at) VALUES (?, ?, ?, ?, ?)', entry.seq, who, entry.eid, entry.blob.length, now);
      c.putBlob(owner('l', entry.seq), entry.blob);
    }
    c.exec('INSERT INTO relay_slots (device, slot, cursor, at) VALUES (?, ?, ?, ?) ON CONFLICT (device, slot) DO UPDATE SET cursor = excluded.cursor, at = excluded.at', who, slot, buffer(cursor), now);
    if (sealedState) {
      c.putBlob(owner('s', who, slot), sealedState);
      c.exec('UPDATE relay_slots SET state_bytes = ? WHERE device = ? AND slot = ?', sealedState.length, who, slot);
    }
    for (const r of refs) c.exec('INSERT OR IGNORE INTO relay_attachments (key, ref, size, have, at) VALUES (?, ?, NULL, 0, ?)', r.key, buffer(r.ref), now);
    return { relay: c.relay, ok: true, end: entry ? entry.seq : last, missing: c.missing() };
  });
}

function readPiece(raw: unknown, i: number) {
  const at = `args.pieces[${i}]`;
  const p = record(raw, at);
  const len = int(p.len, `${at}.len`, 1, MAX_PIECE_BYTES);
  const piece = {
    key: name(p.key, `${at}.key`), start: int(p.start, `${at}.start`, 0), len, size: int(p.size, `${at}.size`, 1),
    blob: blob(p.blob, `${at}.blob`, MAX_PIECE_BYTES + SEAL_OVERHEAD), ref: p.ref === undefined ? null : blob(p.ref, `${at}.ref`, 4096),
  };
  if (piece.blob.length !== len + SEAL_OVERHEAD) invalid(`${at}.blob`, `must seal the piece's ${len} bytes (${len + SEAL_OVERHEAD} bytes sealed; got ${piece.blob.length}).`);
  if (piece.start + len > piece.size) invalid(`${at}.len`, `runs past the attachment's size (${piece.start} + ${len} > ${piece.size}).`);
  return piece;
}

/** Pieces of attachments' bytes: each kept when it is the next of an attachment the relay knows, of the same size. */
function put(c: Ctx, a: Record<string, unknown>): RelayPutAnswer {
  const pieces = list(a.pieces, 'args.pieces', MAX_ATTACHMENTS).map(readPiece);
  return c.storage.transactionSync((): RelayPutAnswer => {
    const results: RelayPutAnswer['results'] = [];
    for (const p of pieces) {
      let row = c.one('SELECT size, have FROM relay_attachments WHERE key = ?', p.key);
      if (!row && p.start === 0 && p.ref) {
        c.exec('INSERT INTO relay_attachments (key, ref, size, have, at) VALUES (?, ?, ?, 0, ?)', p.key, buffer(p.ref), p.size, Date.now());
        row = { size: p.size, have: 0 };
      }
      const have = Number(row?.have ?? 0);
      const size = row?.size === null || row?.size === undefined ? p.size : Number(row.size);
      if (!row || size !== p.size || have !== p.start || have >= size) {
        results.push({ key: p.key, have, size, whole: false });
        continue;
      }
      c.exec('INSERT OR REPLACE INTO relay_pieces (key, start, len) VALUES (?, ?, ?)', p.key, p.start, p.len);
      c.putBlob(owner('p', p.key, p.start), p.blob);
      c.exec('UPDATE relay_attachments SET have = ?, size = ?, ref = COALESCE(?, ref) WHERE key = ?', have + p.len, size, p.ref ? buffer(p.ref) : null, p.key);
      results.push({ key: p.key, have: have + p.len, size, whole: have + p.len === size });
    }
    return { relay: c.relay, results, missing: c.missing() };
  });
}

/** Pieces of attachments held whole, from where each asker's bytes end, within about `maxBytes` (one at least). */
function pieces(c: Ctx, a: Record<string, unknown>): RelayPiecesAnswer {
  const want = list(a.want, 'args.want', MAX_ATTACHMENTS).map((raw, i) => {
    const w = record(raw, `args.want[${i}]`);
    return { key: name(w.key, `args.want[${i}].key`), from: int(w.from, `args.want[${i}].from`, 0) };
  });
  const maxBytes = Math.min(int(a.maxBytes, 'args.maxBytes', 1), MAX_ANSWER_BYTES);
  const out: RelayPiecesAnswer['attachments'] = [];
  let used = 0;
  for (const w of want) {
    if (used >= maxBytes) break;
    const row = c.one('SELECT ref, size, have FROM relay_attachments WHERE key = ?', w.key);
    if (!row || row.size === null || Number(row.have) < Number(row.size) || w.from >= Number(row.size)) continue;
    const given: RelayPiecesAnswer['attachments'][number]['pieces'] = [];
    for (const p of c.rows('SELECT start, len FROM relay_pieces WHERE key = ? AND start + len > ? ORDER BY start', w.key, w.from)) {
      if (used > 0 && used + Number(p.len) > maxBytes) break;
      given.push({ start: Number(p.start), len: Number(p.len), blob: c.getBlob(owner('p', w.key, Number(p.start))) });
      used += Number(p.len);
    }
    if (given.length > 0) out.push({ key: w.key, ref: toBase64(bytesOf(row.ref)), size: Number(row.size), pieces: given });
  }
  return { relay: c.relay, attachments: out };
}

const OPS: Record<RelayOp, (c: Ctx, a: Record<string, unknown>) => unknown> = { state, check, read, states, push, put, pieces };

/** The relay store on a Durable Object's SQLite (`ctx.storage`); its schema is made on first use. */
export function relayStore(storage: DurableObjectStorageLike): RelayStore {
  const c = context(storage);
  return {
    call(op, args) {
      if (typeof op !== 'string' || !(RELAY_OPS as readonly string[]).includes(op)) {
        invalid('op', `must be one of ${RELAY_OPS.join(', ')}: a relay serves nothing else (got ${describe(op)}).`);
      }
      return OPS[op as RelayOp](c, record(args ?? {}, 'args'));
    },
  };
}
