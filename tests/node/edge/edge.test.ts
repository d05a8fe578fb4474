import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storageDriverCases } from '../../support/conformance/storage-driver.js';
import { bundleTestWorker, startTestWorker } from '../../support/edge-worker.js';

// Real workerd (Miniflare 4 drives the workerd binary): the test Worker is bundled as one ES module.
let mf: Miniflare;
const dir = mkdtempSync(join(tmpdir(), 'pagewise-edge-'));
let script = '';

const start = async () => {
  mf = await startTestWorker(dir, script, { UPSTREAM: upstream, UPSTREAM_KEY: KEY, CLIENT_TOKENS: 'client:u1,bobs-token:bob' });
};

// The proxy's upstream: a local server speaking OpenAI's chat completions (the one double: a remote LLM).
const KEY = 'sk-upstream-secret';
let upstream = '';
let upstreamServer: Server;
const replies: { status?: number; type?: string; body: string }[] = [];
const received: { headers: IncomingMessage['headers']; body: string }[] = [];

type Outcome = { value?: unknown; error?: { name?: string; code?: string; path?: string; message?: string } };
const call = async (object: string, method: string, ...args: unknown[]): Promise<Outcome> =>
  (await mf.dispatchFetch(`http://edge.test/call/memory/${encodeURIComponent(object)}/${method}`, { method: 'POST', body: JSON.stringify(args) })).json() as Promise<Outcome>;
const callUser = async (object: string, method: string, ...args: unknown[]): Promise<Outcome> =>
  (await mf.dispatchFetch(`http://edge.test/call/user/${encodeURIComponent(object)}/${method}`, { method: 'POST', body: JSON.stringify(args) })).json() as Promise<Outcome>;

beforeAll(async () => {
  upstreamServer = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c; });
    req.on('end', () => {
      received.push({ headers: req.headers, body: raw });
      const r = replies.shift() ?? { body: '{}' };
      res.writeHead(r.status ?? 200, { 'content-type': r.type ?? 'application/json' });
      res.end(r.body);
    });
  });
  await new Promise<void>((ok) => upstreamServer.listen(0, '127.0.0.1', ok));
  upstream = `http://127.0.0.1:${(upstreamServer.address() as AddressInfo).port}`;
  script = await bundleTestWorker(dir);
  await start();
}, 120_000);

afterAll(async () => {
  await mf?.dispose();
  await new Promise<void>((ok) => upstreamServer.close(() => ok()));
  rmSync(dir, { recursive: true, force: true });
});

describe('Durable Object SQL in workerd', () => {
  it('passes the storage conformance suite', async () => {
    const results = await (await mf.dispatchFetch('http://edge.test/conformance')).json() as { name: string; ok: boolean; error?: string }[];
    expect(results.map((r) => r.name)).toEqual(storageDriverCases.map((c) => c.name));
    for (const r of results) expect(r, r.name).toEqual({ name: r.name, ok: true });
  });
});

describe('PagewiseMemory: the engine in a Durable Object, over Workers RPC', () => {
  const turn = (i: number) => [
    { role: 'user', id: `u${i}`, content: i === 3 ? 'The staging database password rotates every Friday at noon.' : `Garden question ${i}: when should I water the beans, and how much, given the clay soil and the heat this week?` },
    { role: 'assistant', id: `a${i}`, content: i === 3 ? 'Noted: staging rotates on Fridays at noon.' : `Water the beans early in the morning (${i}), deeply rather than often, and mulch the clay so it keeps the water.` },
  ];

  it('stores, recalls, embeds through the Workers AI binding, and keeps its memory across a restart', async () => {
    for (let i = 0; i < 40; i++) expect((await call('c1', 'onTurnComplete', { conversationId: 'c1', messages: turn(i) })).error).toBeUndefined();
    const ctx = (await call('c1', 'onMessageInbound', { conversationId: 'c1', message: { role: 'user', content: 'When does the staging password rotate?' } })).value as { recallText: string; manifest: { kind: string }[] };
    expect(ctx.recallText).toContain('rotates every Friday at noon');
    // An alarm is set to finish background work if the object is evicted first: still set, or (the writes took longer
    // than its delay, on a busy machine) already run.
    const alarm = await (await mf.dispatchFetch('http://edge.test/alarm/c1')).json() as { at: number | null; ran: number };
    expect(alarm.at !== null || alarm.ran > 0, JSON.stringify(alarm)).toBe(true);
    await call('c1', 'flush');
    const status = (await call('c1', 'embeddingStatus', 'c1')).value as { embedded: number; total: number };
    expect(status.embedded).toBe(status.total);
    expect(await (await mf.dispatchFetch('http://edge.test/ai-calls')).json()).toBeGreaterThan(0);
    // A restart of workerd: the object comes back from its SQLite.
    await mf.dispose();
    await start();
    expect(((await call('c1', 'turns', 'c1')).value as unknown[]).length).toBe(80);
    const again = (await call('c1', 'onMessageInbound', { conversationId: 'c1', message: { role: 'user', content: 'When does the staging password rotate?' } })).value as { recallText: string };
    expect(again.recallText).toContain('rotates every Friday at noon');
  });

  it('a conversation\'s object answers for it only; errors keep their code across RPC', async () => {
    await call('c2', 'onTurnComplete', { conversationId: 'c2', messages: turn(1) });
    expect((await call('c2', 'turns', 'c1')).error).toMatchObject({ name: 'PagewiseError', code: 'INVALID_CONVERSATION_ID' });
    expect((await call('c2', 'turns', 'nope')).error).toMatchObject({ code: 'INVALID_CONVERSATION_ID' });
    expect(((await call('c2', 'conversations')).value as { id: string }[]).map((c) => c.id)).toEqual(['c2']);
    // No route into another conversation's turns: an import naming another conversation is refused too.
    const data = { format: 'pagewise', version: 1, exportedAt: '2026-01-01T00:00:00Z', aliases: [], conversations: [{ id: 'c1', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', pins: [], aliases: [], turns: [{ id: 'x', role: 'user', content: 'planted', createdAt: '2026-01-01T00:00:00Z' }] }] };
    expect((await call('c2', 'import', data)).error).toMatchObject({ code: 'INVALID_CONVERSATION_ID' });
    expect(((await call('c1', 'turns', 'c1')).value as { id: string }[]).map((t) => t.id)).not.toContain('x');
    expect((await call('c3', 'onTurnComplete', { conversationId: 'c3', messages: [{ role: 'bogus', content: 'x' }] })).error).toMatchObject({ code: 'INVALID_ROLE', path: 'messages[0].role' });
    const added = await call('c2', 'aliases.add', 'veg', 'garden', { conversationId: 'c2' });
    expect(added.value, JSON.stringify(added)).toMatchObject({ alias: 'veg', tag: 'garden' });
  });

  it('an import of no array is a typed error across RPC; callTool reads the object\'s own conversation only', async () => {
    const bad = { format: 'pagewise', version: 1, exportedAt: '2026-01-01T00:00:00Z', aliases: [], conversations: 'xy' };
    expect((await call('c5', 'import', bad)).error).toMatchObject({ name: 'PagewiseError', code: 'INVALID_ARGUMENT', path: 'data.conversations' });
    expect((await call('c5', 'onTurnComplete', { conversationId: 'c5', messages: turn(3) })).error).toBeUndefined();
    const own = await call('c5', 'callTool', 'pagewise_search', { query: 'staging password' }, { conversationId: 'c5' });
    expect((own.value as { content: string }).content).toContain('Friday at noon');
    // The tool's arguments are the model's: a conversationId there does not choose the conversation, the context does.
    expect((await call('c5', 'callTool', 'pagewise_search', { query: 'staging password', conversationId: 'c5' }, { conversationId: 'c6' })).error)
      .toMatchObject({ name: 'PagewiseError', code: 'INVALID_CONVERSATION_ID' });
    expect((await call('c5', 'aliases.add', { conversationId: 'c5' }, 'garden', { conversationId: 'c6' })).error).toMatchObject({ code: 'INVALID_CONVERSATION_ID' });
  });

  it('an import larger than one call may carry at the edge (30 s of CPU) is refused whole, saying how to split it', async () => {
    const turns = Array.from({ length: 10_001 }, (_, i) => ({ id: `m${i}`, role: i % 2 ? 'assistant' : 'user', content: `note ${i}`, createdAt: '2026-01-01T00:00:00Z' }));
    const big = { format: 'pagewise', version: 1, exportedAt: '2026-01-01T00:00:00Z', aliases: [], conversations: [{ id: 'c7', turns }] };
    const refused = await call('c7', 'import', big);
    expect(refused.error).toMatchObject({ name: 'PagewiseError', code: 'INVALID_ARGUMENT', path: 'data.conversations' });
    expect(refused.error!.message).toMatch(/at most 10000 .*onTurnComplete/);
    expect((await call('c7', 'turns', 'c7')).error).toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    const fits = { ...big, conversations: [{ id: 'c7', turns: turns.slice(0, 10_000) }] };
    expect((await call('c7', 'import', fits)).value).toMatchObject({ turns: 10_000 });
  });

  it('a long backlog is compacted a slice per event: the write takes one, alarms take the rest, even across a restart', async () => {
    const callSliced = async (method: string, ...args: unknown[]): Promise<Outcome> =>
      (await mf.dispatchFetch(`http://edge.test/call/sliced/s1/${method}`, { method: 'POST', body: JSON.stringify(args) })).json() as Promise<Outcome>;
    const progress = async () => (await mf.dispatchFetch('http://edge.test/progress/s1')).json() as Promise<{ alarms: number; alarmAt: number | null; unfinished: string[] }>;
    // How many alarms may run from now (null: any number): the test reads the state between slices while none runs.
    const allow = async (alarms: number | null) => expect((await mf.dispatchFetch('http://edge.test/allow/s1', { method: 'POST', body: JSON.stringify(alarms) })).status).toBe(204);
    const watermark = async () => Math.max(0, ...((await callSliced('summaries', 's1', { kind: 'segment' })).value as { lastSeq: number }[]).map((x) => x.lastSeq + 1));
    const turns = Array.from({ length: 450 }, (_, i) => turn(i)).flat().map((t, k) => ({ ...t, createdAt: new Date(Date.UTC(2026, 0, 1, 0, k)).toISOString() }));
    const data = { format: 'pagewise', version: 1, exportedAt: '2026-01-02T00:00:00Z', aliases: [], conversations: [{ id: 's1', turns }] };
    await allow(0);
    expect((await callSliced('import', data)).value).toMatchObject({ turns: 900 });
    // The import's own event compacts one slice (40 turns and the segments summarized alongside), no more.
    await callSliced('flush');
    const after = await watermark();
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThanOrEqual(40 + 4 * 12);
    expect((await progress()).unfinished).toEqual(['s1']);
    // compact() by hand at the edge is a slice too (the caller's maxTurns, else backgroundSliceTurns).
    const byHand = (await callSliced('compact', 's1')).value as { turnsCompacted: number; more?: boolean };
    expect(byHand.turnsCompacted).toBeGreaterThan(0);
    expect(byHand.turnsCompacted).toBeLessThanOrEqual(40 + 4 * 12);
    expect(byHand.more).toBe(true);
    // Two alarms, a slice each; then a restart partway: what is left is kept in the object's storage, and its alarm goes
    // on with it.
    await allow(2);
    await expect.poll(async () => (await progress()).alarms, { timeout: 120_000 }).toBe(2);
    const mid = await watermark();
    expect(mid).toBeGreaterThan(after + byHand.turnsCompacted);
    expect(mid).toBeLessThan(900 - 20);
    await allow(null);
    await mf.dispose();
    await start();
    await expect.poll(async () => (await progress()).unfinished, { timeout: 120_000 }).toEqual([]);
    const p = await progress();
    // Several alarms, each one slice: the whole backlog up to the protected recent turns, segments tiling it.
    expect(p.alarms).toBeGreaterThanOrEqual(900 / (40 + 4 * 12) - 3);
    const segments = ((await callSliced('summaries', 's1', { kind: 'segment' })).value as { firstSeq: number; lastSeq: number }[]).sort((a, b) => a.firstSeq - b.firstSeq);
    segments.forEach((x, i) => expect(x.firstSeq).toBe(i === 0 ? 0 : segments[i - 1]!.lastSeq + 1));
    expect(await watermark()).toBeGreaterThan(900 - 20);
    const ctx = (await callSliced('onMessageInbound', { conversationId: 's1', message: { role: 'user', content: 'When does the staging password rotate?' } })).value as { recallText: string };
    expect(ctx.recallText).toContain('Friday');
  });

  it('a fork early in a 1,200-turn conversation, and back: positions move in statements within the platform\'s limits', async () => {
    const o = 'forks';
    for (let b = 0; b < 6; b++) {
      const r = await call(o, 'onTurnComplete', { conversationId: o, messages: Array.from({ length: 100 }, (_, k) => turn(b * 100 + k)).flat() });
      expect(r.error, JSON.stringify(r.error)).toBeUndefined();
    }
    // An edit of the 11th question: the new branch has 10 exchanges before it.
    const edit = await call(o, 'onTurnComplete', { conversationId: o, messages: [{ role: 'user', id: 'e10', content: 'Edited: what about the tomatoes instead?' }, { role: 'assistant', id: 'f10', content: 'Tomatoes want sun.' }], parentId: 'a9' });
    expect(edit.error, JSON.stringify(edit.error)).toBeUndefined();
    const ids = async () => ((await call(o, 'turns', o, { limit: 2000 })).value as { id: string }[]).map((t) => t.id);
    expect(await ids()).toEqual([...Array.from({ length: 10 }, (_, i) => [`u${i}`, `a${i}`]).flat(), 'e10', 'f10']);
    const ctx = await call(o, 'onMessageInbound', { conversationId: o, message: { role: 'user', content: 'When should I water the beans?' } });
    expect((ctx.value as { head: string }).head).toBe('f10');
    // Back to the long branch: 1,190 turns move onto the path again, and its tags are made again.
    const back = await call(o, 'checkout', o, 'u10');
    expect(back.error, JSON.stringify(back.error)).toBeUndefined();
    expect((back.value as { head: string }).head).toBe('a599');
    expect(await ids()).toHaveLength(1200);
    const tree = (await call(o, 'branches', o)).value as { branches: unknown[]; forks: unknown[] };
    expect(tree.forks).toEqual([{ after: 'a9', starts: ['u10', 'e10'] }]);
  }, 120_000);

  it('per user: one object, several conversations', async () => {
    await callUser('ana', 'onTurnComplete', { conversationId: 'ana/1', messages: turn(1) });
    await callUser('ana', 'onTurnComplete', { conversationId: 'ana/2', messages: turn(2) });
    expect(((await callUser('ana', 'conversations')).value as { id: string }[]).map((c) => c.id).sort()).toEqual(['ana/1', 'ana/2']);
    expect(((await callUser('bob', 'conversations')).value as unknown[])).toEqual([]);
  });
});

describe('memoryProxy in workerd, each conversation in its own object', () => {
  it('forwards with memory, streams the reply untouched, stores it after; errors pass through; no key in any response', async () => {
    const ask = (content: string, stream = false, headers: Record<string, string> = { 'x-pagewise-conversation': 'px' }) => mf.dispatchFetch('http://edge.test/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer client', ...headers }, body: JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content }] }),
    });
    const turns = async () => ((await call('u1:px', 'turns', 'u1:px')).value as { text: string }[] | undefined)?.map((t) => t.text) ?? [];
    replies.push({ body: JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'The canary release is on Thursday.' } }] }) });
    const plain = await ask('Remember: the canary release is on Thursday.');
    const plainText = await plain.text();
    expect(plainText).toContain('The canary release is on Thursday.');
    // Stored after the reply (waitUntil): polled until there, a generous safety net.
    await expect.poll(turns, { timeout: 60_000 }).toHaveLength(2);
    replies.push({ type: 'text/event-stream', body: 'data: {"choices":[{"index":0,"delta":{"content":"Thursday."}}]}\n\ndata: [DONE]\n\n' });
    const streamed = await ask('When is the canary release?', true);
    const streamedText = await streamed.text();
    expect(streamedText).toBe('data: {"choices":[{"index":0,"delta":{"content":"Thursday."}}]}\n\ndata: [DONE]\n\n');
    expect(received[1]!.body).toContain('The canary release is on Thursday.');
    expect(received[1]!.headers.authorization).toBe(`Bearer ${KEY}`);
    await expect.poll(turns, { timeout: 60_000 }).toEqual(['Remember: the canary release is on Thursday.', 'The canary release is on Thursday.', 'When is the canary release?', 'Thursday.']);
    replies.push({ status: 503, body: '{"error":"overloaded"}' });
    const failed = await ask('And the rollback?');
    expect(failed.status).toBe(503);
    expect(await failed.text()).toBe('{"error":"overloaded"}');
    const missing = await ask('hi', false, {});
    expect(missing.status).toBe(400);
    const missingText = await missing.text();
    for (const t of [plainText, streamedText, missingText]) expect(t).not.toContain(KEY);
    expect(await turns()).toHaveLength(4);
  });

  it('a client without a valid token gets 401 and nothing is forwarded; bob naming u1\'s conversation id gets nothing of it', async () => {
    const ask = (content: string, headers: Record<string, string>) => mf.dispatchFetch('http://edge.test/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-pagewise-conversation': 'px', ...headers }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
    });
    const before = received.length;
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 'client' }] as Record<string, string>[]) {
      const res = await ask('When is the canary release?', headers);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ error: { code: 'UNAUTHENTICATED' } });
    }
    expect(received.length).toBe(before);
    replies.push({ body: JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'No idea.' } }] }) });
    expect((await ask('When is the canary release?', { authorization: 'Bearer bobs-token' })).status).toBe(200);
    expect(received.at(-1)!.body).not.toContain('Thursday');
    await expect.poll(async () => ((await call('bob:px', 'turns', 'bob:px')).value as unknown[] | undefined)?.length ?? 0, { timeout: 60_000 }).toBe(2);
    expect((await call('u1:px', 'turns', 'u1:px')).value).toHaveLength(4);
  });
});
