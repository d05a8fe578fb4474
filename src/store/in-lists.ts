// Statements with `IN (…)` lists, sliced so that no statement binds more values than a driver takes.
import { IN_LIST_MAX } from '../storage/limits.js';

/** `?, ?, …` for an IN list of `n` values. */
export function placeholders(n: number): string {
  return Array.from({ length: n }, () => '?').join(', ');
}

/**
 * Values bound per `IN (…)` list at most: a caller's list (message ids, a history) may be longer than a driver binds
 * in one statement. The builders slice by `inListSize(limits, others)`, which is also under the driver's maxParams.
 */
export const IN_CHUNK = IN_LIST_MAX;

/** `values` in slices of at most `size` (one statement each). */
export function chunks<T>(values: readonly T[], size = IN_CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}

/** Runs `query` once per slice of `values` and concatenates the rows. */
export async function inChunks<T, R>(values: readonly T[], query: (chunk: T[]) => R[] | Promise<R[]>, size = IN_CHUNK): Promise<R[]> {
  const out: R[] = [];
  for (const chunk of chunks(values, size)) out.push(...await query(chunk));
  return out;
}
