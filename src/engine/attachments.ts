// Attachments in the engine: the bytes a new turn brings are stored with it (once per content hash), a stored turn
// sent to a model again gets its bytes back, and memory.attachment() reads them.
import { PagewiseError } from '../contracts/errors.js';
import { describe, partId, readArray, readRecord, storedContent, validateConversationId } from '../common/messages.js';
import { bytesOf, decodeAttachment, isAttachmentPart, partsOf, sha256Hex, toBase64 } from '../common/parts.js';
import type { AttachmentInfo, AttachmentStore, NewAttachment } from '../store/attachment-store.js';
import type { HistoryItem } from '../assembly/assembler.js';
import type { Attachment } from '../contracts/types-data.js';
import type { AttachmentPart, ChatMessage, ContentPart } from '../contracts/types.js';

const MODULE = 'engine';
const HASH = /^[0-9a-f]{64}$/;

/** A message as it is stored: its content with attachments by id, the bytes it brought, and every id it names. */
export interface StoredMessage {
  message: ChatMessage;
  attachments: NewAttachment[];
  refs: string[];
}

/** A part naming a stored attachment, with the store's facts in place of what the part says of its bytes. */
function withStoreFacts(p: AttachmentPart, info: AttachmentInfo): AttachmentPart {
  const { width: _w, height: _h, pages: _p, durationMs: _d, ...rest } = p as AttachmentPart & { width?: number; height?: number; pages?: number; durationMs?: number };
  const f = info.facts;
  const facts = p.type === 'image' ? (f.width && f.height ? { width: f.width, height: f.height } : {}) : p.type === 'file' ? (f.pages ? { pages: f.pages } : {}) : (f.durationMs ? { durationMs: f.durationMs } : {});
  return { ...rest, mediaType: info.mediaType, size: info.size, ...facts } as AttachmentPart;
}

/** The ids of the attachments whose bytes come with these messages. */
export async function broughtIds(messages: readonly ChatMessage[]): Promise<Set<string>> {
  const parts = messages.flatMap((m) => partsOf(m.content)).filter((p): p is AttachmentPart => isAttachmentPart(p) && bytesOf(p) !== null);
  return new Set(await Promise.all(parts.map(async (p) => (await partId(p))!)));
}

/** Parts that name an attachment by id alone (no bytes with them). */
const namedOnly = (p: ContentPart): p is AttachmentPart & { attachment: string } => isAttachmentPart(p) && p.attachment !== undefined && bytesOf(p) === null;

/**
 * Caller messages that name attachments by id alone: each must be one a turn of this conversation names, with its
 * bytes here, or one whose bytes come in the same call (`brought`) — another conversation's attachment is not this
 * one's to read or send (INVALID_CONTENT) — and its part takes the store's facts (type, size, pixels, pages,
 * duration), whatever it says, so it is counted by what it is.
 */
export async function ownNamed(messages: ChatMessage[], store: AttachmentStore, conversationId: string, path: (i: number) => string, brought: ReadonlySet<string>): Promise<ChatMessage[]> {
  const named = messages.flatMap((m, i) => (Array.isArray(m.content) ? m.content.flatMap((p, k) => (namedOnly(p) && !brought.has(p.attachment) ? [{ id: p.attachment, at: `${path(i)}.content[${k}].attachment` }] : [])) : []));
  if (named.length === 0) return messages;
  const own = await store.named(conversationId, named.map((n) => n.id));
  const known = await store.stored([...own]);
  const foreign = named.find((n) => !known.has(n.id));
  if (foreign) {
    throw new PagewiseError('INVALID_CONTENT', MODULE, `${foreign.at}: names ${describe(foreign.id)}, which no message of conversation ${describe(conversationId)} names with its bytes here. Send the bytes (data), or an id memory.turns() gave for this conversation.`, { path: foreign.at });
  }
  return messages.map((m) => (!Array.isArray(m.content) ? m : {
    ...m, content: m.content.map((p) => (namedOnly(p) && known.has(p.attachment) ? withStoreFacts(p, known.get(p.attachment)!) : p)),
  }));
}

/**
 * The message as stored (see StoredMessage). A part naming an attachment by id takes the store's facts where the bytes
 * are here (before the stored form is written, so that every replica writes the same JSON); otherwise it is kept as
 * it came (a synced or imported turn whose bytes follow). Caller input passes ownNamed first.
 */
export async function toStored(message: ChatMessage, store: AttachmentStore): Promise<StoredMessage> {
  if (!Array.isArray(message.content) || !message.content.some(isAttachmentPart)) return { message, attachments: [], refs: [] };
  const known = await store.stored(message.content.flatMap((p) => (namedOnly(p) ? [p.attachment] : [])));
  const parts = message.content.map((p): ContentPart => (namedOnly(p) && known.has(p.attachment) ? withStoreFacts(p, known.get(p.attachment)!) : p));
  const { content, attachments } = await storedContent(parts);
  const refs = [...new Set((content as ContentPart[]).flatMap((p) => (isAttachmentPart(p) && p.attachment ? [p.attachment] : [])))];
  return {
    message: { ...message, content },
    // What the bytes said when the stored form was made: the attachment's facts, read once.
    attachments: attachments.map((a) => ({ id: a.id, mediaType: a.part.mediaType ?? 'application/octet-stream', bytes: a.bytes, facts: a.facts })),
    refs,
  };
}

/**
 * History items of stored turns whose attachments' bytes are not here (a sync has not brought them yet): those parts
 * become a short reference in words, and the item is counted as it is sent.
 */
export async function withoutAbsent(items: HistoryItem[], store: AttachmentStore, count: (m: ChatMessage) => { tokens: number; estimated: number }): Promise<HistoryItem[]> {
  const ids = items.flatMap((i) => partsOf(i.message.content).flatMap((p) => (namedOnly(p) ? [p.attachment] : [])));
  if (ids.length === 0) return items;
  const here = await store.stored(ids);
  return items.map((item) => {
    const m = item.message;
    if (!Array.isArray(m.content) || !m.content.some((p) => namedOnly(p) && !here.has(p.attachment))) return item;
    const message = { ...m, content: m.content.map((p): ContentPart => (namedOnly(p) && !here.has(p.attachment) ? absent(p) : p)) };
    const cost = count(message);
    const { estimated: _e, ...rest } = item;
    return { ...rest, message, tokens: cost.tokens, ...(cost.estimated > 0 ? { estimated: cost.estimated } : {}) };
  });
}

/** What is sent for an attachment whose bytes are not here. */
const absent = (p: AttachmentPart): ContentPart => ({ type: 'text', text: `[${p.type} not on this device yet]` });

/**
 * Messages with their stored attachments' bytes put back (base64), for sending to a model; the others as they are. A
 * part whose bytes are not here (a synced turn whose bytes have not arrived) is sent as its reference in words.
 */
export async function withBytes(messages: readonly ChatMessage[], store: AttachmentStore): Promise<ChatMessage[]> {
  const cache = new Map<string, string | null>();
  const base64Of = async (id: string) => {
    if (!cache.has(id)) {
      const found = await store.read(id);
      cache.set(id, found ? toBase64(found.bytes) : null);
    }
    return cache.get(id)!;
  };
  return Promise.all(messages.map(async (m) => {
    if (!Array.isArray(m.content) || !m.content.some((p) => isAttachmentPart(p) && p.attachment && p.data === undefined)) return m;
    const content = await Promise.all(m.content.map(async (p): Promise<ContentPart> => {
      if (!isAttachmentPart(p) || !p.attachment || p.data !== undefined) return p;
      const data = await base64Of(p.attachment);
      return data === null ? absent(p) : { ...p, data };
    }));
    return { ...m, content };
  }));
}

/** The attachment parts of stored contents, in order, each once (by id). */
export function attachmentParts(contents: readonly ChatMessage['content'][]): AttachmentPart[] {
  const seen = new Set<string>();
  return contents.flatMap((c) => partsOf(c).filter((p): p is AttachmentPart => isAttachmentPart(p) && !!p.attachment && !seen.has(p.attachment) && seen.add(p.attachment) !== undefined));
}

/** The export's attachments, each checked against its id (the SHA-256 of its bytes) before anything is written. */
export async function readAttachments(value: unknown, maxBytes: number): Promise<Map<string, NewAttachment>> {
  const out = new Map<string, NewAttachment>();
  if (value === undefined) return out;
  const list = readArray(value, 'data.attachments', 'INVALID_ARGUMENT', 'data');
  if (!list) throw new PagewiseError('INVALID_ARGUMENT', 'data', `data.attachments must be an array of { id, mediaType, size, data } (got ${describe(value)}).`, { path: 'data.attachments' });
  for (const [i, raw] of list.entries()) {
    const path = `data.attachments[${i}]`;
    const a = readRecord(raw, path, 'INVALID_ARGUMENT', 'data');
    if (!a || typeof a.id !== 'string' || !HASH.test(a.id) || typeof a.mediaType !== 'string') {
      throw new PagewiseError('INVALID_ARGUMENT', 'data', `${path} must be { id, mediaType, size, data } as memory.export() writes it (got ${describe(raw)}).`, { path });
    }
    const { bytes, mediaType } = decodeAttachment(a.data, a.mediaType, path, maxBytes);
    if ((await sha256Hex(bytes)) !== a.id) {
      throw new PagewiseError('INVALID_ARGUMENT', 'data', `${path}.data does not match its id ${describe(a.id)} (the bytes changed); nothing was imported.`, { path: `${path}.data` });
    }
    out.set(a.id, { id: a.id, mediaType, bytes });
    // A large import's hashing leaves room for other calls.
    await new Promise<void>((ok) => setTimeout(ok, 0));
  }
  return out;
}

/** memory.attachment(): a stored attachment's bytes, to a caller who names a conversation that refers to it. */
export function attachmentApi(d: { attachments: AttachmentStore; serial: <T>(fn: () => Promise<T>) => Promise<T> }) {
  return {
    attachment(conversationId: string, id: string): Promise<Attachment> {
      return d.serial(async () => {
        const conversation = validateConversationId(conversationId);
        if (typeof id !== 'string' || !HASH.test(id)) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `id must be an attachment's id (64 hex digits, a part's \`attachment\` in memory.turns()); got ${describe(id)}.`, { path: 'id' });
        }
        const found = await d.attachments.referenced(conversation, id) ? await d.attachments.read(id) : null;
        if (!found) {
          throw new PagewiseError('NOT_FOUND', MODULE, `No turn of conversation ${describe(conversation)} refers to attachment ${describe(id)} with its bytes here (it was forgotten, or a sync has not brought its bytes yet).`, { path: 'id' });
        }
        return { id, mediaType: found.mediaType, size: found.size, data: toBase64(found.bytes) };
      });
    },
  };
}
