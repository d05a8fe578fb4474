// Upgrades that finish themselves (engine/rebuild.ts): a database written by an older summarizer, closed and opened
// again by a newer one, has its summaries rebuilt in the background a slice at a time, newest conversation first,
// recall holding a summary for the compacted span throughout; the LLM's calls are the rebuild's in the ledger, a
// failing LLM leaves the old summaries in place (and is asked again after a wait, rebuild-failures.test.ts), and a
// hook on the conversation never waits for a whole slice.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { EXTRACTIVE_VERSION, extractiveSummarizer } from '../../../src/compaction/extractive.js';
import { SUMMARY_PROMPT_VERSION } from '../../../src/compaction/llm-summarizer.js';
import { fileStorage } from '../../../src/storage/node-file.js';
import { createTokenizer } from '../../../src/tokens/tokenizer.js';
import { SLICE_SUMMARIES } from '../../../src/engine/rebuild.js';
import { RETRY_MAX_MS } from '../../../src/engine/rebuild-vectors.js';
import type { Memory } from '../../../src/index.js';
import type { ChatMessage, Summarizer, Summary } from '../../../src/contracts/types.js';
import type { MaintenanceReport } from '../../../src/contracts/types-ops.js';
import { completion, startUpstream, type Upstream } from '../../support/upstream.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'pagewise-rebuild-'));
let file = 0;
const open: Memory[] = [];
let up: Upstream | undefined;
afterEach(async () => { vi.restoreAllMocks(); await Promise.all(open.splice(0).map((m) => m.close())); await up?.close(); up = undefined; });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TOPICS = ['postgres materialized views for the feed', 'half-marathon training in Lisbon', 'sourdough starter feeding', 'tenant rights and rent stabilization'];

/** A conversation long enough to compact: runs of exchanges per topic, each with a number and a decision. */
function chat(tag: string, pairs: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; i < pairs; i++) {
    const topic = TOPICS[Math.floor(i / 4) % TOPICS.length]!;
    out.push(user(`About ${topic}: question ${i} of ${tag}, what should we decide for step ${i}?`, { id: `${tag}u${i}` }));
    out.push(assistant(`For ${topic}, step ${i} of ${tag}: we decided to keep option ${i * 7} because it costs ${i + 3} dollars.`, { id: `${tag}a${i}` }));
  }
  return out;
}

/** The extractive summarizer of an older release: the same algorithm under the previous version number. */
async function olderExtractive(): Promise<Summarizer> {
  const real = extractiveSummarizer(await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 }));
  return { name: 'extractive', version: EXTRACTIVE_VERSION - 1, summarize: (r) => real.summarize(r) };
}

async function mem(options: Parameters<typeof createMemory>[0]): Promise<Memory> {
  const m = await createMemory(options);
  open.push(m);
  return m;
}

/** A file written by `summarizer` (closed again): three conversations, compacted; returns its path. */
async function written(summarizer: Summarizer | 'extractive', conversations = ['ca', 'cb', 'cc']): Promise<string> {
  const path = join(dir, `db${file++}.sqlite`);
  const m = await createMemory({ storage: fileStorage(path), contextWindow: 3000, summarizer, maintenance: 'manual' });
  for (const c of conversations) await m.onTurnComplete({ conversationId: c, messages: chat(c, 60) });
  // The first one written is updated again last: the newest is not simply the last created.
  await m.onTurnComplete({ conversationId: conversations[0]!, messages: [user('One more thing about the sourdough.', { id: 'late-u' }), assistant('Feed it twice a day.', { id: 'late-a' })] });
  await m.flush();
  await m.close();
  return path;
}

const byVersion = (all: Summary[], name: string, version: number) => all.filter((s) => s.madeBy === name && s.promptVersion === version).length;

/** A question whose context must carry the compacted span as a summary. */
const ask = (m: Memory, c: string) => m.onMessageInbound({ conversationId: c, message: user('Going back to the very beginning, what did we decide first?') });

describe('rebuild after an upgrade', () => {
  it('rebuilds an older summarizer\'s summaries a slice per maintain(), newest conversation first, recall holding a summary throughout', async () => {
    const path = await written(await olderExtractive());
    const m = await mem({ storage: fileStorage(path), contextWindow: 3000, maintenance: 'manual' });
    const order = (await m.conversations()).map((c) => c.id);
    expect(order[0]).toBe('ca');
    const before = new Map<string, Summary[]>();
    for (const c of order) before.set(c, await m.summaries(c));
    const total = [...before.values()].reduce((n, l) => n + l.length, 0);
    for (const l of before.values()) expect(byVersion(l, 'extractive', EXTRACTIVE_VERSION - 1)).toBe(l.length);
    expect(total).toBeGreaterThan(SLICE_SUMMARIES * 3);

    const reports: MaintenanceReport[] = [];
    // The conversation whose summaries each slice rebuilt.
    const worked: string[] = [];
    let last = new Map(order.map((c) => [c, 0]));
    for (;;) {
      const started = await m.maintain();
      reports.push(started);
      const status = started.rebuilds.find((r) => r.kind === 'summaries')!;
      const current = new Map<string, number>();
      for (const c of order) current.set(c, byVersion(await m.summaries(c), 'extractive', EXTRACTIVE_VERSION));
      const grew = order.filter((c) => current.get(c)! > last.get(c)!);
      // One conversation per slice, at most a slice of its summaries.
      expect(grew).toHaveLength(1);
      const n = current.get(grew[0]!)! - last.get(grew[0]!)!;
      expect(n).toBeLessThanOrEqual(SLICE_SUMMARIES);
      worked.push(grew[0]!);
      last = current;
      expect(status).toMatchObject({ done: [...current.values()].reduce((a, b) => a + b, 0), total });
      // Recall between slices: every context holds a summary of the compacted span (old text or new), never none.
      for (const c of order) {
        const ctx = await ask(m, c);
        const placed = ctx.manifest.filter((e) => e.kind === 'summary');
        expect(placed.length, `${c} after slice ${reports.length}`).toBeGreaterThan(0);
        const stored = new Set((await m.summaries(c)).map((s) => s.id));
        for (const e of placed) expect(stored.has(e.summaryId!)).toBe(true);
      }
      if (!started.more) break;
      expect(reports.length).toBeLessThan(total);
    }
    expect(reports.length).toBeGreaterThanOrEqual(Math.ceil(total / SLICE_SUMMARIES));
    // Newest conversation first: each is finished before the next older one starts.
    expect(worked.map((c) => order.indexOf(c))).toEqual(worked.map((c) => order.indexOf(c)).sort((a, b) => a - b));
    expect([...new Set(worked)]).toEqual(order);
    expect(reports.at(-1)!.rebuilds.find((r) => r.kind === 'summaries')).toMatchObject({ done: total, total, conversationId: null });
    // In the end every summary is the new version's, in place: the same ids.
    for (const c of order) {
      const after = await m.summaries(c);
      expect(after.map((s) => s.id).sort()).toEqual(before.get(c)!.map((s) => s.id).sort());
      expect(byVersion(after, 'extractive', EXTRACTIVE_VERSION)).toBe(after.length);
    }
    expect((await m.maintain()).rebuilds).toEqual([]);
  });

  it('with maintenance "auto" the rebuild runs by itself, and flush() returns once it is done', async () => {
    const path = await written(await olderExtractive(), ['cx', 'cy']);
    const m = await mem({ storage: fileStorage(path), contextWindow: 3000 });
    await m.flush();
    for (const c of ['cx', 'cy']) {
      const all = await m.summaries(c);
      expect(all.length).toBeGreaterThan(0);
      expect(byVersion(all, 'extractive', EXTRACTIVE_VERSION)).toBe(all.length);
    }
    expect((await m.maintain()).more).toBe(false);
  });
});

describe('a hook during a rebuild', () => {
  it('waits for no summarizer: it is answered while the slice\'s summarizer is still writing, so in less than the slice\'s own time', async () => {
    const path = await written(await olderExtractive(), ['ch']);
    const real = await olderExtractive();
    // The newer version, held at a gate the test opens: the slice is mid-summary for as long as the test says.
    let open!: () => void;
    const gate = new Promise<void>((r) => { open = r; });
    let entered!: () => void;
    const inSummarizer = new Promise<void>((r) => { entered = r; });
    const newer: Summarizer = { name: 'extractive', version: EXTRACTIVE_VERSION, summarize: async (r) => { entered(); await gate; return real.summarize(r); } };
    const m = await mem({ storage: fileStorage(path), contextWindow: 3000, maintenance: 'manual', summarizer: newer });
    const sliceStart = performance.now();
    let sliceEnd = 0;
    const slice = m.maintain().then((r) => { sliceEnd = performance.now(); return r; });
    await inSummarizer;
    const hookStart = performance.now();
    const ctx = await ask(m, 'ch');
    const hookEnd = performance.now();
    expect(sliceEnd).toBe(0);
    expect(ctx.manifest.some((e) => e.kind === 'summary')).toBe(true);
    open();
    const report = await slice;
    expect(report.rebuilds.find((r) => r.kind === 'summaries')!.done).toBeGreaterThan(0);
    // The hook's wait is within the slice: it started after the slice did and ended before it.
    expect(hookStart).toBeGreaterThan(sliceStart);
    expect(hookEnd).toBeLessThan(sliceEnd);
    expect(hookEnd - hookStart).toBeLessThan(sliceEnd - sliceStart);
  });
});

describe('the event loop during a rebuild', () => {
  it('turns between summaries: a macrotask queued as the rebuild starts runs long before it ends', async () => {
    const path = await written(await olderExtractive(), ['ce']);
    const m = await mem({ storage: fileStorage(path), contextWindow: 3000, maintenance: 'manual' });
    const total = (await m.summaries('ce')).length;
    let slices = 0;
    let finished = false;
    // Slices back to back, as the background lane runs them; a synchronous driver resolves them through microtasks.
    const rebuild = (async () => { while ((await m.maintain()).more) slices++; finished = true; })();
    await new Promise<void>((r) => setImmediate(r));
    // The page's next request in a worker, a timer: what waits on the event loop got its turn within the first slice.
    expect(finished).toBe(false);
    expect(slices).toBe(0);
    await rebuild;
    expect(slices + 1).toBeGreaterThanOrEqual(Math.ceil(total / SLICE_SUMMARIES));
  });
});

describe('rebuild with an LLM summarizer', () => {
  const reply = JSON.stringify({ summary: 'The rebuilt summary: option 0 was kept.', tags: [], relatedTags: [] });

  it('is recorded under "rebuild" in the ledger; a failing LLM keeps the old summary, and a slice goes on after a wait', async () => {
    const path = await written('extractive', ['cl']);
    // The wall clock moved on by hand past each wait after a failure (a minute, then two).
    const real = Date.now.bind(Date);
    let ahead = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => real() + ahead);
    up = await startUpstream({ reply });
    const m = await mem({ storage: fileStorage(path), contextWindow: 3000, maintenance: 'manual', tagger: 'keyword', llm: { baseUrl: `${up.base}/v1`, model: 'test-model', maxRetries: 0 } as never });
    const all = await m.summaries('cl');
    const llmMade = async () => byVersion(await m.summaries('cl'), 'llm:test-model', SUMMARY_PROMPT_VERSION);
    // The LLM is down, or answers what the summarizer cannot read (its extractive fallback would answer): the old
    // summary is kept as it was, the slice stops there and says why.
    for (const bad of [{ status: 400, body: '{"error":"down"}' }, { body: completion('not json') }]) {
      up.next.push(bad);
      const failed = await m.maintain();
      expect(failed.rebuilds.find((r) => r.kind === 'summaries')).toMatchObject({ done: 0, total: all.length, lastError: expect.any(String) });
      expect(failed.more).toBe(false);
      expect(await m.summaries('cl')).toEqual(all);
      // Until the wait is over the LLM is not asked again.
      const calls = up.seen.length;
      expect((await m.maintain()).rebuilds.find((r) => r.kind === 'summaries')).toMatchObject({ done: 0, lastError: expect.any(String) });
      expect(up.seen.length).toBe(calls);
      ahead += RETRY_MAX_MS;
    }
    // Back up: the next slice rebuilds, and the calls are the rebuild's in the ledger.
    const next = await m.maintain();
    const status = next.rebuilds.find((r) => r.kind === 'summaries')!;
    expect(status.done).toBe(await llmMade());
    expect(status.done).toBeGreaterThan(0);
    expect(status.lastError).toBeUndefined();
    const lines = (await m.costReport('cl')).lines.filter((l) => l.purpose === 'rebuild');
    expect(lines.reduce((n, l) => n + l.calls, 0)).toBe(up.seen.length);
    while ((await m.maintain()).more);
    expect(await llmMade()).toBe(all.length);
  });

  it('summaries its extractive fallback wrote while the LLM failed stand: no LLM call for them', async () => {
    const path = join(dir, `db${file++}.sqlite`);
    up = await startUpstream({ reply });
    const llm = { baseUrl: `${up.base}/v1`, model: 'test-model', maxRetries: 0 } as never;
    const m = await mem({ storage: fileStorage(path), contextWindow: 3000, maintenance: 'manual', tagger: 'keyword', llm });
    for (let i = 0; i < 400; i++) up.next.push({ status: 400, body: '{"error":"down"}' });
    await m.onTurnComplete({ conversationId: 'cf', messages: chat('cf', 60) });
    await m.flush();
    up.next.length = 0;
    const all = await m.summaries('cf');
    expect(all.length).toBeGreaterThan(0);
    expect(all.every((s) => s.madeBy === 'extractive (llm:test-model failed)')).toBe(true);
    const calls = up.seen.length;
    const report = await m.maintain();
    expect(report.more).toBe(false);
    expect(report.rebuilds).toEqual([]);
    expect(up.seen.length).toBe(calls);
  });
});
