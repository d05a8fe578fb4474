// Anthropic messages for the proxy: request messages read as pagewise messages (text, image, document, thinking and
// redacted_thinking blocks; tool_use as tool calls; each tool_result as a tool message), a stored turn written back,
// memory joined to the top-level system prompt, and replies — plain or streamed — read for storing.
import { contentOf, fromBase64, toBase64 } from '../common/parts.js';
import { type Json, type Protocol, type StreamReader, base64Of, blockOf, checkContent, fail, isObject, joinSystem, jsonText, keptBlock, referenceOf } from './proxy-protocols.js';
import { describe } from '../common/messages.js';
import type { AttachmentPart, ChatMessage, ContentPart, ToolCall } from '../contracts/types.js';

const utf8 = new TextEncoder();

/** A block's source (base64, URL, text) as an attachment part of `type`, or null when it carries no bytes or URL. */
function sourced(type: 'image' | 'file', b: Json): ContentPart | null {
  const s = isObject(b.source) ? b.source : null;
  const name = typeof b.title === 'string' && b.title !== '' ? { name: b.title } : {};
  const caption = typeof b.context === 'string' && b.context !== '' ? { caption: b.context } : {};
  if (s?.type === 'base64' && typeof s.data === 'string') return { type, data: s.data, ...(typeof s.media_type === 'string' ? { mediaType: s.media_type } : {}), ...name, ...caption };
  if (s?.type === 'url' && typeof s.url === 'string') return { type, url: s.url, ...name, ...caption };
  // A plain-text document: its bytes, and its text to search.
  if (s?.type === 'text' && typeof s.data === 'string' && s.data !== '') return { type: 'file', data: toBase64(utf8.encode(s.data)), mediaType: 'text/plain', ...name, caption: s.data };
  return null;
}

/** One Anthropic content block as a pagewise part (tool_use and tool_result are read apart). */
function partOf(b: Json): ContentPart {
  if (b.type === 'text' && typeof b.text === 'string') return { type: 'text', text: b.text };
  if (b.type === 'thinking' && typeof b.thinking === 'string') return { type: 'reasoning', text: b.thinking, ...(typeof b.signature === 'string' ? { signature: b.signature } : {}) };
  if (b.type === 'redacted_thinking' && typeof b.data === 'string') return { type: 'reasoning', text: '', encrypted: b.data };
  if (b.type === 'image' || b.type === 'document') return sourced(b.type === 'image' ? 'image' : 'file', b) ?? keptBlock('anthropic', b);
  // A server tool's use and result, a search result, a file uploaded to the provider, a block no API had yet: kept whole.
  return keptBlock('anthropic', b);
}

function resultContent(c: unknown): ChatMessage['content'] {
  if (typeof c === 'string') return c;
  const parts = Array.isArray(c) ? (c as unknown[]).filter(isObject).map(partOf) : [];
  return parts.length > 0 ? contentOf(parts) : JSON.stringify(c ?? '');
}

/** Anthropic messages (and their top-level system) as pagewise messages. */
function read(body: Json): { messages: ChatMessage[]; origins: number[] } {
  const messages: ChatMessage[] = [];
  const origins: number[] = [];
  const system = typeof body.system === 'string' ? body.system : Array.isArray(body.system) ? (body.system as unknown[]).filter(isObject).map((b) => (typeof b.text === 'string' ? b.text : '')).join('\n') : '';
  // The system prompt is part of the request: counted in the budget, never stored.
  if (system.trim() !== '') { messages.push({ role: 'system', content: system }); origins.push(-1); }
  (body.messages as unknown[]).forEach((raw, i) => {
    const path = `messages[${i}]`;
    if (!isObject(raw)) fail(path, `must be a message object with a role and content (got ${describe(raw)}).`);
    checkContent(raw.content, `${path}.content`);
    if (raw.role !== 'user' && raw.role !== 'assistant') fail(`${path}.role`, `must be "user" or "assistant" (got ${describe(raw.role)}).`);
    const blocks = typeof raw.content === 'string' ? [{ type: 'text', text: raw.content }] : Array.isArray(raw.content) ? raw.content as Json[] : [];
    const own = blocks.filter((b) => b.type !== 'tool_use' && b.type !== 'tool_result').map(partOf);
    if (raw.role === 'assistant') {
      const calls: ToolCall[] = blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: String(b.id), type: 'function', function: { name: String(b.name), arguments: jsonText(b.input) } }));
      messages.push({ role: 'assistant', content: contentOf(own), ...(calls.length > 0 ? { toolCalls: calls } : {}) });
      origins.push(i);
      return;
    }
    for (const b of blocks.filter((x) => x.type === 'tool_result')) {
      messages.push({ role: 'tool', toolCallId: String(b.tool_use_id), content: resultContent(b.content) });
      origins.push(i);
    }
    if (own.length > 0 || !blocks.some((b) => b.type === 'tool_result')) {
      messages.push({ role: 'user', content: contentOf(own) });
      origins.push(i);
    }
  });
  return { messages, origins };
}

// The image types the Messages API takes as base64.
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/** A stored attachment as the Anthropic block that carries it, or its reference in words where none does. */
function attachmentBlock(p: AttachmentPart): Json {
  const kept = blockOf('anthropic', p);
  if (kept) return kept;
  const data = base64Of(p);
  if (p.url !== undefined && p.type !== 'audio') return { type: p.type === 'image' ? 'image' : 'document', source: { type: 'url', url: p.url } };
  if (data === null) return referenceOf(p);
  if (p.type === 'image' && IMAGE_TYPES.has(p.mediaType ?? '')) return { type: 'image', source: { type: 'base64', media_type: p.mediaType, data } };
  const title = p.name ? { title: p.name } : {};
  if (p.type === 'file' && p.mediaType === 'application/pdf') return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data }, ...title };
  if (p.type === 'file' && p.mediaType === 'text/plain') return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: new TextDecoder().decode(fromBase64(data)) }, ...title };
  return referenceOf(p);
}

/** A stored turn's parts as Anthropic blocks (reasoning with its signature, attachments as the API takes them). */
function blocksOf(content: ChatMessage['content']): Json[] {
  if (typeof content === 'string' || content === null) return content ? [{ type: 'text', text: content }] : [];
  return content.flatMap((p): Json[] => {
    if (p.type === 'text') return p.text ? [{ type: 'text', text: p.text }] : [];
    if (p.type === 'reasoning') {
      if (p.encrypted) return [{ type: 'redacted_thinking', data: p.encrypted }];
      return p.signature ? [{ type: 'thinking', thinking: p.text, signature: p.signature }] : [];
    }
    return [attachmentBlock(p)];
  });
}

/** A stored turn as an Anthropic message (a tool message as a user message's tool_result). */
function write(m: ChatMessage): Json {
  if (m.role === 'tool') return { role: 'user', content: [{ type: 'tool_result', tool_use_id: m.toolCallId, content: blocksOf(m.content) }] };
  const blocks = [...blocksOf(m.content), ...(m.toolCalls ?? []).map((c) => ({ type: 'tool_use', id: c.id, name: c.function.name, input: safeJson(c.function.arguments) }))];
  return { role: m.role === 'assistant' ? 'assistant' : 'user', content: blocks };
}

function safeJson(s: string): unknown {
  try { return JSON.parse(s); } catch { return {}; }
}

/**
 * The request with memory joined to its system prompt. Stored turns written back may leave two messages of one role
 * side by side; the API takes consecutive turns of a role as one.
 */
function assemble(body: Json, kept: unknown[], memory: string): Json {
  const system = joinSystem(body.system, memory);
  return { ...body, ...(system !== undefined ? { system } : {}), messages: kept };
}

/** Whether a request message may come first: a user message, not one that answers a tool call cut off before it. */
function canStart(raw: unknown): boolean {
  if (!isObject(raw) || raw.role !== 'user') return false;
  return !(Array.isArray(raw.content) && (raw.content as unknown[]).some((b) => isObject(b) && b.type === 'tool_result'));
}

function reply(json: unknown): ChatMessage | null {
  if (!isObject(json) || !Array.isArray(json.content)) return null;
  const { messages } = read({ messages: [{ role: 'assistant', content: (json.content as unknown[]).filter(isObject) }] });
  return messages[0] ?? null;
}

/** A streamed message, its blocks rebuilt from their starts and deltas (text, thinking with its signature, tool_use). */
function stream(): StreamReader {
  const blocks = new Map<number, Json>();
  let finished = false;
  return {
    event(data, event) {
      const e = JSON.parse(data) as { type?: string; index?: number; delta?: Json; content_block?: Json };
      const type = e.type ?? event;
      const at = e.index ?? 0;
      if (type === 'content_block_start' && isObject(e.content_block)) blocks.set(at, { ...e.content_block, ...(e.content_block.type === 'tool_use' ? { input: '' } : {}) });
      else if (type === 'content_block_delta' && isObject(e.delta)) {
        const b = blocks.get(at);
        const d = e.delta;
        if (!b) return;
        if (d.type === 'text_delta') b.text = `${String(b.text ?? '')}${String(d.text ?? '')}`;
        else if (d.type === 'thinking_delta') b.thinking = `${String(b.thinking ?? '')}${String(d.thinking ?? '')}`;
        else if (d.type === 'signature_delta') b.signature = `${String(b.signature ?? '')}${String(d.signature ?? '')}`;
        else if (d.type === 'input_json_delta') b.input = `${String(b.input ?? '')}${String(d.partial_json ?? '')}`;
      } else if (type === 'message_stop') finished = true;
    },
    done() {
      if (!finished) return null;
      // A tool call's arguments stay the JSON text the model streamed.
      const content = [...blocks.entries()].sort((a, b) => a[0] - b[0]).map(([, b]) => (b.type === 'tool_use' && b.input === '' ? { ...b, input: {} } : b));
      return reply({ content });
    },
  };
}

export const anthropic: Protocol = { kind: 'anthropic', path: '/v1/messages', mediaTokens: 'anthropic', read, write, assemble, canStart, reply, stream };
