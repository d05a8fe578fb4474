// What the HTTP surfaces trust and hand out: remoteMemory follows no redirect and reads no reply past its cap; one
// memory is never both a proxy's (every caller's conversations) and a sync endpoint's (all of it to every caller);
// the proxy hands no part of the server's provider key to a client. The only doubles are remote servers, as local
// HTTP servers speaking the real protocols.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isPagewiseError, remoteMemory, syncEndpoint, type Memory } from '../../../src/index.js';
import { memoryProxy, proxyConversationKey } from '../../../src/surfaces/proxy.js';
import { assistant, createMemory, user } from '../../support/helpers.js';
import { completion, startUpstream, type Upstream } from '../../support/upstream.js';

type Seen = { url: string; headers: IncomingMessage['headers']; body: string };
type Server = { url: string; seen: Seen[]; close(): Promise<void> };

const servers: Server[] = [];
const opened: Memory[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  for (const m of opened.splice(0)) await m.close().catch(() => undefined);
});

const memory = async () => {
  const m = await createMemory();
  opened.push(m);
  return m;
};

/** A local server that records each request (its body read whole) and answers it with `answer`. */
async function serve(answer: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>): Promise<Server> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ url: req.url ?? '', headers: req.headers, body: body.toString('utf8') });
      void answer(req, res, body);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const s = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }) };
  servers.push(s);
  return s;
}

/** A fetch handler (syncEndpoint) served over real HTTP. */
const serveHandler = (handler: (request: Request) => Promise<Response>) => serve(async (req, res, body) => {
  const request = new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers: req.headers as Record<string, string>, ...(body.length > 0 ? { body: new Uint8Array(body) } : {}) });
  const response = await handler(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
});

const TOKENS = new Map([['tok-alice', 'alice'], ['tok-bob', 'bob']]);
const bearer = (r: Request) => TOKENS.get(r.headers.get('authorization')?.replace(/^Bearer /, '') ?? '') ?? null;
const caught = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e as { name?: string; code?: string; path?: string; message: string });
const SECRET = 'the vault code is 7-7-3-zanzibar';

describe('remoteMemory follows no redirect', () => {
  for (const status of [307, 308]) {
    it(`a ${status} to another origin: a typed error naming it; nothing, no token, reaches the other server`, async () => {
      // Elsewhere takes any caller (Node's fetch drops the token on a cross-origin redirect, not the batch).
      const elsewhere = await serveHandler(syncEndpoint({ memory: await memory(), authenticate: () => 'anyone' }));
      const first = await serve((_req, res) => { res.writeHead(status, { location: `${elsewhere.url}/v1/pagewise/sync` }); res.end(); });
      const laptop = await memory();
      await laptop.onTurnComplete({ conversationId: 'c1', messages: [user(`Remember: ${SECRET}.`), assistant('Noted.')] });
      const e = await caught(laptop.sync(remoteMemory(`${first.url}/v1/pagewise/sync`, { token: 'tok-alice' })));
      expect(isPagewiseError(e)).toBe(true);
      expect(e).toMatchObject({ code: 'INVALID_OPTIONS', path: 'url' });
      expect(e.message).toContain(`${elsewhere.url}/v1/pagewise/sync`);
      expect(e.message).toMatch(/final URL/);
      expect(first.seen).toHaveLength(1);
      expect(elsewhere.seen).toEqual([]);
    });
  }
});

describe('remoteMemory reads no reply past maxReplyBytes', () => {
  /** A server that streams `total` bytes of an unfinished JSON string, as fast as the client reads them, and counts what it wrote. */
  async function flood(total: number, headers: Record<string, string> = {}) {
    const state = { written: 0, closed: false };
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', ...headers });
      const chunk = Buffer.alloc(64 * 1024, 'a');
      res.on('close', () => { state.closed = true; });
      const pump = () => {
        while (!state.closed && state.written < total) {
          state.written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (state.written >= total) res.end();
      };
      res.write('{"value":"');
      pump();
    });
    return { url: server.url, state };
  }

  it('a 300 MB reply at the default cap (64 MB): MESSAGE_TOO_LARGE, the stream cancelled near the cap', async () => {
    const { url, state } = await flood(300_000_000);
    const e = await caught(remoteMemory(url, { token: 'tok-alice', timeoutMs: 120_000 }).syncState('laptop'));
    expect(e).toMatchObject({ name: 'PagewiseError', code: 'MESSAGE_TOO_LARGE' });
    expect(e.message).toMatch(/maxReplyBytes/);
    await expect.poll(() => state.closed, { timeout: 60_000 }).toBe(true);
    // What the server got out before the client hung up: the cap, and what sockets buffer on the way.
    expect(state.written).toBeLessThan(64_000_000 + 32_000_000);
  });

  it('a 300 MB reply at an 8 MB cap: memory stays near the cap, not the reply', async () => {
    // A small cap, so that garbage the collector has not reached yet (bounded by what was read) cannot blur the figure:
    // buffering the reply whole would show 300 MB; a reader that stops at the cap holds 8 MB plus socket buffers.
    const { url, state } = await flood(300_000_000);
    const base = process.memoryUsage().arrayBuffers;
    let peak = 0;
    const sample = setInterval(() => { peak = Math.max(peak, process.memoryUsage().arrayBuffers - base); }, 5);
    const e = await caught(remoteMemory(url, { token: 'tok-alice', timeoutMs: 120_000, maxReplyBytes: 8_000_000 }).syncState('laptop'));
    clearInterval(sample);
    expect(e).toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
    await expect.poll(() => state.closed, { timeout: 60_000 }).toBe(true);
    expect(state.written).toBeLessThan(8_000_000 + 32_000_000);
    expect(peak).toBeLessThan(100_000_000);
  });

  it('a declared length over a small cap is refused before the body is read', async () => {
    const { url, state } = await flood(300_000_000, { 'content-length': String(300_000_010) });
    const e = await caught(remoteMemory(url, { token: 'tok-alice', timeoutMs: 120_000, maxReplyBytes: 100_000 }).syncState('laptop'));
    expect(e).toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
    expect(e.message).toContain('100000');
    await expect.poll(() => state.closed, { timeout: 60_000 }).toBe(true);
    expect(state.written).toBeLessThan(32_000_000);
  });

  it('maxReplyBytes is validated at construction', () => {
    for (const bad of [0, -1, 1.5, '64MB']) {
      let thrown: unknown;
      try { remoteMemory('https://edge.example/v1/pagewise/sync', { token: 't', maxReplyBytes: bad as number }); } catch (e) { thrown = e; }
      expect(thrown).toMatchObject({ code: 'INVALID_OPTIONS', path: 'maxReplyBytes' });
    }
  });
});

describe('one memory is not both the proxy\'s and a sync endpoint\'s', () => {
  let up: Upstream;
  beforeAll(async () => { up = await startUpstream(); });
  afterAll(() => up.close());
  const proxyOf = (m: Memory | ((key: string, caller: { user: string | null }) => Memory)) => memoryProxy({ memory: m, authenticate: bearer, openai: { baseUrl: `${up.base}/v1`, apiKey: 'sk-up' } });
  const refusal = (build: () => unknown) => { try { build(); } catch (e) { return e as { code?: string; path?: string; message: string }; } throw new Error('expected a refusal'); };

  it('the proxy first, then syncEndpoint with the same memory object: INVALID_OPTIONS saying to pass one memory per user', async () => {
    const shared = await memory();
    proxyOf(shared);
    const e = refusal(() => syncEndpoint({ memory: shared, authenticate: bearer }));
    expect(e).toMatchObject({ code: 'INVALID_OPTIONS', path: 'memory' });
    expect(e.message).toMatch(/memory: \(user\) =>/);
  });

  it('syncEndpoint first, then the proxy with the same memory object: refused too', async () => {
    const shared = await memory();
    syncEndpoint({ memory: shared, authenticate: bearer });
    const e = refusal(() => proxyOf(shared));
    expect(e).toMatchObject({ code: 'INVALID_OPTIONS', path: 'memory' });
    expect(e.message).toMatch(/memory: \(user\) =>/);
    // One person's memory behind two endpoints, or one proxy's memory behind two proxies, is no leak.
    expect(() => syncEndpoint({ memory: shared, authenticate: bearer })).not.toThrow();
    const proxies = await memory();
    proxyOf(proxies);
    expect(() => proxyOf(proxies)).not.toThrow();
  });

  it('one memory per user behind both: alice syncs her conversation, bob\'s sync pulls none of it', async () => {
    const mine = new Map<string, Memory>();
    for (const u of ['alice', 'bob']) mine.set(u, await memory());
    const proxy = proxyOf((_key, caller) => mine.get(caller.user!)!);
    const endpoint = await serveHandler(syncEndpoint({ memory: (u) => mine.get(u)!, authenticate: bearer }));
    up.next.push({ body: completion('Noted.') });
    const pending: Promise<unknown>[] = [];
    const res = await proxy(new Request('http://proxy.test/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer tok-alice', 'x-pagewise-conversation': 'c1' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `Remember: ${SECRET}.` }] }),
    }), { waitUntil: (p) => { pending.push(p); } });
    expect(res.status).toBe(200);
    await Promise.all(pending);

    const alicesLaptop = await memory();
    expect(await alicesLaptop.sync(remoteMemory(endpoint.url, { token: 'tok-alice' }))).toMatchObject({ pulled: 2, conversations: [proxyConversationKey('alice', 'c1')] });
    const bobsLaptop = await memory();
    expect(await bobsLaptop.sync(remoteMemory(endpoint.url, { token: 'tok-bob' }))).toMatchObject({ pulled: 0 });
    expect(await bobsLaptop.conversations()).toEqual([]);
  });
});

describe('the proxy hands no part of the server\'s provider key to a client', () => {
  let up: Upstream;
  beforeAll(async () => { up = await startUpstream(); });
  afterAll(() => up.close());
  const KEY = 'sk-PROBe3Xq9vL2mN8kT5rW6789';
  const proxy = (extra: { forwardClientKey?: boolean } = {}) => memoryProxy({
    memory: (key) => byKey(key), authenticate: bearer, ...extra,
    openai: { baseUrl: `${up.base}/v1`, apiKey: KEY }, anthropic: { baseUrl: up.base, apiKey: KEY },
  });
  const kept = new Map<string, Memory>();
  const byKey = (key: string) => kept.get(key)!;
  beforeAll(async () => { kept.set(proxyConversationKey('alice', 'c1'), await createMemory()); });
  afterAll(async () => { for (const m of kept.values()) await m.close(); });
  const ask = (path: string, headers: Record<string, string> = {}) => proxy(headers['x-api-key'] ? { forwardClientKey: true } : {})(new Request(`http://proxy.test${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer tok-alice', 'x-pagewise-conversation': 'c1', ...headers },
    body: JSON.stringify({ model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }),
  }));

  // OpenAI's answer to a wrong key, as it is sent: 11 characters of the key in the message.
  const openaiRefusal = JSON.stringify({ error: { message: 'Incorrect API key provided: sk-PROB****6789. You can find your API key at https://platform.openai.com/account/api-keys.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
  const anthropicRefusal = (status: number) => JSON.stringify({ type: 'error', error: status === 401 ? { type: 'authentication_error', message: 'invalid x-api-key' } : { type: 'permission_error', message: 'Your API key does not have permission to use the specified resource.' }, request_id: 'req_011CSHoEeqs5C35K2UUqR7Fy' });

  it('OpenAI refuses the server\'s key (401): the client gets pagewise\'s UPSTREAM_ERROR, none of the upstream body', async () => {
    up.next.push({ status: 401, body: openaiRefusal });
    const res = await ask('/v1/chat/completions');
    expect(res.status).toBe(502);
    const text = await res.text();
    for (const part of ['PROB', '6789', 'sk-', 'Incorrect API key', 'invalid_api_key', KEY]) expect(text).not.toContain(part);
    const body = JSON.parse(text) as { error: { type: string; code: string; message: string } };
    expect(body.error).toMatchObject({ type: 'pagewise_error', code: 'UPSTREAM_ERROR' });
    expect(body.error.message).toMatch(/operator/);
    expect(body.error.message).toMatch(/apiKey/);
  });

  for (const status of [401, 403]) {
    it(`Anthropic refuses the server's key (${status}): the same, none of its error or request id`, async () => {
      up.next.push({ status, body: anthropicRefusal(status) });
      const res = await ask('/v1/messages');
      expect(res.status).toBe(502);
      const text = await res.text();
      for (const part of ['authentication_error', 'permission_error', 'x-api-key', 'req_011', 'request_id']) expect(text).not.toContain(part);
      expect(JSON.parse(text)).toMatchObject({ error: { type: 'pagewise_error', code: 'UPSTREAM_ERROR' } });
    });
  }

  it('another upstream error passes with its status and meaning, anything key-like redacted', async () => {
    const said = 'Rate limit reached for gpt-4o-mini (and claude-3-5-sonnet-20241022) in organization org-AbCdEf123456GhIjKl7890 on tokens per min. Key sk-proj-abcDEF123****XYZ9, sk-PROBe3Xq9vL2mN8kT5rW6789, gsk_8Hq2LmN4pR7tV1xZ3cB5dF9gJ0kW, AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI and x****************7f2a.';
    up.next.push({ status: 429, body: JSON.stringify({ error: { message: said, type: 'tokens', param: null, code: 'rate_limit_exceeded' } }) });
    const res = await ask('/v1/chat/completions');
    expect(res.status).toBe(429);
    const text = await res.text();
    const body = JSON.parse(text) as { error: { message: string; code: string } };
    expect(body.error.code).toBe('rate_limit_exceeded');
    expect(body.error.message).toContain('Rate limit reached for gpt-4o-mini (and claude-3-5-sonnet-20241022) in organization');
    for (const part of ['AbCdEf123456', 'sk-', '****', 'PROB', '8Hq2LmN4', 'AIzaSy', '7f2a']) expect(text).not.toContain(part);
  });

  it('with forwardClientKey, a refusal of the client\'s own key is the client\'s 401, any key in it redacted', async () => {
    up.next.push({ status: 401, body: anthropicRefusal(401).replace('invalid x-api-key', 'invalid x-api-key sk-ant-CLNT****9999') });
    const res = await ask('/v1/messages', { 'x-api-key': 'sk-ant-client-own-key-0000' });
    expect(res.status).toBe(401);
    const text = await res.text();
    expect(text).toContain('authentication_error');
    expect(text).not.toContain('CLNT');
    expect(up.seen.at(-1)!.headers['x-api-key']).toBe('sk-ant-client-own-key-0000');
  });
});
