// The journal (and any temporary file) of an encrypted database: a prefix with a generation id made when the file
// is empty, then blocks of 1 KiB sealed one by one (XChaCha20-Poly1305; the file id, the generation and the block's
// number in the associated data), each with how many of its bytes are in use. A changed, moved or replayed block does
// not open: a hot journal that was tampered with fails the open instead of rolling wrong bytes into the database.
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { NONCE_BYTES, TAG_BYTES, randomBytes } from './crypt-format.js';

export const JOURNAL_MAGIC = new TextEncoder().encode('pwjrnl02');
export const JOURNAL_PREFIX = JOURNAL_MAGIC.length + 24;
export const BLOCK = 1024;
export const BLOCK_SLOT = NONCE_BYTES + 4 + BLOCK + TAG_BYTES;

const SQLITE_OK = 0;
const SQLITE_IOERR_SHORT_READ = 522;
const SQLITE_IOERR_DATA = 8202;

/** One journal's state while open: its key and file id, its generation, its size, and its last block in the clear. */
export interface JournalState {
  key: Uint8Array;
  fileId: Uint8Array;
  gen?: Uint8Array;
  /** The logical size, once known (-1: read it from the file). */
  size: number;
  tail?: { index: number; data: Uint8Array };
}

/** What the journal needs of the file under it. */
export interface Raw {
  size(): number;
  read(offset: number, n: number): Uint8Array | undefined;
  write(offset: number, bytes: Uint8Array): number;
  truncate(size: number): number;
}

const fail = (rc: number): never => { throw Object.assign(new Error(`journal (SQLite code ${rc})`), { rc }); };
const at = (index: number): number => JOURNAL_PREFIX + index * BLOCK_SLOT;

function aad(j: JournalState, index: number): Uint8Array {
  const out = new Uint8Array(16 + 24 + 8);
  out.set(j.fileId, 0);
  out.set(j.gen!, 16);
  new DataView(out.buffer).setBigUint64(40, BigInt(index), true);
  return out;
}

/** The generation: read from the prefix, or (`create`, an empty file) made and written. */
function generation(j: JournalState, raw: Raw, create: boolean): Uint8Array | undefined {
  if (j.gen) return j.gen;
  if (raw.size() >= JOURNAL_PREFIX) {
    const prefix = raw.read(0, JOURNAL_PREFIX)!;
    if (!JOURNAL_MAGIC.every((b, i) => prefix[i] === b)) fail(SQLITE_IOERR_DATA);
    return j.gen = prefix.slice(JOURNAL_MAGIC.length);
  }
  if (!create) return undefined;
  const prefix = new Uint8Array(JOURNAL_PREFIX);
  prefix.set(JOURNAL_MAGIC, 0);
  const gen = randomBytes(24);
  prefix.set(gen, JOURNAL_MAGIC.length);
  const rc = raw.write(0, prefix);
  if (rc !== SQLITE_OK) fail(rc);
  j.size = 0;
  return j.gen = gen;
}

/** Block `index` in the clear (BLOCK bytes) with how many are in use; undefined beyond the file's end. */
function readBlock(j: JournalState, raw: Raw, index: number): { data: Uint8Array; used: number } | undefined {
  if (j.tail?.index === index) return { data: j.tail.data, used: Math.min(BLOCK, j.size - index * BLOCK) };
  const sealed = raw.read(at(index), BLOCK_SLOT);
  if (!sealed) return undefined;
  let plain: Uint8Array;
  try {
    plain = xchacha20poly1305(j.key, sealed.subarray(0, NONCE_BYTES), aad(j, index)).decrypt(sealed.subarray(NONCE_BYTES));
  } catch {
    return fail(SQLITE_IOERR_DATA);
  }
  const used = new DataView(plain.buffer, plain.byteOffset).getUint32(0, true);
  if (used > BLOCK) fail(SQLITE_IOERR_DATA);
  return { data: plain.slice(4), used };
}

function writeBlock(j: JournalState, raw: Raw, index: number, data: Uint8Array, used: number): void {
  const plain = new Uint8Array(4 + BLOCK);
  new DataView(plain.buffer).setUint32(0, used, true);
  plain.set(data, 4);
  const nonce = randomBytes(NONCE_BYTES);
  const slot = new Uint8Array(BLOCK_SLOT);
  slot.set(nonce, 0);
  xchacha20poly1305(j.key, nonce, aad(j, index)).encrypt(plain, slot.subarray(NONCE_BYTES));
  const rc = raw.write(at(index), slot);
  if (rc !== SQLITE_OK) fail(rc);
  j.tail = { index, data };
}

/** The journal's logical size: the full blocks before the last, and what the last one uses. */
export function journalSize(j: JournalState, raw: Raw): number {
  if (j.size >= 0) return j.size;
  if (!generation(j, raw, false)) return j.size = 0;
  const blocks = Math.floor((raw.size() - JOURNAL_PREFIX) / BLOCK_SLOT);
  if (blocks <= 0) return j.size = 0;
  j.size = blocks * BLOCK; // so that reading the last block takes its own `used`
  j.tail = undefined;
  const last = readBlock(j, raw, blocks - 1);
  return j.size = (blocks - 1) * BLOCK + (last?.used ?? 0);
}

export function journalRead(j: JournalState, raw: Raw, dest: Uint8Array, offset: number): number {
  const size = journalSize(j, raw);
  let short = false;
  for (let pos = offset; pos < offset + dest.length;) {
    const index = Math.floor(pos / BLOCK);
    const within = pos - index * BLOCK;
    const len = Math.min(BLOCK - within, offset + dest.length - pos);
    const have = Math.max(0, Math.min(len, size - pos));
    if (have > 0) dest.set(readBlock(j, raw, index)!.data.subarray(within, within + have), pos - offset);
    if (have < len) { dest.fill(0, pos - offset + have, pos - offset + len); short = true; }
    pos += len;
  }
  return short ? SQLITE_IOERR_SHORT_READ : SQLITE_OK;
}

/** Makes the journal `size` bytes long at least: the last block filled out, zero blocks after it. */
function extend(j: JournalState, raw: Raw, size: number): void {
  let current = journalSize(j, raw);
  while (current < size) {
    const index = Math.floor(current / BLOCK);
    const block = current % BLOCK === 0 ? { data: new Uint8Array(BLOCK) } : readBlock(j, raw, index)!;
    const end = Math.min(size, (index + 1) * BLOCK);
    writeBlock(j, raw, index, block.data, end - index * BLOCK);
    j.size = current = end;
  }
}

export function journalWrite(j: JournalState, raw: Raw, src: Uint8Array, offset: number): number {
  generation(j, raw, true);
  extend(j, raw, offset);
  for (let pos = offset; pos < offset + src.length;) {
    const index = Math.floor(pos / BLOCK);
    const within = pos - index * BLOCK;
    const len = Math.min(BLOCK - within, offset + src.length - pos);
    const size = journalSize(j, raw);
    const block = index * BLOCK < size ? readBlock(j, raw, index)!.data.slice() : new Uint8Array(BLOCK);
    block.set(src.subarray(pos - offset, pos - offset + len), within);
    const end = Math.max(size, pos + len);
    writeBlock(j, raw, index, block, Math.min(BLOCK, end - index * BLOCK));
    j.size = end;
    pos += len;
  }
  return SQLITE_OK;
}

export function journalTruncate(j: JournalState, raw: Raw, size: number): number {
  if (size === 0) {
    // An empty journal starts a new generation: blocks of the last one can never be replayed into the next.
    j.gen = undefined;
    j.tail = undefined;
    j.size = 0;
    return raw.truncate(0);
  }
  const current = journalSize(j, raw);
  if (size >= current) { extend(j, raw, size); return SQLITE_OK; }
  const blocks = Math.ceil(size / BLOCK);
  const last = readBlock(j, raw, blocks - 1)!;
  const rc = raw.truncate(at(blocks));
  if (rc !== SQLITE_OK) return rc;
  j.size = blocks * BLOCK;
  writeBlock(j, raw, blocks - 1, last.data, size - (blocks - 1) * BLOCK);
  j.size = size;
  return SQLITE_OK;
}
