// The VFS under fileStorage: SQLite's file operations on synchronous node:fs calls, installed in a sqlite-wasm module
// (rollback journal, fsync on sync, short reads zero-filled, temp files unlinked at open).
import { randomBytes, randomFillSync } from 'node:crypto';
import {
  accessSync, closeSync, constants, fdatasyncSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, statSync, unlinkSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Sqlite3Static } from '@sqlite.org/sqlite-wasm';

export const MODULE = 'file-storage';
export const VFS_NAME = 'pagewise-node-file';
const MAX_PATHNAME = 1024;
const SECTOR_SIZE = 4096;

// SQLite's numbers (sqlite3.h); the module has them too, but these never change.
const SQLITE_OK = 0;
const SQLITE_IOERR = 10;
const SQLITE_NOTFOUND = 12;
const SQLITE_FULL = 13;
const SQLITE_CANTOPEN = 14;
const SQLITE_IOERR_SHORT_READ = 522;
const SQLITE_IOERR_READ = 266;
const SQLITE_IOERR_WRITE = 778;
const SQLITE_IOERR_FSYNC = 1034;
const SQLITE_IOERR_TRUNCATE = 1546;
const SQLITE_IOERR_FSTAT = 1802;
const SQLITE_IOERR_DELETE = 2570;
const SQLITE_IOERR_CLOSE = 4106;
const SQLITE_IOERR_DELETE_NOENT = 5898;
const SQLITE_LOCK_RESERVED = 2;
const SQLITE_OPEN_READONLY = 0x1;
const SQLITE_OPEN_READWRITE = 0x2;
const SQLITE_OPEN_CREATE = 0x4;
const SQLITE_OPEN_DELETEONCLOSE = 0x8;
const SQLITE_OPEN_EXCLUSIVE = 0x10;
const SQLITE_OPEN_MAIN_DB = 0x100;
const SQLITE_OPEN_MAIN_JOURNAL = 0x800;
const SQLITE_OPEN_SUPER_JOURNAL = 0x4000;
const SQLITE_OPEN_WAL = 0x80000;
const SQLITE_ACCESS_EXISTS = 0;
const SQLITE_ACCESS_READWRITE = 1;
const SQLITE_SYNC_DATAONLY = 0x10;
const SQLITE_IOCAP_POWERSAFE_OVERWRITE = 0x1000;

/** The parts of the module's wasm namespace the VFS uses. */
interface Wasm {
  heap8u(): Uint8Array;
  poke32(ptr: number, value: number): void;
  poke64(ptr: number, value: bigint): void;
  cstrlen(ptr: number): number;
}

interface Struct {
  pointer: number;
  dispose(): void;
  addOnDispose(value: unknown): void;
  [member: `$${string}`]: number;
}

/** The parts of the module's API that installing a VFS needs (the published typings lag the runtime). */
interface VfsApi {
  wasm: Wasm & { allocCString(text: string): number };
  capi: {
    sqlite3_vfs: new (ptr?: number) => Struct;
    sqlite3_io_methods: new (ptr?: number) => Struct;
    sqlite3_file: (new (ptr?: number) => Struct) & { structInfo: { sizeof: number } };
    sqlite3_vfs_find(name: string | null): number;
  };
  vfs: { installVfs(opt: { io?: { struct: Struct; methods: Record<string, Function> }; vfs?: { struct: Struct; methods: Record<string, Function> } }): unknown };
}

/** One file SQLite has open through the VFS. */
interface OpenFile {
  fd: number;
  path: string;
  flags: number;
  lock: number;
  /** A database or journal file this open created: its directory is synced at its first sync, so the entry is on disk too. */
  syncDir: boolean;
  deleteOnClose: boolean;
}

/** The VFS's state for one sqlite3 module: the files it has open and the last OS error, for messages. */
export interface VfsState {
  files: Map<number, OpenFile>;
  lastError: { seq: number; message: string };
}

const installed = new WeakMap<object, VfsState>();

export const codeOf = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | undefined)?.code;

/** fsyncs a directory, so that a file created or deleted in it stays so after a power cut (POSIX; a no-op elsewhere). */
export function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Windows cannot open a directory; some file systems refuse fsync on one. Nothing more can be done.
  } finally {
    if (fd !== undefined) try { closeSync(fd); } catch { /* closed */ }
  }
}

/** Records an OS error (for xGetLastError) and gives SQLite's code for it: SQLITE_FULL for a full disk, else `rc`. */
type Fail = (e: unknown, rc: number) => number;

function failer(state: VfsState): Fail {
  return (e: unknown, rc: number): number => {
    state.lastError = { seq: state.lastError.seq + 1, message: String((e as Error)?.message ?? e) };
    return codeOf(e) === 'ENOSPC' ? SQLITE_FULL : rc;
  };
}

/**
 * The methods of an open file. No method may throw: an exception through the WebAssembly frames would leave SQLite
 * in an undefined state.
 */
function createIoMethods(wasm: Wasm, state: VfsState, fail: Fail) {
  const fileOf = (pFile: number): OpenFile => {
    const file = state.files.get(pFile);
    if (!file) throw new Error(`no open file for handle ${pFile}`);
    return file;
  };
  return {
    xCheckReservedLock(pFile: number, pOut: number): number {
      try {
        const me = fileOf(pFile);
        let reserved = 0;
        for (const f of state.files.values()) if (f.path === me.path && f.lock >= SQLITE_LOCK_RESERVED) reserved = 1;
        wasm.poke32(pOut, reserved);
        return SQLITE_OK;
      } catch (e) { return fail(e, SQLITE_IOERR); }
    },
    xClose(pFile: number): number {
      const file = state.files.get(pFile);
      if (!file) return SQLITE_OK;
      state.files.delete(pFile);
      try {
        closeSync(file.fd);
        if (file.deleteOnClose) try { unlinkSync(file.path); } catch { /* already gone */ }
        return SQLITE_OK;
      } catch (e) { return fail(e, SQLITE_IOERR_CLOSE); }
    },
    xDeviceCharacteristics(): number {
      return SQLITE_IOCAP_POWERSAFE_OVERWRITE;
    },
    xFileControl(): number {
      return SQLITE_NOTFOUND;
    },
    xFileSize(pFile: number, pSize: number): number {
      try {
        wasm.poke64(pSize, BigInt(fstatSync(fileOf(pFile).fd).size));
        return SQLITE_OK;
      } catch (e) { return fail(e, SQLITE_IOERR_FSTAT); }
    },
    xLock(pFile: number, level: number): number {
      // One connection per file (the lock file sees to that): the level is kept for xCheckReservedLock only.
      const file = state.files.get(pFile);
      if (file) file.lock = level;
      return SQLITE_OK;
    },
    xRead(pFile: number, pDest: number, n: number, offset: bigint | number): number {
      try {
        const fd = fileOf(pFile).fd;
        const at = Number(offset);
        let done = 0;
        while (done < n) {
          // The heap view is taken anew each time: nothing here can grow the memory, but that keeps it obviously right.
          const got = readSync(fd, wasm.heap8u(), pDest + done, n - done, at + done);
          if (got === 0) break;
          done += got;
        }
        if (done < n) {
          wasm.heap8u().fill(0, pDest + done, pDest + n);
          return SQLITE_IOERR_SHORT_READ;
        }
        return SQLITE_OK;
      } catch (e) { return fail(e, SQLITE_IOERR_READ); }
    },
    xSectorSize(): number {
      return SECTOR_SIZE;
    },
    xSync(pFile: number, flags: number): number {
      try {
        const file = fileOf(pFile);
        if (flags & SQLITE_SYNC_DATAONLY) fdatasyncSync(file.fd);
        else fsyncSync(file.fd);
        if (file.syncDir) {
          file.syncDir = false;
          syncDirectory(dirname(file.path));
        }
        return SQLITE_OK;
      } catch (e) { return fail(e, SQLITE_IOERR_FSYNC); }
    },
    xTruncate(pFile: number, size: bigint | number): number {
      try {
        ftruncateSync(fileOf(pFile).fd, Number(size));
        return SQLITE_OK;
      } catch (e) { return fail(e, SQLITE_IOERR_TRUNCATE); }
    },
    xUnlock(pFile: number, level: number): number {
      const file = state.files.get(pFile);
      if (file) file.lock = level;
      return SQLITE_OK;
    },
    xWrite(pFile: number, pSrc: number, n: number, offset: bigint | number): number {
      try {
        const fd = fileOf(pFile).fd;
        const at = Number(offset);
        let done = 0;
        while (done < n) done += writeSync(fd, wasm.heap8u(), pSrc + done, n - done, at + done);
        return SQLITE_OK;
      } catch (e) { return fail(e, SQLITE_IOERR_WRITE); }
    },
  };
}

/**
 * Opens `path` for SQLite's `flags` as the unix VFS would, and returns what the VFS keeps of it (with the flags SQLite
 * is told it got). Throws when the file cannot be opened.
 */
function openFile(state: VfsState, path: string, flags: number, temporary: boolean): OpenFile {
  if (flags & SQLITE_OPEN_MAIN_DB) {
    for (const f of state.files.values()) {
      if (f.path === path && f.flags & SQLITE_OPEN_MAIN_DB) throw new Error(`${path} is already open in this process`);
    }
  }
  // As the unix VFS for journals, and for a new database file too: a created file's directory entry is synced.
  const durable = (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_SUPER_JOURNAL | SQLITE_OPEN_WAL)) !== 0;
  const created = durable && !temporary && statSync(path, { throwIfNoEntry: false }) === undefined;
  let mode = flags & SQLITE_OPEN_READWRITE ? constants.O_RDWR : constants.O_RDONLY;
  if (flags & SQLITE_OPEN_CREATE) mode |= constants.O_CREAT;
  if (flags & SQLITE_OPEN_EXCLUSIVE || temporary) mode |= constants.O_EXCL;
  let outFlags = flags;
  let fd: number;
  try {
    fd = openSync(path, mode, 0o644);
  } catch (e) {
    // As the unix VFS: a file that cannot be written is opened read-only, and SQLite is told so.
    if (!(flags & SQLITE_OPEN_READWRITE) || !['EACCES', 'EPERM', 'EROFS'].includes(codeOf(e) ?? '')) throw e;
    fd = openSync(path, constants.O_RDONLY);
    outFlags = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY;
  }
  let deleteOnClose = (flags & SQLITE_OPEN_DELETEONCLOSE) !== 0 || temporary;
  if (deleteOnClose && process.platform !== 'win32') {
    // POSIX: the name goes now, the data with the last handle, even if the process dies.
    try { unlinkSync(path); deleteOnClose = false; } catch { /* deleted at close instead */ }
  }
  return { fd, path, flags: outFlags, lock: 0, syncDir: created, deleteOnClose };
}

/** The VFS's own methods (names, time, randomness, sleep, and xOpen, which gives each file the io methods at `ioPointer`). */
function createVfsMethods(api: VfsApi, state: VfsState, fail: Fail, ioPointer: number) {
  const { wasm, capi } = api;
  // Not wasm.cstrToJs: its decoder drops a leading U+FEFF, and a path is a name to keep byte for byte.
  const pathDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
  const cString = (ptr: number): string => pathDecoder.decode(wasm.heap8u().subarray(ptr, ptr + wasm.cstrlen(ptr)));
  const utf8 = new TextEncoder();
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  return {
    xAccess(_pVfs: number, zName: number, flags: number, pOut: number): number {
      let yes = 0;
      try {
        const path = cString(zName);
        if (flags === SQLITE_ACCESS_READWRITE) {
          accessSync(path, constants.R_OK | constants.W_OK);
          yes = 1;
        } else {
          const st = statSync(path, { throwIfNoEntry: false });
          // As the unix VFS: an empty regular file counts as absent (an empty journal is no journal).
          if (st) yes = flags === SQLITE_ACCESS_EXISTS ? (!st.isFile() || st.size > 0 ? 1 : 0) : 1;
        }
      } catch { yes = 0; }
      wasm.poke32(pOut, yes);
      return SQLITE_OK;
    },
    xCurrentTime(_pVfs: number, pOut: number): number {
      (wasm as unknown as { poke(p: number, v: number, t: string): void }).poke(pOut, 2440587.5 + Date.now() / 864e5, 'double');
      return SQLITE_OK;
    },
    xCurrentTimeInt64(_pVfs: number, pOut: number): number {
      // Milliseconds since the Julian epoch.
      wasm.poke64(pOut, 210866760000000n + BigInt(Date.now()));
      return SQLITE_OK;
    },
    xDelete(_pVfs: number, zName: number, doSyncDir: number): number {
      const path = cString(zName);
      try {
        unlinkSync(path);
      } catch (e) {
        return codeOf(e) === 'ENOENT' ? SQLITE_IOERR_DELETE_NOENT : fail(e, SQLITE_IOERR_DELETE);
      }
      if (doSyncDir) syncDirectory(dirname(path));
      return SQLITE_OK;
    },
    xFullPathname(_pVfs: number, zName: number, nOut: number, pOut: number): number {
      const bytes = utf8.encode(resolve(cString(zName)));
      if (bytes.length + 1 > nOut) return SQLITE_CANTOPEN;
      const heap = wasm.heap8u();
      heap.set(bytes, pOut);
      heap[pOut + bytes.length] = 0;
      return SQLITE_OK;
    },
    xGetLastError(_pVfs: number, nOut: number, pOut: number): number {
      if (nOut > 0) {
        const bytes = utf8.encode(state.lastError.message).subarray(0, nOut - 1);
        const heap = wasm.heap8u();
        heap.set(bytes, pOut);
        heap[pOut + bytes.length] = 0;
      }
      return state.lastError.message ? SQLITE_IOERR : SQLITE_OK;
    },
    xOpen(_pVfs: number, zName: number, pFile: number, flags: number, pOutFlags: number): number {
      try {
        const temporary = !zName;
        const path = temporary ? join(tmpdir(), `pagewise-${randomBytes(8).toString('hex')}.tmp`) : cString(zName);
        const opened = openFile(state, path, flags, temporary);
        state.files.set(pFile, opened);
        const file = new capi.sqlite3_file(pFile);
        file.$pMethods = ioPointer;
        file.dispose();
        if (pOutFlags) wasm.poke32(pOutFlags, opened.flags);
        return SQLITE_OK;
      } catch (e) { return fail(e, SQLITE_CANTOPEN); }
    },
    xRandomness(_pVfs: number, n: number, pOut: number): number {
      randomFillSync(wasm.heap8u(), pOut, n);
      return n;
    },
    xSleep(_pVfs: number, microseconds: number): number {
      Atomics.wait(sleeper, 0, 0, Math.max(0, microseconds) / 1000);
      return microseconds;
    },
  };
}

/** Installs the VFS in this sqlite3 module, once. */
export function installNodeVfs(sqlite3: Sqlite3Static): VfsState {
  const existing = installed.get(sqlite3);
  if (existing) return existing;
  const api = sqlite3 as unknown as VfsApi;
  const { wasm, capi } = api;
  const state: VfsState = { files: new Map(), lastError: { seq: 0, message: '' } };
  const fail = failer(state);

  const io = new capi.sqlite3_io_methods();
  io.$iVersion = 1;
  api.vfs.installVfs({ io: { struct: io, methods: createIoMethods(wasm, state, fail) } });

  const vfs = new capi.sqlite3_vfs();
  vfs.$iVersion = 2;
  vfs.$szOsFile = capi.sqlite3_file.structInfo.sizeof;
  vfs.$mxPathname = MAX_PATHNAME;
  vfs.addOnDispose(vfs.$zName = wasm.allocCString(VFS_NAME));
  api.vfs.installVfs({ vfs: { struct: vfs, methods: createVfsMethods(api, state, fail, io.pointer) } });
  installed.set(sqlite3, state);
  return state;
}
