// Issue 24: a long conversation at the edge. One PagewiseMemory object in real workerd (Miniflare 4) imports a
// 2,000-turn LoCoMo-shaped conversation (generated here: tests/fixtures/locomo-like.ts), forgets 300 of its turns by
// id, then answers 240 questions through Workers RPC and through memoryProxy; the same steps on the same engine in
// Node (createMemory in-process, the same options, no embedder on either side) give the same manifests. Then the
// proxy path whole: 200 exchanges stored through it (onTurnComplete via waitUntil) and 100 varied questions after.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemory } from '../../../src/index.js';
import { proxyConversationKey } from '../../../src/surfaces/proxy.js';
import type { AssembledContext, ManifestEntry } from '../../../src/contracts/types.js';
import { type LongQuestion, forgetPlan, locomoLikeChat, toExportData } from '../../fixtures/locomo-like.js';
import { LONG_CHAT_OPTIONS } from '../../fixtures/long-options.js';

let mf: Miniflare;
const dir = mkdtempSync(join(tmpdir(), 'pagewise-edge-long-'));
const TOKEN = 'long-client-token';

// The proxy's upstream: a local server speaking OpenAI's chat completions that records what it was sent and answers
// with `answer(body)` (the one double: a remote LLM).
let upstreamServer: Server;
let upstream = '';
const forwarded: { messages: { role: string; content: string }[]; stream?: boolean }[] = [];
let answer: (body: { stream?: boolean }) => string = () => '';

type Outcome<T = unknown> = { value?: T; error?: { name?: string; code?: string; message?: string } };
const call = async <T = unknown>(object: string, method: string, ...args: unknown[]): Promise<Outcome<T>> =>
  (await mf.dispatchFetch(`http://edge.test/call/long/${encodeURIComponent(object)}/${method}`, { method: 'POST', body: JSON.stringify(args) })).json() as Promise<Outcome<T>>;
/** A call that must succeed: its value, else the test fails with the error (a STORAGE_ERROR, say) in the message. */
const ok = async <T = unknown>(object: string, method: string, ...args: unknown[]): Promise<T> => {
  const r = await call<T>(object, method, ...args);
  expect(r.error, `${method}: ${JSON.stringify(r.error)}`).toBeUndefined();
  return r.value as T;
};

const ask = (conversation: string, body: Record<string, unknown>) => mf.dispatchFetch('http://edge.test/v1/chat/completions', {
  method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, 'x-pagewise-conversation': conversation },
  body: JSON.stringify({ model: 'gpt-4o', ...body }),
});

beforeAll(async () => {
  upstreamServer = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c; });
    req.on('end', () => {
      const body = JSON.parse(raw) as (typeof forwarded)[number];
      forwarded.push(body);
      const content = answer(body);
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant', content } }] })}\n\ndata: [DONE]\n\n`);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'cmpl', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }] }));
      }
    });
  });
  await new Promise<void>((done) => upstreamServer.listen(0, '127.0.0.1', done));
  upstream = `http://127.0.0.1:${(upstreamServer.address() as AddressInfo).port}`;
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, '../../support/edge/long-worker.ts')], bundle: true, format: 'esm', platform: 'neutral',
    target: 'es2022', write: false, external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
  });
  const script = join(dir, 'worker.mjs');
  writeFileSync(script, out.outputFiles[0]!.text);
  mf = new Miniflare({
    modulesRoot: dir, modules: [{ type: 'ESModule', path: script, contents: readFileSync(script, 'utf8') }], compatibilityDate: '2025-09-01',
    durableObjects: { LONG: { className: 'LongMemory', useSQLite: true }, PLAIN: { className: 'PlainMemory', useSQLite: true }, VECTORS: { className: 'VectorMemory', useSQLite: true } },
    durableObjectsPersist: join(dir, 'do'),
    bindings: { UPSTREAM: upstream, UPSTREAM_KEY: 'sk-upstream', CLIENT_TOKENS: `${TOKEN}:u1` },
  });
  await mf.ready;
}, 120_000);

afterAll(async () => {
  await mf?.dispose();
  await new Promise<void>((done) => upstreamServer?.close(() => done()) ?? done());
  rmSync(dir, { recursive: true, force: true });
});

/** What a manifest says, compared across runtimes: each block's kind, placement and source turns, in order. */
const shape = (manifest: ManifestEntry[]) => manifest.map((e) => ({ kind: e.kind, placement: e.placement, sourceIds: e.sourceIds, partialIds: e.partialIds ?? [] }));
/** Whether a question's evidence turns were sent verbatim (a recalled, recent or history block, not a summary). */
const recalled = (ctx: AssembledContext, q: LongQuestion) => {
  const ids = new Set(ctx.manifest.filter((e) => e.kind !== 'summary').flatMap((e) => e.sourceIds));
  return q.evidence.every((id) => ids.has(id));
};
/** Every turn id a context names anywhere: its manifest, summaries' sources included, and what it dropped. */
const named = (ctx: AssembledContext) => [...ctx.manifest.flatMap((e) => [...e.sourceIds, ...(e.partialIds ?? [])]), ...ctx.dropped.flatMap((d) => [...d.sourceIds, ...(d.range ? [d.range.fromId, d.range.toId] : [])])];
/** The text sent besides the new message (the last one). */
const sentText = (ctx: AssembledContext) => [ctx.prependText, ...ctx.messages.slice(0, -1).map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))].join('\n');
const share = (hits: boolean[]) => hits.filter(Boolean).length / hits.length;
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

describe('a 2,000-turn conversation in one PagewiseMemory object', () => {
  it('imports, forgets 300 turns, answers 240 questions over RPC and through the proxy as Node does; forgotten turns never come back', async () => {
    const chat = locomoLikeChat({ turns: 2000, facts: 240 });
    const plan = forgetPlan(chat, { count: 300, every: 6 });
    expect(chat.turns).toHaveLength(2000);
    expect(plan.ids).toHaveLength(300);
    expect(plan.kept).toHaveLength(200);
    // Each fact's person is named in its evidence turn and nowhere else: a marker of that turn in any text.
    for (const q of chat.questions) expect(chat.turns.filter((t) => t.content.includes(q.marker)).map((t) => t.id)).toEqual(q.evidence);
    const forgottenIds = new Set(plan.ids);
    const forgottenMarkers = plan.forgotten.map((q) => q.marker);
    const questions = [...plan.kept, ...plan.forgotten];
    const key = proxyConversationKey('u1', 'long');
    const data = toExportData(chat, key);

    // The edge: one object (the one the proxy reaches for u1's "long").
    const t0 = performance.now();
    expect(await ok(key, 'import', data)).toEqual({ conversations: [key], turns: 2000, skipped: 0 });
    await ok(key, 'flush');
    const tImport = performance.now();
    const forgot = await ok<{ messageIds: string[]; conversationRemoved: boolean }>(key, 'forget', { conversationId: key, messageIds: plan.ids });
    expect(forgot.messageIds.slice().sort()).toEqual(plan.ids.slice().sort());
    expect(forgot.conversationRemoved).toBe(false);
    await ok(key, 'flush');
    const tForget = performance.now();
    // (conversations()'s `turns` is the last seq + 1, which a forget leaves as it was: the stored turns are counted here.)
    const storedIds = async () => (await ok<{ id: string }[]>(key, 'turns', key, { limit: 5000 })).map((t) => t.id);
    const kept = chat.turns.map((t) => t.id).filter((id) => !forgottenIds.has(id));
    expect(await storedIds()).toEqual(kept);

    // Node: the same engine in-process, the same options and steps.
    const node = await createMemory({ ...LONG_CHAT_OPTIONS });
    expect(await node.import(data)).toEqual({ conversations: [key], turns: 2000, skipped: 0 });
    await node.flush();
    expect((await node.forget({ conversationId: key, messageIds: plan.ids })).messageIds).toHaveLength(300);
    await node.flush();
    // Both rebuilt the same summaries from what is left.
    const sums = (s: { kind: string; level: number; firstSeq: number; lastSeq: number; text: string }[]) => s.map((x) => [x.kind, x.level, x.firstSeq, x.lastSeq, x.text]);
    const edgeSummaries = sums(await ok(key, 'summaries', key));
    expect(edgeSummaries.length).toBeGreaterThan(0);
    expect(edgeSummaries).toEqual(sums(await node.summaries(key) as never));

    // The same questions, in the same order, asked of both.
    const edgeHits: boolean[] = [];
    const nodeHits: boolean[] = [];
    let same = 0;
    const diffs: string[] = [];
    for (const q of questions) {
      const input = { conversationId: key, message: { role: 'user', content: q.question }, now: q.now };
      const e = await ok<AssembledContext>(key, 'onMessageInbound', input);
      const n = await node.onMessageInbound(input as never);
      for (const ctx of [e, n]) {
        expect(named(ctx).filter((id) => forgottenIds.has(id)), q.question).toEqual([]);
        const text = sentText(ctx);
        expect(forgottenMarkers.filter((m) => text.includes(m)), q.question).toEqual([]);
      }
      if (plan.kept.includes(q)) { edgeHits.push(recalled(e, q)); nodeHits.push(recalled(n, q)); }
      if (JSON.stringify(shape(e.manifest)) === JSON.stringify(shape(n.manifest))) same++;
      else if (diffs.length < 3) diffs.push(`${q.question}\n  edge ${JSON.stringify(shape(e.manifest))}\n  node ${JSON.stringify(shape(n.manifest))}`);
    }
    const tRpc = performance.now();
    await node.close();

    // Through the proxy (u1's "long"): the upstream answers nothing, so nothing is stored and every question meets the
    // same memory. What it was sent besides the question carries the evidence's marker, never a forgotten one.
    answer = () => '';
    const proxyHits: boolean[] = [];
    const before = forwarded.length;
    for (const q of questions) {
      const res = await ask('long', { messages: [{ role: 'user', content: q.question }] });
      expect(res.status, await res.clone().text()).toBe(200);
      await res.text();
      const sent = forwarded.at(-1)!.messages;
      expect(sent.at(-1)).toEqual({ role: 'user', content: q.question });
      const text = sent.slice(0, -1).map((m) => m.content).join('\n');
      expect(forgottenMarkers.filter((m) => text.includes(m)), q.question).toEqual([]);
      if (plan.kept.includes(q)) proxyHits.push(text.includes(q.marker));
    }
    expect(forwarded.length - before).toBe(questions.length);
    const tProxy = performance.now();
    expect(await storedIds()).toEqual(kept);

    console.log([
      `edge long conversation: 2,000 turns imported (+flush) in ${((tImport - t0) / 1000).toFixed(1)} s, 300 forgotten (+flush) in ${((tForget - tImport) / 1000).toFixed(1)} s; ${questions.length} questions (${plan.kept.length} with evidence kept, ${plan.forgotten.length} about forgotten turns) over RPC edge+Node in ${((tRpc - tForget) / 1000).toFixed(1)} s, through the proxy in ${((tProxy - tRpc) / 1000).toFixed(1)} s`,
      `  evidence sent verbatim (${plan.kept.length} questions): edge RPC ${pct(share(edgeHits))}, Node ${pct(share(nodeHits))}, edge proxy (marker in the forwarded text) ${pct(share(proxyHits))}`,
      `  by phrasing, edge / Node: ${(['name', 'relation', 'temporal'] as const).map((p) => {
        const at = plan.kept.map((q, i) => ((q.category === 'temporal' ? 'temporal' : q.by) === p ? i : -1)).filter((i) => i >= 0);
        return `${p} (${at.length}) ${pct(share(at.map((i) => edgeHits[i]!)))} / ${pct(share(at.map((i) => nodeHits[i]!)))}`;
      }).join(', ')}; ${edgeSummaries.length} summaries rebuilt after the forget, the same on both`,
      `  identical manifests edge/Node: ${same}/${questions.length}; forgotten turns in any manifest or text: 0; failed calls: 0`,
      ...diffs,
    ].join('\n'));
    expect(diffs).toEqual([]);
    expect(same).toBe(questions.length);
    expect(share(edgeHits)).toBe(share(nodeHits));
    expect(Math.abs(share(proxyHits) - share(edgeHits))).toBeLessThanOrEqual(0.02);
    // Recall is measured, not assumed: most evidence comes back.
    expect(share(edgeHits)).toBeGreaterThan(0.5);
  }, 300_000);

  it('the whole proxy path: 200 exchanges stored through it, then 100 varied questions, none failing', async () => {
    const chat = locomoLikeChat({ turns: 400, facts: 20, seed: 7 });
    const key = proxyConversationKey('u1', 'chat');
    // 200 exchanges: the chat's user turns sent, its assistant turns answered by the upstream; stored after each reply.
    for (let i = 0; i < chat.turns.length; i += 2) {
      const reply = chat.turns[i + 1]!.content;
      answer = () => reply;
      const res = await ask('chat', { messages: [{ role: 'user', content: chat.turns[i]!.content }] });
      expect(res.status, await res.clone().text()).toBe(200);
      expect((await res.json() as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe(reply);
    }
    // Stored once each, in order (onTurnComplete through waitUntil, after each reply).
    const texts = async () => (await ok<{ text: string }[]>(key, 'turns', key, { limit: 1000 })).map((t) => t.text);
    await expect.poll(async () => (await texts()).length, { timeout: 120_000 }).toBe(400);
    expect(await texts()).toEqual(chat.turns.map((t) => t.content));

    // 100 questions of every kind the proxy takes: planted facts, broad, temporal, with the client's own history and
    // system message, streamed, multi-part, long, non-Latin.
    const facts = chat.questions;
    const variants: { body: Record<string, unknown>; fact?: (typeof facts)[number] }[] = [];
    for (let k = 0; variants.length < 100; k++) {
      const q = facts[k % facts.length]!;
      const m = (content: unknown) => ({ role: 'user', content });
      switch (k % 10) {
        case 0: variants.push({ body: { messages: [m(q.question)] }, fact: q }); break;
        case 1: variants.push({ body: { stream: true, messages: [m(q.question)] }, fact: q }); break;
        case 2: variants.push({ body: { messages: [{ role: 'system', content: 'You are a friendly assistant. Answer briefly.' }, m(q.question)] }, fact: q }); break;
        case 3: variants.push({ body: { messages: [m('Hi again!'), { role: 'assistant', content: 'Hello! What can I do for you?' }, m(q.question)] }, fact: q }); break;
        case 4: variants.push({ body: { messages: [m([{ type: 'text', text: 'Quick one.' }, { type: 'text', text: q.question }])] }, fact: q }); break;
        case 5: variants.push({ body: { messages: [m(['What have we talked about so far?', 'Summarize everything we discussed.', 'Give me an overview of our conversations.'][k % 3])] } }); break;
        case 6: variants.push({ body: { messages: [m(['What did we talk about at the very beginning?', 'What did we discuss in the last session?', 'What happened in February 2023?'][k % 3])] } }); break;
        case 7: variants.push({ body: { messages: [m(`${'I have been thinking a lot about the garden, the kids, work and the trips we planned. '.repeat(40)}${q.question}`)] }, fact: q }); break;
        case 8: variants.push({ body: { messages: [m(['¿Qué tal el jardín?', '庭の様子はどうですか？', 'Как прошёл забег?'][k % 3])] } }); break;
        default: variants.push({ body: { stream: true, messages: [{ role: 'system', content: 'Be concise.' }, m('Remind me.'), { role: 'assistant', content: 'Of what?' }, m(q.question)] }, fact: q });
      }
    }
    answer = (body) => (body.stream ? 'Streamed: noted.' : 'Noted.');
    let factHits = 0;
    let factQuestions = 0;
    const statuses: number[] = [];
    for (const v of variants) {
      const res = await ask('chat', v.body);
      statuses.push(res.status);
      const text = await res.text();
      expect(res.status, text).toBe(200);
      expect(text).toContain(v.body.stream ? 'Streamed: noted.' : 'Noted.');
      const sent = forwarded.at(-1)!.messages;
      if (v.fact) {
        factQuestions++;
        if (sent.slice(0, -1).some((m) => String(m.content).includes(v.fact!.marker))) factHits++;
      }
    }
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    // Every question's exchange stored too.
    await expect.poll(async () => (await ok<{ turns: number }[]>(key, 'conversations'))[0]?.turns, { timeout: 120_000 }).toBe(600);
    console.log(`edge proxy path: 200 exchanges stored, then 100 varied questions: ${statuses.filter((s) => s === 200).length}/100 answered (200), ${factHits}/${factQuestions} fact questions with the evidence's marker in the forwarded text; stored turns 600`);
    expect(factHits).toBeGreaterThan(factQuestions / 2);
  }, 300_000);
});
