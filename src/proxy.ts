// memoryProxy: a drop-in OpenAI-compatible (and Anthropic) endpoint with memory. A fetch handler: Cloudflare Workers,
// Deno, Bun, Node's fetch servers.
import type { Memory } from './engine.js';
import { isPagewiseError } from './errors.js';
import { validateConversationId } from './messages.js';
import { readSse } from './text/sse.js';
import type { AssembledContext, ChatMessage, ToolCall } from './types.js';

/** Where requests go on: the provider's base URL and key (from bindings or secrets; never sent to the client). */
export interface UpstreamOptions {
  /** e.g. `https://api.openai.com/v1` for chat completions, `https://api.anthropic.com` for messages. */
  baseUrl: string;
  apiKey?: string;
  /** Per attempt; default 120 s. */
  timeoutMs?: number;
  /** Extra headers (e.g. `anthropic-version`). */
  headers?: Record<string, string>;
}

export interface MemoryProxyOptions {
  /** The memory of a conversation: one engine for all, or one per conversation (e.g. `memoryStub(env.MEMORY, id)`). */
  memory: Memory | ((conversationId: string) => Memory);
  /** `POST /v1/chat/completions` goes here (OpenAI-compatible). */
  openai?: UpstreamOptions;
  /** `POST /v1/messages` goes here (Anthropic). */
  anthropic?: UpstreamOptions;
  /** The conversation of a request without `x-pagewise-conversation` (e.g. from a user id); default: a 400. */
  conversationOf?: (request: Request) => string | null | Promise<string | null>;
  /** Forward the client's own `Authorization` / `x-api-key` instead of the configured key. Default false. */
  forwardClientKey?: boolean;
}

/** What the runtime offers to finish work after the response (Workers' `ctx`). */
export interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

const HEADER = 'x-pagewise-conversation';

function errorResponse(status: number, code: string, message: string): Response {
  return Response.json({ error: { type: 'pagewise_error', code, message } }, { status });
}

const textOf = (content: unknown): string => (typeof content === 'string' ? content
  : Array.isArray(content) ? content.map((p) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '')).filter(Boolean).join('\n') : '');

/** OpenAI chat messages as pagewise messages. */
function fromOpenAi(messages: unknown[]): ChatMessage[] {
  return messages.map((raw) => {
    const m = raw as { role?: string; content?: unknown; name?: string; tool_calls?: { id: string; function: { name: string; arguments: string } }[]; tool_call_id?: string };
    const role = m.role === 'developer' ? 'system' : m.role;
    const out: ChatMessage = { role: role as ChatMessage['role'], content: textOf(m.content) };
    if (m.name) out.name = m.name;
    if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) out.toolCalls = m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.function?.name, arguments: c.function?.arguments } }));
    if (m.tool_call_id) out.toolCallId = m.tool_call_id;
    return out;
  });
}

function toOpenAi(m: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { role: m.role, content: textOf(m.content) };
  if (m.name) out.name = m.name;
  if (m.toolCalls) out.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: c.function }));
  if (m.toolCallId) out.tool_call_id = m.toolCallId;
  return out;
}

/** Anthropic messages (and their top-level system) as pagewise messages. */
function fromAnthropic(messages: unknown[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const raw of messages) {
    const m = raw as { role?: string; content?: unknown };
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? m.content as Record<string, unknown>[] : [];
    const text = blocks.filter((b) => b.type === 'text').map((b) => String(b.text)).join('\n');
    if (m.role === 'assistant') {
      const calls: ToolCall[] = blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: String(b.id), type: 'function', function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) } }));
      out.push({ role: 'assistant', content: text, ...(calls.length > 0 ? { toolCalls: calls } : {}) });
    } else {
      for (const b of blocks.filter((x) => x.type === 'tool_result')) out.push({ role: 'tool', toolCallId: String(b.tool_use_id), content: textOf(b.content) || JSON.stringify(b.content ?? '') });
      if (text || !blocks.some((b) => b.type === 'tool_result')) out.push({ role: 'user', content: text });
    }
  }
  return out;
}

function toAnthropic(messages: readonly ChatMessage[]): Record<string, unknown>[] {
  const out: { role: string; content: Record<string, unknown>[] }[] = [];
  for (const m of messages) {
    if (m.role === 'system') continue;
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const blocks: Record<string, unknown>[] = m.role === 'tool'
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

/**
 * The memory's context as one system text, stable parts first for prompt caches — the conversation's own system
 * prefix, the topics hint, then what was recalled for this message — and the other messages.
 */
function split(ctx: AssembledContext): { system: string[]; rest: ChatMessage[] } {
  const prefix: string[] = [];
  const recalled: string[] = [];
  const rest: ChatMessage[] = [];
  ctx.messages.forEach((m) => {
    if (m.role !== 'system') rest.push(m);
    else (rest.length === 0 ? prefix : recalled).push(textOf(m.content));
  });
  return { system: [...prefix, ...(ctx.prependText ? [ctx.prependText] : []), ...recalled], rest };
}

/**
 * A fetch handler for `POST /v1/chat/completions` (OpenAI-compatible, streaming or not) and `POST /v1/messages`
 * (Anthropic, streaming or not). Before forwarding, `onMessageInbound` for the last user message and the memory as
 * the request's system text; the reply goes to the client untouched while its text is collected; `onTurnComplete`
 * runs through `ctx.waitUntil`, never delaying the reply. An upstream error passes through and stores nothing.
 *
 * @example
 * const proxy = memoryProxy({ memory: (id) => memoryStub(env.MEMORY, id), openai: { baseUrl: env.UPSTREAM_URL, apiKey: env.UPSTREAM_KEY } });
 * export default { fetch: (request, env, ctx) => proxy(request, ctx) };
 */
export function memoryProxy(options: MemoryProxyOptions): (request: Request, ctx?: WaitUntil) => Promise<Response> {
  const memoryOf = typeof options.memory === 'function' ? options.memory : () => options.memory as Memory;
  return async (request, ctx) => {
    const url = new URL(request.url);
    const kind = url.pathname.endsWith('/chat/completions') ? 'openai' : url.pathname.endsWith('/messages') ? 'anthropic' : null;
    if (!kind || request.method !== 'POST') return errorResponse(404, 'NOT_FOUND', 'pagewise proxy serves POST /v1/chat/completions and POST /v1/messages.');
    const upstream = options[kind];
    if (!upstream) return errorResponse(404, 'NOT_FOUND', `No ${kind === 'openai' ? 'OpenAI-compatible' : 'Anthropic'} upstream is configured on this proxy.`);
    const named = request.headers.get(HEADER) ?? (options.conversationOf ? await options.conversationOf(request) : null);
    if (named === null || named === undefined || named === '') {
      return errorResponse(400, 'INVALID_CONVERSATION_ID', `Send the conversation id in the ${HEADER} header (each conversation keeps its own memory).`);
    }
    let body: Record<string, unknown>;
    try {
      body = await request.json() as Record<string, unknown>;
      if (typeof body !== 'object' || body === null || !Array.isArray(body.messages)) throw new Error('no messages array');
    } catch (e) {
      return errorResponse(400, 'INVALID_ARGUMENT', `The request body must be JSON with a messages array (${(e as Error).message}).`);
    }
    let conversationId: string;
    let memory: Memory;
    const all = kind === 'openai' ? fromOpenAi(body.messages as unknown[]) : fromAnthropic(body.messages as unknown[]);
    const last = all.map((m) => m.role).lastIndexOf('user');
    if (last < 0) return errorResponse(400, 'INVALID_ARGUMENT', 'The request has no user message to answer.');
    const message = all[last]!;
    let ctxs: AssembledContext;
    try {
      conversationId = validateConversationId(named, HEADER);
      memory = memoryOf(conversationId);
      const before = all.slice(0, last);
      const history = before.some((m) => m.role !== 'system') ? before : undefined;
      ctxs = await memory.onMessageInbound({ conversationId, message, ...(history ? { history } : {}) });
    } catch (e) {
      if (isPagewiseError(e)) return errorResponse(400, e.code, e.message);
      throw e;
    }
    const { system, rest } = split(ctxs);
    const appSystem = kind === 'openai' ? all.slice(0, last).filter((m) => m.role === 'system').map((m) => textOf(m.content)) : [textOf(body.system)].filter(Boolean);
    // With the caller's history the engine kept its leading system messages in ctx.messages; without it, the app's.
    const systems = [...(kind === 'openai' && all.slice(0, last).some((m) => m.role !== 'system') ? [] : appSystem), ...system];
    const forwarded: Record<string, unknown> = kind === 'openai'
      ? { ...body, messages: [...(systems.length > 0 ? [{ role: 'system', content: systems.join('\n\n') }] : []), ...rest.map(toOpenAi)] }
      : { ...body, ...(systems.length > 0 ? { system: systems.join('\n\n') } : {}), messages: toAnthropic(rest) };

    const headers = new Headers({ 'content-type': 'application/json', ...upstream.headers });
    const clientKey = kind === 'openai' ? request.headers.get('authorization') : request.headers.get('x-api-key');
    if (options.forwardClientKey && clientKey) headers.set(kind === 'openai' ? 'authorization' : 'x-api-key', clientKey);
    else if (upstream.apiKey) {
      if (kind === 'openai') headers.set('authorization', `Bearer ${upstream.apiKey}`);
      else headers.set('x-api-key', upstream.apiKey);
    }
    if (kind === 'anthropic' && !headers.has('anthropic-version')) headers.set('anthropic-version', '2023-06-01');
    const target = `${upstream.baseUrl.replace(/\/+$/, '')}${kind === 'openai' ? '/chat/completions' : '/v1/messages'}`;
    let response: Response;
    try {
      response = await fetch(target, { method: 'POST', headers, body: JSON.stringify(forwarded), signal: AbortSignal.timeout(upstream.timeoutMs ?? 120_000) });
    } catch (e) {
      const timedOut = (e as Error)?.name === 'TimeoutError';
      return errorResponse(timedOut ? 504 : 502, 'UPSTREAM_ERROR', timedOut ? `The upstream did not answer within ${upstream.timeoutMs ?? 120_000} ms.` : `The upstream could not be reached (${(e as Error)?.message ?? e}).`);
    }
    // What the upstream says, as it says it (status, body); only the exchange's storing is pagewise's.
    const passHeaders = new Headers(response.headers);
    passHeaders.delete('content-length');
    passHeaders.delete('content-encoding');
    if (!response.ok || !response.body) return new Response(response.body, { status: response.status, headers: passHeaders });
    const store = (reply: ChatMessage | null) => {
      if (!reply || (textOf(reply.content).trim() === '' && !reply.toolCalls?.length)) return;
      const done = memory.onTurnComplete({ conversationId, messages: [message, reply] }).then(() => undefined, () => undefined);
      if (ctx) ctx.waitUntil(done);
    };
    const streaming = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    if (!streaming) {
      const raw = await response.text();
      try {
        store(kind === 'openai' ? openAiReply(JSON.parse(raw)) : anthropicReply(JSON.parse(raw)));
      } catch { /* a malformed reply passes to the client as it came, and is not stored */ }
      return new Response(raw, { status: response.status, headers: passHeaders });
    }
    const [toClient, toMemory] = response.body.tee();
    const collected = collectStream(kind, toMemory).then(store, () => undefined);
    if (ctx) ctx.waitUntil(collected);
    return new Response(toClient, { status: response.status, headers: passHeaders });
  };
}

function openAiReply(json: { choices?: { message?: { content?: unknown; tool_calls?: { id: string; function: { name: string; arguments: string } }[] } }[] }): ChatMessage | null {
  const m = json.choices?.[0]?.message;
  if (!m) return null;
  const calls = (m.tool_calls ?? []).map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.function.name, arguments: c.function.arguments } }));
  return { role: 'assistant', content: textOf(m.content), ...(calls.length > 0 ? { toolCalls: calls } : {}) };
}

function anthropicReply(json: { content?: Record<string, unknown>[] }): ChatMessage | null {
  if (!Array.isArray(json.content)) return null;
  const [reply] = fromAnthropic([{ role: 'assistant', content: json.content }]);
  return reply ?? null;
}

/** The reply's text and tool calls from an SSE stream; null when the stream did not end as its protocol ends one. */
async function collectStream(kind: 'openai' | 'anthropic', body: ReadableStream<Uint8Array>): Promise<ChatMessage | null> {
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

