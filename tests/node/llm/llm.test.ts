import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { anthropic, openaiCompatible, type Memory } from '../../../src/index.js';
import type { ChatMessage } from '../../../src/contracts/types.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

/**
 * One scripted reply: status, raw body, headers; `hold`: no answer at all (the client gives up), and `arrived` is
 * called once the request is in. Requests beyond the script get `fallback`.
 */
interface Reply { status?: number; body?: string; headers?: Record<string, string>; hold?: boolean; arrived?: () => void }
let script: Reply[] = [];
let fallback: (req: { path: string; body: Record<string, unknown> }) => Reply;
const seen: { path: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }[] = [];
let server: Server;
let base: string;

const openaiReply = (content: string) => JSON.stringify({ model: 'test-model', choices: [{ message: { role: 'assistant', content } }], usage: { prompt_tokens: 100, completion_tokens: 20 } });
const anthropicReply = (text: string) => JSON.stringify({ model: 'claude-test', content: [{ type: 'text', text }], usage: { input_tokens: 50, output_tokens: 10 } });

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c; });
    req.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      seen.push({ path: req.url ?? '', headers: req.headers, body });
      const r = script.shift() ?? fallback({ path: req.url ?? '', body });
      r.arrived?.();
      if (r.hold || res.destroyed) return;
      res.writeHead(r.status ?? 200, { 'content-type': 'application/json', ...r.headers });
      res.end(r.body ?? '');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));
beforeEach(() => { script = []; seen.length = 0; fallback = () => ({ body: openaiReply('{"tags": ["general"], "relatedTags": []}') }); });

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

const ask = { messages: [{ role: 'user' as const, content: 'hi' }] };

describe('LLM providers over fetch', () => {
  it('OpenAI-compatible: retries 429 and 5xx with backoff (Retry-After honoured), then answers', async () => {
    const llm = openaiCompatible({ baseUrl: `${base}/v1`, model: 'm', apiKey: 'k', retryDelayMs: 5 });
    script = [{ status: 429, body: 'slow down', headers: { 'retry-after': '0' } }, { status: 503, body: 'busy' }, { body: openaiReply('hello') }];
    const r = await llm.complete(ask);
    expect(r).toEqual({ text: 'hello', model: 'test-model', usage: { inputTokens: 100, outputTokens: 20 } });
    expect(seen).toHaveLength(3);
    expect(seen[0]!.headers.authorization).toBe('Bearer k');
    expect(seen[0]!.body).toMatchObject({ model: 'm', messages: ask.messages, stream: false });
  });

  it('fails with typed errors: retries exhausted, a 4xx at once, a slow server, a malformed reply, an abort', async () => {
    const llm = openaiCompatible({ baseUrl: `${base}/v1`, model: 'm', retryDelayMs: 1, maxRetries: 2 });
    script = [{ status: 500, body: 'a' }, { status: 500, body: 'b' }, { status: 500, body: 'c' }];
    await expect(llm.complete(ask)).rejects.toMatchObject({ code: 'LLM_ERROR', message: expect.stringMatching(/HTTP 500 after 3 attempt/) });
    script = [{ status: 401, body: 'bad key' }];
    seen.length = 0;
    await expect(llm.complete(ask)).rejects.toMatchObject({ code: 'LLM_ERROR', message: expect.stringMatching(/401.*API key/) });
    expect(seen).toHaveLength(1);
    // A server that never answers: each attempt ends at timeoutMs (a client of its own, so that no other call here
    // depends on answering within 300 ms).
    const impatient = openaiCompatible({ baseUrl: `${base}/v1`, model: 'm', retryDelayMs: 1, maxRetries: 2, timeoutMs: 300 });
    script = [{ hold: true }, { hold: true }, { hold: true }];
    await expect(impatient.complete(ask)).rejects.toMatchObject({ code: 'LLM_ERROR', message: expect.stringMatching(/did not answer within 300 ms/) });
    script = [{ body: '<html>oops' }];
    await expect(llm.complete(ask)).rejects.toMatchObject({ code: 'LLM_ERROR', message: expect.stringMatching(/other than JSON/) });
    script = [{ body: JSON.stringify({ choices: [] }) }];
    await expect(llm.complete(ask)).rejects.toMatchObject({ code: 'LLM_ERROR' });
    // Aborted by the caller while the request waits for its answer.
    const controller = new AbortController();
    script = [{ hold: true, arrived: () => controller.abort(new Error('user left')) }];
    await expect(llm.complete({ ...ask, signal: controller.signal })).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it('Anthropic messages: system prompt apart, version and key headers, text blocks and usage', async () => {
    const llm = anthropic({ provider: 'anthropic', baseUrl: base, model: 'claude-test', apiKey: 'sk-ant', retryDelayMs: 1 });
    script = [{ status: 529, body: '{"type":"error"}' }, { body: anthropicReply('{"ok": true}') }];
    const r = await llm.complete({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }], json: true, maxTokens: 50 });
    expect(r).toEqual({ text: '{"ok": true}', model: 'claude-test', usage: { inputTokens: 50, outputTokens: 10 } });
    const last = seen.at(-1)!;
    expect(last.path).toBe('/v1/messages');
    expect(last.headers['x-api-key']).toBe('sk-ant');
    expect(last.headers['anthropic-version']).toBe('2023-06-01');
    expect(last.body).toMatchObject({ model: 'claude-test', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    expect(String(last.body.system)).toMatch(/^Be brief\.\n\nReply with one JSON object only/);
    script = [{ body: JSON.stringify({ content: [] }) }];
    await expect(llm.complete(ask)).rejects.toMatchObject({ code: 'LLM_ERROR' });
  });
});

function chat(pairs: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; i < pairs; i++) {
    const topic = i < pairs / 2 ? 'architecture of the billing service' : 'debugging the flaky login test';
    out.push(user(`Question ${i} on the ${topic}: which approach should we take for part ${i} and why does it matter for the release?`),
      assistant(`On the ${topic}, part ${i}: we chose approach ${i} because it keeps the release safe; the owner is Dana and the deadline is Friday.`));
  }
  return out;
}

describe('LLM summaries and the usage ledger', () => {
  it('summarizes each segment with the turns around it and the tag rules\' prompts, adds tags, and records cost', async () => {
    fallback = ({ body }) => {
      const prompt = JSON.stringify(body.messages);
      if (prompt.includes('compress part of a conversation')) return { body: openaiReply(JSON.stringify({ summary: 'Dana owns the release; approaches chosen per part.', tags: ['Release Planning'], relatedTags: ['shipping'] })) };
      return { body: openaiReply('{"tags": ["architecture", "billing"], "relatedTags": ["payments"]}') };
    };
    memory = await createMemory({
      contextWindow: 3000, compaction: false, tagger: 'keyword',
      llm: { baseUrl: `${base}/v1`, model: 'test-model', pricing: { inputPerMillion: 1, outputPerMillion: 2 } },
      tagRules: [{ match: '*', summaryPrompt: 'Always name the owner and the deadline.' }],
    });
    await memory.onTurnComplete({ conversationId: 'c', messages: chat(30) });
    const report = await memory.compact('c');
    expect(report!.fallbacks).toBe(0);
    const segments = await memory.summaries('c', { kind: 'segment' });
    expect(segments.every((s) => s.madeBy === 'llm:test-model' && s.text.startsWith('Dana owns'))).toBe(true);
    expect(segments.every((s) => s.tags.includes('release-planning') && s.relatedTags.includes('shipping'))).toBe(true);
    const prompts = seen.map((r) => JSON.stringify(r.body.messages)).filter((p) => p.includes('compress part of a conversation'));
    // The turns around the segment, each quoted in its own block (JSON-escaped here).
    expect(prompts.some((p) => p.includes('<excerpt part=\\"before\\">') && p.includes('<excerpt part=\\"after\\">'))).toBe(true);
    expect(prompts.every((p) => p.includes('Always name the owner and the deadline.'))).toBe(true);
    const cost = await memory.costReport('c');
    const line = cost.lines.find((l) => l.purpose === 'summarize')!;
    expect(line.calls).toBe(prompts.length);
    expect(line.inputTokens).toBe(100 * prompts.length);
    expect(line.cost).toBeCloseTo((100 * 1 + 20 * 2) * prompts.length / 1e6, 12);
    expect(cost.total.calls).toBe(seen.length);
  });

  it('an LLM that fails summarizes extractively instead (and says so), without losing anything', async () => {
    fallback = () => ({ status: 500, body: 'down' });
    memory = await createMemory({ contextWindow: 3000, compaction: false, tagger: 'keyword', llm: { baseUrl: `${base}/v1`, model: 'test-model', maxRetries: 0 } });
    await memory.onTurnComplete({ conversationId: 'c', messages: chat(30) });
    const report = await memory.compact('c');
    expect(report!.fallbacks).toBe(report!.segmentsCompacted);
    const segments = await memory.summaries('c', { kind: 'segment' });
    expect(segments.every((s) => s.madeBy === 'extractive (llm:test-model failed)')).toBe(true);
    expect(segments[0]!.text).toMatch(/Dana|Friday/);
    expect((await memory.costReport()).total.failures).toBeGreaterThan(0);
  });
});

describe('private messages', () => {
  it('are stored and recalled verbatim, but reach no LLM tagger or summarizer and no summary', async () => {
    const SECRET = 'Zanthrope';
    fallback = ({ body }) => {
      const prompt = JSON.stringify(body.messages);
      if (prompt.includes('compress part of a conversation')) return { body: openaiReply(JSON.stringify({ summary: 'They talked about the garden.', tags: [], relatedTags: [] })) };
      return { body: openaiReply('{"tags": ["garden"], "relatedTags": []}') };
    };
    memory = await createMemory({ contextWindow: 1500, reserveTokens: 300, llm: { baseUrl: `${base}/v1`, model: 'test-model' } });
    const messages: ChatMessage[] = [];
    for (let i = 0; i < 24; i++) {
      const secret = i === 4;
      messages.push(user(secret ? `My diagnosis code is ${SECRET}; keep it between us.` : `Garden question ${i}: when do I water the beans?`, secret ? { private: true, id: 'p1' } : {}),
        assistant(`Water the beans in the morning (${i}).`));
    }
    await memory.onTurnComplete({ conversationId: 'c', messages });
    await memory.compact('c');
    await memory.flush();
    expect(seen.length).toBeGreaterThan(0);
    const prompts = seen.map((r) => JSON.stringify(r.body));
    expect(prompts.some((p) => p.includes('compress part of a conversation') && p.includes('a private message, left out of summaries'))).toBe(true);
    expect(prompts.filter((p) => p.includes(SECRET))).toEqual([]);
    expect((await memory.summaries('c')).map((x) => x.text).join('\n')).not.toContain(SECRET);
    const stored = (await memory.turns('c')).find((t) => t.id === 'p1')!;
    expect(stored).toMatchObject({ private: true, content: `My diagnosis code is ${SECRET}; keep it between us.` });
    // A private question is tagged locally too.
    seen.length = 0;
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user(`What was my diagnosis code, the ${SECRET} one?`, { private: true }) });
    expect(seen.filter((r) => JSON.stringify(r.body).includes(SECRET))).toEqual([]);
    expect(ctx.recallText).toContain(`My diagnosis code is ${SECRET}`);
    expect((await memory.export('c')).conversations[0]!.turns.find((t) => t.id === 'p1')).toMatchObject({ private: true });
    await expect(memory.onTurnComplete({ conversationId: 'c', messages: [user('x', { private: 'yes' } as never)] })).rejects.toMatchObject({ code: 'INVALID_MESSAGE' });
  });
});
