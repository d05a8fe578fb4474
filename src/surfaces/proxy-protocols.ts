// What the proxy needs of a wire protocol (OpenAI chat completions, Anthropic messages): the request's messages read
// as pagewise messages (each with the request message it came from), a stored turn written back in the protocol's
// shape, memory joined to the request's system prompt, and the reply read back for storing. Request bodies are
// caller input: a malformed one is a typed error (a 400), never a TypeError. What is forwarded is the caller's own
// messages, untouched; pagewise's messages are only what memory stores and counts.
import { PagewiseError } from '../contracts/errors.js';
import { describe } from '../common/messages.js';
import { attachmentRef, fromBase64, toBase64 } from '../common/parts.js';
import type { AttachmentPart, ChatMessage, ContentPart } from '../contracts/types.js';
import { REDACTED } from '../text/redact.js';

export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export function fail(path: string, message: string): never {
  throw new PagewiseError('INVALID_MESSAGE', 'proxy', `${path}: ${message}`, { path });
}

/** The request's messages as pagewise messages; `origins[i]` is the index of the request message `messages[i]` came from (-1: the top-level system prompt). */
export interface ReadMessages {
  messages: ChatMessage[];
  origins: number[];
}

/** A reply being read from a stream, event by event. */
export interface StreamReader {
  event(data: string, event: string): void;
  /** The reply, or null when the stream did not end as the protocol ends one. */
  done(): ChatMessage | null;
}

export interface Protocol {
  kind: 'openai' | 'anthropic';
  /** The upstream path after the base URL. */
  path: string;
  /** Which documented rule counts this provider's images. */
  mediaTokens: 'openai' | 'anthropic';
  read(body: Json): ReadMessages;
  /** A stored turn (the history came from memory) as a request message. */
  write(m: ChatMessage): Json;
  /**
   * The request as forwarded: the caller's body with `messages` replaced by `kept` (the caller's own message objects,
   * and stored turns written back) and `memory` joined to the system prompt, after the app's own text.
   */
  assemble(body: Json, kept: unknown[], memory: string): Json;
  /** Whether the request message may start what is sent (the protocol refuses an orphaned tool result there). */
  canStart(raw: unknown): boolean;
  /** The reply of a plain (non-streamed) response, or null. */
  reply(json: unknown): ChatMessage | null;
  stream(): StreamReader;
}

/** A string field of caller input, or undefined; a 400 for any other type. */
export function optionalString(v: unknown, path: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') fail(path, `must be a string (got ${describe(v)}).`);
  return v;
}

/** Checks a message's content is a string, null or an array of part objects (a 400 otherwise). */
export function checkContent(v: unknown, path: string): void {
  if (v === undefined || v === null || typeof v === 'string') return;
  if (!Array.isArray(v)) fail(path, `must be a string or an array of content parts (got ${describe(v)}).`);
  v.forEach((p, i) => { if (!isObject(p)) fail(`${path}[${i}]`, `must be a content part object such as {"type":"text","text":"…"} (got ${describe(p)}).`); });
}

/** The media type a block pagewise does not read is kept under: the block itself, as JSON, of that protocol. */
const blockType = (protocol: 'openai' | 'anthropic') => `application/vnd.pagewise.${protocol}-block+json`;

/**
 * A block pagewise does not read (a server tool's result, a document from content blocks, a part no API had yet),
 * kept whole: its JSON as an attachment, so memory loses none of it, the budget counts it by its size (an estimate),
 * and a stored turn written back to the same protocol carries it as it was.
 */
export function keptBlock(protocol: 'openai' | 'anthropic', block: Json): ContentPart {
  return { type: 'file', data: toBase64(utf8.encode(JSON.stringify(block))), mediaType: blockType(protocol) };
}

/** The block a kept part holds (with its bytes, as stored turns sent again carry them), when `protocol` kept it. */
export function blockOf(protocol: 'openai' | 'anthropic', p: ContentPart): Json | null {
  if (p.type !== 'file' || p.mediaType !== blockType(protocol) || typeof p.data !== 'string') return null;
  try {
    const block = JSON.parse(new TextDecoder().decode(fromBase64(p.data))) as unknown;
    return isObject(block) ? block : null;
  } catch {
    return null;
  }
}

/** A stored attachment in words, where the protocol cannot carry it (a type the provider does not take). */
export const referenceOf = (p: AttachmentPart): Json => ({ type: 'text', text: attachmentRef(p) });

/** An attachment part's bytes as base64 (without a data: URL's head), or null when it has none. */
export function base64Of(p: AttachmentPart): string | null {
  if (typeof p.data === 'string') return p.data.replace(/^data:[^,]*,/, '');
  return p.data ? toBase64(p.data instanceof Uint8Array ? p.data : new Uint8Array(p.data)) : null;
}

const utf8 = new TextEncoder();

/** `{"arguments": "…"}` as JSON text: the model's own string, or the object written out. */
export const jsonText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v ?? {}));

/** Memory joined to a system prompt that is a string or a list of text blocks/parts, after the app's own text. */
export function joinSystem(system: unknown, memory: string): unknown {
  if (memory === '') return system;
  if (system === undefined || system === null || system === '') return memory;
  if (typeof system === 'string') return `${system}\n\n${memory}`;
  if (Array.isArray(system)) return [...system, { type: 'text', text: memory }];
  return system;
}

// A token of an upstream's error text ends at whitespace, quotes and JSON's punctuation: a key is never split, and
// JSON stays JSON with one redacted.
const TOKEN = /[^\s"'`,;:()<>[\]{}]+/g;
const lettersAndDigits = (s: string): boolean => /\d/.test(s) && /[A-Za-z]/.test(s);

/** Whether a token of error text looks like a credential (see `redactKeys`). */
function keyLike(token: string): boolean {
  if (/(^|[^A-Za-z0-9])sk-/i.test(token) || /[*•]{3}/.test(token)) return true;
  return (token.match(/[\w-]{20,}/g) ?? []).some((s) => (s.match(/[A-Za-z0-9]{20,}/g) ?? []).some(lettersAndDigits)
    || (/[a-z]/.test(s) && /[A-Z]/.test(s) && s.split(/[-_]/).some((part) => part.length >= 8 && lettersAndDigits(part))));
}

/**
 * An upstream's error text with whatever looks like a key replaced by `[redacted]`: an `sk-` key, whole or masked
 * as OpenAI quotes a refused one (`sk-PROB****6789`); any token masked with `***`; 20+ characters of letters and
 * digits mixed as generated keys are (request ids go too). Model names and error codes — short words joined by `-`
 * or `_`, or without digits — stay readable. An upstream's text may quote keys the proxy never sent (a client's, a
 * project's), so this does not rely on knowing the key.
 */
export function redactKeys(text: string): string {
  return text.replace(TOKEN, (token) => {
    const core = token.replace(/\.+$/, '');
    return keyLike(core) ? REDACTED + token.slice(core.length) : token;
  });
}
