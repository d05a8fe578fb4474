// A real database file for Node: the same sqlite-wasm build as the browser (FTS5 included), on a VFS written with
// synchronous node:fs calls, so it needs no native addon and runs on Node 20 and later.
import { randomBytes, randomFillSync } from 'node:crypto';
import {
  accessSync, closeSync, constants, fdatasyncSync, fstatSync, fsyncSync, ftruncateSync, openSync, readFileSync, readSync,
  realpathSync, renameSync, statSync, unlinkSync, writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { threadId } from 'node:worker_threads';
import type { Database, Sqlite3Static } from '@sqlite.org/sqlite-wasm';
import { PagewiseError } from '../errors.js';
import type { StorageDriver } from '../types.js';
import { createSqliteDriver, loadSqlite3 } from './sqlite-wasm.js';

/** Options of the file driver. */
export interface FileStorageOptions {
  /**
   * When a commit is on disk. `full` (default): SQLite syncs the rollback journal and the database at every commit,
   * so an acknowledged commit survives a killed process and a power cut. `normal`: one sync fewer per commit; still
   * safe when only the process dies, a small risk of a damaged file on a power cut.
   */
  synchronous?: 'full' | 'normal';
  /** An initialised sqlite3 module, when the app loads it itself. */
  sqlite3?: Sqlite3Static;
}

const MODULE = 'file-storage';
const VFS_NAME = 'pagewise-node-file';
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
  cstrToJs(ptr: number): string;
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
interface VfsState {
  files: Map<number, OpenFile>;
  lastError: { seq: number; message: string };
}

const installed = new WeakMap<object, VfsState>();

const codeOf = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | undefined)?.code;

/** fsyncs a directory, so that a file created or deleted in it stays so after a power cut (POSIX; a no-op elsewhere). */
function syncDirectory(dir: string): void {
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

/** Installs the VFS in this sqlite3 module, once. */
function installNodeVfs(sqlite3: Sqlite3Static): VfsState {
  const existing = installed.get(sqlite3);
  if (existing) return existing;
  const api = sqlite3 as unknown as VfsApi;
  const { wasm, capi } = api;
  const state: VfsState = { files: new Map(), lastError: { seq: 0, message: '' } };
  const fail = (e: unknown, rc: number): number => {
    state.lastError = { seq: state.lastError.seq + 1, message: String((e as Error)?.message ?? e) };
    return codeOf(e) === 'ENOSPC' ? SQLITE_FULL : rc;
  };
  const fileOf = (pFile: number): OpenFile => {
    const file = state.files.get(pFile);
    if (!file) throw new Error(`no open file for handle ${pFile}`);
    return file;
  };

  // No method may throw: an exception through the WebAssembly frames would leave SQLite in an undefined state.
  const ioMethods = {
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
  const io = new capi.sqlite3_io_methods();
  io.$iVersion = 1;
  api.vfs.installVfs({ io: { struct: io, methods: ioMethods } });

  const cString = (ptr: number): string => wasm.cstrToJs(ptr);
  const utf8 = new TextEncoder();
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const vfsMethods = {
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
        state.files.set(pFile, { fd, path, flags: outFlags, lock: 0, syncDir: created, deleteOnClose });
        const file = new capi.sqlite3_file(pFile);
        file.$pMethods = io.pointer;
        file.dispose();
        if (pOutFlags) wasm.poke32(pOutFlags, outFlags);
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
  const vfs = new capi.sqlite3_vfs();
  vfs.$iVersion = 2;
  vfs.$szOsFile = capi.sqlite3_file.structInfo.sizeof;
  vfs.$mxPathname = MAX_PATHNAME;
  vfs.addOnDispose(vfs.$zName = wasm.allocCString(VFS_NAME));
  api.vfs.installVfs({ vfs: { struct: vfs, methods: vfsMethods } });
  installed.set(sqlite3, state);
  return state;
}

// ---------------------------------------------------------------------------------------------
// One writer: a lock file beside the database
// ---------------------------------------------------------------------------------------------

/**
 * Lock files this thread holds: path to the token written in it (`pid thread random`). Removed on close, and on a
 * normal exit if close was never called.
 */
const heldLocks = new Map<string, string>();
let exitHook = false;

function lockedError(dbPath: string, lockPath: string, who: string): PagewiseError {
  const stale = who === 'in this process' ? '' : ` If nothing uses it any more, delete the stale lock file "${lockPath}".`;
  return new PagewiseError('STORAGE_LOCKED', MODULE,
    `The database file "${dbPath}" is already open ${who}: one writer at a time. Close it there first (memory.close()), or use another path for this one.${stale}`);
}

/** True while the owner written in a lock file may still be running. */
function ownerAlive(text: string): { alive: boolean; who: string } {
  const [pidText, threadText] = text.trim().split(/\s+/);
  const pid = Number(pidText);
  if (!Number.isSafeInteger(pid) || pid <= 0) return { alive: false, who: '' };
  if (pid === process.pid) {
    // This thread's own (the same file by another spelling of its path, e.g. other letter case): alive. Another
    // thread of this process cannot be asked, so it is taken as alive. Otherwise it was left by an earlier process
    // that had this pid (pids repeat, e.g. in containers).
    if ([...heldLocks.values()].includes(text.trim())) return { alive: true, who: 'in this process' };
    return Number(threadText ?? 0) === threadId ? { alive: false, who: '' } : { alive: true, who: `in another thread of this process (thread ${threadText})` };
  }
  try {
    process.kill(pid, 0);
    return { alive: true, who: `by another process (pid ${pid})` };
  } catch (e) {
    // EPERM: alive, but another user's.
    return { alive: codeOf(e) === 'EPERM', who: `by another process (pid ${pid})` };
  }
}

/** Takes the lock file of `dbPath`, or throws STORAGE_LOCKED. A lock left by a dead process is taken over. */
function acquireLock(dbPath: string): () => void {
  const lockPath = `${dbPath}.lock`;
  if (heldLocks.has(lockPath)) throw lockedError(dbPath, lockPath, 'in this process');
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o644);
      const token = `${process.pid} ${threadId} ${randomBytes(6).toString('hex')}`;
      try { writeSync(fd, `${token}\n`); } finally { closeSync(fd); }
      heldLocks.set(lockPath, token);
      if (!exitHook) {
        exitHook = true;
        process.once('exit', () => { for (const p of heldLocks.keys()) try { unlinkSync(p); } catch { /* gone */ } });
      }
      let released = false;
      return () => {
        if (released) return;
        released = true;
        heldLocks.delete(lockPath);
        try { unlinkSync(lockPath); } catch { /* already gone */ }
      };
    } catch (e) {
      if (codeOf(e) !== 'EEXIST') {
        throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `Cannot create the lock file "${lockPath}" (${String((e as Error).message)}): the directory must be writable.`, { cause: e });
      }
    }
    let text: string;
    try { text = readFileSync(lockPath, 'utf8'); } catch { continue; /* released meanwhile: try again */ }
    const { alive, who } = ownerAlive(text);
    if (alive) throw lockedError(dbPath, lockPath, who);
    if (!text.trim()) {
      // An empty lock: its owner may be between creating and writing it. Only an old one is stale.
      const age = Date.now() - (statSync(lockPath, { throwIfNoEntry: false })?.mtimeMs ?? 0);
      if (age < 2000) throw lockedError(dbPath, lockPath, 'by a process that is opening it right now');
    }
    // Stale: move it aside (atomic), and check that what moved is what was judged, not a lock taken meanwhile.
    const aside = `${lockPath}.${randomBytes(6).toString('hex')}.stale`;
    try { renameSync(lockPath, aside); } catch { continue; }
    let moved = '';
    try { moved = readFileSync(aside, 'utf8'); } catch { /* unreadable: treated as changed */ }
    if (moved !== text) {
      try { renameSync(aside, lockPath); } catch { /* best effort */ }
      throw lockedError(dbPath, lockPath, 'by a process that took over its stale lock just now');
    }
    try { unlinkSync(aside); } catch { /* gone */ }
  }
  throw lockedError(dbPath, lockPath, 'by another process (its lock keeps changing)');
}

/** The absolute, symlink-free path of the database, or STORAGE_UNAVAILABLE when its directory does not exist. */
function databasePath(path: string): string {
  const absolute = resolve(path);
  const dir = dirname(absolute);
  const dirStat = statSync(dir, { throwIfNoEntry: false });
  if (!dirStat?.isDirectory()) {
    throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE,
      `The directory "${dir}" of the database file does not exist: create it first (fs.mkdirSync(dir, { recursive: true })), or pass a path in an existing directory.`);
  }
  const fileStat = statSync(absolute, { throwIfNoEntry: false });
  if (fileStat?.isDirectory()) {
    throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `"${absolute}" is a directory: pass the path of a database file, e.g. "${join(absolute, 'memory.sqlite3')}".`);
  }
  try {
    return fileStat ? realpathSync(absolute) : join(realpathSync(dir), basename(absolute));
  } catch {
    return absolute;
  }
}

/**
 * A database file on disk, for Node (20 and later): the same SQLite build as in the browser (FTS5 and JSON1
 * included), run by sqlite-wasm on a VFS of synchronous node:fs calls, so no native addon. Every commit is synced to
 * disk before `batch()` returns (rollback journal, `synchronous=FULL`). One writer at a time: a second open of the
 * same path, in this process or another, fails with `STORAGE_LOCKED` (a `<path>.lock` file holds the owner's pid;
 * a dead owner's lock is taken over). Returns a factory, like `sqliteWasm()`.
 *
 * @example
 * const memory = await createMemory({ storage: fileStorage('./data/memory.sqlite3') });
 */
export function fileStorage(path: string, options: FileStorageOptions = {}): () => Promise<StorageDriver> {
  if (typeof path !== 'string' || path.trim() === '' || path === ':memory:' || path.includes('\0')) {
    throw new PagewiseError('INVALID_OPTIONS', MODULE, `fileStorage() needs the path of a database file, e.g. "./data/memory.sqlite3"; got ${JSON.stringify(path)}. For a database in memory use sqliteWasm().`);
  }
  const synchronous = options.synchronous ?? 'full';
  if (synchronous !== 'full' && synchronous !== 'normal') {
    throw new PagewiseError('INVALID_OPTIONS', MODULE, `Unknown synchronous "${String(synchronous)}": use "full" or "normal".`);
  }
  return async () => {
    const dbPath = databasePath(path);
    let sqlite3: Sqlite3Static;
    try {
      sqlite3 = options.sqlite3 ?? await loadSqlite3();
    } catch (cause) {
      throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `Could not load @sqlite.org/sqlite-wasm: ${String((cause as Error)?.message ?? cause)}`, { cause });
    }
    const vfs = installNodeVfs(sqlite3);
    const release = acquireLock(dbPath);
    const seq = vfs.lastError.seq;
    let db: Database | undefined;
    try {
      db = new sqlite3.oo1.DB({ filename: dbPath, flags: 'c', vfs: VFS_NAME });
      // The lock file keeps other connections out, so SQLite may keep its lock (and its page cache) between
      // transactions: a read costs no syscall. The rollback journal file then stays open between transactions; a
      // commit truncates it to nothing (synced), so no page image of an earlier state (a forgotten text) stays in
      // it, nor does a VACUUM's copy of the whole database. It is deleted at close. (Zeroing its header instead,
      // journal_size_limit = -1, commits single rows about 20% faster but keeps the last transaction's old pages.)
      db.exec([
        'PRAGMA locking_mode = EXCLUSIVE',
        'PRAGMA journal_mode = DELETE',
        'PRAGMA journal_size_limit = 0',
        `PRAGMA synchronous = ${synchronous.toUpperCase()}`,
        'PRAGMA foreign_keys = ON',
      ].join(';'));
      // Reads the header: a file that is not a database fails here, not at the first query. Rolls back a hot journal.
      db.exec('SELECT count(*) FROM sqlite_schema');
    } catch (cause) {
      try { db?.close(); } catch { /* closing a failed open */ }
      release();
      const text = String((cause as Error)?.message ?? cause);
      const os = vfs.lastError.seq !== seq ? ` (file system: ${vfs.lastError.message})` : '';
      throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `Could not open the database file "${dbPath}": ${text}${os}. Is it a SQLite database, readable and writable?`, { cause });
    }
    // SQLite removes the emptied journal as it closes; then the lock goes.
    const driver = createSqliteDriver(sqlite3, db, 'sqlite-wasm:node-file', release);
    return withOsErrors(driver, vfs);
  };
}

/** Adds the OS's own words (ENOSPC, EIO, …) to a failed statement's message when the VFS saw an OS error. */
function withOsErrors(driver: StorageDriver, vfs: VfsState): StorageDriver {
  const explain = (e: unknown, seq: number): unknown => {
    if (vfs.lastError.seq === seq || !(e instanceof PagewiseError)) return e;
    const detail = `${e.message.replace(/^\[pagewise\] \[[^\]]*\] /, '')} (file system: ${vfs.lastError.message})`;
    return new PagewiseError(e.code, MODULE, detail, { cause: e });
  };
  return {
    name: driver.name,
    query(sql, params) {
      const seq = vfs.lastError.seq;
      try { return driver.query(sql, params); } catch (e) { throw explain(e, seq); }
    },
    batch(statements) {
      const seq = vfs.lastError.seq;
      try { return driver.batch(statements); } catch (e) { throw explain(e, seq); }
    },
    close: () => driver.close(),
  } as StorageDriver;
}
