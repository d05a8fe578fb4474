// Attachments in the engine: the bytes a new turn brings are stored with it (once per content hash), a stored turn
// sent to a model again gets its bytes back, and memory.attachment() reads them.
import { PagewiseError } from '../contracts/errors.js';
import { describe, storedContent, validateConversationId } from '../common/messages.js';
import { attachmentRef, isAttachmentPart, partsOf, toBase64 } from '../common/parts.js';
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
  const { content, attachments } = await storedContent(message.content);
  const parts = content as ContentPart[];
  const refs = [...new Set(parts.flatMap((p) => (isAttachmentPart(p) && p.attachment ? [p.attachment] : [])))];
  const brought = new Set(attachments.map((a) => a.id));
  const named = refs.filter((id) => !brought.has(id));
  const known = await store.stored(named);
  const filled = parts.map((p, i) => {
    if (!isAttachmentPart(p) || !p.attachment || brought.has(p.attachment)) return p;
    const info = known.get(p.attachment);
    if (!info) {
      if (requireStored) {
        throw new PagewiseError('INVALID_CONTENT', MODULE, `${path}.content[${i}].attachment: names ${describe(p.attachment)}, which is not stored here. Send the bytes (data), or an id memory.turns() gave.`, { path: `${path}.content[${i}].attachment` });
      }
      return p;
    }
    return { ...p, mediaType: p.mediaType ?? info.mediaType, size: p.size ?? info.size };
  });
  return {
    message: { ...message, content: filled },
    attachments: attachments.map((a) => ({ id: a.id, mediaType: a.part.mediaType ?? 'application/octet-stream', bytes: a.bytes })),
    refs,
  };
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
