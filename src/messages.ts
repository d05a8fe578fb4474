import { PagewiseError } from './errors.js';
import type { ChatMessage, ContentPart, Role, ToolCall } from './types.js';

const ROLES: readonly Role[] = ['system', 'user', 'assistant', 'tool'];
const MODULE = 'messages';
const encoder = new TextEncoder();

// ISO 8601 date or date-time (with optional fraction and zone); Date.parse alone accepts too much ("May 8").
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

function fail(code: ConstructorParameters<typeof PagewiseError>[0], path: string, message: string): never {
  throw new PagewiseError(code, MODULE, `${path}: ${message}`, { path });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Checks a conversation id and returns it. */
export function validateConversationId(value: unknown, path = 'conversationId'): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new PagewiseError('INVALID_CONVERSATION_ID', MODULE,
      `${path} must be a non-empty string that identifies the conversation (got ${describe(value)}).`, { path });
  }
  if (value.length > 512) fail('INVALID_CONVERSATION_ID', path, 'is longer than 512 characters; use a shorter id.');
  return value;
}

/** Parses an ISO 8601 timestamp to epoch ms, or throws INVALID_DATE naming the path. */
export function parseIsoDate(value: unknown, path: string): number {
  if (typeof value !== 'string' || !ISO_8601.test(value.trim())) {
    fail('INVALID_DATE', path, `must be an ISO 8601 date-time such as "2024-05-08T13:56:00Z" (got ${describe(value)}).`);
  }
  const ms = Date.parse(value.trim());
  if (Number.isNaN(ms)) fail('INVALID_DATE', path, `is not a real date: ${JSON.stringify(value)}.`);
  return ms;
}

/** Parses `now` (Date, ISO 8601 string or epoch ms). */
export function parseNow(value: unknown, path = 'now'): number {
  if (value === undefined) return Date.now();
  if (value instanceof Date && !Number.isNaN(value.getTime())) return value.getTime();
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string') return parseIsoDate(value, path);
  return fail('INVALID_DATE', path, `must be a Date, an ISO 8601 string or epoch milliseconds (got ${describe(value)}).`);
}

function validateContent(value: unknown, path: string): string | ContentPart[] | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) {
    fail('INVALID_CONTENT', path, `must be a string or an array of { type: 'text', text } parts (got ${describe(value)}).`);
  }
  return value.map((part, i) => {
    if (!isRecord(part) || part.type !== 'text' || typeof part.text !== 'string') {
      const kind = isRecord(part) && typeof part.type === 'string' ? `a '${part.type}' part` : describe(part);
      fail('INVALID_CONTENT', `${path}[${i}]`,
        `only text parts ({ type: 'text', text: string }) can be stored as memory (got ${kind}). Send images and files to the model directly and keep a text description in the message.`);
    }
    return { type: 'text', text: part.text };
  });
}

function validateToolCalls(value: unknown, path: string): ToolCall[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) fail('INVALID_TOOL_CALL', path, `must be an array of tool calls (got ${describe(value)}).`);
  return value.map((call, i) => {
    const p = `${path}[${i}]`;
    if (!isRecord(call)) fail('INVALID_TOOL_CALL', p, `must be { id, type: 'function', function: { name, arguments } } (got ${describe(call)}).`);
    if (typeof call.id !== 'string' || call.id.length === 0) fail('INVALID_TOOL_CALL', `${p}.id`, 'must be a non-empty string.');
    if (call.type !== undefined && call.type !== 'function') fail('INVALID_TOOL_CALL', `${p}.type`, `must be 'function' (got ${describe(call.type)}).`);
    const fn = call.function;
    if (!isRecord(fn) || typeof fn.name !== 'string' || fn.name.length === 0) {
      fail('INVALID_TOOL_CALL', `${p}.function`, 'must be { name: non-empty string, arguments: string }.');
    }
    if (typeof fn.arguments !== 'string') {
      fail('INVALID_TOOL_CALL', `${p}.function.arguments`, `must be a string (the JSON the model wrote), got ${describe(fn.arguments)}. Use JSON.stringify(args).`);
    }
    return { id: call.id, type: 'function' as const, function: { name: fn.name, arguments: fn.arguments } };
  });
}

/**
 * Validates one message and returns a clean copy holding only the known fields. Throws a PagewiseError whose
 * `path` names the field; nothing is stored by the caller until every message passed.
 */
export function validateMessage(value: unknown, path: string, maxBytes: number): ChatMessage {
  if (!isRecord(value)) fail('INVALID_MESSAGE', path, `must be a message object { role, content } (got ${describe(value)}).`);
  const role = value.role;
  if (typeof role !== 'string' || !ROLES.includes(role as Role)) {
    fail('INVALID_ROLE', `${path}.role`, `must be one of ${ROLES.map((r) => `'${r}'`).join(', ')} (got ${describe(role)}).`);
  }
  const content = validateContent(value.content, `${path}.content`);
  const toolCalls = validateToolCalls(value.toolCalls, `${path}.toolCalls`);
  if (toolCalls && role !== 'assistant') fail('INVALID_TOOL_CALL', `${path}.toolCalls`, `only assistant messages make tool calls (role is '${role}').`);
  const msg: ChatMessage = { role: role as Role, content };
  if (value.id !== undefined) {
    if (typeof value.id !== 'string' || value.id.length === 0 || value.id.length > 256) {
      fail('INVALID_MESSAGE', `${path}.id`, `must be a non-empty string of at most 256 characters (got ${describe(value.id)}).`);
    }
    msg.id = value.id;
  }
  if (value.name !== undefined) {
    if (typeof value.name !== 'string' || value.name.trim().length === 0 || value.name.length > 256) {
      fail('INVALID_MESSAGE', `${path}.name`, `must be a non-empty string of at most 256 characters (got ${describe(value.name)}).`);
    }
    msg.name = value.name;
  }
  if (value.createdAt !== undefined) {
    msg.createdAt = new Date(parseIsoDate(value.createdAt, `${path}.createdAt`)).toISOString();
  }
  if (toolCalls && toolCalls.length > 0) msg.toolCalls = toolCalls;
  if (role === 'tool') {
    if (typeof value.toolCallId !== 'string' || value.toolCallId.length === 0) {
      fail('INVALID_TOOL_CALL', `${path}.toolCallId`, "a 'tool' message must carry the id of the call it answers in toolCallId.");
    }
    msg.toolCallId = value.toolCallId;
  } else if (value.toolCallId !== undefined) {
    fail('INVALID_TOOL_CALL', `${path}.toolCallId`, `only 'tool' messages carry toolCallId (role is '${role}').`);
  }
  const text = messageText(msg);
  if (text.trim().length === 0) {
    fail('EMPTY_MESSAGE', `${path}.content`, 'is empty. Send text (an assistant message may instead carry toolCalls).');
  }
  const bytes = encoder.encode(text).length;
  if (bytes > maxBytes) {
    fail('MESSAGE_TOO_LARGE', path, `is ${bytes} bytes, over maxMessageBytes (${maxBytes}). Split it, or raise maxMessageBytes in the options.`);
  }
  return msg;
}

/** The text of a message: content parts joined, tool calls written as `name(arguments)`. */
export function messageText(m: Pick<ChatMessage, 'content' | 'toolCalls'>): string {
  const body = typeof m.content === 'string' ? m.content
    : Array.isArray(m.content) ? m.content.map((p) => p.text).join('\n') : '';
  if (!m.toolCalls || m.toolCalls.length === 0) return body;
  const calls = m.toolCalls.map((c) => `[tool call ${c.function.name}(${c.function.arguments})]`).join('\n');
  return body.length > 0 ? `${body}\n${calls}` : calls;
}

/** SHA-256 of what makes a message itself (not its id or time): the reconciliation key when there is no id. */
export async function contentHash(m: ChatMessage): Promise<string> {
  const canonical = JSON.stringify([m.role, m.name ?? null, m.content, m.toolCalls ?? null, m.toolCallId ?? null]);
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(canonical));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** A short description of a value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return value.length > 40 ? `a string "${value.slice(0, 40)}…"` : `"${value}"`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}
