// What one statement may hold on a driver (StorageDriver.limits), and the helpers the query builders size their
// statements with.
import { PagewiseError } from '../contracts/errors.js';
import type { StorageDriver, StorageLimits } from '../contracts/types.js';

/**
 * Durable Object SQL's limits: Cloudflare's published ones for SQLite-backed objects. Measured in workerd
 * (Miniflare 4.20260730): 100 parameters, 5 compound terms and 100,000 statement bytes are exact (one more fails);
 * strings and rows fail past 2,200,000 bytes and function calls past 127 arguments, so the published 2 MB and 32
 * stay under what is enforced.
 */
export const DURABLE_OBJECT_LIMITS: Readonly<StorageLimits> = Object.freeze({
  maxParams: 100, maxCompoundTerms: 5, maxStatementBytes: 100_000, maxRowBytes: 2_000_000, maxFunctionArgs: 32,
});

/**
 * Taken for a limit a driver does not declare: the strictest host pagewise knows (Durable Object SQL; D1 publishes
 * the same). A driver that does not say is most likely a wrapper over a hosted SQLite, whose limits are far below a
 * stock build's; on a permissive one this only costs more, smaller statements, where the other way round a question
 * would fail.
 */
export const UNDECLARED_LIMITS: Readonly<StorageLimits> = DURABLE_OBJECT_LIMITS;

/**
 * The least pagewise runs with: its largest fixed statement binds 17 values, its longest SQL text (the schema, an
 * IN list of IN_LIST_MAX values) is under 4 KB, and it calls functions with at most 3 arguments.
 */
export const MINIMUM_LIMITS: Readonly<StorageLimits> = Object.freeze({
  maxParams: 32, maxCompoundTerms: 1, maxStatementBytes: 16_384, maxRowBytes: 65_536, maxFunctionArgs: 8,
});

const FIELDS = ['maxParams', 'maxCompoundTerms', 'maxStatementBytes', 'maxRowBytes', 'maxFunctionArgs'] as const;

/**
 * Checks limits a driver declares (or an option asks for): each a whole number, at least what pagewise needs. With
 * `strict` (an option), a name that is no limit is refused too; a driver may declare more than pagewise reads.
 */
export function checkLimits(limits: unknown, module: string, where: string, strict = false): Partial<StorageLimits> {
  if (limits === undefined) return {};
  if (typeof limits !== 'object' || limits === null) {
    throw new PagewiseError('INVALID_OPTIONS', module, `${where} must be an object of limits { maxParams, maxCompoundTerms, maxStatementBytes, maxRowBytes, maxFunctionArgs } (got ${String(limits)}).`);
  }
  const out: Partial<StorageLimits> = {};
  for (const key of strict ? Object.keys(limits) : []) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      throw new PagewiseError('INVALID_OPTIONS', module, `${where}.${key} is not a storage limit. The limits are ${FIELDS.join(', ')}.`);
    }
  }
  for (const key of FIELDS) {
    const v = (limits as Record<string, unknown>)[key];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < MINIMUM_LIMITS[key]) {
      throw new PagewiseError('INVALID_OPTIONS', module,
        `${where}.${key} must be a whole number of at least ${MINIMUM_LIMITS[key]}, what pagewise's own statements need (got ${String(v)}). Leave it out to take ${UNDECLARED_LIMITS[key]}.`);
    }
    out[key] = v;
  }
  return out;
}

const known = new WeakMap<StorageDriver, Readonly<StorageLimits>>();

/**
 * The limits the query builders obey on `driver`: what it declares, UNDECLARED_LIMITS for what it leaves out.
 * Throws INVALID_OPTIONS for a declared limit that is not a whole number pagewise can work within.
 */
export function limitsOf(driver: StorageDriver): Readonly<StorageLimits> {
  let limits = known.get(driver);
  if (!limits) {
    limits = Object.freeze({ ...UNDECLARED_LIMITS, ...checkLimits(driver.limits, 'storage', `The ${driver.name} driver's limits`) });
    known.set(driver, limits);
  }
  return limits;
}

/**
 * Values bound per IN list at most, whatever a driver allows: a statement text of a few KB, and few distinct texts
 * for a driver's prepared-statement cache.
 */
export const IN_LIST_MAX = 500;

/** How many values one IN list binds in a statement that binds `others` values besides. */
export function inListSize(limits: StorageLimits, others: number): number {
  return Math.max(1, Math.min(IN_LIST_MAX, limits.maxParams - others));
}

/** UTF-8 bytes of a string (lone surrogates count 3, as U+FFFD, the way the drivers bind them). */
export function utf8Bytes(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) { n += 2; i++; }
    else n += 2;
  }
  return n;
}

/** An item of a JSON list: a string, a number, or a tuple of them (read with json_extract(value, '$[i]')). */
export type JsonItem = string | number | readonly (string | number)[];

/**
 * `values` as JSON arrays, each at most `maxRowBytes` long: the text of one `json_each(?)` parameter (one value
 * bound, whatever the number of items; the string limit is what bounds it). json_each gives items back as TEXT,
 * INTEGER or REAL, by their JSON type. A well-formed string comes back with the bytes a bound one has (NUL,
 * BOM and direction marks included); one with a lone surrogate may not, and the drivers differ there (sqlite-wasm
 * binds it as U+FFFD, Durable Object SQL as its 3-byte WTF-8, as JSON's `\udc00` reads), so only ids and tags go
 * in, which pagewise checks are well-formed.
 */
export function jsonLists(values: readonly JsonItem[], limits: StorageLimits): string[] {
  const out: string[] = [];
  let part: string[] = [];
  let bytes = 2;
  for (const v of values) {
    const item = JSON.stringify(v);
    const size = utf8Bytes(item) + 1;
    if (part.length > 0 && bytes + size > limits.maxRowBytes) {
      out.push(`[${part.join(',')}]`);
      part = [];
      bytes = 2;
    }
    part.push(item);
    bytes += size;
  }
  if (part.length > 0) out.push(`[${part.join(',')}]`);
  return out;
}

/** Runs `query` once per JSON list of `values` (see jsonLists) and concatenates the rows. */
export async function inJsonLists<R>(values: readonly JsonItem[], limits: StorageLimits, query: (json: string) => R[] | Promise<R[]>): Promise<R[]> {
  const out: R[] = [];
  for (const json of jsonLists(values, limits)) out.push(...await query(json));
  return out;
}
