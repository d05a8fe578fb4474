// The encrypting VFS: a shim over another VFS (the Node file VFS, opfs-sahpool) that seals every page of a database
// before it reaches the file and opens it on the way back, and seals its journal in blocks (crypt-journal.ts). SQLite sees a
// plain database; the file holds only the header block (key slots) and sealed pages (crypt-format.ts).
import type { Sqlite3Static } from '@sqlite.org/sqlite-wasm';
import {
  HEADER_BYTES, type Header, MAGIC, PAGE_OVERHEAD, SLOT_BYTES, SLOT_OFFSETS, encodeHeader, openPage, pageSlot, randomBytes, sealPage,
} from './crypt-format.js';
import { type JournalState, type Raw, journalFlush, journalRead, journalSize, journalTruncate, journalWrite } from './crypt-journal.js';
import {
  RawVfs, type RawIo, SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_IOERR_DATA, SQLITE_IOERR_SHORT_READ, SQLITE_NOTFOUND, SQLITE_OK, SQLITE_OPEN_MAIN_DB,
  SQLITE_SYNC_FULL, rawApi,
} from './crypt-raw.js';


/** What a database's files are sealed with while it is open: its header and data key. */
export interface CryptContext {
  header: Header;
  dek: Uint8Array;
}

interface OpenCryptFile {
  pUnder: number;
  io: RawIo;
  /** A database's pages (sealed one by one), or a journal's blocks (crypt-journal.ts). */
  ctx?: CryptContext;
  journal?: JournalState;
  raw?: Raw;
  headerOnDisk: boolean;
  scratch: number;
  scratchSize: number;
}

interface Api {
  wasm: {
    heap8u(): Uint8Array; alloc(n: number): number; dealloc(p: number): void; realloc(p: number, n: number): number;
    poke32(p: number, v: number): void; poke64(p: number, v: bigint): void; peek64(p: number): bigint; allocCString(s: string): number;
  };
  capi: {
    sqlite3_vfs: new (ptr?: number) => { pointer: number; addOnDispose(v: unknown): void; [k: `$${string}`]: number };
    sqlite3_io_methods: new (ptr?: number) => { pointer: number; [k: `$${string}`]: number };
    sqlite3_file: (new (ptr?: number) => { dispose(): void; [k: `$${string}`]: number }) & { structInfo: { sizeof: number } };
  };
  vfs: { installVfs(opt: object): unknown };
}

/** The encrypting VFS over one underlying VFS, and the databases registered with it. */
export interface CryptVfs {
  name: string;
  under: RawVfs;
  /** Databases that may open through it, by the name SQLite opens them with; their journals follow them. */
  contexts: Map<string, CryptContext>;
  /** Writes key slot `index` of the open database `name` and syncs it (a rekey's one step). */
  writeSlot(name: string, index: number, bytes: Uint8Array): void;
  /** The sealed bytes of the open database `name`, read through SQLite's own handle (undefined when not open). */
  readRaw(name: string): Uint8Array | undefined;
}

const installed = new WeakMap<object, Map<string, CryptVfs>>();
const JOURNAL_SUFFIXES = ['-journal', '-wal', '-shm'];

/** The open files of one encrypting VFS: each method seals or opens what passes between SQLite and the file. */
class CryptFiles {
  readonly files = new Map<number, OpenCryptFile>();
  readonly dbFiles = new Map<string, OpenCryptFile>();
  constructor(private readonly wasm: Api['wasm']) {}

  heap(): Uint8Array { return this.wasm.heap8u(); }

  scratch(f: OpenCryptFile, n: number): number {
    if (f.scratchSize < n) {
      f.scratch = f.scratch ? this.wasm.realloc(f.scratch, n) : this.wasm.alloc(n);
      f.scratchSize = n;
    }
    return f.scratch;
  }

  underSize(f: OpenCryptFile): number {
    const p = this.scratch(f, 8);
    const rc = f.io.xFileSize(f.pUnder, p);
    if (rc !== SQLITE_OK) throw Object.assign(new Error('size'), { rc });
    return Number(this.wasm.peek64(p));
  }

  writeRaw(f: OpenCryptFile, bytes: Uint8Array, offset: number): number {
    const p = this.scratch(f, bytes.length);
    this.heap().set(bytes, p);
    return f.io.xWrite(f.pUnder, p, bytes.length, BigInt(offset));
  }

  /** The plaintext of page `index`, or undefined beyond the end of the file; null when it does not open. */
  readPage(f: OpenCryptFile, index: number): Uint8Array | undefined | null {
    const { header, dek } = f.ctx!;
    const slot = header.pageSize + PAGE_OVERHEAD;
    const p = this.scratch(f, slot);
    const rc = f.io.xRead(f.pUnder, p, slot, BigInt(pageSlot(header.pageSize, index)));
    if (rc === SQLITE_IOERR_SHORT_READ) return undefined;
    if (rc !== SQLITE_OK) throw Object.assign(new Error('read'), { rc });
    const page = new Uint8Array(header.pageSize);
    return openPage(dek, header.fileId, index, this.heap().subarray(p, p + slot), page) ? page : null;
  }

  writePage(f: OpenCryptFile, index: number, page: Uint8Array): number {
    const { header, dek } = f.ctx!;
    const sealed = new Uint8Array(header.pageSize + PAGE_OVERHEAD);
    sealPage(dek, header.fileId, index, page, sealed);
    return this.writeRaw(f, sealed, pageSlot(header.pageSize, index));
  }

  /** Calls `fn` for each page `[offset, offset + n)` touches: its index, where in it, how much, where in the range. */
  static pages(size: number, offset: number, n: number, fn: (index: number, within: number, len: number, at: number) => boolean): void {
    for (let pos = offset; pos < offset + n;) {
      const index = Math.floor(pos / size);
      const within = pos - index * size;
      const len = Math.min(size - within, offset + n - pos);
      if (!fn(index, within, len, pos - offset)) return;
      pos += len;
    }
  }

  dbRead(f: OpenCryptFile, pDest: number, n: number, offset: number): number {
    let rc = SQLITE_OK;
    CryptFiles.pages(f.ctx!.header.pageSize, offset, n, (index, within, len, at) => {
      const page = this.readPage(f, index);
      if (page === null) { rc = SQLITE_IOERR_DATA; return false; }
      if (page === undefined) { this.heap().fill(0, pDest + at, pDest + at + len); rc = SQLITE_IOERR_SHORT_READ; }
      else this.heap().set(page.subarray(within, within + len), pDest + at);
      return true;
    });
    return rc;
  }

  dbWrite(f: OpenCryptFile, pSrc: number, n: number, offset: number): number {
    let rc = SQLITE_OK;
    if (!f.headerOnDisk) {
      rc = this.writeRaw(f, encodeHeader(f.ctx!.header), 0);
      if (rc !== SQLITE_OK) return rc;
      f.headerOnDisk = true;
    }
    const size = f.ctx!.header.pageSize;
    CryptFiles.pages(size, offset, n, (index, within, len, at) => {
      // A whole page is sealed as given; part of one is merged into what the page holds.
      const page = len === size ? new Uint8Array(size) : this.readPage(f, index) ?? new Uint8Array(size);
      if (page === null) { rc = SQLITE_IOERR_DATA; return false; }
      page.set(this.heap().subarray(pSrc + at, pSrc + at + len), within);
      rc = this.writePage(f, index, page);
      return rc === SQLITE_OK;
    });
    return rc;
  }

  dbTruncate(f: OpenCryptFile, size: number): number {
    const p = f.ctx!.header.pageSize;
    return f.io.xTruncate(f.pUnder, BigInt(size === 0 ? (f.headerOnDisk ? HEADER_BYTES : 0) : pageSlot(p, Math.ceil(size / p))));
  }

  dbSize(f: OpenCryptFile): number {
    const p = f.ctx!.header.pageSize;
    const physical = this.underSize(f);
    return physical <= HEADER_BYTES ? 0 : Math.floor((physical - HEADER_BYTES) / (p + PAGE_OVERHEAD)) * p;
  }

  /** The file under a journal, as the journal's code reads and writes it. */
  raw(f: OpenCryptFile): Raw {
    return f.raw ??= {
      size: () => this.underSize(f),
      read: (offset, n) => {
        const p = this.scratch(f, n);
        const rc = f.io.xRead(f.pUnder, p, n, BigInt(offset));
        if (rc === SQLITE_IOERR_SHORT_READ) return undefined;
        if (rc !== SQLITE_OK) throw Object.assign(new Error('read'), { rc });
        return this.heap().slice(p, p + n);
      },
      write: (offset, bytes) => this.writeRaw(f, bytes, offset),
      truncate: (size) => f.io.xTruncate(f.pUnder, BigInt(size)),
    };
  }

  journalRead(f: OpenCryptFile, pDest: number, n: number, offset: number): number {
    const dest = new Uint8Array(n);
    const rc = journalRead(f.journal!, this.raw(f), dest, offset);
    this.heap().set(dest, pDest);
    return rc;
  }

  journalWrite(f: OpenCryptFile, pSrc: number, n: number, offset: number): number {
    return journalWrite(f.journal!, this.raw(f), this.heap().slice(pSrc, pSrc + n), offset);
  }

  /**
   * A database file just opened: a new one gets its header (the key slot) on disk and synced before any page, so a
   * file never holds pages with no way to open them; an existing one must start with the header.
   */
  openDb(f: OpenCryptFile): number {
    if (this.underSize(f) === 0) {
      let rc = this.writeRaw(f, encodeHeader(f.ctx!.header), 0);
      if (rc === SQLITE_OK) rc = f.io.xSync(f.pUnder, SQLITE_SYNC_FULL);
      if (rc !== SQLITE_OK) return rc;
    } else {
      const head = this.raw(f).read(0, MAGIC.length);
      if (!head || !MAGIC.every((b, i) => head[i] === b)) return SQLITE_CANTOPEN;
    }
    f.headerOnDisk = true;
    return SQLITE_OK;
  }

  of(pFile: number): OpenCryptFile {
    const f = this.files.get(pFile);
    if (!f) throw Object.assign(new Error('no such file'), { rc: SQLITE_IOERR });
    return f;
  }

  close(pFile: number): number {
    const f = this.files.get(pFile);
    if (!f) return SQLITE_OK;
    if (f.journal) try { journalFlush(f.journal, this.raw(f)); } catch { /* closing: SQLite has what it synced */ }
    this.files.delete(pFile);
    for (const [k, v] of this.dbFiles) if (v === f) this.dbFiles.delete(k);
    try { return f.io.xClose(f.pUnder); } finally {
      this.wasm.dealloc(f.pUnder);
      if (f.scratch) this.wasm.dealloc(f.scratch);
    }
  }
}

/** No method may throw: an exception through the WebAssembly frames would leave SQLite in an undefined state. */
const guard = (fn: () => number): number => {
  try { return fn(); } catch (e) { return (e as { rc?: number }).rc ?? SQLITE_IOERR; }
};

function ioMethods(c: CryptFiles, wasm: Api['wasm']) {
  const on = (pFile: number, db: (f: OpenCryptFile) => number, stream: (f: OpenCryptFile) => number) =>
    guard(() => { const f = c.of(pFile); return f.ctx ? db(f) : stream(f); });
  const pass = (pFile: number, fn: (f: OpenCryptFile) => number) => guard(() => fn(c.of(pFile)));
  return {
    xClose: (pFile: number) => guard(() => c.close(pFile)),
    xRead: (pFile: number, p: number, n: number, at: bigint | number) => on(pFile, (f) => c.dbRead(f, p, n, Number(at)), (f) => c.journalRead(f, p, n, Number(at))),
    xWrite: (pFile: number, p: number, n: number, at: bigint | number) => on(pFile, (f) => c.dbWrite(f, p, n, Number(at)), (f) => c.journalWrite(f, p, n, Number(at))),
    xTruncate: (pFile: number, size: bigint | number) => on(pFile, (f) => c.dbTruncate(f, Number(size)), (f) => journalTruncate(f.journal!, c.raw(f), Number(size))),
    xFileSize: (pFile: number, pSize: number) => on(pFile,
      (f) => { wasm.poke64(pSize, BigInt(c.dbSize(f))); return SQLITE_OK; },
      (f) => { wasm.poke64(pSize, BigInt(journalSize(f.journal!, c.raw(f)))); return SQLITE_OK; }),
    xSync: (pFile: number, flags: number) => pass(pFile, (f) => {
      const rc = f.journal ? journalFlush(f.journal, c.raw(f)) : SQLITE_OK;
      return rc === SQLITE_OK ? f.io.xSync(f.pUnder, flags) : rc;
    }),
    xLock: (pFile: number, level: number) => pass(pFile, (f) => f.io.xLock(f.pUnder, level)),
    xUnlock: (pFile: number, level: number) => pass(pFile, (f) => f.io.xUnlock(f.pUnder, level)),
    xCheckReservedLock: (pFile: number, pOut: number) => pass(pFile, (f) => f.io.xCheckReservedLock(f.pUnder, pOut)),
    // Size hints and the like are in SQLite's offsets, not the file's: none is passed on.
    xFileControl: () => SQLITE_NOTFOUND,
    xSectorSize: (pFile: number) => pass(pFile, (f) => f.io.xSectorSize(f.pUnder)),
    xDeviceCharacteristics: (pFile: number) => pass(pFile, (f) => f.io.xDeviceCharacteristics(f.pUnder)),
  };
}

/** Which keys a file SQLite opens is sealed with: its database's (the database, its journal), or its own. */
function keysFor(contexts: Map<string, CryptContext>, path: string, flags: number): { ctx?: CryptContext; journal?: JournalState } {
  if (flags & SQLITE_OPEN_MAIN_DB) {
    const ctx = contexts.get(path);
    if (!ctx) throw Object.assign(new Error(`no key for ${path}`), { rc: SQLITE_CANTOPEN });
    return { ctx };
  }
  for (const suffix of JOURNAL_SUFFIXES) {
    const ctx = path.endsWith(suffix) ? contexts.get(path.slice(0, -suffix.length)) : undefined;
    if (ctx) return { journal: { key: ctx.dek, fileId: ctx.header.fileId, size: -1 } };
  }
  // A temporary file: its own key, forgotten with it.
  return { journal: { key: randomBytes(32), fileId: randomBytes(16), size: -1 } };
}

function vfsMethods(c: CryptFiles, under: RawVfs, contexts: Map<string, CryptContext>, api: Api, ioPointer: number) {
  const { wasm, capi } = api;
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  const cstr = (p: number): string => {
    const h = wasm.heap8u();
    let end = p;
    while (h[end] !== 0) end++;
    return decoder.decode(h.subarray(p, end));
  };
  const u = under.fns;
  return {
    xOpen: (_pVfs: number, zName: number, pFile: number, flags: number, pOutFlags: number): number => guard(() => {
      const path = zName ? cstr(zName) : '';
      const keys = keysFor(contexts, path, flags);
      const pUnder = under.allocFile();
      const rc = u.xOpen(under.pointer, zName, pUnder, flags, pOutFlags) as number;
      if (rc !== SQLITE_OK) { wasm.dealloc(pUnder); return rc; }
      const f: OpenCryptFile = { pUnder, io: under.io(pUnder), ...keys, headerOnDisk: false, scratch: 0, scratchSize: 0 };
      c.files.set(pFile, f);
      if (f.ctx) {
        const checked = guard(() => c.openDb(f));
        if (checked !== SQLITE_OK) { c.close(pFile); return checked; }
        c.dbFiles.set(path, f);
      }
      const file = new capi.sqlite3_file(pFile);
      file.$pMethods = ioPointer;
      file.dispose();
      return SQLITE_OK;
    }),
    xDelete: (_p: number, z: number, sync: number) => u.xDelete(under.pointer, z, sync) as number,
    xAccess: (_p: number, z: number, flags: number, pOut: number) => u.xAccess(under.pointer, z, flags, pOut) as number,
    xFullPathname: (_p: number, z: number, n: number, pOut: number) => u.xFullPathname(under.pointer, z, n, pOut) as number,
    xRandomness: (_p: number, n: number, pOut: number) => u.xRandomness(under.pointer, n, pOut) as number,
    xSleep: (_p: number, us: number) => u.xSleep(under.pointer, us) as number,
    xCurrentTime: (_p: number, pOut: number) => u.xCurrentTime(under.pointer, pOut) as number,
    xCurrentTimeInt64: (_p: number, pOut: number) => (u.xCurrentTimeInt64
      ? u.xCurrentTimeInt64(under.pointer, pOut) as number
      : (wasm.poke64(pOut, 210866760000000n + BigInt(Date.now())), SQLITE_OK)),
    xGetLastError: (_p: number, n: number, pOut: number) => u.xGetLastError(under.pointer, n, pOut) as number,
  };
}

/** Installs (once per module and underlying VFS) the encrypting VFS over `underName`. */
export function installCryptVfs(sqlite3: Sqlite3Static, underName: string): CryptVfs {
  let byUnder = installed.get(sqlite3);
  if (!byUnder) installed.set(sqlite3, byUnder = new Map());
  const existing = byUnder.get(underName);
  if (existing) return existing;
  const api = sqlite3 as unknown as Api;
  const { wasm, capi } = api;
  const under = new RawVfs(rawApi(sqlite3), underName);
  const name = `pagewise-crypt:${underName}`;
  const contexts = new Map<string, CryptContext>();
  const files = new CryptFiles(wasm);

  const io = new capi.sqlite3_io_methods();
  io.$iVersion = 1;
  api.vfs.installVfs({ io: { struct: io, methods: ioMethods(files, wasm) } });
  const vfs = new capi.sqlite3_vfs();
  vfs.$iVersion = 2;
  vfs.$szOsFile = capi.sqlite3_file.structInfo.sizeof;
  vfs.$mxPathname = under.mxPathname;
  vfs.addOnDispose(vfs.$zName = wasm.allocCString(name));
  api.vfs.installVfs({ vfs: { struct: vfs, methods: vfsMethods(files, under, contexts, api, io.pointer) } });

  const crypt: CryptVfs = {
    name, under, contexts, readRaw: () => undefined,
    writeSlot(path, index, bytes) {
      const f = files.dbFiles.get(path);
      if (!f) throw new Error(`${path} is not open`);
      if (!f.headerOnDisk) return;
      const padded = new Uint8Array(SLOT_BYTES);
      padded.set(bytes.subarray(0, SLOT_BYTES));
      let rc = files.writeRaw(f, padded, SLOT_OFFSETS[index]!);
      if (rc === SQLITE_OK) rc = f.io.xSync(f.pUnder, SQLITE_SYNC_FULL);
      if (rc !== SQLITE_OK) throw Object.assign(new Error(`could not write the key slot (SQLite code ${rc})`), { rc });
    },
  };
  crypt.readRaw = (path) => {
    const f = files.dbFiles.get(path);
    if (!f) return undefined;
    const size = files.underSize(f);
    const out = new Uint8Array(size);
    const chunk = 1 << 20;
    for (let at = 0; at < size; at += chunk) {
      const n = Math.min(chunk, size - at);
      const p = files.scratch(f, n);
      const rc = f.io.xRead(f.pUnder, p, n, BigInt(at));
      if (rc !== SQLITE_OK) throw Object.assign(new Error(`could not read the database (SQLite code ${rc})`), { rc });
      out.set(files.heap().subarray(p, p + n), at);
    }
    return out;
  };
  byUnder.set(underName, crypt);
  return crypt;
}
