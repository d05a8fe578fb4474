import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { memoryProxy, proxyConversationKey } from '../../../src/surfaces/proxy.js';
import type { Memory } from '../../../src/index.js';
import { createMemory } from '../../support/helpers.js';
import { startUpstream, type Reply, type Upstream } from '../../support/upstream.js';

let up: Upstream;
let next: Reply[];
let seen: Upstream['seen'];
let base: string;
const KEY = 'sk-upstream-secret';
// The client's own credential for the proxy (not the provider's key): its user is u1, and 'c1' is u1's conversation.
const C1 = proxyConversationKey('u1', 'c1');

const sse = (events: unknown[], end: string | null) => `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}${end ?? ''}`;
const anthropicSse = (events: { type: string }[]) => events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');

beforeAll(async () => { up = await startUpstream(); base = up.base; next = up.next; seen = up.seen; });
afterAll(() => up.close());

let memory: Memory;
let pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => { pending.push(p); } };
beforeEach(async () => { next.length = 0; seen.length = 0; pending = []; memory = await createMemory(); });

const proxy = () => memoryProxy({ memory, authenticate: (r) => (r.headers.get('authorization') === 'Bearer client-key' ? 'u1' : null), openai: { baseUrl: `${base}/v1`, apiKey: KEY }, anthropic: { baseUrl: base, apiKey: KEY } });
const post = (path: string, body: unknown, headers: Record<string, string> = { 'x-pagewise-conversation': 'c1' }) =>
  new Request(`http://proxy.test${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer client-key', ...headers }, body: JSON.stringify(body) });
const settled = async () => { await Promise.all(pending); pending = []; };

describe('memoryProxy: OpenAI chat completions', () => {
  it('injects memory as system text, passes the reply untouched, stores the exchange after it; the key stays server-side', async () => {
    const handler = proxy();
    const completion = { id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'Deploys go out on Tuesdays.' }, finish_reason: 'stop' }] };
    next.push({ body: JSON.stringify(completion) });
    const res = await handler(post('/v1/chat/completions', { model: 'm', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Our deploys go out on Tuesdays.' }] }), ctx);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(JSON.stringify(completion));
    await settled();
    expect((await memory.turns(C1)).map((t) => t.text)).toEqual(['Our deploys go out on Tuesdays.', 'Deploys go out on Tuesdays.']);
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    // The client sends only its new message: the stored exchange goes upstream with it.
    next.push({ type: 'text/event-stream', body: sse([
      { choices: [{ index: 0, delta: { role: 'assistant', content: 'On ' } }] },
      { choices: [{ index: 0, delta: { content: 'Tuesdays.' } }] },
    ], 'data: [DONE]\n\n') });
    const streamed = await handler(post('/v1/chat/completions', { model: 'm', stream: true, messages: [{ role: 'user', content: 'When do deploys go out?' }] }), ctx);
    const text = await streamed.text();
    expect(text).toContain('"content":"On "');
    expect(text).toContain('data: [DONE]');
    expect(text).not.toContain(KEY);
    const sent = seen[1]!.body.messages as { role: string; content: string }[];
    expect(JSON.stringify(sent)).toContain('Our deploys go out on Tuesdays.');
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'When do deploys go out?' });
    await settled();
    expect((await memory.turns(C1)).map((t) => t.text).slice(-2)).toEqual(['When do deploys go out?', 'On Tuesdays.']);
  });

  it('stores tool calls as tool calls (streamed deltas joined)', async () => {
    next.push({ type: 'text/event-stream', body: sse([
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'lookup', arguments: '{"ci' } }] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: 'ty":"Oslo"}' } }] } }] },
    ], 'data: [DONE]\n\n') });
    await (await proxy()(post('/v1/chat/completions', { model: 'm', stream: true, messages: [{ role: 'user', content: 'Weather in Oslo?' }] }), ctx)).text();
    await settled();
    expect((await memory.turns(C1))[1]).toMatchObject({ toolCalls: [{ id: 'call_1', function: { name: 'lookup', arguments: '{"city":"Oslo"}' } }] });
  });

  it('upstream errors and malformed streams pass to the client and store nothing; no conversation header is a typed 400', async () => {
    next.push({ status: 429, body: '{"error":{"message":"slow down"}}' });
    const limited = await proxy()(post('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hello' }] }), ctx);
    expect(limited.status).toBe(429);
    expect(await limited.text()).toBe('{"error":{"message":"slow down"}}');
    next.push({ type: 'text/event-stream', body: sse([{ choices: [{ index: 0, delta: { content: 'cut off' } }] }], null) });
    await (await proxy()(post('/v1/chat/completions', { model: 'm', stream: true, messages: [{ role: 'user', content: 'hello' }] }), ctx)).text();
    next.push({ body: 'not json' });
    expect(await (await proxy()(post('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hello' }] }), ctx)).text()).toBe('not json');
    await settled();
    await expect(memory.turns(C1)).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    const missing = await proxy()(post('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, {}), ctx);
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: { code: 'INVALID_CONVERSATION_ID' } });
    expect(seen).toHaveLength(3);
  });
});

describe('memoryProxy: Anthropic messages', () => {
  it('memory goes into system; streamed and plain replies are stored; x-api-key is the server\'s', async () => {
    next.push({ body: JSON.stringify({ id: 'msg', type: 'message', role: 'assistant', content: [{ type: 'text', text: 'The locker code is 4-1-9.' }] }) });
    const res = await proxy()(post('/v1/messages', { model: 'claude', max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user', content: 'Remember: the locker code is 4-1-9.' }] }), ctx);
    expect(res.status).toBe(200);
    await settled();
    expect(seen[0]!.headers['x-api-key']).toBe(KEY);
    expect(seen[0]!.body.system).toBe('Be brief.');
    next.push({ type: 'text/event-stream', body: anthropicSse([
      { type: 'message_start' }, { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } as never,
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'It is ' } } as never,
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '4-1-9.' } } as never,
      { type: 'content_block_stop', index: 0 } as never, { type: 'message_stop' },
    ]) });
    const streamed = await proxy()(post('/v1/messages', { model: 'claude', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'What is the locker code?' }] }), ctx);
    expect(await streamed.text()).toContain('text_delta');
    await settled();
    expect(JSON.stringify(seen[1]!.body.messages)).toContain('the locker code is 4-1-9');
    expect((await memory.turns(C1)).map((t) => t.text).slice(-2)).toEqual(['What is the locker code?', 'It is 4-1-9.']);
  });
});
