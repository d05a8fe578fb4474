// Who may read a memory through the proxy: the reproducers of the trust-boundaries issue, kept as tests.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { memoryProxy, proxyConversationKey, type MemoryProxyOptions } from '../../../src/surfaces/proxy.js';
import { isPagewiseError, type Memory } from '../../../src/index.js';
import { createMemory } from '../../support/helpers.js';
import { completion, startUpstream, type Upstream } from '../../support/upstream.js';

let up: Upstream;
let memory: Memory;
let pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => { pending.push(p); } };
const settled = async () => { await Promise.all(pending); pending = []; };
beforeAll(async () => { up = await startUpstream(); });
afterAll(() => up.close());
beforeEach(async () => { up.next.length = 0; up.seen.length = 0; pending = []; memory = await createMemory(); });

const TOKENS = new Map([['tok-alice', 'alice'], ['tok-mallory', 'mallory']]);
const bearer = (r: Request) => TOKENS.get(r.headers.get('authorization')?.replace(/^Bearer /, '') ?? '') ?? null;
const make = (extra: Partial<MemoryProxyOptions>) => memoryProxy({ memory, openai: { baseUrl: `${up.base}/v1`, apiKey: 'sk-up' }, anthropic: { baseUrl: up.base, apiKey: 'sk-up' }, ...extra });
const chat = (content: string, headers: Record<string, string>, path = '/v1/chat/completions') =>
  new Request(`http://proxy.test${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model: 'm', max_tokens: 50, messages: [{ role: 'user', content }] }) });

/** Alice's conversation 'c1', stored through the proxy with her token. */
async function aliceSaysSecret(proxy: (r: Request, c?: typeof ctx) => Promise<Response>, headers: Record<string, string>): Promise<void> {
  up.next.push({ body: completion('Noted: the vault code is 7-7-3-zanzibar.') });
  expect((await proxy(chat('Remember: the vault code is 7-7-3-zanzibar.', headers), ctx)).status).toBe(200);
  await settled();
  up.seen.length = 0;
}

describe('memoryProxy: who may read a conversation', () => {
  it('a proxy with neither authenticate nor conversationOf is a typed error; allowAnonymous is explicit and warns once', () => {
    let thrown: unknown;
    try { memoryProxy({ memory, openai: { baseUrl: up.base } }); } catch (e) { thrown = e; }
    expect(isPagewiseError(thrown, 'INVALID_OPTIONS')).toBe(true);
    expect((thrown as Error).message).toMatch(/authenticate/);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    make({ allowAnonymous: true });
    make({ allowAnonymous: true });
    expect(warn.mock.calls.length).toBeLessThanOrEqual(1);
    warn.mockRestore();
  });

  it('no credentials, or wrong ones: 401, nothing forwarded, nothing stored', async () => {
    const proxy = make({ authenticate: bearer });
    for (const headers of [{ 'x-pagewise-conversation': 'c1' }, { 'x-pagewise-conversation': 'c1', authorization: 'Bearer tok-nobody' }, { authorization: 'Basic tok-alice' }] as Record<string, string>[]) {
      for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/other']) {
        const res = await proxy(chat('hello', headers, path), ctx);
        expect(res.status, `${JSON.stringify(headers)} ${path}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
        expect(await res.json()).toMatchObject({ error: { code: 'UNAUTHENTICATED' } });
      }
    }
    await settled();
    expect(up.seen).toHaveLength(0);
    expect(await memory.conversations()).toEqual([]);
  });

  it('the header only chooses among the caller\'s own conversations: mallory naming alice\'s c1 gets none of it', async () => {
    const proxy = make({ authenticate: bearer });
    await aliceSaysSecret(proxy, { authorization: 'Bearer tok-alice', 'x-pagewise-conversation': 'c1' });
    up.next.push({ body: completion('I do not know.') });
    expect((await proxy(chat('What is the vault code?', { authorization: 'Bearer tok-mallory', 'x-pagewise-conversation': 'c1' }), ctx)).status).toBe(200);
    // The alternative spellings of alice's key as a header id are mallory's conversations too.
    for (const id of [proxyConversationKey('alice', 'c1'), 'alice:c1', 'alice%3Ac1']) {
      up.next.push({ body: completion('I do not know.') });
      expect((await proxy(chat('What is the vault code?', { authorization: 'Bearer tok-mallory', 'x-pagewise-conversation': id }), ctx)).status).toBe(200);
    }
    await settled();
    expect(up.seen).toHaveLength(4);
    for (const s of up.seen) expect(JSON.stringify(s.body)).not.toContain('zanzibar');
    // Alice still reads hers; two users' `c1` are two memories.
    up.next.push({ body: completion('7-7-3-zanzibar.') });
    await proxy(chat('What is the vault code?', { authorization: 'Bearer tok-alice', 'x-pagewise-conversation': 'c1' }), ctx);
    expect(JSON.stringify(up.seen.at(-1)!.body)).toContain('zanzibar');
    await settled();
    const ids = (await memory.conversations()).map((c) => c.id).sort();
    expect(ids).toContain(proxyConversationKey('alice', 'c1'));
    expect(ids).toContain(proxyConversationKey('mallory', 'c1'));
    expect((await memory.turns(proxyConversationKey('alice', 'c1'))).map((t) => t.text).join(' ')).not.toContain('I do not know');
  });

  it('with conversationOf, the header is ignored: the app\'s own mapping decides (the reported bypass)', async () => {
    // The app derives the conversation from its auth; a client holding mallory's token sends alice's id in the header.
    const proxy = make({ conversationOf: (r) => { const u = bearer(r); return u ? `user-${u}` : null; } });
    await aliceSaysSecret(proxy, { authorization: 'Bearer tok-alice' });
    up.next.push({ body: completion('I do not know.') });
    const res = await proxy(chat('What is the vault code?', { authorization: 'Bearer tok-mallory', 'x-pagewise-conversation': 'user-alice' }), ctx);
    expect(res.status).toBe(200);
    expect(JSON.stringify(up.seen[0]!.body)).not.toContain('zanzibar');
    await settled();
    expect((await memory.turns('user-mallory')).map((t) => t.text)).toEqual(['What is the vault code?', 'I do not know.']);
    // No user: 401 before anything.
    expect((await proxy(chat('hi', { 'x-pagewise-conversation': 'user-alice' }), ctx)).status).toBe(401);
    expect(up.seen).toHaveLength(1);
  });

  it('memory as a function gets the stored key and the caller (one Durable Object per user and conversation)', async () => {
    const calls: unknown[] = [];
    const proxy = make({ authenticate: bearer, memory: (key, caller) => { calls.push([key, caller]); return memory; } });
    up.next.push({ body: completion('ok') });
    await proxy(chat('hi', { authorization: 'Bearer tok-alice', 'x-pagewise-conversation': 'chat 7' }), ctx);
    expect(calls).toEqual([[proxyConversationKey('alice', 'chat 7'), { user: 'alice', conversationId: 'chat 7' }]]);
  });
});

describe('memoryProxy: the provider key stays server-side', () => {
  it('an upstream that echoes the key in its error body: the client gets the error without the key', async () => {
    const proxy = memoryProxy({ memory, authenticate: bearer, openai: { baseUrl: `${up.base}/v1`, apiKey: 'sk-live-4f9a8b7c6d5e' } });
    up.next.push({ status: 400, body: JSON.stringify({ error: { message: 'Bad request sent with key sk-live-4f9a8b7c6d5e. Find your key at …' } }) });
    const res = await proxy(chat('hi', { authorization: 'Bearer tok-alice', 'x-pagewise-conversation': 'c1' }), ctx);
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toContain('Bad request sent with key');
    expect(text).not.toContain('sk-live-4f9a8b7c6d5e');
    // A refusal of the server's key itself is pagewise's own error, none of the upstream's body (sync-trust.test.ts).
    up.next.push({ status: 401, body: JSON.stringify({ error: { message: 'Incorrect API key provided: sk-live-4f9a8b7c6d5e. Find your key at …' } }) });
    const refused = await proxy(chat('hi', { authorization: 'Bearer tok-alice', 'x-pagewise-conversation': 'c1' }), ctx);
    expect(refused.status).toBe(502);
    expect(await refused.text()).not.toContain('Incorrect API key provided');
  });
});

describe('memoryProxy: hostile bodies get a 4xx with pagewise\'s error, forward and store nothing', () => {
  const bodies: [string, string, unknown][] = [
    ['openai', 'messages [null]', { messages: [null] }],
    ['openai', 'messages [1, "x", []]', { messages: [1, 'x', []] }],
    ['openai', 'tool_calls [null]', { messages: [{ role: 'assistant', content: null, tool_calls: [null] }, { role: 'user', content: 'hi' }] }],
    ['openai', 'tool_calls not an array', { messages: [{ role: 'assistant', content: 'x', tool_calls: 'call' }, { role: 'user', content: 'hi' }] }],
    ['openai', 'tool call without function', { messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c' }] }, { role: 'user', content: 'hi' }] }],
    ['openai', 'content [null]', { messages: [{ role: 'user', content: [null] }] }],
    ['openai', 'content a number', { messages: [{ role: 'user', content: 42 }] }],
    ['openai', 'name an object', { messages: [{ role: 'user', content: 'hi', name: { a: 1 } }] }],
    ['openai', 'unknown role', { messages: [{ role: 'wizard', content: 'hi' }, { role: 'user', content: 'hi' }] }],
    ['openai', 'empty user message', { messages: [{ role: 'user', content: '' }] }],
    ['openai', 'a JSON array body', []],
    ['openai', 'a JSON null body', null],
    ['openai', 'messages a string', { messages: 'hi' }],
    ['anthropic', 'content [null]', { messages: [{ role: 'user', content: [null] }] }],
    ['anthropic', 'messages [null]', { messages: [null] }],
    ['anthropic', 'content an object', { messages: [{ role: 'user', content: { text: 'hi' } }] }],
  ];
  for (const [kind, what, body] of bodies) {
    it(`${kind}: ${what}`, async () => {
      const proxy = make({ authenticate: bearer });
      const res = await proxy(new Request(`http://proxy.test${kind === 'openai' ? '/v1/chat/completions' : '/v1/messages'}`, {
        method: 'POST', headers: { authorization: 'Bearer tok-alice', 'x-pagewise-conversation': 'c1', 'content-type': 'application/json' }, body: JSON.stringify(body),
      }), ctx);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      const json = await res.json() as { error: { type: string; code: string; message: string } };
      expect(json.error.type).toBe('pagewise_error');
      expect(json.error.code).toMatch(/^[A-Z_]+$/);
      await settled();
      expect(up.seen).toHaveLength(0);
      expect(await memory.conversations()).toEqual([]);
    });
  }

  it('a header id that is not a valid id (control characters, too long) is a 400', async () => {
    const proxy = make({ authenticate: bearer });
    for (const id of ['x'.repeat(600), ' ']) {
      const res = await proxy(chat('hi', { authorization: 'Bearer tok-alice', 'x-pagewise-conversation': id }), ctx);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: 'INVALID_CONVERSATION_ID' } });
    }
    expect(up.seen).toHaveLength(0);
  });
});
