// A real database file for Node: the same sqlite-wasm build as the browser (FTS5 included), on a VFS written with
// synchronous node:fs calls, so it needs no native addon and runs on Node 20 and later.
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { threadId } from 'node:worker_threads';
import type { Database, Sqlite3Static } from '@sqlite.org/sqlite-wasm';
import { PagewiseError } from '../contracts/errors.js';
import type { EncryptionOptions, StorageDriver } from '../contracts/types.js';
import { recoverConversion } from './crypt-convert.js';
import { type CryptState, type OpenPlan, forgetContext, planOpen, readEncryption, withEncryption } from './crypt-driver.js';
import { installCryptVfs } from './crypt-vfs.js';
import { MODULE, VFS_NAME, type VfsState, codeOf, installNodeVfs } from './node-vfs.js';
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
  /**
   * Encrypt the file at rest: `{ key }` (32 bytes) or `{ passphrase }` (see EncryptionOptions). Every page, the
   * journal and every export are sealed; the file opens only with its key (WRONG_KEY, KEY_REQUIRED otherwise).
   */
  encryption?: EncryptionOptions;
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
  const key = readEncryption(options.encryption);
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
    let db: Database | undefined;
    let state: CryptState;
    // The lock file keeps other connections out, so SQLite may keep its lock (and its page cache) between
    // transactions: a read costs no syscall. The rollback journal file then stays open between transactions; a
    // commit truncates it to nothing (synced), so no page image of an earlier state (a forgotten text) stays in
    // it, nor does a VACUUM's copy of the whole database. It is deleted at close. (Zeroing its header instead,
    // journal_size_limit = -1, commits single rows about 20% faster but keeps the last transaction's old pages.)
    const open = (on: string): Database => {
      const opened = new sqlite3.oo1.DB({ filename: dbPath, flags: 'c', vfs: on });
      try {
        opened.exec([
          'PRAGMA locking_mode = EXCLUSIVE',
          'PRAGMA journal_mode = DELETE',
          'PRAGMA journal_size_limit = 0',
          `PRAGMA synchronous = ${synchronous.toUpperCase()}`,
          'PRAGMA foreign_keys = ON',
          // Temporary tables and sorts stay in memory: nothing unsealed reaches a file.
          ...(on === VFS_NAME ? [] : ['PRAGMA temp_store = MEMORY']),
        ].join(';'));
        // Reads the header: a file that is not a database fails here, not at the first query. Rolls back a hot journal.
        opened.exec('SELECT count(*) FROM sqlite_schema');
        return opened;
      } catch (error) {
        try { opened.close(); } catch { /* closing a failed open */ }
        throw error;
      }
    };
    let plan: OpenPlan | undefined;
    let seq = vfs.lastError.seq;
    try {
      // A conversion (plain to encrypted or back) a kill interrupted is finished first; then the key is checked
      // against the file's header before SQLite reads it, so a wrong or missing key writes nothing.
      recoverConversion(installCryptVfs(sqlite3, VFS_NAME).under, dbPath);
      plan = await planOpen(sqlite3, VFS_NAME, dbPath, key, `The database file "${dbPath}"`);
      seq = vfs.lastError.seq;
      db = open(plan.vfs);
      state = { ctx: plan.ctx, file: { crypt: plan.crypt, name: dbPath, reopen: open } };
    } catch (cause) {
      if (plan) forgetContext({ ctx: plan.ctx, file: { crypt: plan.crypt, name: dbPath, reopen: open } });
      release();
      if (cause instanceof PagewiseError) throw cause;
      const text = String((cause as Error)?.message ?? cause);
      const os = vfs.lastError.seq !== seq ? ` (file system: ${vfs.lastError.message})` : '';
      throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `Could not open the database file "${dbPath}": ${text}${os}. Is it a SQLite database, readable and writable?`, { cause });
    }
    // SQLite removes the emptied journal as it closes; then the lock goes.
    const driver = withEncryption(createSqliteDriver(sqlite3, db, 'sqlite-wasm:node-file', release), state);
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
    limits: driver.limits,
    query(sql, params) {
      const seq = vfs.lastError.seq;
      try { return driver.query(sql, params); } catch (e) { throw explain(e, seq); }
    },
    batch(statements) {
      const seq = vfs.lastError.seq;
      try { return driver.batch(statements); } catch (e) { throw explain(e, seq); }
    },
    export() {
      const seq = vfs.lastError.seq;
      try { return driver.export!(); } catch (e) { throw explain(e, seq); }
    },
    close: () => driver.close(),
    get encrypted() { return driver.encrypted; },
    rekey(encryption) {
      const seq = vfs.lastError.seq;
      try {
        return Promise.resolve(driver.rekey!(encryption)).catch((e: unknown) => { throw explain(e, seq); });
      } catch (e) { throw explain(e, seq); }
    },
  } as StorageDriver;
}
