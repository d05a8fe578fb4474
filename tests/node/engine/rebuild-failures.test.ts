// A rebuild after an upgrade while what it needs fails (engine/rebuild.ts, rebuild-vectors.ts): an embedder or a
// summarizer that is down is asked once, the slices stop saying `more` and report why, and it is asked again after a
// wait that doubles (1 min, 2 min, ... 1 h), not at every slice; flush() returns meanwhile. And an LLM call of a
// conversation forgotten while the call was out leaves no row of it in the ledger.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { RETRY_MAX_MS, RETRY_MIN_MS, createRetry } from '../../../src/engine/rebuild-vectors.js';
import type { Memory } from '../../../src/index.js';
import type { ChatMessage, Embedder, LlmProvider, StorageDriver, Summarizer } from '../../../src/contracts/types.js';
import type { MaintenanceReport } from '../../../src/contracts/types-ops.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

/** An embedder whose answers can be turned off (`down`), counting its calls. */
function switchable(modelId: string) {
  const e = {
    down: false,
    calls: 0,
    embedder: {
      modelId, dimensions: 64, maxBatchSize: 8, threshold: 0.1,
      async embed(texts: readonly string[]) {
        e.calls++;
        if (e.down) throw new Error('503 from the embedding service');
        return texts.map((t) => { const v = new Float32Array(64); v[t.length % 64] = 1; return v; });
      },
    } satisfies Embedder,
  };
  return e;
}

/** The driver stays open when an engine closes: the next engine opens the same database, as after a restart. */
const shared = (d: StorageDriver): StorageDriver => ({ name: d.name, query: (s, p) => d.query(s, p), batch: (s) => d.batch(s), close: () => undefined });

function chat(tag: string, pairs: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; i < pairs; i++) {
    out.push(user(`About the sourdough starter: question ${i} of ${tag}, what should we decide for step ${i}?`));
    out.push(assistant(`Step ${i} of ${tag}: we decided to keep option ${i * 7} because it costs ${i + 3} dollars.`));
  }
  return out;
}

const open: Memory[] = [];
afterEach(async () => { vi.restoreAllMocks(); await Promise.all(open.splice(0).map((m) => m.close())); });
async function mem(options: Parameters<typeof createMemory>[0]): Promise<Memory> {
  const m = await createMemory(options);
  open.push(m);
  return m;
}

/** The wall clock moved on by hand (the waits are minutes long). */
function clock() {
  const real = Date.now.bind(Date);
  let ahead = 0;
  vi.spyOn(Date, 'now').mockImplementation(() => real() + ahead);
  return { advance: (ms: number) => { ahead += ms; } };
}

const vectorsOf = (r: MaintenanceReport) => r.rebuilds.find((s) => s.kind === 'vectors');

/** Three conversations embedded with model-a; the driver, to open again with another model. */
async function embeddedWithA(): Promise<StorageDriver> {
  const driver = await sqliteWasm()();
  const m = await createMemory({ embedder: switchable('model-a').embedder, storage: shared(driver), maintenance: 'manual' });
  for (const c of ['va', 'vb', 'vc']) await m.onTurnComplete({ conversationId: c, messages: [user(`Step of ${c}: the greenhouse valves.`), assistant(`Noted ${c}.`)] });
  await m.flush();
  await m.close();
  return driver;
}

describe('the wait after a failure', () => {
  it('is a minute, doubles with each failure that follows up to an hour, and a success clears it', () => {
    let now = 0;
    const retry = createRetry(() => now);
    expect(retry.dueInMs()).toBeNull();
    const waits: number[] = [];
    for (let i = 0; i < 9; i++) {
      retry.failed('down');
      waits.push(retry.dueInMs()!);
      expect(retry.waiting()).toBe(true);
      now += waits[waits.length - 1]!;
      expect(retry.waiting()).toBe(false);
    }
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60].map((m) => m * RETRY_MIN_MS));
    expect(RETRY_MAX_MS).toBe(60 * RETRY_MIN_MS);
    expect(retry.error()).toBe('down');
    retry.succeeded();
    expect([retry.error(), retry.dueInMs(), retry.waiting()]).toEqual([null, null, false]);
    retry.failed('down again');
    expect(retry.dueInMs()).toBe(RETRY_MIN_MS);
  });
});

describe('vectors while the embedder fails', () => {
  it('stop asking for slices, say why, and are handed over again after a wait that doubles, until the embedder is back', async () => {
    const driver = await embeddedWithA();
    const time = clock();
    const b = switchable('model-b');
    b.down = true;
    const m = await mem({ embedder: b.embedder, storage: shared(driver), maintenance: 'manual' });
    expect((await m.maintain()).more).toBe(true);
    await m.flush();
    expect(b.calls).toBe(1);
    // The batch failed: no slice asks for more, none hands a conversation over, the status says why.
    for (let i = 0; i < 5; i++) {
      const r = await m.maintain();
      await m.flush();
      expect(r.more).toBe(false);
      expect(vectorsOf(r)).toMatchObject({ done: 0, total: 6, lastError: expect.stringContaining('503') });
    }
    expect(b.calls).toBe(1);
    expect((await m.stats()).rebuilds.find((s) => s.kind === 'vectors')?.lastError).toContain('503');
    // After a minute, one conversation again: it fails, and the next wait is two minutes.
    time.advance(RETRY_MIN_MS + 1);
    expect((await m.maintain()).more).toBe(false);
    await m.flush();
    expect(b.calls).toBe(2);
    time.advance(RETRY_MIN_MS + 1);
    await m.maintain();
    await m.flush();
    expect(b.calls).toBe(2);
    // Back up: the retry after the wait clears the failure, and the slices go on to the end.
    b.down = false;
    time.advance(RETRY_MIN_MS + 1);
    await m.maintain();
    await m.flush();
    expect(b.calls).toBe(3);
    let last: MaintenanceReport | undefined;
    for (let slices = 0; slices < 20 && (last === undefined || last.more); slices++) {
      last = await m.maintain();
      await m.flush();
      expect(vectorsOf(last)?.lastError).toBeUndefined();
    }
    expect(last?.more).toBe(false);
    for (const c of ['va', 'vb', 'vc']) expect(await m.embeddingStatus(c)).toMatchObject({ modelId: 'model-b', embedded: 2, total: 2 });
    expect((await m.maintain()).rebuilds).toEqual([]);
  });

  it('with maintenance "auto", flush() returns: the loop stops at the failure instead of handing the same conversations over again', async () => {
    const driver = await embeddedWithA();
    const b = switchable('model-b');
    b.down = true;
    const m = await mem({ embedder: b.embedder, storage: shared(driver) });
    await m.flush();
    // At most one failed batch per conversation handed over before the failure was seen.
    expect(b.calls).toBeGreaterThan(0);
    expect(b.calls).toBeLessThanOrEqual(3);
    expect((await m.stats()).rebuilds.find((s) => s.kind === 'vectors')?.lastError).toContain('503');
  });
});

describe('summaries while the summarizer fails', () => {
  const failing = (calls: { n: number }): Summarizer => ({
    name: 'mine', version: 2,
    async summarize() { calls.n++; throw new Error('upstream 500'); },
  });

  it('the summarizer is asked once, not again at every slice of another rebuild, until the wait is over', async () => {
    const driver = await sqliteWasm()();
    const a = switchable('model-a');
    let m = await createMemory({ storage: shared(driver), contextWindow: 3000, embedder: a.embedder, maintenance: 'manual' });
    for (const c of ['c1', 'c2', 'c3', 'c4', 'c5', 'c6']) await m.onTurnComplete({ conversationId: c, messages: chat(c, 60) });
    await m.flush();
    await m.close();
    const time = clock();
    const calls = { n: 0 };
    m = await mem({ storage: shared(driver), contextWindow: 3000, embedder: switchable('model-b').embedder, summarizer: failing(calls), maintenance: 'manual' });
    let slices = 0;
    let last: MaintenanceReport | undefined;
    for (; slices < 60 && (last === undefined || last.more); slices++) {
      last = await m.maintain();
      await m.flush();
    }
    // The vectors' rebuild took several slices; the summarizer was asked at the first only.
    expect(slices).toBeGreaterThan(2);
    expect(last?.more).toBe(false);
    expect(calls.n).toBe(1);
    expect(last?.rebuilds.find((s) => s.kind === 'summaries')).toMatchObject({ done: 0, lastError: expect.stringContaining('mine failed') });
    time.advance(RETRY_MIN_MS + 1);
    await m.maintain();
    expect(calls.n).toBe(2);
    await m.maintain();
    expect(calls.n).toBe(2);
  });
});

describe('the ledger and forget', () => {
  it('writes no row of a conversation forgotten while its rebuild\'s LLM call was out', async () => {
    const driver = await sqliteWasm()();
    let m = await createMemory({ storage: shared(driver), contextWindow: 3000, maintenance: 'manual' });
    // Written last, so the newest: the rebuild takes it first.
    await m.onTurnComplete({ conversationId: 'kept', messages: chat('kept', 60) });
    await m.onTurnComplete({ conversationId: 'secret-ca', messages: chat('ca', 60) });
    await m.flush();
    await m.close();
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    let called!: () => void;
    const inCall = new Promise<void>((r) => { called = r; });
    const llm: LlmProvider = {
      name: 'fake', model: 'm1',
      async complete() { called(); await gate; return { text: 'A short summary of the steps.', model: 'm1', usage: { inputTokens: 100, outputTokens: 10 } }; },
    };
    m = await mem({ storage: shared(driver), contextWindow: 3000, maintenance: 'manual', llm, summarizer: 'llm' });
    // The rebuild's call for 'secret-ca' is out while it is forgotten.
    const slice = m.maintain();
    await inCall;
    await m.forget({ conversationId: 'secret-ca' });
    release();
    await slice;
    expect(await driver.query("SELECT COUNT(*) AS n FROM llm_usage WHERE conversation_id = 'secret-ca'")).toEqual([{ n: 0 }]);
    // A stored conversation's calls are still recorded.
    while ((await m.maintain()).more);
    const kept = (await m.costReport('kept')).lines.filter((l) => l.purpose === 'rebuild');
    expect(kept.reduce((n, l) => n + l.calls, 0)).toBeGreaterThan(0);
  });
});
