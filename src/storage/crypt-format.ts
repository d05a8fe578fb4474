// The encrypted database format: a header block with the key slots, then each SQLite page sealed on its own
// (XChaCha20-Poly1305, from @noble/ciphers). Pure functions over bytes: the VFS (crypt-vfs.ts) and whole-image
// conversions (exports, imports) share them. The layout is documented byte for byte in docs/guide/encryption.md.
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { PagewiseError } from '../contracts/errors.js';

export const MODULE = 'encryption';
/** The first 16 bytes of an encrypted database file. */
export const MAGIC = new TextEncoder().encode('pagewise crypt 1');
/** A SQLite database file's first 16 bytes. */
export const SQLITE_MAGIC = new TextEncoder().encode('SQLite format 3\0');
/** The header block before the first page. */
export const HEADER_BYTES = 4096;
/** Per page: a random nonce before it, Poly1305's tag after it. */
export const NONCE_BYTES = 24;
export const TAG_BYTES = 16;
export const PAGE_OVERHEAD = NONCE_BYTES + TAG_BYTES;
/** Two key slots, each in its own 512-byte sector of the header: a rekey writes one while the other still opens. */
export const SLOT_OFFSETS = [512, 1024] as const;
export const SLOT_BYTES = 108;
/** What a slot's wrapped data key is sealed with. */
export const SLOT_KIND = { key: 1, passphrase: 2, cryptoKey: 3 } as const;
const u32 = (b: Uint8Array, at: number): number => new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(at, true);
const putU32 = (b: Uint8Array, at: number, v: number): void => new DataView(b.buffer, b.byteOffset, b.byteLength).setUint32(at, v, true);

// Nonces are drawn from a pool filled 8 KiB at a time: one getRandomValues call per nonce cost more than sealing a
// journal block (Node reads its CSPRNG per call).
const POOL_BYTES = 8192;
let pool = new Uint8Array(0);
let poolAt = 0;

export function randomBytes(n: number): Uint8Array {
  if (n > POOL_BYTES / 4) {
    const out = new Uint8Array(n);
    globalThis.crypto.getRandomValues(out);
    return out;
  }
  if (poolAt + n > pool.length) {
    pool = new Uint8Array(POOL_BYTES);
    globalThis.crypto.getRandomValues(pool);
    poolAt = 0;
  }
  const out = pool.slice(poolAt, poolAt + n);
  // Each byte is handed out once: zeroed in the pool as it goes.
  pool.fill(0, poolAt, poolAt + n);
  poolAt += n;
  return out;
}

export const startsWith = (bytes: Uint8Array, prefix: Uint8Array): boolean =>
  bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b);

/** What a file's first bytes say it is. */
export function fileKind(head: Uint8Array): 'empty' | 'encrypted' | 'plain' | 'unknown' {
  // Only a file with no bytes at all is new: one that starts with zeros is not (it may hold pages).
  if (head.length === 0) return 'empty';
  if (startsWith(head, MAGIC)) return 'encrypted';
  if (startsWith(head, SQLITE_MAGIC)) return 'plain';
  return 'unknown';
}

/** One key slot as stored: how its key encryption key is made, and the data key sealed under it. */
export interface KeySlot {
  generation: number;
  kind: number;
  kdf: { memoryKiB: number; iterations: number; parallelism: number };
  salt: Uint8Array;
  nonce: Uint8Array;
  wrapped: Uint8Array;
}

/** The header block, parsed. */
export interface Header {
  pageSize: number;
  fileId: Uint8Array;
  slots: (KeySlot | undefined)[];
}

/** The slot's bytes up to the nonce: the associated data of its seal, with the magic and the file id. */
export function slotAad(fileId: Uint8Array, slot: Pick<KeySlot, 'generation' | 'kind' | 'kdf' | 'salt'>): Uint8Array {
  const aad = new Uint8Array(MAGIC.length + 16 + 36);
  aad.set(MAGIC, 0);
  aad.set(fileId, 16);
  writeSlotFields(aad.subarray(32), slot);
  return aad;
}

/** A slot's first 36 bytes: generation, kind, Argon2id's cost, salt (what its seal's associated data covers). */
function writeSlotFields(out: Uint8Array, slot: Pick<KeySlot, 'generation' | 'kind' | 'kdf' | 'salt'>): void {
  putU32(out, 0, slot.generation);
  out[4] = slot.kind;
  putU32(out, 8, slot.kdf.memoryKiB);
  putU32(out, 12, slot.kdf.iterations);
  putU32(out, 16, slot.kdf.parallelism);
  out.set(slot.salt, 20);
}

function writeSlot(out: Uint8Array, slot: KeySlot): void {
  out.fill(0, 0, SLOT_BYTES);
  writeSlotFields(out, slot);
  out.set(slot.nonce, 36);
  out.set(slot.wrapped, 60);
}

/** A slot's bytes, for writing into its place in the header. */
export function slotBytes(slot: KeySlot | undefined): Uint8Array {
  const out = new Uint8Array(SLOT_BYTES);
  if (slot) writeSlot(out, slot);
  return out;
}

function readSlot(bytes: Uint8Array): KeySlot | undefined {
  const generation = u32(bytes, 0);
  if (generation === 0) return undefined;
  return {
    generation,
    kind: bytes[4]!,
    kdf: { memoryKiB: u32(bytes, 8), iterations: u32(bytes, 12), parallelism: u32(bytes, 16) },
    salt: bytes.slice(20, 36),
    nonce: bytes.slice(36, 60),
    wrapped: bytes.slice(60, 108),
  };
}

export function encodeHeader(header: Header): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES);
  out.set(MAGIC, 0);
  putU32(out, 16, header.pageSize);
  putU32(out, 20, header.pageSize + PAGE_OVERHEAD);
  out.set(header.fileId, 24);
  out[40] = 1; // XChaCha20-Poly1305
  header.slots.forEach((slot, i) => { if (slot) writeSlot(out.subarray(SLOT_OFFSETS[i]!), slot); });
  return out;
}

export function decodeHeader(bytes: Uint8Array): Header {
  const pageSize = bytes.length >= HEADER_BYTES && startsWith(bytes, MAGIC) ? u32(bytes, 16) : 0;
  if (!pageSize || pageSize & (pageSize - 1) || pageSize < 512 || pageSize > 65536 || u32(bytes, 20) !== pageSize + PAGE_OVERHEAD || bytes[40] !== 1) {
    throw new PagewiseError('STORAGE_ERROR', MODULE, 'The encrypted database\'s header is damaged or of an unknown version: it cannot be opened. Restore it from a backup (memory.exportDatabase()).');
  }
  return {
    pageSize,
    fileId: bytes.slice(24, 40),
    slots: SLOT_OFFSETS.map((at) => readSlot(bytes.subarray(at, at + SLOT_BYTES))),
  };
}

/** The physical offset of page `index` (0-based) and the size of its slot. */
export const pageSlot = (pageSize: number, index: number): number => HEADER_BYTES + index * (pageSize + PAGE_OVERHEAD);

/** The associated data of page `index`: the file id and the page's number, so a page cannot move undetected. */
export function pageAad(fileId: Uint8Array, index: number): Uint8Array {
  const aad = new Uint8Array(24);
  aad.set(fileId, 0);
  new DataView(aad.buffer).setBigUint64(16, BigInt(index), true);
  return aad;
}

/** Seals one page into `out` (pageSize + PAGE_OVERHEAD bytes): nonce, ciphertext, tag. */
export function sealPage(dek: Uint8Array, fileId: Uint8Array, index: number, page: Uint8Array, out: Uint8Array): void {
  const nonce = randomBytes(NONCE_BYTES);
  out.set(nonce, 0);
  xchacha20poly1305(dek, nonce, pageAad(fileId, index)).encrypt(page, out.subarray(NONCE_BYTES, NONCE_BYTES + page.length + TAG_BYTES));
}

/** Opens one sealed page into `out` (pageSize bytes); false when it was not sealed by this key for this place. */
export function openPage(dek: Uint8Array, fileId: Uint8Array, index: number, sealed: Uint8Array, out: Uint8Array): boolean {
  try {
    xchacha20poly1305(dek, sealed.subarray(0, NONCE_BYTES), pageAad(fileId, index)).decrypt(sealed.subarray(NONCE_BYTES), out);
    return true;
  } catch {
    return false;
  }
}

/** A whole plaintext database image sealed page by page under `header` (an export of an encrypted memory). */
export function sealImage(plain: Uint8Array, header: Header, dek: Uint8Array): Uint8Array {
  const p = header.pageSize;
  const pages = Math.ceil(plain.length / p);
  const out = new Uint8Array(HEADER_BYTES + pages * (p + PAGE_OVERHEAD));
  out.set(encodeHeader(header), 0);
  const page = new Uint8Array(p);
  for (let i = 0; i < pages; i++) {
    page.fill(0);
    page.set(plain.subarray(i * p, Math.min(plain.length, (i + 1) * p)));
    sealPage(dek, header.fileId, i, page, out.subarray(pageSlot(p, i), pageSlot(p, i + 1)));
  }
  return out;
}

/** The plaintext image of a sealed database image; a page that does not open is STORAGE_ERROR. */
export function openImage(sealed: Uint8Array, header: Header, dek: Uint8Array): Uint8Array {
  const p = header.pageSize;
  const pages = Math.floor((sealed.length - HEADER_BYTES) / (p + PAGE_OVERHEAD));
  const out = new Uint8Array(pages * p);
  for (let i = 0; i < pages; i++) {
    if (!openPage(dek, header.fileId, i, sealed.subarray(pageSlot(p, i), pageSlot(p, i + 1)), out.subarray(i * p, (i + 1) * p))) {
      throw new PagewiseError('STORAGE_ERROR', MODULE, `Page ${i + 1} of the encrypted database does not open with its key: the bytes were changed or damaged. Restore them from a backup.`);
    }
  }
  return out;
}
