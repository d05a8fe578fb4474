import type { MaybePromise } from './types.js';

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
  /** Run one read statement and return its rows. */
  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): MaybePromise<T[]>;
  /** Run statements atomically: all of them or, on any error, none (one transaction). */
  batch(statements: readonly Statement[]): MaybePromise<void>;
  /** The database file's bytes (a backup that `sqliteWasm({ bytes })` or a file opens), where the driver can give them. */
  export?(): MaybePromise<Uint8Array>;
  /** Release the database. Further calls fail with `ENGINE_CLOSED`. */
  close(): MaybePromise<void>;
}

/** A driver, or a function that makes one (drivers that load WASM are made lazily). */
export type StorageOption = StorageDriver | (() => MaybePromise<StorageDriver>);

