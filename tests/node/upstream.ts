// A local upstream speaking OpenAI's chat completions and Anthropic's messages (the only double: a remote LLM).
// It records every request it received and answers from a queue.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Reply = { status?: number; type?: string; body: string };
export interface Upstream {
  /** e.g. http://127.0.0.1:PORT (OpenAI-compatible at `${base}/v1`, Anthropic at base). */
  base: string;
  /** Replies to give, in order; `{}` when empty. */
  next: Reply[];
  /** What it received. */
  seen: { path: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

export async function startUpstream(): Promise<Upstream> {
  const up = { next: [] as Reply[], seen: [] as Upstream['seen'] };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c; });
    req.on('end', () => {
      up.seen.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(raw) as Record<string, unknown> });
      const r = up.next.shift() ?? { body: '{}' };
      res.writeHead(r.status ?? 200, { 'content-type': r.type ?? 'application/json' });
      res.end(r.body);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(up, { base, close: () => new Promise<void>((ok) => server.close(() => ok())) });
}

/** An OpenAI chat completion whose reply is `text`. */
export const completion = (text: string) => JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }] });
