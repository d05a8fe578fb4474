// Another VFS's files, reached through its function pointers: what the encrypting VFS writes its sealed pages with,
// and how pagewise reads a database's header before SQLite opens it (the Node file VFS and opfs-sahpool alike).
import type { Sqlite3Static } from '@sqlite.org/sqlite-wasm';

// SQLite's numbers (sqlite3.h) the encrypting VFS and its helpers use.
export const SQLITE_OK = 0;
export const SQLITE_IOERR = 10;
export const SQLITE_NOTFOUND = 12;
export const SQLITE_CANTOPEN = 14;
export const SQLITE_IOERR_SHORT_READ = 522;
export const SQLITE_IOERR_DATA = 8202;
export const SQLITE_OPEN_READONLY = 0x1;
export const SQLITE_OPEN_READWRITE = 0x2;
export const SQLITE_OPEN_CREATE = 0x4;
export const SQLITE_OPEN_MAIN_DB = 0x100;
export const SQLITE_OPEN_MAIN_JOURNAL = 0x800;
export const SQLITE_SYNC_FULL = 0x3;

interface Struct {
  pointer: number;
  dispose(): void;
  [member: `$${string}`]: number;
}
type Fields = Struct;
/** A struct member's value (a number or a pointer). */
const get = (s: Struct, member: string): number => (s as unknown as Record<string, number>)[`$${member}`] ?? 0;

/** The parts of the module's API this file uses (the published typings lag the runtime). */
export interface RawApi {
  wasm: {
    heap8u(): Uint8Array;
    alloc(n: number): number;
    dealloc(p: number): void;
    peek32(p: number): number;
    peek64(p: number): bigint;
    allocCString(text: string): number;
    functionEntry(p: number): Function | undefined;
  };
  capi: {
    sqlite3_vfs: new (ptr?: number) => Struct;
    sqlite3_io_methods: new (ptr?: number) => Struct;
    sqlite3_file: (new (ptr?: number) => Struct) & { structInfo: { sizeof: number } };
    sqlite3_vfs_find(name: string | null): number;
  };
}

/** The io methods of one file, as callable functions. */
export interface RawIo {
  xClose(pFile: number): number;
  xRead(pFile: number, pBuf: number, n: number, offset: bigint): number;
  xWrite(pFile: number, pBuf: number, n: number, offset: bigint): number;
  xTruncate(pFile: number, size: bigint): number;
  xSync(pFile: number, flags: number): number;
  xFileSize(pFile: number, pSize: number): number;
  xLock(pFile: number, level: number): number;
  xUnlock(pFile: number, level: number): number;
  xCheckReservedLock(pFile: number, pOut: number): number;
  xSectorSize(pFile: number): number;
  xDeviceCharacteristics(pFile: number): number;
}

const IO_NAMES = ['xClose', 'xRead', 'xWrite', 'xTruncate', 'xSync', 'xFileSize', 'xLock', 'xUnlock', 'xCheckReservedLock', 'xSectorSize', 'xDeviceCharacteristics'] as const;
const VFS_NAMES = ['xOpen', 'xDelete', 'xAccess', 'xFullPathname', 'xRandomness', 'xSleep', 'xCurrentTime', 'xGetLastError', 'xCurrentTimeInt64'] as const;

/** A VFS installed in the module, reached by its function pointers. */
export class RawVfs {
  readonly pointer: number;
  readonly szOsFile: number;
  readonly mxPathname: number;
  readonly fns: Record<(typeof VFS_NAMES)[number], Function>;
  private readonly ioCache = new Map<number, RawIo>();
  /** Whether a file exists, when the VFS can say without opening it (open() then skips names it lacks). */
  exists?: (name: string) => boolean;

  constructor(readonly api: RawApi, readonly name: string) {
    this.pointer = api.capi.sqlite3_vfs_find(name);
    if (!this.pointer) throw new Error(`no VFS named ${name}`);
    const s = new api.capi.sqlite3_vfs(this.pointer) as Fields;
    this.szOsFile = get(s, 'szOsFile');
    this.mxPathname = get(s, 'mxPathname');
    const version = get(s, 'iVersion');
    const fns = {} as Record<(typeof VFS_NAMES)[number], Function>;
    for (const n of VFS_NAMES) {
      if (n === 'xCurrentTimeInt64' && version < 2) continue;
      const f = get(s, n) ? api.wasm.functionEntry(get(s, n)) : undefined;
      if (f) fns[n] = f;
    }
    s.dispose();
    this.fns = fns;
  }

  /** The io methods of a file this VFS opened at `pFile`. */
  io(pFile: number): RawIo {
    const f = new this.api.capi.sqlite3_file(pFile) as Fields;
    const pMethods = get(f, 'pMethods');
    f.dispose();
    let io = this.ioCache.get(pMethods);
    if (!io) {
      const m = new this.api.capi.sqlite3_io_methods(pMethods) as Fields;
      io = Object.fromEntries(IO_NAMES.map((n) => [n, this.api.wasm.functionEntry(get(m, n))])) as unknown as RawIo;
      m.dispose();
      this.ioCache.set(pMethods, io);
    }
    return io;
  }

  /** A zeroed sqlite3_file for this VFS to open into. */
  allocFile(): number {
    const p = this.api.wasm.alloc(this.szOsFile);
    this.api.wasm.heap8u().fill(0, p, p + this.szOsFile);
    return p;
  }

  /** Opens `name` directly (outside SQLite); undefined when it cannot be opened (e.g. it does not exist). */
  open(name: string, flags: number): RawFile | undefined {
    if (this.exists && !(flags & SQLITE_OPEN_CREATE) && !this.exists(name)) return undefined;
    const { wasm } = this.api;
    const zName = wasm.allocCString(name);
    const pFile = this.allocFile();
    const pOut = wasm.alloc(4);
    try {
      const rc = this.fns.xOpen(this.pointer, zName, pFile, flags, pOut) as number;
      if (rc !== SQLITE_OK) { wasm.dealloc(pFile); wasm.dealloc(zName); return undefined; }
      return new RawFile(this, pFile, zName);
    } catch {
      wasm.dealloc(pFile);
      wasm.dealloc(zName);
      return undefined;
    } finally {
      wasm.dealloc(pOut);
    }
  }

  delete(name: string): void {
    const z = this.api.wasm.allocCString(name);
    try { this.fns.xDelete(this.pointer, z, 1); } finally { this.api.wasm.dealloc(z); }
  }
}

/** One file opened with RawVfs.open: whole reads and writes of JS bytes. */
export class RawFile {
  private readonly io: RawIo;
  constructor(private readonly vfs: RawVfs, readonly pFile: number, private readonly zName: number) {
    this.io = vfs.io(pFile);
  }

  private withBuffer<T>(n: number, fn: (p: number) => T): T {
    const p = this.vfs.api.wasm.alloc(Math.max(1, n));
    try { return fn(p); } finally { this.vfs.api.wasm.dealloc(p); }
  }

  size(): number {
    return this.withBuffer(8, (p) => {
      if (this.io.xFileSize(this.pFile, p) !== SQLITE_OK) throw new Error('cannot read the file size');
      return Number(this.vfs.api.wasm.peek64(p));
    });
  }

  /** Up to `n` bytes from `offset` (fewer at the end of the file). */
  read(offset: number, n: number): Uint8Array {
    const have = Math.max(0, Math.min(n, this.size() - offset));
    return this.withBuffer(have, (p) => {
      if (have > 0 && this.io.xRead(this.pFile, p, have, BigInt(offset)) !== SQLITE_OK) throw new Error('cannot read the file');
      return this.vfs.api.wasm.heap8u().slice(p, p + have);
    });
  }

  write(offset: number, bytes: Uint8Array): void {
    this.withBuffer(bytes.length, (p) => {
      this.vfs.api.wasm.heap8u().set(bytes, p);
      if (this.io.xWrite(this.pFile, p, bytes.length, BigInt(offset)) !== SQLITE_OK) throw new Error('cannot write the file');
    });
  }

  truncate(size: number): void {
    if (this.io.xTruncate(this.pFile, BigInt(size)) !== SQLITE_OK) throw new Error('cannot truncate the file');
  }

  sync(): void {
    if (this.io.xSync(this.pFile, SQLITE_SYNC_FULL) !== SQLITE_OK) throw new Error('cannot sync the file');
  }

  close(): void {
    try { this.io.xClose(this.pFile); } finally {
      this.vfs.api.wasm.dealloc(this.pFile);
      this.vfs.api.wasm.dealloc(this.zName);
    }
  }
}

/** The module's API as RawVfs needs it. */
export const rawApi = (sqlite3: Sqlite3Static): RawApi => sqlite3 as unknown as RawApi;
