// An upgrade at the edge, in real workerd (Miniflare 4): a conversation written under an older summarizer release,
// the Worker deployed again with the current one (same Durable Object storage), and the summaries rebuilt by the
// object's alarms, one slice per alarm, recall holding a summary between alarms and no RPC failing.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXTRACTIVE_VERSION } from '../../../src/compaction/extractive.js';
import { SLICE_SUMMARIES } from '../../../src/engine/rebuild.js';
import type { AssembledContext, ChatMessage, CompactionReport, Summary } from '../../../src/contracts/types.js';
import type { AlarmLog } from '../../support/edge/rebuild-worker.js';

let mf: Miniflare | undefined;
const dir = mkdtempSync(join(tmpdir(), 'pagewise-edge-rebuild-'));
let script = '';

/** The Worker under the release `phase` names, on the same persisted storage. */
async function deploy(phase: 'old' | 'new'): Promise<void> {
  await mf?.dispose();
  mf = new Miniflare({
    modulesRoot: dir, modules: [{ type: 'ESModule', path: join(dir, 'rebuild-worker.mjs'), contents: script }], compatibilityDate: '2025-09-01',
    durableObjects: { REBUILD_MEMORY: { className: 'RebuildMemory', useSQLite: true } },
    durableObjectsPersist: join(dir, 'do'),
    bindings: { PHASE: phase },
  });
  await mf.ready;
}

beforeAll(async () => {
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, '../../support/edge/rebuild-worker.ts')], bundle: true, format: 'esm', platform: 'neutral',
    target: 'es2022', write: false, external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
  });
  script = out.outputFiles[0]!.text;
  writeFileSync(join(dir, 'rebuild-worker.mjs'), script);
}, 120_000);

afterAll(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

type Outcome<T> = { value?: T; error?: { name?: string; code?: string; message?: string } };
const call = async <T>(object: string, method: string, ...args: unknown[]): Promise<T> => {
  const got = await (await mf!.dispatchFetch(`http://edge.test/call/${encodeURIComponent(object)}/${method}`, { method: 'POST', body: JSON.stringify(args) })).json() as Outcome<T>;
  expect(got.error, `${method}: ${JSON.stringify(got.error)}`).toBeUndefined();
  return got.value as T;
};
const log = async (object: string) => (await mf!.dispatchFetch(`http://edge.test/log/${object}`)).json() as Promise<AlarmLog>;
const allow = async (object: string, alarms: number | null) =>
  expect((await mf!.dispatchFetch(`http://edge.test/allow/${object}`, { method: 'POST', body: JSON.stringify(alarms) })).status).toBe(204);

function chat(pairs: number): ChatMessage[] {
  const topics = ['postgres materialized views', 'half-marathon training in Lisbon', 'sourdough starter feeding', 'tenant rights'];
  return Array.from({ length: pairs }, (_, i) => {
    const topic = topics[Math.floor(i / 4) % topics.length]!;
    return [
      { role: 'user', content: `About ${topic}: question ${i}, what should we decide for step ${i}?`, id: `u${i}` },
      { role: 'assistant', content: `For ${topic}, step ${i}: we decided to keep option ${i * 7} because it costs ${i + 3} dollars.`, id: `a${i}` },
    ] as ChatMessage[];
  }).flat();
}

describe('an upgrade at the edge', () => {
  it('rebuilds the older release\'s summaries one slice per alarm, recall holding a summary between alarms', async () => {
    const o = 'r1';
    await deploy('old');
    // No alarm does work until the test lets it: compaction is driven by hand here, and the rebuild counted later.
    await allow(o, 0);
    await call(o, 'onTurnComplete', { conversationId: o, messages: chat(90) });
    for (let r = await call<CompactionReport | null>(o, 'compact', o); r?.more; r = await call<CompactionReport | null>(o, 'compact', o));
    const written = await call<Summary[]>(o, 'summaries', o);
    expect(written.length).toBeGreaterThan(SLICE_SUMMARIES * 2);
    expect(written.every((s) => s.madeBy === 'extractive' && s.promptVersion === EXTRACTIVE_VERSION - 1)).toBe(true);

    // The next release, on the same storage.
    await deploy('new');
    const ask = () => call<AssembledContext>(o, 'onMessageInbound', { conversationId: o, message: { role: 'user', content: 'Going back to the very beginning, what did we decide first?' } });
    const first = await ask();
    expect(first.manifest.some((e) => e.kind === 'summary')).toBe(true);
    const start = await log(o);
    for (let k = 1; ; k++) {
      await allow(o, 1);
      await expect.poll(async () => (await log(o)).alarms, { timeout: 120_000 }).toBe(start.alarms + k);
      const after = (await log(o)).after;
      const now = after.at(-1)!;
      const before = after.length > start.after.length + 1 ? after.at(-2)!.current : 0;
      // One slice per alarm: some summaries, at most a slice of them.
      expect(now.total).toBe(written.length);
      expect(now.current - before).toBeGreaterThan(0);
      expect(now.current - before).toBeLessThanOrEqual(SLICE_SUMMARIES);
      // Between alarms recall holds a summary of the compacted span: the old text or the new.
      const ctx = await ask();
      const placed = ctx.manifest.filter((e) => e.kind === 'summary');
      expect(placed.length).toBeGreaterThan(0);
      const ids = new Set(written.map((s) => s.id));
      for (const e of placed) expect(ids.has(e.summaryId!)).toBe(true);
      if (now.current === now.total) break;
      expect(k).toBeLessThan(written.length);
    }
    const alarms = (await log(o)).alarms - start.alarms;
    expect(alarms).toBeGreaterThanOrEqual(Math.ceil(written.length / SLICE_SUMMARIES));
    const rebuilt = await call<Summary[]>(o, 'summaries', o);
    expect(rebuilt.map((s) => s.id).sort()).toEqual(written.map((s) => s.id).sort());
    expect(rebuilt.every((s) => s.madeBy === 'extractive' && s.promptVersion === EXTRACTIVE_VERSION)).toBe(true);
    // Nothing left: maintain() over RPC says so.
    expect(await call(o, 'maintain')).toMatchObject({ rebuilds: [], more: false });
  });
});
