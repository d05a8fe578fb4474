// The journal (and any temporary file) of an encrypted database: a prefix with a generation id made when the file
// is empty, then blocks sealed one by one, each in one 4 KiB page of the file (XChaCha20-Poly1305; the file id, the
// generation and the block's number in the associated data), each with how many of its bytes are in use. A changed,
// moved or replayed block does not open: a hot journal that was tampered with fails the open instead of rolling wrong
// bytes into the database.
//
// Writes are gathered and sealed when SQLite syncs the journal (or reads it, sizes it down, closes it): SQLite
// writes a page's record in three pieces, and sealing each would seal most blocks several times. Nothing is lost to
// a killed process by waiting: SQLite syncs the journal before it changes a byte of the database.
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { NONCE_BYTES, TAG_BYTES, randomBytes } from './crypt-format.js';
import { SQLITE_IOERR_DATA, SQLITE_IOERR_SHORT_READ, SQLITE_OK } from './crypt-raw.js';

export const JOURNAL_MAGIC = new TextEncoder().encode('pwjrnl03');
const GEN_BYTES = 24;
/** The magic and the generation, alone in the file's first 4 KiB page (the rest zeros). */
export const JOURNAL_PREFIX = 4096;
/**
 * A block's slot is one 4 KiB page of the file, on a page boundary: a killed process's write() stops between pages,
 * never inside one, so a slot rewritten in place (the journal header's record count, the last block's count of bytes
 * in use) is after a kill the old block or the new one, never half of each (which would not open).
 */
export const BLOCK_SLOT = 4096;
export const BLOCK = BLOCK_SLOT - NONCE_BYTES - 4 - TAG_BYTES;


/** One journal's state while open: its key and file id, its generation, its size, and blocks not yet sealed. */
export interface JournalState {
  key: Uint8Array;
  fileId: Uint8Array;
  gen?: Uint8Array;
  /** The logical size, written blocks included (-1: read it from the file). */
  size: number;
  /** The logical size of what is sealed in the file. */
  sealed?: number;
  /** Blocks written since the last flush, in the clear. */
  dirty?: Map<number, Uint8Array>;
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
    const prefix = raw.read(0, JOURNAL_MAGIC.length + GEN_BYTES)!;
    if (!JOURNAL_MAGIC.every((b, i) => prefix[i] === b)) fail(SQLITE_IOERR_DATA);
    return j.gen = prefix.slice(JOURNAL_MAGIC.length);
  }
  if (!create) return undefined;
  const prefix = new Uint8Array(JOURNAL_PREFIX);
  prefix.set(JOURNAL_MAGIC, 0);
  const gen = randomBytes(GEN_BYTES);
  prefix.set(gen, JOURNAL_MAGIC.length);
  const rc = raw.write(0, prefix);
  if (rc !== SQLITE_OK) fail(rc);
  j.size = j.sealed = 0;
  return j.gen = gen;
}

/** Sealed block `index` in the clear (BLOCK bytes) with how many are in use; undefined beyond the file's end. */
function readSealed(j: JournalState, raw: Raw, index: number): { data: Uint8Array; used: number } | undefined {
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

function seal(j: JournalState, index: number, data: Uint8Array, used: number): Uint8Array {
  const plain = new Uint8Array(4 + BLOCK);
  new DataView(plain.buffer).setUint32(0, used, true);
  plain.set(data, 4);
  const nonce = randomBytes(NONCE_BYTES);
  const slot = new Uint8Array(BLOCK_SLOT);
  slot.set(nonce, 0);
  xchacha20poly1305(j.key, nonce, aad(j, index)).encrypt(plain, slot.subarray(NONCE_BYTES));
  return slot;
}

/** The journal's logical size: the full blocks before the last, what the last one uses, and what is not sealed yet. */
export function journalSize(j: JournalState, raw: Raw): number {
  if (j.size >= 0) return j.size;
  j.sealed = 0;
  if (!generation(j, raw, false)) return j.size = 0;
  const blocks = Math.floor((raw.size() - JOURNAL_PREFIX) / BLOCK_SLOT);
  if (blocks > 0) j.sealed = (blocks - 1) * BLOCK + (readSealed(j, raw, blocks - 1)?.used ?? 0);
  return j.size = j.sealed;
}

/** A block as it stands: written and not sealed, or sealed in the file, or zeros. */
function current(j: JournalState, raw: Raw, index: number): Uint8Array {
  const pending = j.dirty?.get(index);
  if (pending) return pending;
  return index * BLOCK < (j.sealed ?? 0) ? readSealed(j, raw, index)!.data : new Uint8Array(BLOCK);
}

/**
 * Seals what was written: every changed block, the block the sealed part ended in (its count of bytes in use grows)
 * and any block between, in one write.
 */
export function journalFlush(j: JournalState, raw: Raw): number {
  if (!j.dirty || j.dirty.size === 0) return SQLITE_OK;
  const size = journalSize(j, raw);
  const last = Math.ceil(size / BLOCK) - 1;
  const indices = new Set([...j.dirty.keys()].filter((i) => i <= last));
  for (let i = Math.floor((j.sealed ?? 0) / BLOCK); i <= last; i++) indices.add(i);
  const sorted = [...indices].sort((a, b) => a - b);
  // Each run of consecutive blocks (up to 16: some VFSs refuse very large writes) is sealed into one buffer and
  // written at once.
  for (let r = 0; r < sorted.length;) {
    let end = r;
    while (end + 1 < sorted.length && end - r < 15 && sorted[end + 1] === sorted[end]! + 1) end++;
    const first = sorted[r]!;
    const out = new Uint8Array((end - r + 1) * BLOCK_SLOT);
    for (let index = first; index <= sorted[end]!; index++) {
      out.set(seal(j, index, current(j, raw, index), Math.min(BLOCK, size - index * BLOCK)), (index - first) * BLOCK_SLOT);
    }
    const rc = raw.write(at(first), out);
    if (rc !== SQLITE_OK) return rc;
    r = end + 1;
  }
  j.dirty.clear();
  j.sealed = size;
  return SQLITE_OK;
}

export function journalRead(j: JournalState, raw: Raw, dest: Uint8Array, offset: number): number {
  const flushed = journalFlush(j, raw);
  if (flushed !== SQLITE_OK) return flushed;
  const size = journalSize(j, raw);
  let short = false;
  for (let pos = offset; pos < offset + dest.length;) {
    const index = Math.floor(pos / BLOCK);
    const within = pos - index * BLOCK;
    const len = Math.min(BLOCK - within, offset + dest.length - pos);
    const have = Math.max(0, Math.min(len, size - pos));
    if (have > 0) dest.set(current(j, raw, index).subarray(within, within + have), pos - offset);
    if (have < len) { dest.fill(0, pos - offset + have, pos - offset + len); short = true; }
    pos += len;
  }
  return short ? SQLITE_IOERR_SHORT_READ : SQLITE_OK;
}

export function journalWrite(j: JournalState, raw: Raw, src: Uint8Array, offset: number): number {
  generation(j, raw, true);
  const size = journalSize(j, raw);
  j.dirty ??= new Map();
  for (let pos = offset; pos < offset + src.length;) {
    const index = Math.floor(pos / BLOCK);
    const within = pos - index * BLOCK;
    const len = Math.min(BLOCK - within, offset + src.length - pos);
    const block = j.dirty.get(index) ?? current(j, raw, index).slice();
    block.set(src.subarray(pos - offset, pos - offset + len), within);
    j.dirty.set(index, block);
    pos += len;
  }
  j.size = Math.max(size, offset + src.length);
  return SQLITE_OK;
}

export function journalTruncate(j: JournalState, raw: Raw, size: number): number {
  if (size === 0) {
    // An empty journal starts a new generation: blocks of the last one can never be replayed into the next.
    j.gen = undefined;
    j.dirty = undefined;
    j.size = j.sealed = 0;
    return raw.truncate(0);
  }
  const flushed = journalFlush(j, raw);
  if (flushed !== SQLITE_OK) return flushed;
  const currentSize = journalSize(j, raw);
  if (size === currentSize) return SQLITE_OK;
  if (size > currentSize) {
    // Grown with zeros: the last block and the new ones sealed with their counts.
    j.dirty = new Map([[Math.ceil(size / BLOCK) - 1, current(j, raw, Math.ceil(size / BLOCK) - 1).slice()]]);
    j.size = size;
    return journalFlush(j, raw);
  }
  const blocks = Math.ceil(size / BLOCK);
  const lastBlock = current(j, raw, blocks - 1).slice();
  lastBlock.fill(0, size - (blocks - 1) * BLOCK);
  const rc = raw.write(at(blocks - 1), seal(j, blocks - 1, lastBlock, size - (blocks - 1) * BLOCK));
  if (rc !== SQLITE_OK) return rc;
  j.size = j.sealed = size;
  return raw.truncate(at(blocks));
}
