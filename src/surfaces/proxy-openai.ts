// OpenAI chat completions for the proxy: request messages read as pagewise messages (text, image_url, input_audio,
// file parts; tool calls; `reasoning_content` as reasoning), a stored turn written back, memory joined to the first
// system (or developer) message, and replies — plain or streamed — read for storing.
import { contentOf, isAttachmentPart } from '../common/parts.js';
import { type Json, type Protocol, type StreamReader, base64Of, blockOf, checkContent, fail, isObject, jsonText, joinSystem, keptBlock, optionalString, referenceOf } from './proxy-protocols.js';
import { describe } from '../common/messages.js';
import type { AttachmentPart, ChatMessage, ContentPart, ToolCall } from '../contracts/types.js';

const AUDIO_TYPES: Record<string, string> = { mp3: 'audio/mpeg', wav: 'audio/wav', flac: 'audio/flac', opus: 'audio/ogg', aac: 'audio/aac', pcm16: 'audio/L16' };

/** One OpenAI content part as a pagewise part. */
function partOf(p: Json): ContentPart {
  if (p.type === 'text' && typeof p.text === 'string') return { type: 'text', text: p.text };
  if (p.type === 'refusal' && typeof p.refusal === 'string') return { type: 'text', text: p.refusal };
  if (p.type === 'image_url' && isObject(p.image_url) && typeof p.image_url.url === 'string') {
    const { url, detail } = p.image_url;
    const level = detail === 'low' || detail === 'high' || detail === 'auto' ? { detail: detail as 'low' | 'high' | 'auto' } : {};
    return url.startsWith('data:') ? { type: 'image', data: url, ...level } : { type: 'image', url, ...level };
  }
  if (p.type === 'input_audio' && isObject(p.input_audio) && typeof p.input_audio.data === 'string') {
    const format = String(p.input_audio.format ?? '');
    return { type: 'audio', data: p.input_audio.data, ...(Object.hasOwn(AUDIO_TYPES, format) ? { mediaType: AUDIO_TYPES[format] } : {}) };
  }
  if (p.type === 'file' && isObject(p.file)) {
    const name = typeof p.file.filename === 'string' && p.file.filename !== '' ? { name: p.file.filename } : {};
    if (typeof p.file.file_data === 'string') return { type: 'file', data: p.file.file_data, ...name };
  }
  // A file uploaded to the provider (by file_id), a part no API had yet: kept whole.
  return keptBlock('openai', p);
}

function toolCallsOf(value: unknown, path: string): ToolCall[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) fail(path, `must be an array of tool calls (got ${describe(value)}).`);
  return value.map((c, j): ToolCall => {
    if (!isObject(c) || !isObject(c.function)) fail(`${path}[${j}]`, `must be {"id", "type": "function", "function": {"name", "arguments"}} (got ${describe(c)}).`);
    return { id: c.id as string, type: 'function', function: { name: c.function.name as string, arguments: c.function.arguments as string } };
  });
}

/** OpenAI chat messages as pagewise messages, one each (a message of a role pagewise does not keep has none). */
function read(body: Json): { messages: ChatMessage[]; origins: number[] } {
  const messages: ChatMessage[] = [];
  const origins: number[] = [];
  (body.messages as unknown[]).forEach((raw, i) => {
    const path = `messages[${i}]`;
    if (!isObject(raw)) fail(path, `must be a message object with a role and content (got ${describe(raw)}).`);
    checkContent(raw.content, `${path}.content`);
    const role = raw.role === 'developer' ? 'system' : raw.role;
    // The deprecated `function` role goes on to the provider but is not kept; a role no API has is refused.
    if (role === 'function') return;
    if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'tool') fail(`${path}.role`, `must be "system", "developer", "user", "assistant" or "tool" (got ${describe(raw.role)}).`);
    const parts: ContentPart[] = typeof raw.content === 'string' ? [{ type: 'text', text: raw.content }] : Array.isArray(raw.content) ? (raw.content as Json[]).map(partOf) : [];
    // Reasoning some OpenAI-compatible servers give back (DeepSeek, vLLM, OpenRouter): kept apart from the text.
    const reasoning = typeof raw.reasoning_content === 'string' ? raw.reasoning_content : typeof raw.reasoning === 'string' ? raw.reasoning : '';
    if (role === 'assistant' && reasoning !== '') parts.unshift({ type: 'reasoning', text: reasoning });
    const out: ChatMessage = { role, content: contentOf(parts) };
    const name = optionalString(raw.name, `${path}.name`);
    if (name) out.name = name;
    const calls = toolCallsOf(raw.tool_calls, `${path}.tool_calls`);
    if (calls.length > 0) out.toolCalls = calls;
    const toolCallId = optionalString(raw.tool_call_id, `${path}.tool_call_id`);
    if (toolCallId) out.toolCallId = toolCallId;
    messages.push(out);
    origins.push(i);
  });
  return { messages, origins };
}

// What chat completions take: images as PNG, JPEG, GIF or WebP; audio as WAV or MP3; files as PDF.
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** A stored attachment as the OpenAI part that carries it, or its reference in words where none does. */
function attachmentPart(p: AttachmentPart): Json {
  const kept = blockOf('openai', p);
  if (kept) return kept;
  if (p.type === 'image' && p.url !== undefined) return { type: 'image_url', image_url: { url: p.url, ...(p.detail ? { detail: p.detail } : {}) } };
  const data = base64Of(p);
  if (data === null) return referenceOf(p);
  if (p.type === 'image' && IMAGE_TYPES.has(p.mediaType ?? '')) return { type: 'image_url', image_url: { url: `data:${p.mediaType};base64,${data}`, ...(p.detail ? { detail: p.detail } : {}) } };
  if (p.type === 'audio' && (p.mediaType === 'audio/wav' || p.mediaType === 'audio/mpeg')) return { type: 'input_audio', input_audio: { data, format: p.mediaType === 'audio/wav' ? 'wav' : 'mp3' } };
  if (p.type === 'file' && p.mediaType === 'application/pdf') return { type: 'file', file: { file_data: `data:application/pdf;base64,${data}`, ...(p.name ? { filename: p.name } : {}) } };
  return referenceOf(p);
}

/** A stored turn as an OpenAI message (reasoning is not sent back: the API has no field for it). */
function write(m: ChatMessage): Json {
  let content: unknown = m.content;
  if (Array.isArray(m.content)) {
    const out = m.content.flatMap((p): Json[] => (p.type === 'text' ? [{ type: 'text', text: p.text }] : isAttachmentPart(p) ? [attachmentPart(p)] : []));
    content = out.every((p) => p.type === 'text') ? out.map((p) => p.text).join('\n') : out;
  }
  const msg: Json = { role: m.role, content };
  if (m.name) msg.name = m.name;
  if (m.toolCalls) msg.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: c.function }));
  if (m.toolCallId) msg.tool_call_id = m.toolCallId;
  return msg;
}

/** The request with memory joined to its first system (or developer) message, or as a system message of its own. */
function assemble(body: Json, kept: unknown[], memory: string): Json {
  const first = kept[0];
  if (memory === '') return { ...body, messages: kept };
  if (isObject(first) && (first.role === 'system' || first.role === 'developer')) {
    return { ...body, messages: [{ ...first, content: joinSystem(first.content, memory) }, ...kept.slice(1)] };
  }
  return { ...body, messages: [{ role: 'system', content: memory }, ...kept] };
}

/** A reply message (plain or the sum of a stream's deltas) as a pagewise message. */
function replyOf(m: Json): ChatMessage | null {
  const parts: ContentPart[] = [];
  const reasoning = typeof m.reasoning_content === 'string' ? m.reasoning_content : typeof m.reasoning === 'string' ? m.reasoning : '';
  if (reasoning) parts.push({ type: 'reasoning', text: reasoning });
  if (typeof m.content === 'string') parts.push({ type: 'text', text: m.content });
  else if (Array.isArray(m.content)) parts.push(...(m.content as unknown[]).filter(isObject).map(partOf));
  if (isObject(m.audio) && typeof m.audio.data === 'string' && m.audio.data !== '') {
    // The format is the request's choice (audio.format): read from the bytes.
    parts.push({ type: 'audio', data: m.audio.data, ...(typeof m.audio.transcript === 'string' ? { caption: m.audio.transcript } : {}) });
  }
  const calls = (Array.isArray(m.tool_calls) ? m.tool_calls : []).filter((c): c is Json => isObject(c) && isObject(c.function))
    .map((c) => ({ id: String(c.id), type: 'function' as const, function: { name: String((c.function as Json).name), arguments: jsonText((c.function as Json).arguments ?? '{}') } }));
  return { role: 'assistant', content: contentOf(parts), ...(calls.length > 0 ? { toolCalls: calls } : {}) };
}

function stream(): StreamReader {
  let text = '';
  let reasoning = '';
  let finished = false;
  const calls = new Map<number, { id: string; name: string; args: string }>();
  return {
    event(data) {
      if (data.trim() === '[DONE]') { finished = true; return; }
      const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string; reasoning_content?: string; reasoning?: string; tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[] } }[] };
      const delta = chunk.choices?.[0]?.delta;
      if (typeof delta?.content === 'string') text += delta.content;
      if (typeof delta?.reasoning_content === 'string') reasoning += delta.reasoning_content;
      else if (typeof delta?.reasoning === 'string') reasoning += delta.reasoning;
      for (const c of delta?.tool_calls ?? []) {
        const call = calls.get(c.index) ?? { id: '', name: '', args: '' };
        if (c.id) call.id = c.id;
        if (c.function?.name) call.name += c.function.name;
        if (c.function?.arguments) call.args += c.function.arguments;
        calls.set(c.index, call);
      }
    },
    done() {
      if (!finished) return null;
      const toolCalls = [...calls.values()].map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args || '{}' } }));
      return replyOf({ content: text, ...(reasoning ? { reasoning_content: reasoning } : {}), tool_calls: toolCalls });
    },
  };
}

export const openai: Protocol = {
  kind: 'openai',
  path: '/chat/completions',
  mediaTokens: 'openai',
  read,
  write,
  assemble,
  // A tool message cut off from its call is refused by the API.
  canStart: (raw) => !(isObject(raw) && raw.role === 'tool'),
  reply(json) {
    const m = isObject(json) && Array.isArray(json.choices) && isObject(json.choices[0]) ? json.choices[0].message : undefined;
    return isObject(m) ? replyOf(m) : null;
  },
  stream,
};

