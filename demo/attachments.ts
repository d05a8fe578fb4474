// Images in the demo: the composer's pending images (attached with the file input or pasted), their thumbnails in
// the chat and the inspector, and a refused attachment said in plain words. A stored image's bytes are read once
// (memory.attachment) and kept as an object URL until the conversation changes: a re-render reads nothing again.
import { fromBase64, isAttachmentPart, sha256Hex } from '../src/common/parts.js';
import { probeMedia } from '../src/common/media-probe.js';
import { type MediaPart, mediaTokens } from '../src/tokens/media.js';
import type { Attachment } from '../src/contracts/types-data.js';
import type { AssembledContext, AttachmentData, AttachmentPart, ChatMessage, ImageContentPart, MediaRule } from '../src/contracts/types.js';
import { $, el } from './dom.js';

/** An image waiting in the composer: the file, and the object URL its thumbnail shows. */
export interface PendingImage { file: File; url: string }

let pending: PendingImage[] = [];
let read: (id: string) => Promise<Attachment> = () => Promise.reject(new Error('the memory is not ready'));
const urls = new Map<string, Promise<string>>();

/** Bytes as a part may carry them (base64, a data: URL, bytes), or null when it carries none. */
function bytesOf(data: AttachmentData | undefined): Uint8Array | null {
  if (data === undefined) return null;
  if (typeof data === 'string') return fromBase64(data.startsWith('data:') ? data.slice(data.indexOf(',') + 1) : data);
  return data instanceof Uint8Array ? data : new Uint8Array(data);
}

const formatBytes = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${Math.round(n / 1024)} KB` : `${(n / (1024 * 1024)).toFixed(1)} MB`);

// ---------------------------------------------------------------------------------------------
// The composer: the file input, pasting, the pending thumbnails
// ---------------------------------------------------------------------------------------------

/** Wires the "Attach image" input and pasting into the textarea; `refuse` shows why a file was not taken. */
export function setupComposer(reader: (id: string) => Promise<Attachment>, refuse: (message: string) => void): void {
  read = reader;
  const input = $<HTMLInputElement>('attach');
  input.addEventListener('change', () => {
    add([...(input.files ?? [])], refuse);
    // The same file may be attached again after it was removed.
    input.value = '';
  });
  $<HTMLTextAreaElement>('input').addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.files ?? [])];
    if (files.length === 0) return;
    // An image pasted is attached, not pasted as its file name (text pasted with no file goes in as usual).
    e.preventDefault();
    add(files, refuse);
  });
}

function add(files: File[], refuse: (message: string) => void): void {
  // Only images: the demo sends them as image parts, which the providers take (a PDF would be a file part).
  const others = files.filter((f) => !f.type.startsWith('image/'));
  if (others.length > 0) refuse(`${others.map((f) => `"${f.name}"`).join(', ')} ${others.length === 1 ? 'is not an image' : 'are not images'} (${[...new Set(others.map((f) => f.type || 'unknown type'))].join(', ')}): attach a PNG, JPEG, GIF or WebP. Nothing else changed.`);
  pending = [...pending, ...files.filter((f) => f.type.startsWith('image/')).map((file) => ({ file, url: URL.createObjectURL(file) }))];
  renderPending();
}

function renderPending(): void {
  const list = $('pending');
  list.hidden = pending.length === 0;
  list.replaceChildren(...pending.map((p) => el('li', { className: 'pending' },
    el('img', { className: 'thumb', src: p.url, alt: p.file.name, title: `${p.file.name} (${formatBytes(p.file.size)})` }),
    removeButton(p))));
}

/** A real button (Tab, Enter, Space), named for a screen reader by the file it removes. */
function removeButton(p: PendingImage): HTMLButtonElement {
  const button = el('button', { type: 'button', className: 'remove', textContent: '×', title: `Remove ${p.file.name}`, onclick: () => { remove([p]); $<HTMLTextAreaElement>('input').focus(); } });
  button.setAttribute('aria-label', `Remove ${p.file.name}`);
  return button;
}

/** The images waiting to be sent (a copy: images attached while a send is under way are not part of it). */
export const pendingImages = (): PendingImage[] => [...pending];

/** Takes `sent` out of the composer, once their message is stored. */
export function remove(sent: PendingImage[]): void {
  for (const p of sent) URL.revokeObjectURL(p.url);
  pending = pending.filter((p) => !sent.includes(p));
  renderPending();
}

/** A message's content: the text alone, or the text and the images as parts (an image may go without text). */
export async function contentOf(text: string, images: PendingImage[]): Promise<ChatMessage['content']> {
  if (images.length === 0) return text;
  const parts = await Promise.all(images.map(async ({ file }): Promise<ImageContentPart> => ({
    // Without a type (some systems give none) pagewise reads the format from the bytes.
    type: 'image', data: new Uint8Array(await file.arrayBuffer()), ...(file.type ? { mediaType: file.type } : {}), name: file.name,
  })));
  return [...(text ? [{ type: 'text' as const, text }] : []), ...parts];
}

/**
 * A refused attachment in plain words, naming the file (the engine names the part by its path, `message.content[1]`),
 * as an error showError() takes; any other error as it is.
 */
export function refusal(e: unknown, text: string, images: PendingImage[]): unknown {
  const { code, path, message } = (e ?? {}) as { code?: string; path?: string; message?: string };
  const at = /^message\.content\[(\d+)\]/.exec(path ?? '');
  const file = at ? images[Number(at[1]) - (text ? 1 : 0)]?.file : undefined;
  if (!file || typeof message !== 'string') return e;
  const limit = /maxAttachmentBytes \((\d+)\)/.exec(message)?.[1];
  const words = code === 'ATTACHMENT_TOO_LARGE'
    ? `"${file.name}" is ${formatBytes(file.size)}: too large to send (one attachment may be at most ${limit ? formatBytes(Number(limit)) : 'the configured size'}). Attach a smaller image (scaled down).`
    // The engine's reason after its path: `message.content[1].data: is empty: …` → `"blank.png" is empty: …`.
    : `"${file.name}" ${message.replace(/^.*?message\.content\[\d+\][\w.[\]]*: /, '')}`;
  return { code, message: `${words} Your text and images are kept.` };
}

// ---------------------------------------------------------------------------------------------
// Thumbnails of stored and sent images
// ---------------------------------------------------------------------------------------------

// Bytes from pagewise never sit on a SharedArrayBuffer (they are copied or decoded), which is what Blob asks.
const blobOf = (bytes: Uint8Array, type: string) => new Blob([bytes as Uint8Array<ArrayBuffer>], { type });

/**
 * An object URL of a part's image, by its id (a stored attachment's, or the hash of the bytes the part carries): from
 * the bytes at hand, else read from the memory.
 */
function urlOf(part: AttachmentPart): Promise<string> {
  const bytes = bytesOf(part.data);
  const stored = part.attachment;
  if (stored) return cached(stored, async () => (bytes ? blobOf(bytes, part.mediaType ?? '') : read(stored).then((a) => blobOf(bytesOf(a.data)!, a.mediaType))));
  if (!bytes) return Promise.reject(new Error('no bytes'));
  return sha256Hex(bytes).then((id) => cached(id, async () => blobOf(bytes, part.mediaType ?? '')));
}

function cached(id: string, blob: () => Promise<Blob>): Promise<string> {
  let url = urls.get(id);
  if (!url) {
    url = blob().then((b) => URL.createObjectURL(b));
    // A failed read (bytes not synced yet) is tried again at the next render.
    url.catch(() => urls.delete(id));
    urls.set(id, url);
  }
  return url;
}

/** Revokes every thumbnail's URL: called when the conversation changes (its attachments are no longer shown). */
export function forgetThumbnails(): void {
  for (const url of urls.values()) void url.then((u) => URL.revokeObjectURL(u), () => undefined);
  urls.clear();
}

/** An image part as a thumbnail, its alt text the caption or the name; filled in once its bytes are read. */
export function thumbnail(part: AttachmentPart): HTMLImageElement {
  const img = el('img', { className: 'thumb', alt: part.caption ?? part.name ?? 'image', title: part.name ?? part.caption ?? '' });
  urlOf(part).then((url) => { img.src = url; }, () => { img.classList.add('missing'); });
  return img;
}

/** The thumbnails of a stored turn's images ('' when it has none). */
export function turnImages(content: ChatMessage['content']): HTMLElement | '' {
  const images = Array.isArray(content) ? content.filter((p): p is ImageContentPart => p.type === 'image' && !!p.attachment) : [];
  return images.length === 0 ? '' : el('span', { className: 'thumbs' }, ...images.map(thumbnail));
}

// ---------------------------------------------------------------------------------------------
// The inspector: a message's parts as they were sent
// ---------------------------------------------------------------------------------------------

/** What an attachment costs by `rule`, from the facts the engine counts it by (read from the bytes where not given). */
function cost(part: AttachmentPart, rule: MediaRule) {
  const given = part.type === 'image' ? { width: part.width, height: part.height } : part.type === 'file' ? { pages: part.pages } : { durationMs: part.durationMs };
  const bytes = Object.values(given).some((v) => v === undefined) ? bytesOf(part.data) : null;
  const facts: MediaPart = { kind: part.type, ...(bytes && part.mediaType ? probeMedia(bytes, part.mediaType) : {}), ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) };
  const size = part.size ?? bytes?.length;
  if (size !== undefined) facts.size = size;
  if (part.mediaType) facts.mediaType = part.mediaType;
  if (part.type === 'image' && part.detail) facts.detail = part.detail;
  if (part.caption) facts.caption = part.caption;
  // A caption is counted at ~4 characters a token here (the engine counts it with its tokenizer).
  return mediaTokens(facts, rule, (t) => Math.ceil(t.length / 4));
}

/** `[image cat.png, image/png, 84 KB, 765 tokens]`: an attachment as sent, without its bytes. */
function attachmentLine(part: AttachmentPart, rule: MediaRule): HTMLElement {
  const c = cost(part, rule);
  const size = part.size ?? bytesOf(part.data)?.length;
  const facts = [part.name ?? (part.url ? 'by URL' : ''), part.mediaType, size === undefined ? '' : formatBytes(size),
    `${c.exact ? '' : '~'}${c.tokens.toLocaleString('en')} tokens${c.exact ? '' : ' (estimate)'}`].filter(Boolean);
  return el('span', { className: 'attachment-line', textContent: `[${part.type} ${facts.join(', ')}]`, title: c.rule });
}

/** A message's content for the inspector: its text, and each attachment as a line and (an image) a thumbnail. */
export function sentContent(content: ChatMessage['content'], rule: MediaRule): (Node | string)[] {
  if (!Array.isArray(content)) return [content ?? ''];
  return content.flatMap((p, i) => {
    const before = i > 0 ? '\n' : '';
    if (p.type === 'text') return [before + p.text];
    if (p.type === 'reasoning') return [`${before}[reasoning] ${p.text}`];
    return [before, attachmentLine(p, rule), ...(p.type === 'image' && (p.data !== undefined || p.attachment) ? ['\n', thumbnail(p)] : [])];
  });
}

/**
 * The context as it is kept for "inspect" (idb-keyval, 40 a conversation): without the bytes, which would be kept
 * again with every request they were sent with; a part keeps its id (the hash of the bytes), and so its thumbnail.
 */
export async function withoutBytes(ctx: AssembledContext): Promise<AssembledContext> {
  const messages = await Promise.all(ctx.messages.map(async (m) => {
    if (!Array.isArray(m.content) || !m.content.some((p) => isAttachmentPart(p) && p.data !== undefined)) return m;
    const content = await Promise.all(m.content.map(async (p) => {
      if (!isAttachmentPart(p) || p.data === undefined) return p;
      const { data, ...rest } = p;
      const bytes = bytesOf(data)!;
      // What the bytes say (pixels) is kept in their place: the part's tokens are counted from it.
      return { ...probeMedia(bytes, p.mediaType ?? ''), ...rest, size: p.size ?? bytes.length, attachment: p.attachment ?? await sha256Hex(bytes) };
    }));
    return { ...m, content };
  }));
  return { ...ctx, messages };
}
