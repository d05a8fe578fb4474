// What a driver does differently for an encrypted database: check the file's first bytes against the key before
// SQLite opens it (nothing is written on a wrong or missing key), seal exports, and change the key (rekey) — in
// place through the key slots, or by rewriting the database when it goes from plain to encrypted or back.
import type { Database, Sqlite3Static } from '@sqlite.org/sqlite-wasm';
import { PagewiseError } from '../contracts/errors.js';
import type { EncryptionOptions, StorageDriver } from '../contracts/types.js';
import { convertInPlace, writeWhole } from './crypt-convert.js';
import { HEADER_BYTES, MODULE, decodeHeader, fileKind, openImage, sealImage, slotBytes } from './crypt-format.js';
import { type ReadKey, makeSlot, newHeader, readEncryption, unlock } from './crypt-keys.js';
import { type RawVfs, SQLITE_OPEN_MAIN_DB, SQLITE_OPEN_READONLY } from './crypt-raw.js';
import { type CryptContext, type CryptVfs, installCryptVfs } from './crypt-vfs.js';

export const DEFAULT_PAGE_SIZE = 4096;

/** How a database opens: through the underlying VFS (plain) or the encrypting one (with its context). */
export interface OpenPlan {
  vfs: string;
  ctx?: CryptContext;
  crypt: CryptVfs;
}

export function keyRequired(where: string): PagewiseError {
  return new PagewiseError('KEY_REQUIRED', MODULE, `${where} is encrypted: open it with its key (encryption: { key } or { passphrase }). Nothing was changed.`);
}

export function notEncrypted(where: string): PagewiseError {
  return new PagewiseError('WRONG_KEY', MODULE, `${where} is not encrypted, so no key opens it. Open it without \`encryption\`, then call memory.rekey({ key }) or memory.rekey({ passphrase }) to encrypt it in place. Nothing was changed.`);
}

/** The context for an image's header: its data key, from the slot the key opens. */
export async function contextOf(head: Uint8Array, key: ReadKey | undefined, where: string): Promise<CryptContext> {
  if (!key) throw keyRequired(where);
  const header = decodeHeader(head);
  return { header, dek: (await unlock(header, key)).dek };
}

/**
 * Reads the first bytes of database `name` on VFS `underVfs` and decides how it opens, before SQLite touches it:
 * KEY_REQUIRED, WRONG_KEY (also a key for a plain database), or the VFS to open it with. A new database with a key
 * gets a new header (written with the first page).
 */
export async function planOpen(sqlite3: Sqlite3Static, underVfs: string, name: string, key: ReadKey | undefined, where: string): Promise<OpenPlan> {
  const crypt = installCryptVfs(sqlite3, underVfs);
  const raw = crypt.under.open(name, SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB);
  let head: Uint8Array = new Uint8Array(0);
  if (raw) try { head = raw.read(0, HEADER_BYTES); } finally { raw.close(); }
  const kind = fileKind(head.subarray(0, 16));
  if (kind === 'encrypted') {
    const ctx = await contextOf(head, key, where);
    crypt.contexts.set(name, ctx);
    return { vfs: crypt.name, ctx, crypt };
  }
  if (kind === 'plain' && key) throw notEncrypted(where);
  if (kind === 'unknown' && key) {
    throw new PagewiseError('STORAGE_ERROR', MODULE, `${where} is neither a SQLite database nor an encrypted pagewise database; nothing was changed. Pass the path of a database pagewise wrote, or of a new file.`);
  }
  if (kind === 'empty' && key) {
    const ctx = await newHeader(key, DEFAULT_PAGE_SIZE);
    crypt.contexts.set(name, ctx);
    return { vfs: crypt.name, ctx, crypt };
  }
  return { vfs: underVfs, crypt };
}

/** The encryption an image (an export) is in, and its plaintext: what `sqliteWasm({ bytes })` opens in memory. */
export async function plainImage(bytes: Uint8Array, key: ReadKey | undefined): Promise<{ plain: Uint8Array; ctx?: CryptContext }> {
  const kind = fileKind(bytes.subarray(0, 16));
  if (kind === 'encrypted') {
    const ctx = await contextOf(bytes.subarray(0, HEADER_BYTES), key, 'The given bytes');
    return { plain: openImage(bytes, ctx.header, ctx.dek), ctx };
  }
  if (key && kind === 'plain') throw notEncrypted('The given bytes');
  return { plain: bytes };
}

/**
 * Writes `bytes` (an export) as the new database `name` when they are sealed, after checking that `key` opens every
 * page: true. False for plain bytes, which the caller imports its own way.
 */
export async function writeImportedImage(under: RawVfs, name: string, bytes: Uint8Array, key: ReadKey | undefined): Promise<boolean> {
  const { ctx } = await plainImage(bytes, key);
  if (!ctx) return false;
  writeWhole(under, name, bytes, SQLITE_OPEN_MAIN_DB);
  return true;
}

/** An export of an encrypted database: its plaintext sealed page by page under the same header (the same key opens it). */
export function sealedExport(plain: Uint8Array, ctx: CryptContext | undefined): Uint8Array {
  return ctx ? sealImage(plain, ctx.header, ctx.dek) : plain;
}

/** A new context for `key`: the current data key under a new slot, or a new header when there is none yet. */
export async function nextContext(current: CryptContext | undefined, key: ReadKey, pageSize: number): Promise<{ ctx: CryptContext; slot: number }> {
  if (!current) return { ctx: await newHeader(key, pageSize), slot: 0 };
  const gens = current.header.slots.map((s) => s?.generation ?? 0);
  // The slot written is the older one; the newer keeps opening the database until the new one is on disk.
  const slot = gens[0]! <= gens[1]! ? 0 : 1;
  const made = await makeSlot(key, current.header.fileId, current.dek, Math.max(...gens) + 1);
  const slots = [...current.header.slots];
  slots[slot] = made;
  slots[1 - slot] = undefined;
  return { ctx: { dek: current.dek, header: { ...current.header, slots } }, slot };
}

/**
 * Changes the key of the open encrypted database `name` in place, crash-safe: the new slot is written and synced
 * into the older slot's place while the newer one still opens the file, then the old slot is cleared and synced.
 * A kill between the two leaves a file both keys open; before the first, the old key; after, the new one.
 */
export function writeRekey(crypt: CryptVfs, name: string, live: CryptContext, next: CryptContext, slot: number): void {
  crypt.writeSlot(name, slot, slotBytes(next.header.slots[slot]));
  live.header.slots[slot] = next.header.slots[slot];
  crypt.writeSlot(name, 1 - slot, slotBytes(undefined));
  live.header.slots[1 - slot] = undefined;
}

/** Drops a database's data key from the encrypting VFS and from memory (at close, or when an open failed). */
export function forgetContext(state: CryptState): void {
  if (state.file && state.file.crypt.contexts.get(state.file.name) === state.ctx) state.file.crypt.contexts.delete(state.file.name);
  state.ctx?.dek.fill(0);
  state.ctx = undefined;
}

/** A sqlite-wasm driver, which can also put another database in place of its own (an in-place conversion). */
export interface SqliteDriver extends StorageDriver {
  /** Finalizes the statements, then opens what `swap` gives, after it closed the current database with `close`. */
  replaceDatabase(swap: (close: () => void) => Database): void;
  export(): Uint8Array;
}

/** What an encrypted (or encryptable) driver keeps: its context, and for a file how to open it again. */
export interface CryptState {
  ctx?: CryptContext;
  file?: {
    crypt: CryptVfs;
    name: string;
    /** Opens the database `name` again, on `vfs`, configured as at first. */
    reopen(vfs: string): Database;
  };
}

/**
 * The driver with encryption's part: `encrypted`, exports sealed under the database's header, and `rekey` — a new
 * key slot in place, or the whole database rewritten crash-safely when it goes from plain to encrypted or back.
 */
/** A driver that can say whether an encryption opens its database (a second tab's key, checked by the owning one). */
export interface EncryptedDriver extends StorageDriver {
  /** `ok` when `encryption` (null: none) opens this database, else the code opening with it would fail with. */
  opensWith(encryption: EncryptionOptions | null): Promise<'ok' | 'WRONG_KEY' | 'KEY_REQUIRED'>;
}

export function withEncryption(driver: SqliteDriver, state: CryptState): EncryptedDriver {
  const pageSize = (): number => Number((driver.query('PRAGMA page_size') as { page_size: number }[])[0]?.page_size ?? DEFAULT_PAGE_SIZE);
  return {
    name: driver.name,
    limits: driver.limits,
    query: (sql, params) => driver.query(sql, params),
    batch: (statements) => driver.batch(statements),
    close: () => {
      try { return driver.close(); } finally { forgetContext(state); }
    },
    get encrypted() { return state.ctx !== undefined; },
    async opensWith(encryption) {
      const key = encryption === null ? undefined : readEncryption(encryption, 'encryption', 'INVALID_ARGUMENT');
      if (!state.ctx) return key ? 'WRONG_KEY' : 'ok';
      if (!key) return 'KEY_REQUIRED';
      return unlock(state.ctx.header, key).then(() => 'ok' as const, () => 'WRONG_KEY' as const);
    },
    // An encrypted file is its own sealed export: its bytes, between transactions (every commit is on disk by then).
    export: () => (state.file && state.ctx && state.file.crypt.readRaw(state.file.name)) || sealedExport(driver.export(), state.ctx),
    async rekey(encryption: EncryptionOptions | null) {
      const key = encryption === null ? undefined : readEncryption(encryption, 'encryption', 'INVALID_ARGUMENT');
      const file = state.file;
      if (!file) {
        state.ctx = key ? (await nextContext(state.ctx, key, pageSize())).ctx : undefined;
        return;
      }
      if (state.ctx && key) {
        const { ctx, slot } = await nextContext(state.ctx, key, pageSize());
        writeRekey(file.crypt, file.name, state.ctx, ctx, slot);
        return;
      }
      if (!state.ctx && !key) return;
      // Plain to encrypted, or back: the whole image, rewritten beside the database and copied over it.
      const next = key ? (await nextContext(undefined, key, pageSize())).ctx : undefined;
      const plain = driver.export();
      const image = sealedExport(plain, next);
      driver.replaceDatabase((close) => {
        convertInPlace(file.crypt.under, file.name, image, close);
        if (next) file.crypt.contexts.set(file.name, next);
        else file.crypt.contexts.delete(file.name);
        state.ctx = next;
        return file.reopen(next ? file.crypt.name : file.crypt.under.name);
      });
    },
  };
}

export { newHeader, readEncryption };
