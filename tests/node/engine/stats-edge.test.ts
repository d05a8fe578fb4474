// memory.stats() at the edge, in real workerd (Miniflare 4): the figures cross Workers RPC, and a Durable Object that
// goes away without close() (a restart of workerd: what an eviction does to it) comes back with every count.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssembledContext, MemoryStats, TurnReport } from '../../../src/contracts/types.js';
import { bundleTestWorker, startTestWorker } from '../../support/edge-worker.js';

let mf: Miniflare;
const dir = mkdtempSync(join(tmpdir(), 'pagewise-stats-edge-'));
let script = '';
const start = async () => { mf = await startTestWorker(dir, script, {}); };

type Outcome<T> = { value?: T; error?: { code?: string } };
const call = async <T>(object: string, method: string, ...args: unknown[]): Promise<Outcome<T>> =>
  (await mf.dispatchFetch(`http://edge.test/call/memory/${encodeURIComponent(object)}/${method}`, { method: 'POST', body: JSON.stringify(args) })).json() as Promise<Outcome<T>>;

beforeAll(async () => {
  script = await bundleTestWorker(dir);
  await start();
}, 120_000);

afterAll(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('memory.stats() in a Durable Object', () => {
  it('counts over RPC and keeps every count when the object goes away without close()', async () => {
    let total = 0;
    for (let i = 0; i < 3; i++) {
      const message = { role: 'user', content: `Step ${i}: the staging password rotates every Friday at noon, right?` };
      const ctx = await call<AssembledContext>('st1', 'onMessageInbound', { conversationId: 'st1', message });
      expect(ctx.error).toBeUndefined();
      total += ctx.value!.budget.total;
      const report = await call<TurnReport>('st1', 'onTurnComplete', { conversationId: 'st1', messages: [message, { role: 'assistant', content: `Yes, step ${i}: Fridays at noon.` }] });
      expect(report.value!.stored).toBe(2);
    }
    expect((await call('st1', 'onTurnComplete', { conversationId: 'st1', messages: [{ role: 'bogus', content: 'x' }] })).error).toMatchObject({ code: 'INVALID_ROLE' });
    // Straight to a restart: no stats() (which writes what is buffered) and no close() before it.
    await mf.dispose();
    await start();
    const stats = (await call<MemoryStats>('st1', 'stats', { conversationId: 'st1' })).value!;
    expect(stats.usage.calls).toEqual({ onMessageInbound: 3, onTurnComplete: 3 });
    expect(stats.usage.turnsStored).toBe(6);
    expect(stats.usage.tokens.total).toBe(total);
    expect(stats.bytes).toBeGreaterThan(0);
    // What lives in memory started over with the object.
    expect(stats.errors).toEqual({});
    const all = (await call<MemoryStats>('st1', 'stats')).value!;
    expect(all.usage.calls.onTurnComplete).toBe(3);
    expect(all.latencyMs.stats!.count).toBe(1);
    // Durable Object SQL may refuse the page-count pragma: then null, never a wrong figure.
    expect(all.bytes === null || all.bytes > 0).toBe(true);
  }, 120_000);
});
