// The standing fault suite, part 5: the surfaces on the engine under generated hostile input.
// - memoryProxy (with `authenticate`: bearer token → user): random JSON bodies, messages with null/arrays/objects in
//   every field, tool_calls [null], Anthropic content [null], huge bodies, odd headers, unauthenticated and
//   wrong-token requests, one user naming another's conversation. Every answer is a Response with a status < 500
//   unless the upstream sent it; a refused request (4xx) forwards and stores nothing; 401/403 without credentials;
//   no upstream request ever holds the other user's words, and no conversation is written by two users.
// - The MCP server (the SDK's client in-process): tools, prompts and resources with hostile arguments; a refusal is a
//   typed error result (pagewise's code, or the SDK's invalid-params) that changed nothing; every answer is sealed
//   (fault-breakout.ts).
// - The CLI (`node dist/src/surfaces/cli.js`, or src/surfaces/cli.ts through tsx when dist is older than src): broken import files and
//   odd flags exit 0, 1 or 2 without a stack trace; a refused import stores nothing; recall, retrieve and transform
//   of injected conversations are sealed.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, type Memory, memoryProxy } from '../../../src/index.js';
import { createMcpServer } from '../../../src/surfaces/mcp.js';
import { BreakoutTally } from '../../support/fault-breakout.js';
import { FAULT_SEED, NASTY_STRINGS, TWIN_IDS, hostileString, show } from '../../support/fault-inputs.js';
import { PAYLOADS, QUESTION, filler, oneLine, payloadMessages } from '../../support/fault-payloads.js';
import { completion, message, startUpstream, type Reply } from '../../support/upstream.js';
import { createMemory } from '../../support/helpers.js';

const tally = new BreakoutTally();
const figures: string[] = [];
afterAll(() => {
  console.log(`fault surfaces (fast-check seed ${FAULT_SEED}):\n${figures.join('\n')}\nbreakouts per surface (outputs checked):\n${tally.report()}\ntotal breakouts: ${tally.total()}`);
});

/** Counts of one surface's run, printed at the end. */
class Figures {
  calls = 0;
  readonly outcomes: Record<string, number> = {};
  readonly violations: Record<string, number> = {};
  readonly examples: string[] = [];
  outcome(what: string): void { this.outcomes[what] = (this.outcomes[what] ?? 0) + 1; }
  violation(kind: string, text: string): void {
    this.violations[kind] = (this.violations[kind] ?? 0) + 1;
    if (this.examples.length < 8) this.examples.push(`${kind}: ${text}`);
  }
  line(name: string): string {
    const v = Object.entries(this.violations);
    return `${name.padEnd(8)} ${String(this.calls).padStart(5)} calls | ${Object.entries(this.outcomes).sort().map(([k, n]) => `${k} ${n}`).join(', ')} | violations: ${v.length === 0 ? 0 : v.map(([k, n]) => `${k} ${n}`).join(', ')}`;
  }
}

// ---- memoryProxy ----

const TOKENS = new Map([['tok-alice', 'alice'], ['tok-bob', 'bob']]);
/** Each user's own word: it must never reach the upstream in the other user's request. */
const SECRET: Record<string, string> = { alice: 'qxalicesecretqx', bob: 'qxbobsecretqx' };
const authenticate = (request: Request): string | null => {
  const token = /^Bearer (\S+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
  return token !== undefined ? TOKENS.get(token) ?? null : null;
};

/** A header value as a client sends one: UTF-8 bytes, read as Latin-1 by the server; no NUL or line break. */
const headerValue = (s: string) => Buffer.from(s.replace(/[\0\r\n]/g, ''), 'utf8').toString('latin1');

const anyJson = fc.jsonValue({ maxDepth: 3 });
const odd = fc.oneof(fc.constant(null), fc.constant([]), fc.constant({}), fc.constant([null]), fc.integer(), fc.boolean(), hostileString, anyJson);
const often = <T>(good: fc.Arbitrary<T>) => fc.oneof({ weight: 3, arbitrary: good as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: odd });
const text = fc.oneof({ weight: 4, arbitrary: fc.constantFrom('How do we speed up the feed?', 'Plan the Rome trip', 'What did I say about the budget?') }, { weight: 1, arbitrary: hostileString }, { weight: 1, arbitrary: fc.constantFrom(...NASTY_STRINGS) });

const openAiMessage = fc.oneof(
  { weight: 4, arbitrary: fc.record({ role: fc.constantFrom('system', 'developer', 'user', 'assistant'), content: text }) },
  { weight: 3, arbitrary: fc.record({
    role: often(fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool')), content: often(fc.oneof(text, fc.array(fc.record({ type: often(fc.constant('text')), text: often(text) }, { requiredKeys: [] }), { maxLength: 2 }))),
    name: often(fc.constantFrom('Caroline', 'Mallory')), tool_call_id: often(fc.constantFrom('call_1')),
    tool_calls: fc.oneof(fc.constant([null]), fc.constant([{}]), fc.constant([{ function: null }]), fc.array(fc.record({ id: often(fc.constant('call_1')), type: often(fc.constant('function')), function: often(fc.record({ name: often(fc.constant('search')), arguments: often(fc.constant('{"q":1}')) }, { requiredKeys: [] })) }, { requiredKeys: [] }), { maxLength: 2 }), odd),
  }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: odd },
);
const anthropicBlock = fc.oneof(
  fc.constant(null), fc.constant([]), odd,
  fc.record({ type: often(fc.constant('text')), text: often(text) }, { requiredKeys: [] }),
  fc.record({ type: fc.constant('tool_use'), id: often(fc.constant('tu_1')), name: often(fc.constant('search')), input: often(anyJson) }, { requiredKeys: ['type'] }),
  fc.record({ type: fc.constant('tool_result'), tool_use_id: often(fc.constant('tu_1')), content: often(fc.oneof(text, fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 2 }))) }, { requiredKeys: ['type'] }),
);
const anthropicMessage = fc.oneof(
  { weight: 4, arbitrary: fc.record({ role: fc.constantFrom('user', 'assistant'), content: text }) },
  { weight: 3, arbitrary: fc.record({ role: often(fc.constantFrom('user', 'assistant')), content: fc.oneof(fc.constant([null]), fc.array(anthropicBlock, { maxLength: 3 }), odd) }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: odd },
);
/** Messages ending with a user's question most of the time, so that many requests get as far as the upstream. */
const withQuestion = (messages: fc.Arbitrary<unknown[]>) => fc.tuple(messages, fc.boolean(), text).map(([m, ask, q]) => (ask ? [...m, { role: 'user', content: q }] : m));

const body = fc.oneof(
  { weight: 5, arbitrary: fc.record({ anthropic: fc.boolean(), stream: fc.boolean(), q: fc.constantFrom('How do we speed up the feed?', 'Plan the Rome trip', 'What is my locker word?', 'What did bob say?') }).map(({ anthropic, stream, q }) => (anthropic
    ? { kind: 'anthropic-shaped', json: { model: 'claude', max_tokens: 50, stream, system: 'Be brief.', messages: [{ role: 'user', content: q }] } }
    : { kind: 'openai-shaped', json: { model: 'm', stream, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: q }] } })) },
  { weight: 6, arbitrary: fc.record({ model: often(fc.constant('m')), stream: fc.boolean(), messages: withQuestion(fc.array(openAiMessage, { maxLength: 4 })) }, { requiredKeys: ['messages'] }).map((b) => ({ kind: 'openai-shaped', json: b })) },
  { weight: 6, arbitrary: fc.record({ model: often(fc.constant('claude')), max_tokens: often(fc.constant(50)), system: often(text), stream: fc.boolean(), messages: withQuestion(fc.array(anthropicMessage, { maxLength: 4 })) }, { requiredKeys: ['messages'] }).map((b) => ({ kind: 'anthropic-shaped', json: b })) },
  { weight: 2, arbitrary: fc.oneof(fc.constant({ messages: [null] }), fc.constant({ messages: [{ role: 'user', content: [null] }] }), fc.constant({ messages: [{ role: 'assistant', tool_calls: [null] }, { role: 'user', content: 'hi' }] }), fc.constant({ messages: null }), fc.constant({ messages: {} }), fc.constant([])).map((json) => ({ kind: 'known-bad', json })) },
  { weight: 2, arbitrary: anyJson.map((json) => ({ kind: 'random-json', json })) },
  { weight: 2, arbitrary: fc.oneof(fc.string(), fc.constantFrom('', '{', '{"messages":[', 'null', '\uFEFF{"messages":[]}', '\u0000')).map((raw) => ({ kind: 'not-json', raw })) },
  { weight: 1, arbitrary: fc.constantFrom(
    { kind: 'huge', json: { model: 'm', messages: [{ role: 'user', content: `Large paste: ${'lorem ipsum '.repeat(200_000)}` }] } },
    { kind: 'huge', json: { model: 'm', messages: Array.from({ length: 3000 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `message ${i}` })) } },
    { kind: 'huge', json: { model: 'm', messages: [{ role: 'user', content: 'deep' }], extra: JSON.parse(`${'['.repeat(2000)}${']'.repeat(2000)}`) as unknown } },
  ) },
) as fc.Arbitrary<{ kind: string; json?: unknown; raw?: string }>;

const request = fc.record({
  who: fc.constantFrom('alice', 'alice', 'alice', 'bob', 'bob', 'none', 'wrong', 'malformed'),
  malformed: fc.constantFrom('Basic dG9rLWFsaWNl', 'Bearer', 'Bearer tok-alice tok-bob', 'bearer  TOK-ALICE', `Bearer ${'x'.repeat(8000)}`, 'Bearer tok-alice\u00A0', 'Bearer tok-\u00E0lice'),
  // 'natural': the path of the body's protocol.
  path: fc.oneof({ weight: 12, arbitrary: fc.constant('natural') }, { weight: 2, arbitrary: fc.constantFrom('/v1/chat/completions', '/v1/messages') }, { weight: 1, arbitrary: fc.constantFrom('/', '/v1/models', '/v1/chat/completions?x=1', '/v1/MESSAGES', '/v1/chat/completions/../messages', '//v1/messages', '/v1/chat/completions%00') }),
  method: fc.oneof({ weight: 10, arbitrary: fc.constant('POST') }, { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', 'OPTIONS', 'PATCH') }),
  conversation: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('c1', 'shared-id', 'shared-id') },
    // Another user's stored key, spelled as it may be stored, and twins of the shared id.
    { weight: 2, arbitrary: fc.constantFrom('bob:shared-id', 'alice:shared-id', 'bob%3Ashared-id', '../bob:shared-id', 'bob', 'shared-id ', ' shared-id', 'SHARED-ID', '\uFEFFshared-id', 'shared-id\u200F', ...TWIN_IDS) },
    { weight: 1, arbitrary: fc.constantFrom(undefined, '', ' ', 'x'.repeat(600)) },
    { weight: 1, arbitrary: hostileString },
  ),
  contentType: fc.constantFrom('application/json', 'application/json', 'text/plain', undefined, 'application/json; charset=utf-16', 'multipart/form-data; boundary=x'),
  extra: fc.array(fc.tuple(fc.constantFrom('x-api-key', 'x-pagewise-conversation', 'anthropic-version', 'x-forwarded-for', 'cookie', 'accept-encoding', 'x-pagewise-user'), hostileString), { maxLength: 2 }),
  reply: fc.constantFrom('ok', 'ok', 'ok', 'stream', 'status-500', 'status-429', 'not-json', 'cut-stream', 'status-503'),
  body,
}).map((r) => ({ ...r, path: r.path !== 'natural' ? r.path : r.body.kind === 'anthropic-shaped' ? '/v1/messages' : '/v1/chat/completions' }));

function upstreamReply(reply: string, anthropic: boolean): Reply {
  const okText = 'Sure, noted.';
  switch (reply) {
    case 'stream': return anthropic
      ? { type: 'text/event-stream', body: ['message_start', 'content_block_start'].map((t) => `event: ${t}\ndata: {"type":"${t}","index":0,"content_block":{"type":"text","text":""}}\n\n`).join('') + `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${okText}"}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n` }
      : { type: 'text/event-stream', body: `data: {"choices":[{"index":0,"delta":{"content":"${okText}"}}]}\n\ndata: [DONE]\n\n` };
    case 'cut-stream': return { type: 'text/event-stream', body: anthropic ? 'event: message_start\ndata: {"type":"message_start"}\n\n' : `data: {"choices":[{"index":0,"delta":{"content":"cut"}}]}\n\n` };
    case 'status-500': return { status: 500, body: '{"error":{"message":"upstream broke"}}' };
    case 'status-503': return { status: 503, body: '{"error":{"message":"overloaded"}}' };
    case 'status-429': return { status: 429, body: '{"error":{"message":"slow down"}}' };
    case 'not-json': return { body: 'this is not json' };
    default: return { body: anthropic ? message(okText) : completion(okText) };
  }
}

describe('memoryProxy under hostile requests (authenticate: bearer token → user)', () => {
  it('a Response below 500 unless the upstream sent it; refusals forward and store nothing; users stay apart', async () => {
    const up = await startUpstream();
    const memory = await createMemory();
    const f = new Figures();
    try {
      const pending: Promise<unknown>[] = [];
      const ctx = { waitUntil: (p: Promise<unknown>) => { pending.push(p); } };
      const handler = memoryProxy({ memory, authenticate, openai: { baseUrl: `${up.base}/v1`, apiKey: 'sk-up' }, anthropic: { baseUrl: up.base, apiKey: 'sk-up' } });
      const state = async () => new Map((await memory.conversations()).map((c) => [c.id, `${c.turns} ${c.updatedAt}`]));
      /** Which user's requests changed each stored conversation. */
      const writer = new Map<string, string>();
      const send = (r: ProxyRequest) => handler(build(r), ctx);
      // Each user's own conversation 'shared-id' (the same header id), holding the user's own word.
      for (const who of ['alice', 'bob']) {
        const before = await state();
        const res = await handler(new Request('http://proxy.test/v1/chat/completions', {
          method: 'POST', headers: { authorization: `Bearer tok-${who}`, 'x-pagewise-conversation': 'shared-id', 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `Remember: my locker word is ${SECRET[who]}.` }] }),
        }), ctx);
        expect(res.status).toBe(200);
        await res.text();
        await Promise.all(pending.splice(0));
        for (const [id, v] of await state()) if (before.get(id) !== v) writer.set(id, who);
      }
      if (writer.size !== 2) f.violation('one conversation written by two users', `alice's and bob's 'shared-id' are ${writer.size} stored conversation(s)`);

      await fc.assert(fc.asyncProperty(request as fc.Arbitrary<ProxyRequest>, async (r) => {
        f.calls++;
        const before = await state();
        const seen = up.seen.length;
        up.next.length = 0;
        up.next.push(upstreamReply(r.reply, r.path.includes('messages')));
        let res: unknown;
        try {
          res = await send(r);
        } catch (e) {
          f.violation('threw', `${String(e)} — ${show(r).slice(0, 300)}`);
          return;
        }
        if (!(res instanceof Response)) {
          f.violation('not a Response', show(r).slice(0, 300));
          return;
        }
        const answer = await res.text().catch((e: unknown) => `(body failed: ${String(e)})`);
        await Promise.all(pending.splice(0));
        const forwarded = up.seen.slice(seen);
        const after = await state();
        const changed = [...new Set([...before.keys(), ...after.keys()])].filter((id) => before.get(id) !== after.get(id));
        let code = '';
        try { code = res.status >= 400 ? String((JSON.parse(answer) as { error?: { code?: string } }).error?.code ?? '') : ''; } catch { code = ''; }
        f.outcome(`${res.status}${code ? ` ${code}` : ''}`);
        const what = `${r.who} ${r.method} ${r.path} [${r.body.kind}] conv ${JSON.stringify(r.conversation)} → ${res.status} ${answer.slice(0, 160)}`;
        const upstreamFailed = forwarded.length > 0 && ['status-500', 'status-503'].includes(r.reply);
        if (res.status >= 500 && !upstreamFailed) f.violation('5xx not from the upstream', what);
        if (forwarded.length > 1) f.violation('forwarded twice', what);
        const user = r.who === 'alice' || r.who === 'bob' ? r.who : null;
        if (user === null) {
          if (res.status !== 401 && res.status !== 403) f.violation('unauthenticated not 401/403', what);
          if (forwarded.length > 0) f.violation('unauthenticated request forwarded', what);
        }
        if (res.status >= 400 && res.status < 500 && forwarded.length === 0 && changed.length > 0) f.violation('refused request stored', `${what}; changed ${changed.join(', ')}`);
        if (changed.length > 0 && (user === null || forwarded.length === 0 || !['ok', 'stream'].includes(r.reply))) f.violation('stored without a good upstream reply', `${what}; changed ${changed.join(', ')}`);
        // The other user's words never go upstream in this user's request; no conversation gets two writers.
        const other = user === 'alice' ? 'bob' : user === 'bob' ? 'alice' : null;
        for (const sent of forwarded) {
          for (const name of ['alice', 'bob']) {
            if (name !== user && sent.raw.includes(SECRET[name]!)) f.violation('another user\'s memory forwarded', `${what} — ${name}'s word in the upstream request`);
          }
        }
        for (const id of changed) {
          const w = writer.get(id);
          if (w !== undefined && w !== user) f.violation('one conversation written by two users', `${what}; ${JSON.stringify(id)} was ${w}'s`);
          else if (user) writer.set(id, user);
        }
        if (other && forwarded.length > 0) f.outcome('forwarded');
      }), { seed: FAULT_SEED, numRuns: 600, endOnFailure: true });
      figures.push(f.line('proxy'));
      expect(f.examples, f.line('proxy')).toEqual([]);
      expect(f.outcomes.forwarded ?? 0, 'requests that got through to the upstream').toBeGreaterThan(60);
    } finally {
      await memory.close();
      await up.close();
    }
  }, 120_000);
});

type ProxyRequest = { who: string; malformed: string; path: string; method: string; reply: string; conversation: string | undefined; contentType: string | undefined; extra: [string, string][]; body: { kind: string; json?: unknown; raw?: string } };

/** The Request a generated description stands for (headers as a client would send them). */
function build(r: ProxyRequest): Request {
  const headers = new Headers();
  const auth = r.who === 'alice' ? 'Bearer tok-alice' : r.who === 'bob' ? 'Bearer tok-bob' : r.who === 'wrong' ? 'Bearer tok-mallory' : r.who === 'malformed' ? r.malformed : undefined;
  if (auth !== undefined) headers.set('authorization', headerValue(auth));
  if (r.conversation !== undefined) headers.set('x-pagewise-conversation', headerValue(r.conversation));
  if (r.contentType !== undefined) headers.set('content-type', r.contentType);
  for (const [name, value] of r.extra) headers.append(name, headerValue(value));
  const payload = r.body.raw ?? JSON.stringify(r.body.json);
  return new Request(`http://proxy.test${r.path}`, { method: r.method, headers, ...(r.method === 'GET' || r.method === 'HEAD' ? {} : { body: payload }) });
}

// ---- The MCP server ----

const mcpConversation = fc.oneof({ weight: 4, arbitrary: fc.constantFrom('m1', 'm2') }, { weight: 2, arbitrary: fc.constantFrom(...TWIN_IDS) }, { weight: 2, arbitrary: hostileString }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) });
const mcpText = fc.oneof(fc.constantFrom('What is the staging password rotation?', QUESTION), hostileString, fc.constantFrom(...PAYLOADS, ...NASTY_STRINGS));
const mcpMessage = fc.oneof(
  { weight: 4, arbitrary: fc.record({ role: fc.constantFrom('user', 'assistant'), content: mcpText, id: fc.string({ minLength: 1, maxLength: 8 }), name: fc.constantFrom('Caroline', oneLine(PAYLOADS[0]!, 80)) }, { requiredKeys: ['role', 'content'] }) },
  { weight: 1, arbitrary: fc.record({ role: fc.jsonValue({ maxDepth: 0 }), content: fc.jsonValue({ maxDepth: 1 }), toolCallId: fc.jsonValue({ maxDepth: 0 }), private: fc.jsonValue({ maxDepth: 0 }) }, { requiredKeys: [] }) },
);
const mcpArgs = fc.oneof(
  { weight: 6, arbitrary: fc.record({
    conversationId: mcpConversation, message: mcpText, messages: fc.oneof(fc.array(mcpMessage, { minLength: 1, maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })),
    tag: fc.oneof(fc.constantFrom('staging', 'vault', 'password'), hostileString), from: fc.oneof(fc.nat(10), fc.integer({ min: -5, max: -1 }), fc.double()),
    messageIds: fc.oneof(fc.array(fc.constantFrom('m-1', 'm-2', 'nope', '\uFEFFm-1'), { minLength: 1, maxLength: 2 }), fc.constant([]), fc.jsonValue({ maxDepth: 1 })),
  }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? v : { value: v })) },
);

describe('the MCP server under hostile arguments (the SDK client, in-process)', () => {
  it('tools, prompts and resources: typed refusals that change nothing, sealed answers', async () => {
    const memory = await createMemory({ topicsHint: true });
    const server = createMcpServer(memory);
    const client = new Client({ name: 'fault-surfaces', version: '1.0.0' });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(a), client.connect(b)]);
    const f = new Figures();
    const snapshot = async (m: Memory) => {
      const parts: unknown[] = [];
      for (const c of await m.conversations()) parts.push(c, await m.turns(c.id, { limit: 10_000 }), await m.pins(c.id), (await m.summaries(c.id)).length);
      return JSON.stringify(parts);
    };
    const textOf = (r: unknown) => ((r as { content?: { text?: string }[] }).content ?? []).map((c) => c.text ?? '').join('\n');
    /** A refusal's text: pagewise's JSON error with its code, or the SDK's invalid-params (schema) error. */
    const typedRefusal = (t: string) => {
      if (/^MCP error -32602: /.test(t)) return 'invalid-params';
      try {
        const code = (JSON.parse(t) as { error?: { code?: string } }).error?.code;
        return code !== undefined && (ERROR_CODES as readonly string[]).includes(code) ? code : null;
      } catch {
        return null;
      }
    };
    try {
      await memory.onTurnComplete({ conversationId: 'm1', messages: [
        { role: 'user', content: 'The staging database password rotates every Friday at noon.', id: 'm-1' },
        { role: 'assistant', content: 'Noted: staging rotates on Fridays at noon.', id: 'm-2' },
        ...payloadMessages(PAYLOADS[15]!, 1), ...filler(10),
      ] });
      await fc.assert(fc.asyncProperty(
        fc.oneof(
          { weight: 8, arbitrary: fc.record({ kind: fc.constant('tool'), name: fc.oneof({ weight: 12, arbitrary: fc.constantFrom('recall_context', 'remember', 'compact_context', 'expand_topic', 'domain_status', 'forget') }, { weight: 1, arbitrary: fc.constantFrom('nope', '', '__proto__') }), args: mcpArgs }) },
          { weight: 2, arbitrary: fc.record({ kind: fc.constant('prompt'), name: fc.constantFrom('recall', 'summarize_session', 'recall', 'nope'), args: mcpArgs }) },
          { weight: 1, arbitrary: fc.record({ kind: fc.constant('resource'), name: fc.constantFrom('tags', 'tag-summaries'), args: fc.tuple(fc.oneof(fc.constantFrom('m1', '%FF', '%2E%2E', 'm1%00', '%EF%BB%BFm1'), hostileString), fc.oneof(fc.constant('staging'), hostileString)) }) },
        ),
        async (call) => {
          f.calls++;
          const before = await snapshot(memory);
          const what = `${call.kind} ${call.name} ${show(call.args).slice(0, 200)}`;
          if (call.kind === 'tool') {
            let result: unknown;
            try {
              result = await client.callTool({ name: call.name, arguments: call.args as Record<string, unknown> });
            } catch (e) {
              f.violation('protocol error', `${what}: ${String(e)}`);
              return;
            }
            const t = textOf(result);
            if ((result as { isError?: boolean }).isError) {
              const code = typedRefusal(t);
              f.outcome(code ?? 'untyped');
              if (code === null) f.violation('untyped refusal', `${what}: ${t.slice(0, 200)}`);
              if (await snapshot(memory) !== before) f.violation('refused call changed what is stored', what);
              return;
            }
            f.outcome('result');
            const problems = tally.check(`mcp fuzz: ${call.name}`, t, what, true);
            if (problems.length > 0) f.violation('breakout', `${what}: ${problems[0]}`);
          } else if (call.kind === 'prompt') {
            const args = Object.fromEntries(Object.entries(call.args as Record<string, unknown>).filter(([k]) => k === 'conversationId' || k === 'message').map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
            try {
              const got = await client.getPrompt({ name: call.name, arguments: args });
              f.outcome('prompt');
              for (const m of got.messages) {
                // The new message itself ends the recall prompt: it is the caller's request, not stored data.
                const t = (m.content as { text?: string }).text ?? '';
                const asked = typeof args.message === 'string' && args.message !== '' && t.endsWith(args.message) ? t.slice(0, -args.message.length) : t;
                const problems = tally.check(`mcp fuzz: prompt ${call.name}`, asked, what);
                if (problems.length > 0) f.violation('breakout', `${what}: ${problems[0]}`);
              }
            } catch (e) {
              const m = /MCP error (-?\d+): ([^]*)/.exec(String((e as Error).message));
              // Invalid params (-32602), or a pagewise refusal named by its code in the message.
              const typed = m && (m[1] === '-32602' || /\[pagewise\] \[[a-z-]+\]/.test(m[2]!));
              f.outcome(typed ? `prompt refused ${m[1]}` : 'prompt untyped');
              if (!typed) f.violation('untyped prompt error', `${what}: ${String((e as Error).message).slice(0, 200)}`);
            }
          } else {
            const [conv, tag] = call.args as [string, string];
            const uri = call.name === 'tags' ? `pagewise://conversations/${conv}/tags` : `pagewise://conversations/${conv}/tags/${tag}/summaries`;
            try {
              const got = await client.readResource({ uri });
              f.outcome('resource');
              for (const c of got.contents) {
                const problems = tally.check('mcp fuzz: resources', (c as { text?: string }).text ?? '', what, true);
                if (problems.length > 0) f.violation('breakout', `${what}: ${problems[0]}`);
              }
            } catch (e) {
              const m = /MCP error (-?\d+): ([^]*)/.exec(String((e as Error).message));
              const typed = m && (['-32602', '-32002'].includes(m[1]!) || /\[pagewise\] \[[a-z-]+\]/.test(m[2]!));
              f.outcome(typed ? `resource refused ${m[1]}` : 'resource untyped');
              if (!typed) f.violation('untyped resource error', `${uri}: ${String((e as Error).message).slice(0, 200)}`);
            }
          }
        },
      ), { seed: FAULT_SEED, numRuns: 250, endOnFailure: true });
    } finally {
      figures.push(f.line('mcp'));
      await client.close();
      await server.close();
      await memory.close();
    }
    expect(f.examples, f.line('mcp')).toEqual([]);
    expect(f.outcomes.result ?? 0, 'tool calls that gave a result').toBeGreaterThan(30);
  }, 120_000);
});

// ---- The CLI ----

const ROOT = resolve(import.meta.dirname, '../../..');
const DIST = join(ROOT, 'dist/src/surfaces/cli.js');

/** The newest modification time under a folder (its .ts files). */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p));
    else if (/\.[jt]s$/.test(e.name)) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

/** How to run the CLI: the build when it is as new as the sources (npm run build), else the sources through tsx. */
function cliCommand(): { args: string[]; which: string } {
  let fresh = false;
  try { fresh = statSync(DIST).mtimeMs >= newest(join(ROOT, 'src')); } catch { fresh = false; }
  return fresh ? { args: [DIST], which: 'dist/src/surfaces/cli.js' } : { args: ['--import', 'tsx', join(ROOT, 'src/surfaces/cli.ts')], which: 'src/surfaces/cli.ts through tsx (dist is older than src: npm run build)' };
}

type Run = { code: number | null; out: string; err: string };
function runCli(cmd: string[], args: string[]): Promise<Run> {
  return new Promise((ok) => {
    const child = spawn(process.execPath, [...cmd, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => { out += c; });
    child.stderr.on('data', (c: Buffer) => { err += c; });
    child.on('close', (code) => ok({ code, out, err }));
  });
}

// A stack trace line ("    at fn (file:1:2)"), or an uncaught error's banner.
const STACK = /^\s+at .+(?:\(|:\d+:\d+)|^(?:node:internal|file:\/\/)\S*:\d+|Uncaught|UnhandledPromiseRejection/m;

describe('the CLI under broken files and odd flags', () => {
  it('exit 0, 1 or 2 and no stack trace; a refused import stores nothing; recall, retrieve and transform are sealed', async () => {
    const { args: cmd, which } = cliCommand();
    const dir = mkdtempSync(join(tmpdir(), 'pagewise-fault-cli-'));
    const f = new Figures();
    try {
      const db = join(dir, 'memory.sqlite3');
      const file = (name: string, content: string | Buffer) => { const p = join(dir, name); writeFileSync(p, content); return p; };
      const turn = (id: string, content: unknown, extra: Record<string, unknown> = {}) => ({ id, role: 'user', content, createdAt: '2025-01-01T00:00:00.000Z', ...extra });
      const exportOf = (conversations: unknown[], more: Record<string, unknown> = {}) => JSON.stringify({ format: 'pagewise', version: 1, exportedAt: '2025-01-01T00:00:00.000Z', conversations, aliases: [], ...more });
      const conv = (id: string, turns: unknown[], more: Record<string, unknown> = {}) => ({ id, createdAt: '2025-01-01T00:00:00.000Z', updatedAt: '2025-01-01T00:00:00.000Z', turns, pins: [], aliases: [], ...more });
      // Each broken import names its own conversation: none of them may be stored afterwards.
      const broken: [string, string][] = [
        ['not JSON', file('a.json', '{"format":"pagewise",')],
        ['an array', file('c.json', '[1,2,3]')],
        ['version 2', file('d.json', exportOf([conv('bad-version', [turn('t1', 'hello')])], { version: 2 }))],
        ['an invalid alias after good turns', file('e.json', exportOf([conv('bad-alias', [turn('t1', 'hello there'), turn('t2', 'general kenobi')], { aliases: [{ alias: '', tag: 'x', createdAt: '2025-01-01T00:00:00.000Z' }] })]))],
        ['a repeated message id', file('f.json', exportOf([conv('bad-repeat', [turn('t1', 'one'), turn('t1', 'two')])]))],
        ['a pin of no message', file('g.json', exportOf([conv('bad-pin', [turn('t1', 'one')], { pins: [{ messageId: 'nope' }] })]))],
        ['content [null]', file('h.json', exportOf([conv('bad-content', [turn('t1', [null])])]))],
        ['binary garbage', file('i.json', Buffer.from(Array.from({ length: 2048 }, (_, i) => (i * 7919) % 256)))],
        ['no such file', join(dir, 'missing.json')],
      ];
      // Each on a database of its own (one writer at a time), two at a time.
      const own = (i: number) => join(dir, `flags-${i}.sqlite3`);
      const flags: [string, string[]][] = [
        ['--window -1', ['status', '--db', own(0), '--window', '-1']],
        ['--embedder maybe', ['status', '--db', own(1), '--embedder', 'maybe']],
        ['--db a directory', ['status', '--db', dir]],
        ['an unknown flag', ['status', '--frobnicate', '--db', own(3)]],
        ['--config not JSON', ['status', '--db', own(4), '--config', file('cfg1.json', 'contextWindow: 8000')]],
        ['--config hostile values', ['status', '--db', own(5), '--config', file('cfg3.json', '{"contextWindow":"lots","tagRules":[null],"__proto__":{"x":1}}')]],
        ['forget -c with a BOM', ['forget', '-c', '\uFEFFbad-version', '--db', own(6), '--embedder', 'off', '--json']],
        ['export to a missing folder', ['export', '-o', join(dir, 'no/such/dir/x.json'), '--db', own(7)]],
      ];
      const check = (what: string, r: Run) => {
        f.calls++;
        f.outcome(`exit ${r.code}`);
        if (r.code !== 0 && r.code !== 1 && r.code !== 2) f.violation('exit code', `${what}: ${r.code} ${r.err.slice(0, 200)}`);
        if (STACK.test(r.err)) f.violation('stack trace', `${what}: ${r.err.slice(0, 300)}`);
      };
      for (const [what, path] of broken) check(`import ${what}`, await runCli(cmd, ['import', path, '--db', db, '--embedder', 'off', '--json']));
      for (let i = 0; i < flags.length; i += 2) {
        const pair = flags.slice(i, i + 2);
        const runs = await Promise.all(pair.map(([, args]) => runCli(cmd, args)));
        pair.forEach(([what], k) => check(what, runs[k]!));
      }
      // The injected conversations, imported from pagewise's format, then read back by each command.
      const injected = PAYLOADS.flatMap((p, i) => payloadMessages(p, i)).map((m, n) => ({ ...m, id: m.id ?? `p${n}`, createdAt: new Date(Date.UTC(2025, 0, 1, 0, n)).toISOString() }));
      const fill = filler(30).map((m, n) => ({ ...m, id: `f${n}`, createdAt: new Date(Date.UTC(2025, 1, 1, 0, n)).toISOString() }));
      const good = file('injected.json', exportOf([conv('inj', [...injected, ...fill]), conv('recent', injected.slice(0, 24))]));
      const imported = await runCli(cmd, ['import', good, '--db', db, '--embedder', 'off', '--json']);
      check('import the injected conversations', imported);
      expect(imported.code, imported.err).toBe(0);
      const status = await runCli(cmd, ['status', '--db', db, '--json']);
      check('status', status);
      const stored = ((JSON.parse(status.out) as { conversations: { id: string }[] }).conversations).map((c) => c.id);
      for (const id of stored.filter((x) => x.startsWith('bad-'))) f.violation('refused import stored', `conversation ${id} is stored`);
      expect(stored).toEqual(expect.arrayContaining(['inj', 'recent']));
      const window = ['--embedder', 'off', '--window', '4000'];
      const outputs: [string, string[]][] = [
        ['recall', ['recall', 'vault', '-c', 'inj']],
        ['retrieve --json', ['retrieve', '-c', 'inj', '-m', QUESTION, ...window]],
        ['transform', ['transform', '-c', 'recent', '-m', QUESTION, ...window]],
        ['transform --json', ['transform', '-c', 'recent', '-m', QUESTION, ...window, '--json']],
      ];
      for (let i = 0; i < outputs.length; i += 2) {
        const pair = outputs.slice(i, i + 2);
        // Each on its own copy of the database: one process opens a file at a time.
        const runs = await Promise.all(pair.map(([, args], k) => {
          const copy = join(dir, `copy-${i + k}.sqlite3`);
          copyFileSync(db, copy);
          return runCli(cmd, [...args, '--db', copy]);
        }));
        pair.forEach(([what], k) => {
          const r = runs[k]!;
          check(`cli ${what}`, r);
          if (r.code !== 0) f.violation('command failed', `${what}: ${r.err.slice(0, 200)}`);
          let problems: string[];
          if (what === 'transform --json') {
            // The messages to send: pagewise's parts (prependText, the recall block) are checked; the others are
            // the conversation's own messages, each in its own slot.
            const ctx = JSON.parse(r.out) as { prependText?: string; messages?: { role: string; content: unknown }[] };
            const recall = (ctx.messages ?? []).filter((m) => m.role === 'system' && typeof m.content === 'string' && m.content.includes('<prior-conversation>')).map((m) => m.content as string);
            problems = [ctx.prependText ?? '', ...recall].flatMap((t) => tally.check(`cli: ${what}`, t, what));
          } else {
            problems = tally.check(`cli: ${what}`, r.out, what, what.endsWith('--json'));
          }
          if (problems.length > 0) f.violation('breakout', `${what}: ${problems[0]}`);
        });
      }
    } finally {
      figures.push(`${f.line('cli')}  (ran ${which})`);
      rmSync(dir, { recursive: true, force: true });
    }
    expect(f.examples, f.line('cli')).toEqual([]);
  }, 180_000);
});
