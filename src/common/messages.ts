import { PagewiseError } from '../contracts/errors.js';
import { describe, inline } from './as-data.js';
import { bytesOf, canonicalPart, hasRichParts, isAttachmentPart, reasoningText, searchableText, sha256Hex, validatePart, withFacts } from './parts.js';
import type { AttachmentPart, ChatMessage, ContentPart, Role, ToolCall } from '../contracts/types.js';
import type { MediaFacts } from './media-probe.js';

const ROLES: readonly Role[] = ['system', 'user', 'assistant', 'tool'];
const MODULE = 'messages';
const encoder = new TextEncoder();

// ISO 8601 date or date-time (with optional fraction and zone); Date.parse alone accepts too much ("May 8").
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):?(\d{2}))?)?$/;
// What a Date can hold: ±8.64e15 ms around 1970 (beyond it toISOString throws a RangeError).
const MAX_TIME = 8.64e15;

function fail(code: ConstructorParameters<typeof PagewiseError>[0], path: string, message: string): never {
  throw new PagewiseError(code, MODULE, `${path}: ${message}`, { path });
}

// A lone UTF-16 surrogate (a string cut inside an emoji) is replaced with U+FFFD on its way into SQLite, so two
// different ids ('X\uD800', 'X\uDC00') would become one: strings that are not well-formed are refused wherever
// they enter.
const LONE_SURROGATE = /\p{Cs}/u;
const CONTROL = /\p{Cc}/u;

/** Whether a string is well-formed UTF-16 (no lone surrogate). */
export function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/** Throws `code` naming `path` when `text` holds a lone surrogate. */
export function checkWellFormed(text: string, code: ConstructorParameters<typeof PagewiseError>[0], path: string, module = MODULE): string {
  if (!isWellFormed(text)) {
    throw new PagewiseError(code, module, `${path}: is not well-formed Unicode (it holds a lone UTF-16 surrogate, as left by cutting a string inside an emoji). Pass valid text; String.prototype.toWellFormed() repairs it.`, { path });
  }
  return text;
}

/**
 * Checks an identifier (conversation, message, pin): a non-empty string of at most `max` characters, well-formed,
 * without control characters (an id is shown on one line in notes and tool results).
 */
export function checkIdentifier(value: unknown, code: ConstructorParameters<typeof PagewiseError>[0], path: string, max: number, module = MODULE): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new PagewiseError(code, module, `${path} must be a non-empty string (got ${describe(value)}).`, { path });
  }
  if (value.length > max) throw new PagewiseError(code, module, `${path} is longer than ${max} characters; use a shorter id.`, { path });
  checkWellFormed(value, code, path, module);
  if (CONTROL.test(value)) {
    throw new PagewiseError(code, module, `${path} must not hold control characters such as line breaks, tabs or NUL (got ${describe(value)}).`, { path });
  }
  return value;
}

type Code = ConstructorParameters<typeof PagewiseError>[0];

function unreadable(path: string, code: Code, module: string, cause: unknown): never {
  const reason = cause instanceof Error ? cause.message : describe(cause);
  throw new PagewiseError(code, module,
    `${path} cannot be read: it is a revoked Proxy, or a getter or Proxy trap threw (${inline(reason.slice(0, 120))}). Pass plain data; structuredClone(value) makes a copy.`,
    { path, cause });
}

/**
 * Caller input as a plain array copy, or undefined when it is not an array. Reading it is where a revoked Proxy or a
 * throwing trap fails: that becomes `code` naming `path`, not a TypeError from deep inside. The copy is read once,
 * so a trap cannot answer one thing when checked and another when used; a hole reads as undefined.
 */
export function readArray(value: unknown, path: string, code: Code = 'INVALID_ARGUMENT', module = MODULE): unknown[] | undefined {
  try {
    if (!Array.isArray(value)) return undefined;
    const length = value.length;
    const out = new Array<unknown>(length);
    for (let i = 0; i < length; i++) out[i] = value[i];
    return out;
  } catch (cause) {
    return unreadable(path, code, module, cause);
  }
}

/** Caller input as a plain copy of its own enumerable properties, or undefined when it is not a (non-array) object. */
export function readRecord(value: unknown, path: string, code: Code = 'INVALID_ARGUMENT', module = MODULE): Record<string, unknown> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  try {
    return Array.isArray(value) ? undefined : { ...value };
  } catch (cause) {
    return unreadable(path, code, module, cause);
  }
}

/** Checks a conversation id and returns it. */
export function validateConversationId(value: unknown, path = 'conversationId'): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new PagewiseError('INVALID_CONVERSATION_ID', MODULE,
      `${path} must be a non-empty string that identifies the conversation (got ${describe(value)}).`, { path });
  }
  return checkIdentifier(value, 'INVALID_CONVERSATION_ID', path, 512);
}

/** Parses an ISO 8601 timestamp to epoch ms, or throws INVALID_DATE naming the path. */
export function parseIsoDate(value: unknown, path: string): number {
  const m = typeof value === 'string' ? ISO_8601.exec(value.trim()) : null;
  if (!m) fail('INVALID_DATE', path, `must be an ISO 8601 date-time such as "2024-05-08T13:56:00Z" (got ${describe(value)}).`);
  // Date.parse rolls impossible dates over ("2024-02-30" is 1 March): check each field against the calendar.
  const [year, month, day, hour, minute, second, zoneHour, zoneMinute] = m.slice(1).map((x) => (x === undefined ? 0 : Number(x)));
  const daysInMonth = new Date(new Date(0).setUTCFullYear(year!, month!, 0)).getUTCDate();
  if (month! < 1 || month! > 12 || day! < 1 || day! > daysInMonth || hour! > 23 || minute! > 59 || second! > 59 || zoneHour! > 23 || zoneMinute! > 59) {
    fail('INVALID_DATE', path, `is not a real date and time: ${describe(value)} (months 1–12, days up to the month's length, hours 0–23, minutes and seconds 0–59).`);
  }
  const ms = Date.parse(m[0]);
  if (Number.isNaN(ms)) fail('INVALID_DATE', path, `is not a real date: ${describe(value)}.`);
  return ms;
}

/** Parses `now` (Date, ISO 8601 string or epoch ms). */
export function parseNow(value: unknown, path = 'now'): number {
  if (value === undefined) return Date.now();
  if (typeof value === 'object' && value !== null) {
    let ms: number;
    try {
      // The Date method itself: a Proxy of a Date, or a Date with its own getTime, is not one.
      ms = value instanceof Date ? Date.prototype.getTime.call(value) : Number.NaN;
    } catch (cause) {
      return unreadable(path, 'INVALID_DATE', MODULE, cause);
    }
    if (!Number.isNaN(ms)) return ms;
  }
  if (typeof value === 'number' && Number.isFinite(value)) {
    if (Math.abs(value) > MAX_TIME) fail('INVALID_DATE', path, `is out of a Date's range (±8.64e15 ms around 1970; got ${value}). Pass epoch milliseconds such as Date.now().`);
    return value;
  }
  if (typeof value === 'string') return parseIsoDate(value, path);
  return fail('INVALID_DATE', path, `must be a Date, an ISO 8601 string or epoch milliseconds (got ${describe(value)}).`);
}

/** The default of `maxAttachmentBytes`: 20 MiB (OpenAI's limit per image). */
export const DEFAULT_MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024;

function validateContent(value: unknown, path: string, maxAttachmentBytes: number): string | ContentPart[] | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return checkWellFormed(value, 'INVALID_CONTENT', path);
  const parts = readArray(value, path, 'INVALID_CONTENT');
  if (!parts) fail('INVALID_CONTENT', path, `must be a string or an array of parts ({ type: 'text', text }, { type: 'image', data | url }, { type: 'file', … }, { type: 'audio', … }, { type: 'reasoning', text }) (got ${describe(value)}).`);
  return parts.map((raw, i) => validatePart(raw, `${path}[${i}]`, maxAttachmentBytes));
}

function validateToolCalls(value: unknown, path: string): ToolCall[] | undefined {
  if (value === undefined || value === null) return undefined;
  const calls = readArray(value, path, 'INVALID_TOOL_CALL');
  if (!calls) fail('INVALID_TOOL_CALL', path, `must be an array of tool calls (got ${describe(value)}).`);
  return calls.map((raw, i) => {
    const p = `${path}[${i}]`;
    const call = readRecord(raw, p, 'INVALID_TOOL_CALL');
    if (!call) fail('INVALID_TOOL_CALL', p, `must be { id, type: 'function', function: { name, arguments } } (got ${describe(raw)}).`);
    const id = checkIdentifier(call.id, 'INVALID_TOOL_CALL', `${p}.id`, 256);
    if (call.type !== undefined && call.type !== 'function') fail('INVALID_TOOL_CALL', `${p}.type`, `must be 'function' (got ${describe(call.type)}).`);
    const fn = readRecord(call.function, `${p}.function`, 'INVALID_TOOL_CALL');
    const name = fn?.name;
    const args = fn?.arguments;
    if (!fn || typeof name !== 'string' || name.length === 0) {
      fail('INVALID_TOOL_CALL', `${p}.function`, 'must be { name: non-empty string, arguments: string }.');
    }
    if (typeof args !== 'string') {
      fail('INVALID_TOOL_CALL', `${p}.function.arguments`, `must be a string (the JSON the model wrote), got ${describe(args)}. Use JSON.stringify(args).`);
    }
    checkIdentifier(name, 'INVALID_TOOL_CALL', `${p}.function.name`, 256);
    checkWellFormed(args, 'INVALID_TOOL_CALL', `${p}.function.arguments`);
    return { id, type: 'function' as const, function: { name, arguments: args } };
  });
}

/**
 * Validates one message and returns a clean copy holding only the known fields. Throws a PagewiseError whose
 * `path` names the field; nothing is stored by the caller until every message passed.
 */
export function validateMessage(raw: unknown, path: string, maxBytes: number, maxAttachmentBytes = DEFAULT_MAX_ATTACHMENT_BYTES): ChatMessage {
  const value = readRecord(raw, path, 'INVALID_MESSAGE');
  if (!value) fail('INVALID_MESSAGE', path, `must be a message object { role, content } (got ${describe(raw)}).`);
  const role = value.role;
  if (typeof role !== 'string' || !ROLES.includes(role as Role)) {
    fail('INVALID_ROLE', `${path}.role`, `must be one of ${ROLES.map((r) => `'${r}'`).join(', ')} (got ${describe(role)}).`);
  }
  const content = validateContent(value.content, `${path}.content`, maxAttachmentBytes);
  const toolCalls = validateToolCalls(value.toolCalls, `${path}.toolCalls`);
  if (toolCalls && role !== 'assistant') fail('INVALID_TOOL_CALL', `${path}.toolCalls`, `only assistant messages make tool calls (role is '${role}').`);
  const msg: ChatMessage = { role: role as Role, content };
  if (value.id !== undefined) msg.id = checkIdentifier(value.id, 'INVALID_MESSAGE', `${path}.id`, 256);
  if (value.name !== undefined) msg.name = checkIdentifier(value.name, 'INVALID_MESSAGE', `${path}.name`, 256);
  if (value.createdAt !== undefined) {
    msg.createdAt = new Date(parseIsoDate(value.createdAt, `${path}.createdAt`)).toISOString();
  }
  if (toolCalls && toolCalls.length > 0) msg.toolCalls = toolCalls;
  if (value.private !== undefined) {
    if (typeof value.private !== 'boolean') fail('INVALID_MESSAGE', `${path}.private`, `must be true or false (got ${describe(value.private)}).`);
    if (value.private) msg.private = true;
  }
  if (role === 'tool') {
    if (typeof value.toolCallId !== 'string' || value.toolCallId.length === 0) {
      fail('INVALID_TOOL_CALL', `${path}.toolCallId`, "a 'tool' message must carry the id of the call it answers in toolCallId.");
    }
    msg.toolCallId = checkIdentifier(value.toolCallId, 'INVALID_TOOL_CALL', `${path}.toolCallId`, 256);
  } else if (value.toolCallId !== undefined) {
    fail('INVALID_TOOL_CALL', `${path}.toolCallId`, `only 'tool' messages carry toolCallId (role is '${role}').`);
  }
  const text = messageText(msg);
  if (text.trim().length === 0) {
    fail('EMPTY_MESSAGE', `${path}.content`, 'is empty. Send text or an attachment (an assistant message may instead carry toolCalls).');
  }
  const bytes = encoder.encode(text).length + encoder.encode(reasoningText(msg.content)).length;
  if (bytes > maxBytes) {
    fail('MESSAGE_TOO_LARGE', path, `is ${bytes} bytes, over maxMessageBytes (${maxBytes}). Split it, or raise maxMessageBytes in the options.`);
  }
  return msg;
}

/** A message's content as text: the string, or its text parts and attachment references joined ('' for none). */
export function contentText(content: ChatMessage['content']): string {
  return typeof content === 'string' ? content : searchableText(content);
}

/** The text of a message: content parts joined (attachments as references), tool calls written as `name(arguments)`. */
export function messageText(m: Pick<ChatMessage, 'content' | 'toolCalls'>): string {
  const body = contentText(m.content);
  if (!m.toolCalls || m.toolCalls.length === 0) return body;
  const calls = m.toolCalls.map((c) => `[tool call ${c.function.name}(${c.function.arguments})]`).join('\n');
  return body.length > 0 ? `${body}\n${calls}` : calls;
}

/**
 * A message's content as it is hashed and stored: attachments by their id (the SHA-256 of their bytes) instead of their
 * bytes, and the attachments whose bytes it carried. A string, or text parts only, stays as it is.
 */
export async function storedContent(content: ChatMessage['content']): Promise<{ content: ChatMessage['content']; attachments: { id: string; bytes: Uint8Array; part: AttachmentPart; facts: MediaFacts }[] }> {
  if (!hasRichParts(content)) return { content, attachments: [] };
  const attachments: { id: string; bytes: Uint8Array; part: AttachmentPart; facts: MediaFacts }[] = [];
  const parts = await Promise.all((content as ContentPart[]).map(async (p) => {
    if (!isAttachmentPart(p)) return canonicalPart(p, null) as unknown as ContentPart;
    const bytes = bytesOf(p);
    const id = await partId(p);
    const { part, facts: read } = withFacts(p);
    if (bytes && id) attachments.push({ id, bytes, part, facts: read ?? {} });
    const facts = { ...(id !== null && part.mediaType !== undefined ? { mediaType: part.mediaType } : {}), ...(part.size !== undefined ? { size: part.size } : {}), ...(part.type === 'image' && part.width !== undefined ? { width: part.width, height: part.height } : {}),
      ...(part.type === 'file' && part.pages !== undefined ? { pages: part.pages } : {}), ...(part.type === 'audio' && part.durationMs !== undefined ? { durationMs: part.durationMs } : {}) };
    return { ...canonicalPart(p, id), ...facts } as ContentPart;
  }));
  return { content: parts, attachments };
}

// An attachment's id is computed once per bytes object (a request's history hashes the same images on every call).
const ids = new WeakMap<Uint8Array, Promise<string>>();
function attachmentId(bytes: Uint8Array): Promise<string> {
  let id = ids.get(bytes);
  if (!id) ids.set(bytes, (id = sha256Hex(bytes)));
  return id;
}

/** A content as it is hashed: text alone as it always was; other parts as stored, reasoning left out. */
async function hashedContent(content: ChatMessage['content']): Promise<unknown> {
  if (!hasRichParts(content)) return content;
  // Reasoning is not what a message says: many clients do not send it back (OpenAI-compatible reasoning_content), and
  // the same message with or without it is one message. What is left, text alone, hashes as the one string it is sent as.
  const said = (content as ContentPart[]).filter((p) => p.type !== 'reasoning');
  // (Nothing left hashes as '': what the proxy and the AI SDK middleware read a reply of reasoning and tool calls as.)
  if (said.every((p) => p.type === 'text')) return said.map((p) => (p as { text: string }).text).join('\n');
  return Promise.all(said.map(async (p) => canonicalPart(p, isAttachmentPart(p) ? await partId(p) : null)));
}

/** An attachment part's id: its bytes' SHA-256 (which an id given beside them must be), or the id it names. */
export async function partId(p: AttachmentPart): Promise<string | null> {
  const bytes = bytesOf(p);
  if (!bytes) return p.attachment ?? null;
  const id = await attachmentId(bytes);
  if (p.attachment !== undefined && p.attachment !== id) {
    throw new PagewiseError('INVALID_CONTENT', MODULE, `an ${p.type} part's attachment id ${describe(p.attachment)} is not the SHA-256 of its bytes (${id}): send the bytes alone, or the id alone.`);
  }
  return id;
}

/** SHA-256 of what makes a message itself (not its id or time): the reconciliation key when there is no id. */
export async function contentHash(m: ChatMessage): Promise<string> {
  const content = await hashedContent(m.content);
  return sha256Hex(encoder.encode(JSON.stringify([m.role, m.name ?? null, content, m.toolCalls ?? null, m.toolCallId ?? null])));
}

// Where the other helpers here (and common/parts.ts) look for it: it moved beside inline(), which it uses.
export { describe } from './as-data.js';
