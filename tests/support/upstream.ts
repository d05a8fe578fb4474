// A local upstream speaking OpenAI's chat completions and Anthropic's messages (the
// only double: a remote LLM). It records each request as received (raw text too: a body that is not JSON shows) and
// answers from a queue, or with a plain completion.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Reply = { status?: number; type?: string; body: string };
export interface Upstream {
  /** http://127.0.0.1:PORT: OpenAI-compatible at `${base}/v1`, Anthropic at base. */
  base: string;
  /** Replies to give, in order; then a completion (OpenAI) or a message (Anthropic) saying "ok". */
  next: Reply[];
  /** What it received. */
  seen: { path: string; headers: IncomingMessage['headers']; raw: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

export const completion = (text = 'ok') => JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }] });
export const message = (text = 'ok') => JSON.stringify({ id: 'msg', type: 'message', role: 'assistant', content: [{ type: 'text', text }] });

export async function startUpstream(): Promise<Upstream> {
  const up = { next: [] as Reply[], seen: [] as Upstream['seen'] };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown> = {};
      try { body = JSON.parse(raw) as Record<string, unknown>; } catch { /* recorded as raw */ }
      up.seen.push({ path: req.url ?? '', headers: req.headers, raw, body });
      const r = up.next.shift() ?? { body: (req.url ?? '').includes('/v1/messages') ? message() : completion() };
      res.writeHead(r.status ?? 200, { 'content-type': r.type ?? 'application/json' });
      res.end(r.body);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(up, { base, close: () => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }) });
}
