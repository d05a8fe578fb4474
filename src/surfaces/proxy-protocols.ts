// The two wire protocols the proxy speaks (OpenAI chat completions, Anthropic messages), to and from pagewise's
// messages. Request bodies are caller input: every shape is checked, and a malformed one is a typed error (a 400),
// never a TypeError.
import { PagewiseError } from '../contracts/errors.js';
import { describe } from '../common/messages.js';
import { readSse } from '../text/sse.js';
import type { ChatMessage, ToolCall } from '../contracts/types.js';

const MODULE = 'proxy';
type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function fail(path: string, message: string): never {
  throw new PagewiseError('INVALID_MESSAGE', MODULE, `${path}: ${message}`, { path });
}

/** The text of a message's content: a string, or the text of its parts (other parts are not stored as text). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).filter(Boolean).join('\n');
}

function optionalString(v: unknown, path: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') fail(path, `must be a string (got ${describe(v)}).`);
  return v;
}

function checkContent(v: unknown, path: string): void {
  if (v === undefined || v === null || typeof v === 'string') return;
  if (!Array.isArray(v)) fail(path, `must be a string or an array of content parts (got ${describe(v)}).`);
  v.forEach((p, i) => { if (!isObject(p)) fail(`${path}[${i}]`, `must be a content part object such as {"type":"text","text":"…"} (got ${describe(p)}).`); });
}

/** OpenAI chat messages as pagewise messages. */
export function fromOpenAi(messages: unknown[]): ChatMessage[] {
  return messages.map((raw, i) => {
    const path = `messages[${i}]`;
    if (!isObject(raw)) fail(path, `must be a message object with a role and content (got ${describe(raw)}).`);
    checkContent(raw.content, `${path}.content`);
    const role = raw.role === 'developer' ? 'system' : raw.role;
    const out: ChatMessage = { role: role as ChatMessage['role'], content: textOf(raw.content) };
    const name = optionalString(raw.name, `${path}.name`);
    if (name) out.name = name;
    if (raw.tool_calls !== undefined && raw.tool_calls !== null) {
      if (!Array.isArray(raw.tool_calls)) fail(`${path}.tool_calls`, `must be an array of tool calls (got ${describe(raw.tool_calls)}).`);
      const calls = raw.tool_calls.map((c, j): ToolCall => {
        const at = `${path}.tool_calls[${j}]`;
        if (!isObject(c) || !isObject(c.function)) fail(at, `must be {"id", "type": "function", "function": {"name", "arguments"}} (got ${describe(c)}).`);
        return { id: c.id as string, type: 'function', function: { name: c.function.name as string, arguments: c.function.arguments as string } };
      });
      if (calls.length > 0) out.toolCalls = calls;
    }
    const toolCallId = optionalString(raw.tool_call_id, `${path}.tool_call_id`);
    if (toolCallId) out.toolCallId = toolCallId;
    return out;
  });
}

export function toOpenAi(m: ChatMessage): Json {
  const out: Json = { role: m.role, content: textOf(m.content) };
  if (m.name) out.name = m.name;
  if (m.toolCalls) out.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: c.function }));
  if (m.toolCallId) out.tool_call_id = m.toolCallId;
  return out;
}

/** Anthropic messages (and their top-level system) as pagewise messages. */
export function fromAnthropic(messages: unknown[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  messages.forEach((raw, i) => {
    const path = `messages[${i}]`;
    if (!isObject(raw)) fail(path, `must be a message object with a role and content (got ${describe(raw)}).`);
    checkContent(raw.content, `${path}.content`);
    const blocks = typeof raw.content === 'string' ? [{ type: 'text', text: raw.content }] : Array.isArray(raw.content) ? raw.content as Json[] : [];
    const text = blocks.filter((b) => b.type === 'text').map((b) => String(b.text ?? '')).join('\n');
    if (raw.role === 'assistant') {
      const calls: ToolCall[] = blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: String(b.id), type: 'function', function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) } }));
      out.push({ role: 'assistant', content: text, ...(calls.length > 0 ? { toolCalls: calls } : {}) });
    } else {
      for (const b of blocks.filter((x) => x.type === 'tool_result')) out.push({ role: 'tool', toolCallId: String(b.tool_use_id), content: textOf(b.content) || JSON.stringify(b.content ?? '') });
      if (text || !blocks.some((b) => b.type === 'tool_result')) out.push({ role: raw.role === 'user' ? 'user' : raw.role as ChatMessage['role'], content: text });
    }
  });
  return out;
}

export function toAnthropic(messages: readonly ChatMessage[]): Json[] {
  const out: { role: string; content: Json[] }[] = [];
  for (const m of messages) {
    if (m.role === 'system') continue;
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const blocks: Json[] = m.role === 'tool'
      ? [{ type: 'tool_result', tool_use_id: m.toolCallId, content: textOf(m.content) }]
      : [
        ...(textOf(m.content) ? [{ type: 'text', text: textOf(m.content) }] : []),
        ...(m.toolCalls ?? []).map((c) => ({ type: 'tool_use', id: c.id, name: c.function.name, input: safeJson(c.function.arguments) })),
      ];
    // Anthropic wants alternating roles: consecutive messages of one role are merged.
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  }
  return out;
}

function safeJson(s: string): unknown {
  try { return JSON.parse(s); } catch { return {}; }
}

/** The assistant's reply in a (non-streaming) chat completion, or null when it has none. */
export function openAiReply(json: unknown): ChatMessage | null {
  const m = isObject(json) && Array.isArray(json.choices) && isObject(json.choices[0]) ? json.choices[0].message : undefined;
  if (!isObject(m)) return null;
  const calls = (Array.isArray(m.tool_calls) ? m.tool_calls : []).filter((c): c is Json => isObject(c) && isObject(c.function))
    .map((c) => ({ id: String(c.id), type: 'function' as const, function: { name: String((c.function as Json).name), arguments: String((c.function as Json).arguments ?? '{}') } }));
  return { role: 'assistant', content: textOf(m.content), ...(calls.length > 0 ? { toolCalls: calls } : {}) };
}

/** The assistant's reply in a (non-streaming) Anthropic message, or null when it has none. */
export function anthropicReply(json: unknown): ChatMessage | null {
  if (!isObject(json) || !Array.isArray(json.content)) return null;
  const [reply] = fromAnthropic([{ role: 'assistant', content: json.content.filter(isObject) }]);
  return reply ?? null;
}

/** The reply's text and tool calls from an SSE stream; null when the stream did not end as its protocol ends one. */
export async function collectStream(kind: 'openai' | 'anthropic', body: ReadableStream<Uint8Array>): Promise<ChatMessage | null> {
  let text = '';
  let finished = false;
  const calls = new Map<number, { id: string; name: string; args: string }>();
  await readSse(body, (data, event) => {
    if (kind === 'openai') {
      if (data.trim() === '[DONE]') { finished = true; return; }
      const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string; tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[] } }[] };
      const delta = chunk.choices?.[0]?.delta;
      if (typeof delta?.content === 'string') text += delta.content;
      for (const c of delta?.tool_calls ?? []) {
        const call = calls.get(c.index) ?? { id: '', name: '', args: '' };
        if (c.id) call.id = c.id;
        if (c.function?.name) call.name += c.function.name;
        if (c.function?.arguments) call.args += c.function.arguments;
        calls.set(c.index, call);
      }
    } else {
      const e = JSON.parse(data) as { type?: string; index?: number; delta?: { type?: string; text?: string; partial_json?: string }; content_block?: { type?: string; id?: string; name?: string } };
      const type = e.type ?? event;
      if (type === 'content_block_start' && e.content_block?.type === 'tool_use') calls.set(e.index ?? 0, { id: e.content_block.id ?? '', name: e.content_block.name ?? '', args: '' });
      else if (type === 'content_block_delta' && e.delta?.type === 'text_delta') text += e.delta.text ?? '';
      else if (type === 'content_block_delta' && e.delta?.type === 'input_json_delta') { const c = calls.get(e.index ?? 0); if (c) c.args += e.delta.partial_json ?? ''; }
      else if (type === 'message_stop') finished = true;
    }
  });
  if (!finished) return null;
  const toolCalls = [...calls.values()].map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.args || '{}' } }));
  return { role: 'assistant', content: text, ...(toolCalls.length > 0 ? { toolCalls } : {}) };
}
