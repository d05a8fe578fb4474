/** A value that is either ready now or later: OPFS SQLite and Durable Object SQL are synchronous, others are not. */
export type MaybePromise<T> = T | Promise<T>;

// ---------------------------------------------------------------------------------------------
// Seam: storage driver
// ---------------------------------------------------------------------------------------------

/** A value SQLite can bind or return. */
export type SqlValue = string | number | bigint | Uint8Array | null;

/** A row as an object of column name to value. */
export type Row = Record<string, SqlValue>;

/** One SQL statement with its parameters. */
export interface Statement {
  sql: string;
  params?: readonly SqlValue[];
}

/**
 * What one statement may hold on a driver's SQLite. pagewise's query builders size every statement to them: id
 * lists are cut into slices, weighted lists go in as one JSON parameter, and a row that would be too large is refused
 * with MESSAGE_TOO_LARGE before anything is written. Each is one of SQLite's run-time limits (`sqlite3_limit`).
 */
export interface StorageLimits {
  /** The most values one statement binds (`?` parameters); SQLITE_LIMIT_VARIABLE_NUMBER. */
  maxParams: number;
  /** The most SELECTs one compound SELECT joins with UNION, UNION ALL, INTERSECT or EXCEPT; SQLITE_LIMIT_COMPOUND_SELECT. */
  maxCompoundTerms: number;
  /** The most UTF-8 bytes of one statement's SQL text, bound values not counted; SQLITE_LIMIT_SQL_LENGTH. */
  maxStatementBytes: number;
  /** The most bytes of one string or blob, bound or computed, and of one stored row (its record); SQLITE_LIMIT_LENGTH. */
  maxRowBytes: number;
  /** The most arguments of one SQL function call; SQLITE_LIMIT_FUNCTION_ARG. */
  maxFunctionArgs: number;
}

/**
 * The one storage seam. A driver runs SQL on one SQLite database: sqlite-wasm in memory (Node, edge), sqlite-wasm
 * on OPFS (browser worker), Durable Object SQL (edge). Methods may answer synchronously or with a promise.
 */
export interface StorageDriver {
  /** A short name for messages and the manifest (`sqlite-wasm:memory`, `sqlite-wasm:opfs-sahpool`). */
  readonly name: string;
  /**
   * Integers beyond 2^53 come back as the nearest double (Durable Object SQL returns numbers). pagewise stores none
   * (seqs, counts, milliseconds); other drivers return them exactly.
   */
  readonly roundsLargeIntegers?: boolean;
  /**
   * What one statement may hold here (see StorageLimits). A field left out is taken as the strictest host pagewise
   * knows (Durable Object SQL and D1: 100 parameters, 5 compound terms, 100 KB statements, 2 MB rows, 32 function
   * arguments), so a driver that does not say still works, with more, smaller statements.
   */
  readonly limits?: Readonly<Partial<StorageLimits>>;
  /** Run one read statement and return its rows. */
  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): MaybePromise<T[]>;
  /** Run statements atomically: all of them or, on any error, none (one transaction). */
  batch(statements: readonly Statement[]): MaybePromise<void>;
  /** The database file's bytes (a backup that `sqliteWasm({ bytes })` or a file opens), where the driver can give them. */
  export?(): MaybePromise<Uint8Array>;
  /** Release the database. Further calls fail with `ENGINE_CLOSED`. */
  close(): MaybePromise<void>;
  /** True while pagewise encrypts this database at rest (see EncryptionOptions). */
  readonly encrypted?: boolean;
  /**
   * Changes the key in place, crash-safely; encrypts a plain database (`encryption` given) or decrypts one (`null`).
   * Drivers that cannot (Durable Object SQL) leave it out.
   */
  rekey?(encryption: EncryptionOptions | null): MaybePromise<void>;
}

/** A driver, or a function that makes one (drivers that load WASM are made lazily). */
export type StorageOption = StorageDriver | (() => MaybePromise<StorageDriver>);


/**
 * Encryption at rest: every byte the store writes (turns, summaries, tags, vectors, the full-text index, the journal)
 * is sealed page by page with XChaCha20-Poly1305 under a random data key, itself sealed under what you give here.
 * Give exactly one of `key` and `passphrase`. A wrong one fails with `WRONG_KEY`, an encrypted database opened
 * without one with `KEY_REQUIRED`; neither changes a byte. `memory.rekey()` changes it.
 */
export interface EncryptionOptions {
  /**
   * 32 random bytes (`crypto.getRandomValues(new Uint8Array(32))`), or an AES-GCM `CryptoKey` with the usages
   * `encrypt` and `decrypt` — it may be non-extractable, e.g. kept in IndexedDB so the page never sees its bytes.
   */
  key?: Uint8Array | CryptoKey;
  /** A passphrase, stretched with Argon2id (its salt and cost are stored in the database's header). */
  passphrase?: string;
  /**
   * Argon2id's cost when a passphrase is set (opening uses what the header says). Default: 19,456 KiB and 2
   * iterations, OWASP's minimum; raise them where devices allow.
   */
  kdf?: { memoryKiB?: number; iterations?: number };
}
