// Retention at the edge, in real workerd (Miniflare 4): a PagewiseMemory with `retention` in its options removes the
// turns past maxAgeDays over its alarms, one slice (one log entry, at most sliceTurns turns) per alarm, pinned ones
// kept, with no RPC failing between them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage, StoredTurn } from '../../../src/contracts/types.js';
import type { Page, RetentionLogEntry } from '../../../src/contracts/types-ops.js';
import type { AlarmLog } from '../../support/edge/retention-worker.js';

let mf: Miniflare;
const dir = mkdtempSync(join(tmpdir(), 'pagewise-edge-retention-'));
const DAY = 86_400_000;
/** Turns removed per slice (one alarm). */
const SLICE_TURNS = 16;

beforeAll(async () => {
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, '../../support/edge/retention-worker.ts')], bundle: true, format: 'esm', platform: 'neutral',
    target: 'es2022', write: false, external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
  });
  const script = join(dir, 'retention-worker.mjs');
  writeFileSync(script, out.outputFiles[0]!.text);
  mf = new Miniflare({
    modulesRoot: dir, modules: [{ type: 'ESModule', path: script, contents: out.outputFiles[0]!.text }], compatibilityDate: '2025-09-01',
    durableObjects: { RETENTION_MEMORY: { className: 'RetentionMemory', useSQLite: true } },
    durableObjectsPersist: join(dir, 'do'),
    bindings: { SLICE_TURNS },
  });
  await mf.ready;
}, 120_000);

afterAll(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

type Outcome<T> = { value?: T; error?: { name?: string; code?: string; message?: string } };
const call = async <T>(object: string, method: string, ...args: unknown[]): Promise<T> => {
  const got = await (await mf.dispatchFetch(`http://edge.test/call/${encodeURIComponent(object)}/${method}`, { method: 'POST', body: JSON.stringify(args) })).json() as Outcome<T>;
  expect(got.error, `${method}: ${JSON.stringify(got.error)}`).toBeUndefined();
  return got.value as T;
};
const log = async (object: string) => (await mf.dispatchFetch(`http://edge.test/log/${object}`)).json() as Promise<AlarmLog>;
const allow = async (object: string, yes: boolean) =>
  expect((await mf.dispatchFetch(`http://edge.test/allow/${object}`, { method: 'POST', body: JSON.stringify(yes ? null : 0) })).status).toBe(204);

describe('retention at the edge', () => {
  it('removes turns past maxAgeDays over its alarms, one slice per alarm, pins kept, no RPC failing', async () => {
    const o = 'old-notes';
    await allow(o, false);
    const now = Date.now();
    // 100 turns: the first 70 written 60 days ago, the rest 2 days ago.
    const messages: ChatMessage[] = Array.from({ length: 100 }, (_, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant', id: `t${i}`, content: `Note ${i}: ${i < 70 ? 'old' : 'new'} entry qx${i}x.`,
      createdAt: new Date(now - (i < 70 ? 60 : 2) * DAY).toISOString(),
    }));
    await call(o, 'onTurnComplete', { conversationId: o, messages });
    await call(o, 'pin', o, 't4');
    const start = await log(o);
    await allow(o, true);
    // The alarms go on until the log holds every removal (69 turns), calls answering between them.
    const removed = async () => (await call<Page<RetentionLogEntry>>(o, 'retentionLog', { limit: 100 })).items.reduce((s, e) => s + e.turns, 0);
    await expect.poll(async () => {
      await call(o, 'onMessageInbound', { conversationId: o, message: { role: 'user', content: 'What did the old notes say?' } });
      return removed();
    }, { timeout: 120_000, interval: 50 }).toBe(69);
    const entries = (await call<Page<RetentionLogEntry>>(o, 'retentionLog', {})).items;
    expect(entries.length).toBeGreaterThanOrEqual(Math.ceil(69 / SLICE_TURNS));
    expect(entries.every((e) => e.reason === 'maxAgeDays' && e.turns <= SLICE_TURNS && !e.conversationRemoved)).toBe(true);
    // One slice per alarm: each alarm added at most one entry to the log.
    await expect.poll(async () => (await log(o)).after.at(-1)?.entries, { timeout: 60_000 }).toBe(entries.length);
    const after = (await log(o)).after.slice(start.after.length);
    let before = 0;
    for (const a of after) {
      expect(a.entries - before).toBeLessThanOrEqual(1);
      before = a.entries;
    }
    expect(after.filter((a, i) => a.entries > (i === 0 ? 0 : after[i - 1]!.entries)).length).toBe(entries.length);
    const turns = await call<StoredTurn[]>(o, 'turns', o);
    expect(turns.map((t) => t.id)).toEqual(['t4', ...Array.from({ length: 30 }, (_, i) => `t${70 + i}`)]);
    expect(await call(o, 'maintain')).toMatchObject({ retention: null, more: false });
  });
});
