// Attachments in the engine: the bytes a new turn brings are stored with it (once per content hash), a stored turn
// sent to a model again gets its bytes back, and memory.attachment() reads them.
import { PagewiseError } from '../contracts/errors.js';
import { describe, readArray, readRecord, storedContent, validateConversationId } from '../common/messages.js';
import { attachmentRef, bytesOf, isAttachmentPart, partsOf, sha256Hex, toBase64, validatePart } from '../common/parts.js';
import type { AttachmentStore, NewAttachment } from '../store/attachment-store.js';
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

/**
 * The message as stored (see StoredMessage). A part naming a stored attachment by id gets its media type and size
 * from the store; with `requireStored`, one that names an attachment not stored here is INVALID_CONTENT (caller
 * input), else it is kept (a synced or imported turn whose bytes follow).
 */
export async function toStored(message: ChatMessage, store: AttachmentStore, path: string, requireStored: boolean): Promise<StoredMessage> {
  if (!Array.isArray(message.content) || !message.content.some(isAttachmentPart)) return { message, attachments: [], refs: [] };
  // Parts that name a stored attachment take its facts from the store (before the stored form is written, so that
  // every replica writes the same JSON).
  const named = message.content.flatMap((p) => (isAttachmentPart(p) && p.attachment ? [p.attachment] : []));
  const known = await store.stored(named);
  const parts = message.content.map((p, i): ContentPart => {
    if (!isAttachmentPart(p) || !p.attachment) return p;
    const info = known.get(p.attachment);
    if (!info && requireStored) {
      throw new PagewiseError('INVALID_CONTENT', MODULE, `${path}.content[${i}].attachment: names ${describe(p.attachment)}, which is not stored here. Send the bytes (data), or an id memory.turns() gave.`, { path: `${path}.content[${i}].attachment` });
    }
    return info ? { ...p, mediaType: p.mediaType ?? info.mediaType, size: p.size ?? info.size } : p;
  });
  const { content, attachments } = await storedContent(parts);
  const refs = [...new Set((content as ContentPart[]).flatMap((p) => (isAttachmentPart(p) && p.attachment ? [p.attachment] : [])))];
  return {
    message: { ...message, content },
    attachments: attachments.map((a) => ({ id: a.id, mediaType: a.part.mediaType ?? 'application/octet-stream', bytes: a.bytes })),
    refs,
  };
}

/** INVALID_CONTENT when a message names (by id) an attachment whose bytes are not stored here. */
export async function checkNamed(messages: readonly ChatMessage[], store: AttachmentStore, path: (i: number) => string): Promise<void> {
  const named = messages.flatMap((m, i) => (Array.isArray(m.content) ? m.content.flatMap((p, k) => (isAttachmentPart(p) && p.attachment ? [{ id: p.attachment, at: `${path(i)}.content[${k}].attachment` }] : [])) : []));
  if (named.length === 0) return;
  const known = await store.stored(named.map((n) => n.id));
  const missing = named.find((n) => !known.has(n.id));
  if (missing) throw new PagewiseError('INVALID_CONTENT', MODULE, `${missing.at}: names ${describe(missing.id)}, which is not stored here. Send the bytes (data), or an id memory.turns() gave.`, { path: missing.at });
}

/**
 * Messages with their stored attachments' bytes put back (base64), for sending to a model; the others as they are. A
 * part whose bytes are not here (a synced turn whose bytes have not arrived) is sent as its reference in words.
 */
export async function withBytes(messages: readonly ChatMessage[], store: AttachmentStore): Promise<ChatMessage[]> {
  const cache = new Map<string, string | null>();
  const bytesOf = async (id: string) => {
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
      const data = await bytesOf(p.attachment);
      return data === null ? { type: 'text', text: `${attachmentRef(p)} (its bytes are not on this device yet)` } : { ...p, data };
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
    const part = validatePart({ type: 'file', data: a.data, mediaType: a.mediaType }, path, maxBytes);
    const bytes = bytesOf(part as AttachmentPart)!;
    if ((await sha256Hex(bytes)) !== a.id) {
      throw new PagewiseError('INVALID_ARGUMENT', 'data', `${path}.data does not match its id ${describe(a.id)} (the bytes changed); nothing was imported.`, { path: `${path}.data` });
    }
    out.set(a.id, { id: a.id, mediaType: part.type === 'file' && part.mediaType ? part.mediaType : a.mediaType, bytes });
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
