// The parts of a message: text, images, files, audio, reasoning. Caller input is checked and copied here (one shape
// per kind, typed errors that say how to fix them); an attachment's bytes are decoded once and kept beside the part
// they came with, so the part itself stays as the caller wrote it (a base64 string stays that string).
import { PagewiseError } from '../contracts/errors.js';
import { describe, inline } from './as-data.js';
import { type MediaFacts, probeMedia, sniffMediaType } from './media-probe.js';
import type { AttachmentPart, ChatMessage, ContentPart, ReasoningContentPart } from '../contracts/types.js';

const MODULE = 'messages';
type Code = ConstructorParameters<typeof PagewiseError>[0];

/** The kinds of part that hold an attachment. */
const ATTACHMENT_KINDS = ['image', 'file', 'audio'] as const;
const KINDS = ['text', ...ATTACHMENT_KINDS, 'reasoning'];
const HASH = /^[0-9a-f]{64}$/;
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const MAX_URL = 65_536;
const MAX_NAME = 512;
const LONE_SURROGATE = /\p{Cs}/u;
const CONTROL = /\p{Cc}/u;

/** Decoded bytes of the parts that came with them (the part keeps the caller's own `data`). */
const decoded = new WeakMap<object, Uint8Array>();

function fail(code: Code, path: string, message: string): never {
  throw new PagewiseError(code, MODULE, `${path}: ${message}`, { path });
}

/** Whether `part` holds an attachment (image, file, audio). */
export function isAttachmentPart(part: ContentPart): part is AttachmentPart {
  return part.type === 'image' || part.type === 'file' || part.type === 'audio';
}

/** The parts of a content (a string is one text part). */
export function partsOf(content: ChatMessage['content']): ContentPart[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [];
}

/** Parts as content: text alone is one string (as stored before parts existed, and hashed so), '' for none. */
export function contentOf(parts: ContentPart[]): ChatMessage['content'] {
  if (parts.every((p) => p.type === 'text')) return parts.map((p) => (p as { text: string }).text).join('\n');
  return parts;
}

/** Whether a content holds anything but text parts. */
export function hasRichParts(content: ChatMessage['content']): boolean {
  return Array.isArray(content) && content.some((p) => p.type !== 'text');
}

// ---------------------------------------------------------------------------------------------
// Bytes: base64 both ways (atob/btoa exist in every runtime pagewise runs in; Buffer does not)
// ---------------------------------------------------------------------------------------------

const ALPHABET = new TextEncoder().encode('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');
const ascii = new TextDecoder();

/**
 * Bytes as base64: the runtime's own encoder where it has one (`Uint8Array.prototype.toBase64`), else the characters
 * written as bytes and decoded once (btoa over a binary string took 330 ms for 5 MB of images; this, 25 ms).
 */
export function toBase64(bytes: Uint8Array): string {
  const native = (bytes as Uint8Array & { toBase64?: () => string }).toBase64;
  if (typeof native === 'function') return native.call(bytes);
  const out = new Uint8Array(Math.ceil(bytes.length / 3) * 4);
  const whole = bytes.length - (bytes.length % 3);
  let o = 0;
  for (let i = 0; i < whole; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o++] = ALPHABET[n >> 18]!;
    out[o++] = ALPHABET[(n >> 12) & 63]!;
    out[o++] = ALPHABET[(n >> 6) & 63]!;
    out[o++] = ALPHABET[n & 63]!;
  }
  const rest = bytes.length - whole;
  if (rest > 0) {
    const n = (bytes[whole]! << 16) | (rest === 2 ? bytes[whole + 1]! << 8 : 0);
    out[o++] = ALPHABET[n >> 18]!;
    out[o++] = ALPHABET[(n >> 12) & 63]!;
    out[o++] = rest === 2 ? ALPHABET[(n >> 6) & 63]! : 61;
    out[o++] = 61;
  }
  return ascii.decode(out);
}

/** Base64 as bytes (the caller checked it is base64). */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Text as base64url (its UTF-8, no padding): what sync receipts and list cursors carry. */
export const toBase64Url = (text: string): string => toBase64(new TextEncoder().encode(text)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** base64url back to text; null when it is not base64 of UTF-8. */
export function fromBase64Url(text: string): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(fromBase64(text.replace(/-/g, '+').replace(/_/g, '/')));
  } catch {
    return null;
  }
}

/** SHA-256 of bytes, hex: an attachment's id. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return toHex(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
}

/** Bytes as lowercase hex. */
export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  return Array.from(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The bytes a validated part carries (decoded once), or null for a URL or a stored attachment's id. */
export function bytesOf(part: AttachmentPart): Uint8Array | null {
  const known = decoded.get(part);
  if (known) return known;
  if (part.data === undefined) return null;
  const bytes = typeof part.data === 'string' ? decodeData(part.data, 'data', Number.MAX_SAFE_INTEGER).bytes
    : part.data instanceof Uint8Array ? part.data : new Uint8Array(part.data);
  decoded.set(part, bytes);
  return bytes;
}

/** A `data:` URL or plain base64 as bytes and the media type it names; INVALID_CONTENT when it is neither. */
function decodeData(text: string, path: string, maxBytes: number): { bytes: Uint8Array; mediaType: string | null } {
  let body = text;
  let mediaType: string | null = null;
  if (text.startsWith('data:')) {
    const comma = text.indexOf(',');
    const head = comma < 0 ? '' : text.slice(5, comma).toLowerCase();
    if (comma < 0 || !head.endsWith(';base64')) {
      fail('INVALID_CONTENT', path, 'is a malformed data: URL: pagewise takes "data:<media type>;base64,<base64>" (a data URL that is not base64, or without a comma, is not an attachment).');
    }
    mediaType = head.slice(0, -';base64'.length).split(';')[0] || null;
    if (mediaType !== null && !MEDIA_TYPE.test(mediaType)) fail('INVALID_CONTENT', path, `names the media type ${describe(mediaType)}, which is not one (type/subtype, such as image/png).`);
    body = text.slice(comma + 1);
  }
  if (body.length % 4 !== 0 || !BASE64.test(body)) {
    fail('INVALID_CONTENT', path, 'is not base64 (A–Z, a–z, 0–9, + and /, padded with = to a multiple of 4 characters): pass the bytes base64-encoded, as a data: URL, or as a Uint8Array.');
  }
  const size = (body.length / 4) * 3 - (body.endsWith('==') ? 2 : body.endsWith('=') ? 1 : 0);
  if (size > maxBytes) tooLarge(path, size, maxBytes);
  return { bytes: fromBase64(body), mediaType };
}

/**
 * An attachment's bytes as another replica or an export carries them (base64, with their media type), decoded and
 * checked as a part's would be.
 */
export function decodeAttachment(data: unknown, mediaType: unknown, path: string, maxBytes: number): { bytes: Uint8Array; mediaType: string } {
  const part = validatePart({ type: 'file', data, mediaType }, path, maxBytes) as AttachmentPart;
  return { bytes: bytesOf(part)!, mediaType: part.mediaType! };
}

function tooLarge(path: string, size: number, maxBytes: number): never {
  fail('ATTACHMENT_TOO_LARGE', path, `is ${size} bytes, over maxAttachmentBytes (${maxBytes}). Send a smaller file (an image scaled down, a PDF split), or raise maxAttachmentBytes in the options.`);
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

function text(value: unknown, path: string, max = Number.MAX_SAFE_INTEGER): string {
  if (typeof value !== 'string') fail('INVALID_CONTENT', path, `must be a string (got ${describe(value)}).`);
  if (LONE_SURROGATE.test(value)) fail('INVALID_CONTENT', path, 'is not well-formed Unicode (it holds a lone UTF-16 surrogate). Pass valid text; String.prototype.toWellFormed() repairs it.');
  if (value.length > max) fail('INVALID_CONTENT', path, `is longer than ${max} characters.`);
  return value;
}

function count(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) fail('INVALID_CONTENT', path, `must be a whole number of at least 1 (got ${describe(value)}).`);
  return value;
}

function readPart(raw: unknown, path: string): Record<string, unknown> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('INVALID_CONTENT', path, `must be a content part object such as { type: 'text', text } (got ${describe(raw)}).`);
  try {
    return { ...raw };
  } catch (cause) {
    throw new PagewiseError('INVALID_CONTENT', MODULE, `${path} cannot be read (a revoked Proxy, or a getter that threw). Pass plain data.`, { path, cause });
  }
}

/** The bytes a caller gave, copied (a caller's buffer may change after the call returns). */
function readBytes(value: unknown, path: string, maxBytes: number): { bytes: Uint8Array; mediaType: string | null } {
  if (typeof value === 'string') return decodeData(value, path, maxBytes);
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) {
    if (value.byteLength > maxBytes) tooLarge(path, value.byteLength, maxBytes);
    return { bytes: new Uint8Array(value.slice(0)), mediaType: null };
  }
  return fail('INVALID_CONTENT', path, `must be base64, a data: URL, a Uint8Array or an ArrayBuffer (got ${describe(value)}).`);
}

function readUrl(value: unknown, path: string): string {
  const url = text(value, path, MAX_URL);
  let scheme = '';
  try {
    scheme = new URL(url).protocol;
  } catch { /* not a URL: refused below */ }
  if (scheme !== 'https:' && scheme !== 'http:') fail('INVALID_CONTENT', path, `must be an https: or http: URL the provider can fetch (got ${describe(url)}); send bytes as data instead.`);
  return url;
}

function readMediaType(value: unknown, path: string): string {
  const type = text(value, path, 255).toLowerCase();
  if (!MEDIA_TYPE.test(type)) fail('INVALID_CONTENT', path, `must be a media type such as image/png or application/pdf (got ${describe(value)}).`);
  return type;
}

/** What image, file and audio parts may carry besides their source, checked. */
function attachmentFacts(p: Record<string, unknown>, out: AttachmentPart, path: string): void {
  if (p.name !== undefined) {
    const name = text(p.name, `${path}.name`, MAX_NAME);
    if (CONTROL.test(name)) fail('INVALID_CONTENT', `${path}.name`, 'must not hold control characters such as line breaks.');
    out.name = name;
  }
  if (p.caption !== undefined) out.caption = text(p.caption, `${path}.caption`);
  if (out.type === 'image') {
    if (p.detail !== undefined) {
      if (p.detail !== 'auto' && p.detail !== 'low' && p.detail !== 'high') fail('INVALID_CONTENT', `${path}.detail`, `must be 'auto', 'low' or 'high' (got ${describe(p.detail)}).`);
      out.detail = p.detail;
    }
    if (p.width !== undefined) out.width = count(p.width, `${path}.width`);
    if (p.height !== undefined) out.height = count(p.height, `${path}.height`);
  }
  if (out.type === 'file' && p.pages !== undefined) out.pages = count(p.pages, `${path}.pages`);
  if (out.type === 'audio' && p.durationMs !== undefined) out.durationMs = count(p.durationMs, `${path}.durationMs`);
}

/** The media type a part's bytes have: as given, as the data URL names it, or as the bytes say. */
function mediaTypeOf(kind: AttachmentPart['type'], given: string | null, bytes: Uint8Array, path: string): string {
  const type = given ?? sniffMediaType(bytes) ?? (kind === 'file' ? 'application/octet-stream' : null);
  if (type === null) fail('INVALID_CONTENT', `${path}.mediaType`, `is needed: the bytes are not a format pagewise recognizes (PNG, JPEG, GIF, WebP, BMP; WAV, MP3, OGG, FLAC). Say what they are, e.g. mediaType: '${kind === 'image' ? 'image/avif' : 'audio/aac'}'.`);
  if (kind !== 'file' && !type.startsWith(`${kind}/`)) fail('INVALID_CONTENT', `${path}.mediaType`, `is ${describe(type)}, not an ${kind} type; send it as a { type: 'file' } part.`);
  return type;
}

function attachmentPart(kind: AttachmentPart['type'], p: Record<string, unknown>, path: string, maxBytes: number): AttachmentPart {
  const given = p.mediaType === undefined ? null : readMediaType(p.mediaType, `${path}.mediaType`);
  // Bytes may come with their id (a message pagewise gave for sending, passed back): the id is checked against them.
  const sources = ['data', 'url', 'attachment'].filter((k) => p[k] !== undefined && !(k === 'attachment' && p.data !== undefined));
  if (sources.length !== 1) {
    fail('INVALID_CONTENT', path, sources.length === 0
      ? `an ${kind} part needs its bytes (data: base64, a data: URL or a Uint8Array), a url, or a stored attachment's id (attachment).`
      : `give one of ${sources.join(' and ')}, not both.`);
  }
  const out = { type: kind } as AttachmentPart;
  if (p.data !== undefined) {
    const { bytes, mediaType } = readBytes(p.data, `${path}.data`, maxBytes);
    if (bytes.length === 0) fail('INVALID_CONTENT', `${path}.data`, 'is empty: an attachment needs its bytes.');
    out.data = typeof p.data === 'string' ? p.data : bytes;
    out.mediaType = mediaTypeOf(kind, given ?? mediaType, bytes, path);
    out.size = bytes.length;
    if (p.attachment !== undefined) out.attachment = hashId(p.attachment, `${path}.attachment`);
    decoded.set(out, bytes);
  } else if (p.url !== undefined) {
    out.url = readUrl(p.url, `${path}.url`);
    if (given) out.mediaType = given;
  } else {
    out.attachment = hashId(p.attachment, `${path}.attachment`);
    if (given) out.mediaType = given;
    if (p.size !== undefined) out.size = count(p.size, `${path}.size`);
  }
  attachmentFacts(p, out, path);
  return out;
}

function hashId(value: unknown, path: string): string {
  if (typeof value !== 'string' || !HASH.test(value)) fail('INVALID_CONTENT', path, `must be a stored attachment's id (64 hex digits, as memory.turns() gives it; got ${describe(value)}).`);
  return value;
}

function reasoningPart(p: Record<string, unknown>, path: string): ReasoningContentPart {
  const out: ReasoningContentPart = { type: 'reasoning', text: p.text === undefined ? '' : text(p.text, `${path}.text`) };
  if (p.signature !== undefined) out.signature = text(p.signature, `${path}.signature`);
  if (p.encrypted !== undefined) out.encrypted = text(p.encrypted, `${path}.encrypted`);
  if (out.text === '' && out.encrypted === undefined) fail('INVALID_CONTENT', path, 'a reasoning part needs its text (or the provider\'s encrypted reasoning).');
  return out;
}

/** One part, checked and copied (only its known fields); INVALID_CONTENT or ATTACHMENT_TOO_LARGE naming `path`. */
export function validatePart(raw: unknown, path: string, maxAttachmentBytes: number): ContentPart {
  const p = readPart(raw, path);
  switch (p.type) {
    case 'text': return { type: 'text', text: text(p.text, `${path}.text`) };
    case 'image': case 'file': case 'audio': return attachmentPart(p.type, p, path, maxAttachmentBytes);
    case 'reasoning': return reasoningPart(p, path);
    default:
      return fail('INVALID_CONTENT', `${path}.type`, `is ${describe(p.type)}; pagewise keeps ${KINDS.map((k) => `'${k}'`).join(', ')} parts. Convert provider blocks to one of these (an image_url part is { type: 'image', data | url }).`);
  }
}

/**
 * Facts read from a part's bytes (dimensions, pages, duration) where the caller did not give them, and what the bytes
 * said (the attachment's own facts: what the store keeps, whatever the part says).
 */
export function withFacts<T extends AttachmentPart>(part: T): { part: T; facts: MediaFacts | null } {
  const bytes = bytesOf(part);
  if (!bytes || !part.mediaType) return { part, facts: null };
  const facts = probeMedia(bytes, part.mediaType);
  const out = { ...part };
  if (out.type === 'image' && facts.width && facts.height && out.width === undefined && out.height === undefined) Object.assign(out, { width: facts.width, height: facts.height });
  if (out.type === 'file' && facts.pages && out.pages === undefined) Object.assign(out, { pages: facts.pages });
  if (out.type === 'audio' && facts.durationMs && out.durationMs === undefined) Object.assign(out, { durationMs: facts.durationMs });
  decoded.set(out, bytes);
  return { part: out, facts };
}

// ---------------------------------------------------------------------------------------------
// Text derived from parts
// ---------------------------------------------------------------------------------------------

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** Where a URL points, without its query (signed URLs carry credentials there). */
function urlPlace(url: string): string {
  try {
    const u = new URL(url);
    return `${u.host}${u.pathname.length > 80 ? `${u.pathname.slice(0, 80)}…` : u.pathname}`;
  } catch {
    return 'a URL';
  }
}

/**
 * An attachment in words, one line: `[image "cat.png" (image/png, 84 KB): a red bicycle]`. This is what a turn's
 * searchable text holds for it, and so what recall shows (the excerpt's stamp gives its date).
 */
export function attachmentRef(part: AttachmentPart): string {
  const facts = [part.mediaType, part.size === undefined ? undefined : formatBytes(part.size)].filter((f): f is string => f !== undefined);
  const name = part.name ? ` ${JSON.stringify(inline(part.name))}` : part.url ? ` at ${urlPlace(part.url)}` : '';
  const caption = part.caption?.trim() ? `: ${inline(part.caption.trim())}` : '';
  return `[${part.type}${name}${facts.length > 0 ? ` (${facts.join(', ')})` : ''}${caption}]`;
}

// A reference line as attachmentRef writes it: kind, then the quoted name or the URL's place, then the facts, then the
// caption (on one line).
const REF_LINE = /^\[(?:image|file|audio)(?: ("(?:[^"\\]|\\.)*")| at \S+?)?(?: \([^)]*\))?(?:: (.*))?\]$/gmu;

/**
 * Text as taggers read it: an attachment's reference line stands for its name and caption — what was said of it —
 * not its kind, type and size (which would make `image`, `png` and `kb` topics of every conversation with images).
 */
export function taggableText(text: string): string {
  if (!text.includes('[')) return text;
  return text.replace(REF_LINE, (_, name: string | undefined, caption: string | undefined) => {
    let said = '';
    // A file name without its extension (`plan.png` says `plan`).
    try { said = name ? String(JSON.parse(name)).replace(/\.[a-z0-9]{1,5}$/i, '') : ''; } catch { said = ''; }
    return [said, caption ?? ''].filter(Boolean).join(' ');
  });
}

/** A content's searchable text: text parts, and each attachment as its reference line. Reasoning is left out. */
export function searchableText(content: ChatMessage['content']): string {
  return partsOf(content).flatMap((p) => (p.type === 'text' ? [p.text] : isAttachmentPart(p) ? [attachmentRef(p)] : [])).join('\n');
}

/** A content's text as a model reads it when the message is sent: text parts and reasoning (attachments are counted apart). */
export function sentText(content: ChatMessage['content']): string {
  return partsOf(content).flatMap((p) => (p.type === 'text' || p.type === 'reasoning' ? [p.text, ...(p.type === 'reasoning' && p.encrypted ? [p.encrypted] : [])] : [])).filter((t) => t !== '').join('\n');
}

/** The reasoning a content holds, joined ('' for none). */
export function reasoningText(content: ChatMessage['content']): string {
  return partsOf(content).flatMap((p) => (p.type === 'reasoning' && p.text ? [p.text] : [])).join('\n');
}

/**
 * A part as it is hashed: its source by id (`attachment`) or URL, never its bytes, and only what the caller said of it
 * (the facts of stored bytes — media type, size, pixels — are left out, so a part hashes the same whether it carries
 * its bytes or names them by id). Stored parts are this plus those facts.
 */
export function canonicalPart(part: ContentPart, attachment: string | null): Record<string, unknown> {
  if (part.type === 'text') return { type: 'text', text: part.text };
  if (part.type === 'reasoning') return { type: 'reasoning', text: part.text, ...(part.signature ? { signature: part.signature } : {}), ...(part.encrypted ? { encrypted: part.encrypted } : {}) };
  const out: Record<string, unknown> = { type: part.type };
  if (attachment !== null) out.attachment = attachment;
  else if (part.url !== undefined) out.url = part.url;
  // Stored bytes have their media type as a fact (like their size); a URL's is what the caller said of it.
  if (attachment === null && part.mediaType !== undefined) out.mediaType = part.mediaType;
  if (part.name !== undefined) out.name = part.name;
  if (part.caption !== undefined) out.caption = part.caption;
  if (part.type === 'image' && part.detail !== undefined) out.detail = part.detail;
  return out;
}
