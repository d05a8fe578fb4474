import { contentText } from '../src/common/messages.js';
import { attachmentRef, isAttachmentPart, toBase64 } from '../src/common/parts.js';
import { readSse } from '../src/text/sse.js';
import type { AssembledContext, AttachmentPart, ChatMessage } from '../src/contracts/types.js';

interface Endpoint { provider: 'openai' | 'anthropic'; baseUrl: string; model: string; apiKey: string }

const text = (m: ChatMessage) => contentText(m.content);

// The image formats both providers take; another image (SVG, HEIC) goes as its reference line, as a file would.
const SENDABLE = /^image\/(png|jpeg|gif|webp)$/;

/** A part's bytes as base64: pagewise gives stored ones as base64 and the new message's as the caller's bytes. */
function base64(part: AttachmentPart): string | null {
  const d = part.data;
  if (d === undefined) return null;
  if (typeof d === 'string') return d.startsWith('data:') ? d.slice(d.indexOf(',') + 1) : d;
  return toBase64(d instanceof Uint8Array ? d : new Uint8Array(d));
}

/**
 * A message's content in the provider's shape: text alone as a string; a user message with images as text parts and
 * image parts (OpenAI `image_url` with a data: URL, Anthropic `image` with a base64 source). Only user messages
 * carry images to either provider; anything else is sent as its text, attachments as their reference lines.
 */
function contentFor(m: ChatMessage, anthropic: boolean): string | object[] {
  const images = m.role === 'user' && Array.isArray(m.content) && m.content.some((p) => p.type === 'image' && SENDABLE.test(p.mediaType ?? '') && (p.data !== undefined || p.url));
  if (!images || !Array.isArray(m.content)) return text(m);
  return m.content.flatMap((p): object[] => {
    if (p.type === 'text') return p.text ? [{ type: 'text', text: p.text }] : [];
    if (!isAttachmentPart(p)) return [];
    const data = base64(p);
    if (p.type !== 'image' || !SENDABLE.test(p.mediaType ?? '') || (data === null && !p.url)) return [{ type: 'text', text: attachmentRef(p) }];
    if (anthropic) return [{ type: 'image', source: data === null ? { type: 'url', url: p.url } : { type: 'base64', media_type: p.mediaType, data } }];
    return [{ type: 'image_url', image_url: { url: data === null ? p.url : `data:${p.mediaType};base64,${data}`, ...(p.detail ? { detail: p.detail } : {}) } }];
  });
}

/**
 * Streams a reply from an OpenAI-compatible endpoint or Anthropic, with pagewise's assembled context as the request:
 * `prependText` and the recalled memory as system text, then the history and the new message, images included.
 */
export async function streamReply(endpoint: Endpoint, ctx: AssembledContext, onDelta: (delta: string) => void): Promise<string> {
  const system = [ctx.prependText, ...ctx.messages.filter((m) => m.role === 'system').map(text)].filter(Boolean).join('\n\n');
  const anthropic = endpoint.provider === 'anthropic';
  const turns = ctx.messages.filter((m) => m.role === 'user' || m.role === 'assistant').map((m) => ({ role: m.role, content: contentFor(m, anthropic) }));
  const base = endpoint.baseUrl.replace(/\/+$/, '');
  const url = anthropic ? `${base}/v1/messages` : `${base}/chat/completions`;
  const response = await fetch(url, {
    method: 'POST',
    headers: anthropic
      ? { 'content-type': 'application/json', 'x-api-key': endpoint.apiKey, 'anthropic-version': '2023-06-01', 'anthropic-dangerous-direct-browser-access': 'true' }
      : { 'content-type': 'application/json', ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}) },
    body: JSON.stringify(anthropic
      ? { model: endpoint.model, max_tokens: 1024, stream: true, ...(system ? { system } : {}), messages: turns }
      : { model: endpoint.model, stream: true, messages: [...(system ? [{ role: 'system', content: system }] : []), ...turns] }),
  }).catch((cause: unknown) => {
    // The browser says only "Failed to fetch": name the URL and what to check.
    throw new Error(`Could not reach ${url} (${(cause as Error)?.message ?? cause}). Check that the server is running and the base URL is right `
      + `(${anthropic ? 'e.g. https://api.anthropic.com' : 'e.g. http://localhost:11434/v1 for Ollama'}), and that it allows requests from ${location.origin} (CORS; `
      + `for Ollama set OLLAMA_ORIGINS). Your message is kept: send it again.`, { cause });
  });
  if (!response.ok || !response.body) throw new Error(`${url} answered ${response.status} ${response.statusText}: ${(await response.text()).slice(0, 300)}`);
  let reply = '';
  await readSse(response.body, (data) => {
    if (data === '[DONE]') return;
    const event = JSON.parse(data) as { choices?: { delta?: { content?: string } }[]; type?: string; delta?: { type?: string; text?: string } };
    const delta = anthropic ? (event.type === 'content_block_delta' && event.delta?.type === 'text_delta' ? event.delta.text : undefined) : event.choices?.[0]?.delta?.content;
    if (delta) { reply += delta; onDelta(delta); }
  });
  if (!reply.trim()) throw new Error('the model sent an empty reply');
  return reply;
}
