// memory.stats(): usage and health figures checked against a replay where they are known. Two conversations go
// through both hooks on a database file; the test sums what each returned context says it carried (budget, manifest)
// and counts the stored history itself with the other tokenizer package, and the figures must equal those sums — per
// conversation, overall, and again after the file is closed and opened.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fileStorage } from '../../../src/storage/node-file.js';
import type { Memory } from '../../../src/index.js';
import type { AssembledContext, ChatMessage, CompactionReport, ManifestEntry, UsageCounters } from '../../../src/contracts/types.js';
import { assistant, createMemory, refCount, user } from '../../support/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'pagewise-stats-'));
const open: Memory[] = [];
afterEach(async () => { await Promise.all(open.splice(0).map((m) => m.close())); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TOPICS = ['postgres materialized views for the feed', 'half-marathon training in Lisbon', 'sourdough starter feeding', 'tenant rights and rent stabilization'];

function exchange(tag: string, i: number): [ChatMessage, ChatMessage] {
  const topic = TOPICS[Math.floor(i / 3) % TOPICS.length]!;
  return [
    user(`About ${topic}: question ${i} of ${tag}, what did we decide about step ${i % 5} and the ${TOPICS[i % 4]!.split(' ')[0]} plan?`),
    assistant(`For ${topic}, step ${i} of ${tag}: we decided to keep option ${i * 7} because it costs ${i + 3} dollars and ${'it fits the schedule well '.repeat(1 + (i % 3))}.`),
  ];
}

/** The figures, summed by the test from what each call returned. */
function expected() {
  return {
    tokens: { total: 0, prefix: 0, history: 0, message: 0, overhead: 0, memory: 0, recall: 0, summary: 0, topics: 0, search: 0, attachments: 0, wholeHistory: 0, saved: 0, unmeasured: 0 },
    recall: { entries: 0, turns: 0, bySignal: { tags: 0, bm25: 0, vector: 0, speaker: 0, time: 0, neighbour: 0, pin: 0, broad: 0, otherBranch: 0, ranking: 0 } },
    calls: { onMessageInbound: 0, onTurnComplete: 0 }, turnsStored: 0,
    compaction: { runs: 0, turnsCompacted: 0, summariesMade: 0, tokensFreed: 0 }, summariesRegenerated: 0,
  } satisfies UsageCounters;
}
type Expected = ReturnType<typeof expected>;

// The test's own reading of a recalled entry's signals: its scores, and the pinned / broad blocks by their reason.
function signals(e: ManifestEntry): (keyof Expected['recall']['bySignal'])[] {
  const s = e.scores;
  const out = ([['tags', s.tagIdf !== undefined], ['bm25', s.bm25 !== undefined], ['vector', s.vector !== undefined], ['speaker', !!s.speaker], ['time', !!s.time],
    ['neighbour', !!s.neighbour], ['pin', e.reason.startsWith('pinned')], ['broad', e.reason.startsWith('broad question')], ['otherBranch', !!e.otherBranch]] as const).filter(([, on]) => on).map(([k]) => k);
  return out.length > 0 ? out : ['ranking'];
}

function addRequest(x: Expected, ctx: AssembledContext, stored: readonly ChatMessage[]): void {
  const b = ctx.budget;
  const t = x.tokens;
  t.total += b.total; t.prefix += b.prefix; t.history += b.history; t.message += b.message; t.overhead += b.overhead; t.memory += b.memory; t.topics += b.topics; t.search += b.search;
  for (const e of ctx.manifest) {
    if (e.kind === 'recall' || e.kind === 'summary' || e.kind === 'attachments') t[e.kind] += e.tokens;
    if (e.kind !== 'recall') continue;
    x.recall.entries++;
    x.recall.turns += e.sourceIds.length;
    for (const s of signals(e)) x.recall.bySignal[s]++;
  }
  // Sending the stored history whole: each stored message's text and its 3 tokens of markup.
  const whole = stored.reduce((n, m) => n + refCount(m.content as string) + 3, 0);
  t.wholeHistory += whole;
  t.saved += Math.max(0, whole - (b.prefix + b.history + b.memory));
  x.calls.onMessageInbound++;
}

function addCompaction(x: Expected, r: CompactionReport | null): void {
  if (!r || (r.turnsCompacted === 0 && r.summariesMade === 0)) return;
  x.compaction.runs++; x.compaction.turnsCompacted += r.turnsCompacted; x.compaction.summariesMade += r.summariesMade; x.compaction.tokensFreed += Math.max(0, r.tokensFreed);
}

function sum(a: Expected, b: Expected): Expected {
  const out = expected();
  const add = (o: Record<string, unknown>, p: Record<string, unknown>, q: Record<string, unknown>) => {
    for (const k of Object.keys(o)) {
      if (typeof o[k] === 'number') o[k] = (p[k] as number) + (q[k] as number);
      else add(o[k] as Record<string, unknown>, p[k] as Record<string, unknown>, q[k] as Record<string, unknown>);
    }
  };
  add(out as unknown as Record<string, unknown>, a as unknown as Record<string, unknown>, b as unknown as Record<string, unknown>);
  return out;
}

describe('memory.stats(): usage and health', () => {
  it('equals what a replay of two conversations carried, per conversation and overall, and survives close and reopen', async () => {
    const path = join(dir, 'replay.sqlite3');
    const m = await createMemory({ storage: fileStorage(path), contextWindow: 2048 });
    open.push(m);
    const byConv: Record<string, { x: Expected; stored: ChatMessage[] }> = { alpha: { x: expected(), stored: [] }, beta: { x: expected(), stored: [] } };
    const reports: CompactionReport[] = [];
    let inbound = 0;
    let turnCalls = 0;
    for (let i = 0; i < 40; i++) {
      for (const id of i % 3 === 2 ? ['alpha', 'beta'] : ['alpha']) {
        const c = byConv[id]!;
        const [q, a] = exchange(id, i);
        const ctx = await m.onMessageInbound({ conversationId: id, message: q });
        inbound++;
        addRequest(c.x, ctx, c.stored);
        const report = await m.onTurnComplete({ conversationId: id, messages: [q, a] });
        turnCalls++;
        c.stored.push(q, a);
        c.x.calls.onTurnComplete++;
        c.x.turnsStored += report.stored;
        addCompaction(c.x, report.compaction);
      }
    }
    // Background compactions: their reports, as flush() hands them out.
    reports.push(...(await m.flush()));
    for (const r of reports) addCompaction(byConv[r.conversationId]!.x, r);

    // Bad calls: counted by method and code, stored nowhere.
    await expect(m.onMessageInbound({ conversationId: '', message: user('hi') })).rejects.toMatchObject({ code: 'INVALID_CONVERSATION_ID' });
    await expect(m.onMessageInbound({ conversationId: 'alpha', message: { role: 'user', content: 42 } as unknown as ChatMessage })).rejects.toMatchObject({ code: 'INVALID_CONTENT' });
    await expect(m.onTurnComplete({ conversationId: 'alpha', messages: 'nope' as unknown as ChatMessage[] })).rejects.toHaveProperty('code');
    await expect(m.stats({ conversationId: 7 as unknown as string })).rejects.toMatchObject({ code: 'INVALID_CONVERSATION_ID' });

    const alpha = await m.stats({ conversationId: 'alpha' });
    const beta = await m.stats({ conversationId: 'beta' });
    const all = await m.stats();
    expect(alpha.usage).toEqual(byConv.alpha!.x);
    expect(beta.usage).toEqual(byConv.beta!.x);
    expect(all.usage).toEqual(sum(byConv.alpha!.x, byConv.beta!.x));
    // The replay exercised what it claims to: history left out, memory injected, recall by several signals, compaction.
    expect(alpha.usage.tokens.saved).toBeGreaterThan(0);
    expect(alpha.usage.tokens.recall).toBeGreaterThan(0);
    expect(alpha.usage.recall.bySignal.bm25).toBeGreaterThan(0);
    expect(alpha.usage.compaction.runs).toBeGreaterThan(0);
    expect(alpha.conversationId).toBe('alpha');
    expect(all.conversationId).toBeNull();

    // Latency and calls since open: every call, failed ones too.
    expect(all.calls.onMessageInbound).toBe(inbound + 2);
    expect(all.latencyMs.onMessageInbound!.count).toBe(inbound + 2);
    expect(all.calls.onTurnComplete).toBe(turnCalls + 1);
    expect(all.latencyMs.onTurnComplete!.count).toBe(turnCalls + 1);
    expect(all.latencyMs.onMessageInbound!.p50).toBeLessThanOrEqual(all.latencyMs.onMessageInbound!.p95);
    expect(all.latencyMs.onMessageInbound!.p95).toBeLessThanOrEqual(all.latencyMs.onMessageInbound!.max);
    const turnCode = Object.keys(all.errors.onTurnComplete ?? {})[0]!;
    expect(all.errors).toEqual({ onMessageInbound: { INVALID_CONVERSATION_ID: 1, INVALID_CONTENT: 1 }, onTurnComplete: { [turnCode]: 1 }, stats: { INVALID_CONVERSATION_ID: 1 } });
    expect(alpha.errors).toEqual({ onMessageInbound: { INVALID_CONTENT: 1 }, onTurnComplete: { [turnCode]: 1 } });
    expect(beta.errors).toEqual({});

    // Queues: idle now, and they were used.
    expect(all.queues.calls).toMatchObject({ waiting: 0, running: 0 });
    expect(all.queues.calls.maxRunning).toBeGreaterThanOrEqual(1);
    expect(all.queues.background).toMatchObject({ queued: 0, running: 0 });
    expect(all.queues.background.maxRunning).toBeGreaterThanOrEqual(1);

    // Bytes: the file's pages; a conversation's text.
    const text = (c: { stored: ChatMessage[] }) => c.stored.reduce((n, x) => n + Buffer.byteLength(x.content as string), 0);
    expect(all.bytes).toBeGreaterThan(0);
    expect(all.bytes! % 512).toBe(0);
    expect(beta.bytes).toBeGreaterThanOrEqual(text(byConv.beta!));

    await m.close();
    open.length = 0;
    const again = await createMemory({ storage: fileStorage(path), contextWindow: 2048 });
    open.push(again);
    expect((await again.stats({ conversationId: 'alpha' })).usage).toEqual(byConv.alpha!.x);
    const reopened = await again.stats();
    expect(reopened.usage).toEqual(sum(byConv.alpha!.x, byConv.beta!.x));
    // What lives in memory starts over.
    expect(reopened.latencyMs.onMessageInbound).toBeUndefined();
    expect(reopened.errors).toEqual({});
  }, 120_000);

  it('close() writes the figures of every call it lets finish', async () => {
    const path = join(dir, 'close.sqlite3');
    const m = await createMemory({ storage: fileStorage(path) });
    const [q, a] = exchange('late', 1);
    // Admitted before close, not awaited: close lets them finish, and their figures reach the file first.
    const calls = [m.onMessageInbound({ conversationId: 'late', message: q }), m.onTurnComplete({ conversationId: 'late', messages: [q, a] }), m.onTurnComplete({ conversationId: 'other', messages: [q, a] })];
    await m.close();
    expect((await Promise.allSettled(calls)).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    const again = await createMemory({ storage: fileStorage(path) });
    open.push(again);
    expect((await again.stats()).usage).toMatchObject({ calls: { onMessageInbound: 1, onTurnComplete: 2 }, turnsStored: 4 });
  });

  it('forgetting a conversation takes its counters with it', async () => {
    const m = await createMemory();
    open.push(m);
    for (const id of ['keep', 'drop']) {
      const [q, a] = exchange(id, 1);
      await m.onMessageInbound({ conversationId: id, message: q });
      await m.onTurnComplete({ conversationId: id, messages: [q, a] });
    }
    const keep = (await m.stats({ conversationId: 'keep' })).usage;
    expect((await m.stats({ conversationId: 'drop' })).usage.calls.onTurnComplete).toBe(1);
    await m.forget({ conversationId: 'drop' });
    expect((await m.stats({ conversationId: 'drop' })).usage).toEqual(expected());
    expect((await m.stats()).usage).toEqual(keep);
  });

  it('records nothing for a bad call and is refused once closed', async () => {
    const m = await createMemory();
    await expect(m.onTurnComplete({ conversationId: 'x', messages: [{ role: 'robot', content: 'hi' } as unknown as ChatMessage] })).rejects.toHaveProperty('code');
    expect((await m.stats()).usage).toEqual(expected());
    expect((await m.stats({ conversationId: 'x' })).usage).toEqual(expected());
    expect((await m.stats()).rebuilds).toEqual([]);
    await m.close();
    await expect(m.stats()).rejects.toMatchObject({ code: 'ENGINE_CLOSED' });
  });
});
