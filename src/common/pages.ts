// Paged lists (memory.turns/tags/summaries/export with `cursor`): the cursor, the page size asked for, and the byte
// cap every page keeps to. A cursor is opaque to callers: base64url of JSON naming its list, its conversation, the
// filter it was made under and where the page stopped, so one given to another list is refused, typed.
import { PagewiseError } from '../contracts/errors.js';
import { describe } from './messages.js';
import { fromBase64Url, toBase64Url } from './parts.js';

const MODULE = 'engine';
export const DEFAULT_PAGE = 500;
export const MAX_PAGE = 10_000;

/**
 * A page stops before `pageBytes` of JSON whatever its limit (a page always holds one item, however large); an answer
 * of a list over `resultBytes` is refused at the edge (Workers RPC carries at most 32 MiB in one value; the margin is
 * the envelope). Variables, so a test can make them small.
 */
export const pageLimits = { pageBytes: 8 * 1024 * 1024, resultBytes: 31 * 1024 * 1024 };

/** The lists that page. */
export type ListName = 'turns' | 'tags' | 'summaries' | 'export';

/** Whether a call's argument asks for a page: an object with `cursor` (null for the first page). */
export function asksPage(arg: unknown): arg is { cursor: unknown; limit?: unknown } {
  // A value that cannot be read (a revoked Proxy) is the list's own argument check's to refuse, typed.
  try {
    return typeof arg === 'object' && arg !== null && !Array.isArray(arg) && Object.hasOwn(arg, 'cursor') && (arg as { cursor: unknown }).cursor !== undefined;
  } catch {
    return false;
  }
}

/** Whether an object has `key` of its own (false for one that cannot be read: its reader refuses it, typed). */
export function hasOwnSafe(value: object, key: string): boolean {
  try {
    return Object.hasOwn(value, key);
  } catch {
    return false;
  }
}

interface CursorBody<K> { l: ListName; c: string; f: string; at: K }

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, message, { path });
}

/** A cursor's text: only base64url's letters, then base64url of UTF-8 (null otherwise). */
const cursorText = (text: string): string | null => (/^[A-Za-z0-9_-]*$/.test(text) ? fromBase64Url(text) : null);

/** The cursor of the page after one that stopped at `at` (a list's own keyset position). */
export function cursorOf<K>(list: ListName, conversationId: string, filter: string, at: K): string {
  const body: CursorBody<K> = { l: list, c: conversationId, f: filter, at };
  return toBase64Url(JSON.stringify(body));
}

/**
 * Reads `{ cursor, limit }` of a call on `list`: the limit (1 to 10,000, default 500) and the position the cursor
 * holds (null: the first page). `filter` is what else the call asked (a kind, a branch): a cursor made under another
 * is refused, as one of another list or conversation is. `check` says whether a position is this list's shape.
 */
export function readPage<K>(list: ListName, conversationId: string, filter: string, options: { cursor?: unknown; limit?: unknown }, check: (at: unknown) => at is K): { limit: number; at: K | null } {
  const { cursor, limit = DEFAULT_PAGE } = options;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    invalid('page.limit', `The page's limit must be an integer from 1 to ${MAX_PAGE.toLocaleString('en-US')} (got ${describe(limit)}); leave it out for ${DEFAULT_PAGE}.`);
  }
  if (cursor === null) return { limit, at: null };
  const again = `pass { cursor: null } for the first page, then each page's own cursor`;
  const text = typeof cursor === 'string' ? cursorText(cursor) : null;
  let body: Partial<CursorBody<unknown>> | null = null;
  try {
    body = text === null ? null : JSON.parse(text) as Partial<CursorBody<unknown>>;
  } catch {
    body = null;
  }
  if (!body || typeof body !== 'object' || typeof body.l !== 'string' || typeof body.c !== 'string' || typeof body.f !== 'string') {
    invalid('page.cursor', `The cursor is not one a page of memory.${list}() gave (got ${describe(cursor)}); ${again}.`);
  }
  if (body.l !== list) invalid('page.cursor', `The cursor is one of memory.${body.l}()'s pages, not memory.${list}()'s: each list takes only its own cursors; ${again}.`);
  if (body.c !== conversationId) invalid('page.cursor', `The cursor is one of conversation ${describe(body.c)}'s pages, not ${describe(conversationId)}'s; ${again}.`);
  if (body.f !== filter) invalid('page.cursor', `The cursor was made for another filter (${describe(body.f)}, not ${describe(filter)}): ask the next page with the same options as the first; ${again}.`);
  if (!check(body.at)) invalid('page.cursor', `The cursor is not one a page of memory.${list}() gave; ${again}.`);
  return { limit, at: body.at };
}

/** UTF-8 bytes of a string (no copy). */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x800) n += c >= 0xd800 && c < 0xdc00 ? 1 : 2;
    else if (c >= 0x80) n += 1;
  }
  return n;
}

/**
 * Counts a page's JSON as items are added: `fits(item)` is false once the page would pass the byte cap (never for
 * its first item, so a page always goes on).
 */
export function pageBudget(extra = 0) {
  let used = extra;
  let items = 0;
  return {
    fits(item: unknown): boolean {
      const bytes = utf8Length(JSON.stringify(item)) + 1;
      if (items > 0 && used + bytes > pageLimits.pageBytes) return false;
      used += bytes;
      items++;
      return true;
    },
    /** Adds what goes with the page whatever the cap (its first item's own attachments). */
    add(bytes: number): void {
      used += bytes;
    },
    get used() { return used; },
  };
}

/**
 * Whether a value would be over `limit` bytes as it crosses Workers RPC (a structured clone: strings of Latin-1
 * characters a byte each, others two; a JSON-like envelope per value). Stops as soon as it knows: cheap on a small
 * answer, and on a large one never more than `limit` characters of work.
 */
export function sizeOver(value: unknown, limit: number): boolean {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') total += (/[^\u0000-\u00ff]/.test(v) ? 2 * v.length : v.length) + 2;
    else if (v instanceof Uint8Array) total += v.byteLength;
    else if (Array.isArray(v)) {
      total += 2 + v.length;
      for (const x of v) stack.push(x);
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        total += k.length + 3;
        stack.push(x);
      }
    } else total += 8;
    if (total > limit) return true;
  }
  return false;
}

/**
 * A page of `rows` (read with one row more than `limit`, to know whether more follow): the first ones within the
 * limit and the byte cap, and whether any are left.
 */
export function pageOf<T>(rows: readonly T[], limit: number): { items: T[]; more: boolean } {
  const budget = pageBudget();
  const items: T[] = [];
  for (const r of rows) {
    if (items.length >= limit || !budget.fits(r)) break;
    items.push(r);
  }
  return { items, more: items.length < rows.length };
}

// The methods whose answer grows with a conversation (or with the memory): measured before it crosses RPC.
const LISTS = new Set(['turns', 'tags', 'summaries', 'export', 'conversations', 'retentionLog']);

/**
 * At the edge, before a method's answer crosses Workers RPC: RESULT_TOO_LARGE for a list's answer over what one value
 * may carry (the RPC's own error would say nothing of why, nor of the fix).
 */
export function checkResultSize(method: string, args: readonly unknown[], result: unknown): void {
  if (!LISTS.has(method) || !sizeOver(result, pageLimits.resultBytes)) return;
  const mb = Math.round(pageLimits.resultBytes / 1024 / 1024 * 10) / 10;
  const paged = asksPage(method === 'retentionLog' ? args[0] : args[1]);
  const fix = method === 'conversations' ? "forget the conversations this object no longer needs, or give them objects of their own (scope: 'conversation')"
    : paged || method === 'retentionLog' ? 'ask for smaller pages (a lower limit)' : "pass { cursor: null, limit } and follow each page's cursor";
  throw new PagewiseError('RESULT_TOO_LARGE', 'edge', `memory.${method}()'s answer is over ${mb} MiB, more than one value may carry across Workers RPC (32 MiB): ${fix}.`);
}
