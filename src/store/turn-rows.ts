// How big a turn's row is, measured before it is written: the storage's row limit (2 MB at the edge) is checked
// where turns are written, not by capping the message's text.
import type { ChatMessage, StorageLimits } from '../contracts/types.js';
import { PagewiseError } from '../contracts/errors.js';
import { describe } from '../common/messages.js';
import { utf8Bytes } from '../storage/limits.js';

// A turn row's bytes besides its strings: the record header (a varint per column) and its integers, with room to spare.
const ROW_OVERHEAD = 256;
// What append writes besides the message: created_at and stored_at (ISO 8601), content_hash (SHA-256 in hex).
const FIXED_TEXT = 24 + 24 + 64;

/**
 * The bytes of the row a message is stored as: its content as JSON, its text (content and tool calls again), its tool
 * calls as JSON, ids and name, and the fixed columns. JSON escapes make this up to 7 times the text's bytes (a control
 * character is 1 byte of text and 6 of JSON), which is why it is measured rather than derived from maxMessageBytes.
 */
export function turnRowBytes(conversationId: string, id: string, message: ChatMessage, text: string): number {
  return ROW_OVERHEAD + FIXED_TEXT + utf8Bytes(conversationId) + utf8Bytes(id) + message.role.length + utf8Bytes(message.name ?? '')
    // An attachment's bytes are stored apart, in pieces: the row holds its id.
    + utf8Bytes(JSON.stringify(message.content ?? null, (key, value: unknown) => (key === 'data' ? undefined : value))) + (message.toolCalls ? utf8Bytes(JSON.stringify(message.toolCalls)) : 0)
    + utf8Bytes(message.toolCallId ?? '') + utf8Bytes(text);
}

// JSON of a number at most ("-0.0000012345678901234567"), and how deep jsonBound walks before it measures instead.
const NUMBER_JSON = 25;
const BOUND_DEPTH = 32;

/**
 * At least the UTF-8 bytes of `value` as JSON, from lengths alone (nothing is scanned): each UTF-16 unit of a string
 * is at most 6 bytes (`\u0001`), a number 25. Infinity where it cannot tell (a value with toJSON, or nested deep).
 */
function jsonBound(value: unknown, depth: number): number {
  if (typeof value === 'string') return 6 * value.length + 2;
  if (typeof value === 'number') return NUMBER_JSON;
  if (value === null || value === undefined || typeof value === 'boolean') return 5;
  if (typeof value !== 'object' || depth > BOUND_DEPTH) return Infinity;
  let n = 2;
  if (Array.isArray(value)) {
    for (const v of value as unknown[]) n += jsonBound(v, depth + 1) + 1;
    return n;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if ((proto !== Object.prototype && proto !== null) || 'toJSON' in value) return Infinity;
  for (const [k, v] of Object.entries(value)) n += 6 * k.length + 4 + jsonBound(v, depth + 1);
  return n;
}

/**
 * At least turnRowBytes(), from the strings' lengths (a UTF-16 unit is at most 3 bytes of UTF-8, 6 of JSON): where it
 * fits, the exact count (which scans every byte of the turn twice) is not needed. Attachments' data is counted here.
 */
function turnRowBound(conversationId: string, id: string, message: ChatMessage, text: string): number {
  return ROW_OVERHEAD + FIXED_TEXT + 3 * (conversationId.length + id.length + (message.name?.length ?? 0) + (message.toolCallId?.length ?? 0) + text.length)
    + message.role.length + jsonBound(message.content ?? null, 0) + (message.toolCalls ? jsonBound(message.toolCalls, 0) : 0);
}

/**
 * MESSAGE_TOO_LARGE when a message's row would be over the driver's row limit (2 MB at the edge), else null. Checked
 * where turns are written (append, and import's first step for every turn before it writes any), not by capping
 * maxMessageBytes: that counts text, and the row may hold up to 7 times as much.
 */
export function turnRowError(limits: StorageLimits, driverName: string, conversationId: string, id: string, message: ChatMessage, text: string, path?: string): PagewiseError | null {
  // Most turns are far under the limit: only one that might be over is measured (the error says its exact size).
  if (turnRowBound(conversationId, id, message, text) <= limits.maxRowBytes) return null;
  const bytes = turnRowBytes(conversationId, id, message, text);
  if (bytes <= limits.maxRowBytes) return null;
  return new PagewiseError('MESSAGE_TOO_LARGE', 'store',
    `Message ${describe(id)} would be stored as a row of ${bytes} bytes (its content as JSON, its text and tool calls), over the ${limits.maxRowBytes}-byte row limit of the ${driverName} storage; nothing was stored. Split it into smaller messages or shorten its tool results.`,
    path === undefined ? undefined : { path });
}
