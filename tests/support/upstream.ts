// A local upstream speaking OpenAI's chat completions and Anthropic's messages (the
// only double: a remote LLM). It records each request as received (raw text too: a body that is not JSON shows) and
// answers from a queue, or with a plain completion. With `reply` (what the code samples run against) its own answers
// are whole — model, usage, stop reason — and streamed as server-sent events when the request asks `stream: true`.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Reply = { status?: number; type?: string; body: string };
export interface Upstream {
  /** http://127.0.0.1:PORT: OpenAI-compatible at `${base}/v1`, Anthropic at base. */
  base: string;
  /** Replies to give, in order; then a completion (OpenAI) or a message (Anthropic) saying "ok" (or `reply`). */
  next: Reply[];
  /** What it received. */
  seen: { path: string; headers: IncomingMessage['headers']; raw: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

export interface UpstreamOptions {
  /**
   * The text of its own answers, whole as the real APIs send them, and streamed (server-sent events) to a request with
   * `stream: true`. Default: "ok", in the short JSON of completion() and message(), whatever the request asks.
   */
  reply?: string;
  /** Answers CORS preflights and lets any origin read its answers (for pages of another origin). */
  cors?: boolean;
}

export const completion = (text = 'ok') => JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }] });
export const message = (text = 'ok') => JSON.stringify({ id: 'msg', type: 'message', role: 'assistant', content: [{ type: 'text', text }] });

const USAGE = { prompt_tokens: 8, completion_tokens: 3, total_tokens: 11 };
const sse = (events: [string | null, unknown][]) =>
  events.map(([event, data]) => `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`).join('');

/** OpenAI's chat completion saying `text`, as a JSON body or (stream) as its chunks. */
function openaiReply(text: string, body: Record<string, unknown>): Reply {
  const head = { id: 'chatcmpl-sample', created: 0, model: typeof body.model === 'string' ? body.model : 'gpt-4o', system_fingerprint: null };
  if (body.stream !== true) {
    return { body: JSON.stringify({ ...head, object: 'chat.completion', usage: USAGE,
      choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }] }) };
  }
  const chunk = (choices: unknown[], extra = {}) => ({ ...head, object: 'chat.completion.chunk', choices, ...extra });
  const usage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage;
  return { type: 'text/event-stream', body: sse([
    [null, chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }])],
    [null, chunk([{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }])],
    [null, chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }])],
    ...(usage ? [[null, chunk([], { usage: USAGE })] as [null, unknown]] : []),
    [null, '[DONE]'],
  ]) };
}

/** Anthropic's message saying `text`, as a JSON body or (stream) as its events. */
function anthropicReply(text: string, body: Record<string, unknown>): Reply {
  const head = { id: 'msg_sample', type: 'message', role: 'assistant', model: typeof body.model === 'string' ? body.model : 'claude-sonnet-4-5' };
  const usage = { input_tokens: 8, output_tokens: 3 };
  if (body.stream !== true) {
    return { body: JSON.stringify({ ...head, content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null, usage }) };
  }
  return { type: 'text/event-stream', body: sse([
    ['message_start', { type: 'message_start', message: { ...head, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }],
    ['message_stop', { type: 'message_stop' }],
  ]) };
}

const CORS = { 'access-control-allow-origin': '*', 'access-control-allow-headers': '*', 'access-control-allow-methods': 'GET, POST, OPTIONS' };

export async function startUpstream(options: UpstreamOptions = {}): Promise<Upstream> {
  const up = { next: [] as Reply[], seen: [] as Upstream['seen'] };
  const cors = options.cors ? CORS : {};
  const answer = (path: string, body: Record<string, unknown>): Reply => {
    const anthropic = path.includes('/v1/messages');
    if (options.reply === undefined) return { body: anthropic ? message() : completion() };
    return anthropic ? anthropicReply(options.reply, body) : openaiReply(options.reply, body);
  };
  const server: Server = createServer((req, res) => {
    if (options.cors && req.method === 'OPTIONS') {
      res.writeHead(204, cors);
      res.end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown> = {};
      try { body = JSON.parse(raw) as Record<string, unknown>; } catch { /* recorded as raw */ }
      up.seen.push({ path: req.url ?? '', headers: req.headers, raw, body });
      const r = up.next.shift() ?? answer(req.url ?? '', body);
      res.writeHead(r.status ?? 200, { 'content-type': r.type ?? 'application/json', ...cors });
      res.end(r.body);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(up, { base, close: () => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }) });
}
