import { PagewiseError } from '../contracts/errors.js';
import type { Row, SqlValue, Statement, StorageDriver } from '../contracts/types.js';
import { DURABLE_OBJECT_LIMITS } from './limits.js';

/** What the driver uses of a Durable Object's `ctx.storage` (structural: no dependency on workers-types). */
export interface DurableObjectStorageLike {
  sql: {
    exec(query: string, ...bindings: unknown[]): { toArray(): Record<string, unknown>[] };
  };
  transactionSync<T>(fn: () => T): T;
}

const MODULE = 'durable-object-sql';

function wrapError(cause: unknown, sql: string): PagewiseError {
  if (cause instanceof PagewiseError) return cause;
  const text = String((cause as Error)?.message ?? cause);
  return new PagewiseError('STORAGE_ERROR', MODULE, `${text} (in: ${sql.slice(0, 120)})`, { cause });
}

/** A parameter as Durable Object SQL binds it: blobs as ArrayBuffer, integers past 2^53 as text SQLite converts. */
function bind(v: SqlValue): unknown {
  if (v instanceof Uint8Array) return v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength);
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  return v;
}

/** A value as the other drivers return it: blobs as Uint8Array. */
function value(v: unknown): SqlValue {
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return v as SqlValue;
}

// Statements Durable Object SQL does not authorize, and what they are for elsewhere: both are about the bytes of a
// database file, which here Cloudflare's storage keeps (and deletes) itself.
const NOT_HERE = /^\s*(VACUUM\b|PRAGMA\s+secure_delete\b)/i;

/**
 * The storage driver over a Durable Object's SQLite (`ctx.storage.sql`): synchronous, batches through
 * `transactionSync` (explicit BEGIN/COMMIT are not allowed there), cursors read whole before returning.
 *
 * @example
 * export class Memory extends DurableObject {
 *   memory = createMemory({ storage: durableObjectSql(this.ctx.storage), embedder: false });
 * }
 */
export function durableObjectSql(storage: DurableObjectStorageLike): StorageDriver {
  if (typeof storage?.sql?.exec !== 'function' || typeof storage.transactionSync !== 'function') {
    throw new PagewiseError('INVALID_OPTIONS', MODULE,
      'durableObjectSql needs a Durable Object\'s ctx.storage backed by SQLite (new_sqlite_classes in the wrangler migrations).');
  }
  let closed = false;
  const ensureOpen = (): void => {
    if (closed) throw new PagewiseError('ENGINE_CLOSED', MODULE, 'This Durable Object SQL driver is closed; create a new memory to continue.');
  };
  const run = (sql: string, params: readonly SqlValue[] = []): Row[] => {
    if (NOT_HERE.test(sql)) return [];
    const rows = storage.sql.exec(sql, ...params.map(bind)).toArray();
    return rows.map((r) => {
      const out: Row = {};
      for (const k of Object.keys(r)) out[k] = value(r[k]);
      return out;
    });
  };
  return {
    name: 'durable-object-sql',
    roundsLargeIntegers: true,
    // SQLite there is built with low limits (100 parameters, 5 compound terms, 100 KB statements, 2 MB rows).
    limits: DURABLE_OBJECT_LIMITS,
    query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): T[] {
      ensureOpen();
      try {
        return run(sql, params) as T[];
      } catch (cause) {
        throw wrapError(cause, sql);
      }
    },
    batch(list: readonly Statement[]): void {
      ensureOpen();
      if (list.length === 0) return;
      let current = '';
      try {
        storage.transactionSync(() => {
          for (const s of list) {
            current = s.sql;
            run(s.sql, s.params);
          }
        });
      } catch (cause) {
        throw wrapError(cause, current);
      }
    },
    close(): void {
      closed = true;
    },
  };
}
