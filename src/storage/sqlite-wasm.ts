import type { Database, PreparedStatement, SAHPoolUtil, Sqlite3Static } from '@sqlite.org/sqlite-wasm';
import { PagewiseError } from '../contracts/errors.js';
import type { EncryptionOptions, Row, SqlValue, Statement, StorageDriver, StorageLimits } from '../contracts/types.js';
import {
  type CryptState, DEFAULT_PAGE_SIZE, type SqliteDriver, forgetContext, newHeader, planOpen, plainImage, readEncryption, withEncryption, writeImportedImage,
} from './crypt-driver.js';
import { recoverConversion } from './crypt-convert.js';
import { installCryptVfs } from './crypt-vfs.js';
import { quotaCheck } from './opfs-quota.js';
import { checkLimits } from './limits.js';

/** Options of the sqlite-wasm driver. */
export interface SqliteWasmOptions {
  /**
   * `memory` (default; Node, tests, the edge) or `opfs-sahpool` (a dedicated browser worker; persists across reloads,
   * needs no COOP/COEP headers, one owner per origin and directory).
   */
  vfs?: 'memory' | 'opfs-sahpool';
  /** The database's name inside the OPFS pool. Default `pagewise.sqlite3`. */
  filename?: string;
  /** The OPFS directory of the pool. Default `.pagewise`. Different directories hold independent databases. */
  directory?: string;
  /** An initialised sqlite3 module, when the app loads it itself (custom wasm location). */
  sqlite3?: Sqlite3Static;
  /**
   * A database's bytes to start from (what `memory.exportDatabase()` gave): opened in memory, or written into the
   * OPFS pool as `filename` when no database of that name is there yet.
   */
  bytes?: Uint8Array;
  /**
   * Lower limits than the build's (32,766 parameters, 500 compound terms, 10⁹-byte statements and rows, 1,000
   * function arguments), enforced by SQLite itself (`sqlite3_limit`): e.g. `DURABLE_OBJECT_LIMITS` to run against
   * the edge's limits in Node. The driver declares what is in force.
   */
  limits?: Partial<StorageLimits>;
  /**
   * Encrypt the database at rest (OPFS), and its exports: `{ key }` or `{ passphrase }` (see EncryptionOptions).
   * In memory nothing is at rest, so the key seals `exportDatabase()` and opens encrypted `bytes`.
   */
  encryption?: EncryptionOptions;
}

const MODULE = 'sqlite-wasm';
let sqlite3Promise: Promise<Sqlite3Static> | undefined;
const pools = new Map<string, SAHPoolUtil>();

export function loadSqlite3(): Promise<Sqlite3Static> {
  // The types declare init() without parameters, but the runtime takes Emscripten options.
  sqlite3Promise ??= import('@sqlite.org/sqlite-wasm').then(async (m) => {
    const sqlite3 = await (m.default as unknown as (opts: object) => Promise<Sqlite3Static>)({ print: () => {}, printErr: () => {} });
    // Failed statements are also logged as warnings; pagewise reports them as typed errors instead.
    (sqlite3 as unknown as { config: { warn: () => void } }).config.warn = () => {};
    return sqlite3;
  });
  return sqlite3Promise;
}

/**
 * Runs `fn` while holding a Web Lock named after the pool directory. opfs-sahpool allows one owner per directory: a
 * second tab would fail deep inside the VFS with a cached error, so it is refused up front with STORAGE_LOCKED.
 */
async function acquireLock(name: string): Promise<() => void> {
  const locks = (globalThis.navigator as Navigator | undefined)?.locks;
  if (!locks) return () => {};
  return new Promise((resolve, reject) => {
    locks.request(name, { ifAvailable: true }, (lock) => {
      if (!lock) {
        reject(new PagewiseError('STORAGE_LOCKED', MODULE,
          `The OPFS database in "${name.slice('pagewise:'.length)}" is open in another tab or worker. Close it there (memory.close()), or use another \`directory\` for this one.`));
        return undefined;
      }
      return new Promise<void>((release) => resolve(release));
    }).catch(reject);
  });
}

/** Opens `bytes` as the in-memory database `db` (SQLite's deserialize; the copy is freed with the database). */
function deserialize(sqlite3: Sqlite3Static, db: Database, bytes: Uint8Array): void {
  const FREE_ON_CLOSE = 1;
  const RESIZEABLE = 2;
  const p = sqlite3.wasm.allocFromTypedArray(bytes);
  const rc = sqlite3.capi.sqlite3_deserialize(db.pointer!, 'main', p, bytes.byteLength, bytes.byteLength, FREE_ON_CLOSE | RESIZEABLE);
  if (rc !== 0) {
    db.close();
    throw new PagewiseError('STORAGE_ERROR', MODULE, `Could not open the given bytes as a database (SQLite code ${rc}); pass what memory.exportDatabase() gave.`);
  }
  try {
    const ok = db.selectValue('PRAGMA quick_check');
    if (ok !== 'ok') throw new Error(String(ok));
  } catch (cause) {
    db.close();
    throw new PagewiseError('STORAGE_ERROR', MODULE, `The given bytes are not a sound SQLite database (${String((cause as Error)?.message ?? cause)}); pass what memory.exportDatabase() gave.`, { cause });
  }
}

async function openOpfs(sqlite3: Sqlite3Static, filename: string, directory: string, bytes: Uint8Array | undefined,
  key: ReturnType<typeof readEncryption>): Promise<{ db: Database; release: () => void; pool: SAHPoolUtil; state: CryptState }> {
  if (typeof (globalThis.navigator as Navigator | undefined)?.storage?.getDirectory !== 'function' || typeof (globalThis as { importScripts?: unknown }).importScripts !== 'function') {
    throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE,
      'opfs-sahpool needs a dedicated Web Worker with OPFS (navigator.storage.getDirectory). Run the engine with connect() from pagewise/client, or use vfs: "memory".');
  }
  const release = await acquireLock(`pagewise:${directory}`);
  try {
    let pool = pools.get(directory);
    if (pool) {
      if (pool.isPaused()) await pool.unpauseVfs();
    } else {
      pool = await sqlite3.installOpfsSAHPoolVfs({ name: `pagewise-sahpool${directory.replace(/[^a-z0-9]/gi, '-')}`, directory, preserveOnInitFailure: true });
      pools.set(directory, pool);
    }
    const name = `/${filename}`;
    const where = `The OPFS database "${directory}/${filename}"`;
    const { under } = installCryptVfs(sqlite3, pool.vfsName);
    // Asked before a file is opened: the pool logs every open of a name it does not hold.
    under.exists = (file) => pool!.getFileNames().includes(file);
    recoverConversion(under, name);
    if (bytes && !pool.getFileNames().includes(name)) {
      if (!(await writeImportedImage(under, name, bytes, key))) await pool.importDb(name, bytes);
    }
    const opened = await planOpen(sqlite3, pool.vfsName, name, key, where);
    const reopen = (vfs: string): Database => new sqlite3.oo1.DB({ filename: name, vfs });
    const state: CryptState = { ctx: opened.ctx, file: { crypt: opened.crypt, name, reopen } };
    try {
      return { db: reopen(opened.vfs), release, pool, state };
    } catch (error) {
      forgetContext(state);
      throw error;
    }
  } catch (cause) {
    release();
    if (cause instanceof PagewiseError) throw cause;
    const text = String((cause as Error)?.message ?? cause);
    const code = /access handle/i.test(text) ? 'STORAGE_LOCKED' : 'STORAGE_UNAVAILABLE';
    throw new PagewiseError(code, MODULE, `Could not open the OPFS database "${directory}/${filename}": ${text}`, { cause });
  }
}

function wrapError(cause: unknown, sql: string): PagewiseError {
  if (cause instanceof PagewiseError) return cause;
  const text = String((cause as Error)?.message ?? cause);
  return new PagewiseError('STORAGE_ERROR', MODULE, `${text} (in: ${sql.slice(0, 120)})`, { cause });
}

/**
 * The sqlite-wasm driver: in memory (Node, edge) or on OPFS (browser worker). Returns a factory: the WASM module
 * loads on first use, not on import.
 *
 * @example
 * const memory = await createMemory({ storage: sqliteWasm({ vfs: 'opfs-sahpool', directory: '.my-app' }) });
 */
export function sqliteWasm(options: SqliteWasmOptions = {}): () => Promise<StorageDriver> {
  const vfs = options.vfs ?? 'memory';
  if (vfs !== 'memory' && vfs !== 'opfs-sahpool') {
    throw new PagewiseError('INVALID_OPTIONS', MODULE, `Unknown vfs "${String(vfs)}": use "memory" or "opfs-sahpool".`);
  }
  if (vfs === 'memory' && options.filename !== undefined) {
    throw new PagewiseError('INVALID_OPTIONS', MODULE,
      `filename "${String(options.filename)}" names no file in memory: in Node use fileStorage(path) from pagewise/node; in a browser worker add vfs: "opfs-sahpool".`);
  }
  if (options.bytes !== undefined && !(options.bytes instanceof Uint8Array)) {
    throw new PagewiseError('INVALID_OPTIONS', MODULE, 'bytes must be a Uint8Array, as memory.exportDatabase() gives.');
  }
  const limits = checkLimits(options.limits, MODULE, 'limits', true);
  const key = readEncryption(options.encryption);
  const filename = options.filename ?? 'pagewise.sqlite3';
  const directory = options.directory ?? '.pagewise';
  return async () => {
    let sqlite3: Sqlite3Static;
    try {
      sqlite3 = options.sqlite3 ?? await loadSqlite3();
    } catch (cause) {
      throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `Could not load @sqlite.org/sqlite-wasm: ${String((cause as Error)?.message ?? cause)}`, { cause });
    }
    let db: Database;
    let onClose = (): void => {};
    let state: CryptState;
    if (vfs === 'memory') {
      const image = options.bytes ? await plainImage(options.bytes, key) : undefined;
      state = { ctx: image?.ctx ?? (key ? await newHeader(key, DEFAULT_PAGE_SIZE) : undefined) };
      db = new sqlite3.oo1.DB(':memory:', 'c');
      if (image) deserialize(sqlite3, db, image.plain);
    } else {
      const opened = await openOpfs(sqlite3, filename, directory, options.bytes, key);
      db = opened.db;
      state = opened.state;
      // Pausing releases the access handles, so another tab can open the pool once this engine is closed.
      onClose = () => { opened.pool.pauseVfs(); opened.release(); };
    }
    const configure = (d: Database): Database => {
      d.exec('PRAGMA foreign_keys = ON');
      // Temporary tables and sorts stay in memory: nothing unsealed reaches a file.
      if (state.ctx) d.exec('PRAGMA temp_store = MEMORY');
      lowerLimits(sqlite3, d, limits);
      return d;
    };
    try {
      configure(db);
    } catch (error) {
      db.close();
      onClose();
      throw error;
    }
    if (state.file) {
      const reopen = state.file.reopen;
      state.file.reopen = (to) => configure(reopen(to));
    }
    return withEncryption(createSqliteDriver(sqlite3, db, `sqlite-wasm:${vfs}`, onClose, vfs === 'opfs-sahpool' ? quotaCheck : undefined), state);
  };
}

// The SQLite limit (sqlite3_limit's id) behind each limit a driver declares.
const LIMIT_IDS = {
  maxRowBytes: 'SQLITE_LIMIT_LENGTH', maxStatementBytes: 'SQLITE_LIMIT_SQL_LENGTH', maxCompoundTerms: 'SQLITE_LIMIT_COMPOUND_SELECT',
  maxFunctionArgs: 'SQLITE_LIMIT_FUNCTION_ARG', maxParams: 'SQLITE_LIMIT_VARIABLE_NUMBER',
} as const satisfies Record<keyof StorageLimits, string>;

/** Lowers the database's limits to `wanted`; a limit above the build's cannot be raised, and is refused. */
function lowerLimits(sqlite3: Sqlite3Static, db: Database, wanted: Partial<StorageLimits>): void {
  for (const [key, id] of Object.entries(LIMIT_IDS) as [keyof StorageLimits, (typeof LIMIT_IDS)[keyof StorageLimits]][]) {
    const value = wanted[key];
    if (value === undefined) continue;
    const most = sqlite3.capi.sqlite3_limit(db.pointer!, sqlite3.capi[id], -1);
    if (value > most) throw new PagewiseError('INVALID_OPTIONS', MODULE, `limits.${key} is ${value}, above this sqlite-wasm build's ${most}; a limit can only be lowered. Leave it out to keep ${most}.`);
    sqlite3.capi.sqlite3_limit(db.pointer!, sqlite3.capi[id], value);
  }
}

/** The limits in force on `db`, as SQLite reports them. */
function limitsIn(sqlite3: Sqlite3Static, db: Database): StorageLimits {
  const out = {} as StorageLimits;
  for (const [key, id] of Object.entries(LIMIT_IDS) as [keyof StorageLimits, (typeof LIMIT_IDS)[keyof StorageLimits]][]) {
    out[key] = sqlite3.capi.sqlite3_limit(db.pointer!, sqlite3.capi[id], -1);
  }
  return out;
}

const SQLITE_INTEGER = 1;
const SQLITE_FLOAT = 2;
const SQLITE_TEXT = 3;
const SQLITE_NULL = 5;

/** The C functions that read a result column, as the module exports them (statement pointer, column index). */
interface RawColumnApi {
  sqlite3_column_type(stmt: number, column: number): number;
  sqlite3_column_double(stmt: number, column: number): number;
  sqlite3_column_text(stmt: number, column: number): number;
  sqlite3_column_bytes(stmt: number, column: number): number;
}

// Prepared statements kept per SQL text: pagewise runs a few dozen distinct statements, and preparing one costs
// about as much as running it.
const STATEMENT_CACHE = 128;

/** The current row of `stmt`, read through the raw WebAssembly exports: oo1's row objects cost 5×, the wrapped C API 2×. */
function readRow(sqlite3: Sqlite3Static, stmt: PreparedStatement, names: string[], utf8: TextDecoder): Row {
  const raw = sqlite3.wasm.exports as unknown as RawColumnApi;
  const p = stmt.pointer!;
  const row: Row = {};
  for (let c = 0; c < names.length; c++) {
    switch (raw.sqlite3_column_type(p, c)) {
      // Integers up to 2^53 are exact as doubles (seqs, counts, milliseconds); larger ones come back as oo1 gives
      // them (a BigInt).
      case SQLITE_INTEGER: {
        const n = raw.sqlite3_column_double(p, c);
        row[names[c]!] = Number.isSafeInteger(n) ? n : stmt.get(c) as SqlValue;
        break;
      }
      case SQLITE_FLOAT: row[names[c]!] = raw.sqlite3_column_double(p, c); break;
      case SQLITE_TEXT: {
        const at = raw.sqlite3_column_text(p, c);
        row[names[c]!] = utf8.decode(sqlite3.wasm.heap8u().subarray(at, at + raw.sqlite3_column_bytes(p, c)));
        break;
      }
      case SQLITE_NULL: row[names[c]!] = null; break;
      default: row[names[c]!] = stmt.get(c) as SqlValue;
    }
  }
  return row;
}

/** Wraps an open oo1 database as a StorageDriver. */
export function createSqliteDriver(sqlite3: Sqlite3Static, opened: Database, name: string, onClose: () => void = () => {},
  classify?: (error: PagewiseError) => Promise<PagewiseError>): SqliteDriver {
  let db = opened;
  let closed = false;
  // ignoreBOM: a default decoder drops a leading U+FEFF, so '\uFEFFdave' would read back as 'dave' and ids meet.
  const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
  const statements = new Map<string, PreparedStatement>();
  const ensureOpen = (): void => {
    if (closed) throw new PagewiseError('ENGINE_CLOSED', MODULE, `The ${name} database is closed; create a new memory to continue.`);
  };
  const prepared = (sql: string): PreparedStatement => {
    let stmt = statements.get(sql);
    if (stmt) {
      statements.delete(sql);
    } else {
      stmt = db.prepare(sql);
      if (statements.size >= STATEMENT_CACHE) {
        const [oldest, old] = statements.entries().next().value!;
        statements.delete(oldest);
        old.finalize();
      }
    }
    statements.set(sql, stmt);
    return stmt;
  };
  /** Runs one statement; with `rows`, collects its result. */
  const run = (sql: string, params: readonly SqlValue[] | undefined, rows?: Row[]): void => {
    const stmt = prepared(sql);
    try {
      if (params && params.length > 0) stmt.bind([...params]);
      if (!rows || stmt.columnCount === 0) {
        while (stmt.step()) { /* a write; rows, if any, are not wanted */ }
        return;
      }
      const names = stmt.getColumnNames();
      while (stmt.step()) rows.push(readRow(sqlite3, stmt, names, utf8));
    } finally {
      // After a failed step, reset() repeats that step's error: the one already on its way out.
      try { stmt.reset(true); } catch { /* reported by step() */ }
    }
  };
  return {
    name,
    limits: Object.freeze(limitsIn(sqlite3, db)),
    query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): T[] {
      ensureOpen();
      const rows: Row[] = [];
      try {
        run(sql, params, rows);
      } catch (cause) {
        throw wrapError(cause, sql);
      }
      return rows as T[];
    },
    batch(list: readonly Statement[]): void | Promise<void> {
      ensureOpen();
      if (list.length === 0) return;
      db.exec('BEGIN IMMEDIATE');
      let current = '';
      try {
        for (const s of list) {
          current = s.sql;
          run(s.sql, s.params);
        }
        db.exec('COMMIT');
      } catch (cause) {
        try { db.exec('ROLLBACK'); } catch { /* the transaction may already be gone */ }
        const error = wrapError(cause, current);
        // An I/O error on OPFS may be the origin's quota: told apart by asking the browser (asynchronously).
        if (classify && /SQLITE_(IOERR|FULL)/.test(error.message)) return classify(error).then((e) => { throw e; });
        throw error;
      }
    },
    export(): Uint8Array {
      ensureOpen();
      // SQLite's serialize: read in one transaction, so a consistent snapshot on a file too.
      try {
        return sqlite3.capi.sqlite3_js_db_export(db);
      } catch (cause) {
        throw wrapError(cause, 'export the database');
      }
    },
    close(): void {
      if (closed) return;
      closed = true;
      try {
        for (const stmt of statements.values()) stmt.finalize();
        statements.clear();
        db.close();
      } finally { onClose(); }
    },
    replaceDatabase(swap: (close: () => void) => Database): void {
      ensureOpen();
      for (const stmt of statements.values()) stmt.finalize();
      statements.clear();
      db = swap(() => db.close());
    },
  };
}
