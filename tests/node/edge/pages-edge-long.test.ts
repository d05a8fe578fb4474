// A 50,000-turn conversation at the edge, in real workerd (Miniflare 4), with the real limits: a page stops before
// 8 MiB, and Workers RPC carries at most 32 MiB in one value. Its summaries, turns and export are more than that
// whole: every list pages through it without an RPC error, and the unpaged calls answer RESULT_TOO_LARGE, typed (not
// the RPC's own error). Built the cheap way: five imports of 10,000 turns (an object's most per call), each an export
// page that follows the one before, then compact() a slice per call; segments of at most 3 turns (sumWindow) make its
// summaries some 40 MB, as an app's message ids (a UUID's length) and turns of a few sentences do.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredTurn, Summary } from '../../../src/contracts/types.js';
import type { ExportData, TagStat } from '../../../src/contracts/types-data.js';
import { buildConversation, idOf, readPages, startPagesEdge, type PagesEdge } from '../../support/edge/pages-steps.js';

const TURNS = 50_000;
const MIB = 1024 * 1024;
let edge: PagesEdge;
const took: Record<string, number> = {};

beforeAll(async () => {
  edge = await startPagesEdge({ SUM_WINDOW: '3' });
  const t0 = performance.now();
  await buildConversation(edge, 'long', 'c', TURNS, 10_000, 6);
  took.build = performance.now() - t0;
}, 1_800_000);

afterAll(async () => {
  await edge?.dispose();
  console.log(`pages-edge-long: ${Object.entries(took).map(([k, ms]) => `${k} ${(ms / 1000).toFixed(1)} s`).join(', ')}`);
});

describe('a 50,000-turn conversation, a page at a time over Workers RPC', () => {
  it('summaries: every one once in pages under 8 MiB; unpaged, RESULT_TOO_LARGE', async () => {
    const t0 = performance.now();
    const summaries = await readPages<Summary>(edge, 'long', 'summaries', (cursor) => ['c', { cursor, limit: 10_000 }]);
    took.summaries = performance.now() - t0;
    expect(new Set(summaries.items.map((s) => s.id)).size).toBe(summaries.items.length);
    for (const s of summaries.sizes) expect(s.bytes).toBeLessThan(8 * MIB + 4096);
    const total = summaries.sizes.reduce((n, s) => n + s.bytes, 0);
    console.log(`pages-edge-long: ${summaries.items.length} summaries, ${(total / MIB).toFixed(1)} MiB in ${summaries.sizes.length} pages`);
    expect(total).toBeGreaterThan(32 * MIB);
    const unpaged = await edge.call('long', 'summaries', 'c');
    expect(unpaged.error).toMatchObject({ name: 'PagewiseError', code: 'RESULT_TOO_LARGE' });
    expect(unpaged.error!.message).toContain("pass { cursor: null, limit } and follow each page's cursor");
  });

  it('turns, tags and export page through it; the unpaged turns and export answer RESULT_TOO_LARGE', async () => {
    const t0 = performance.now();
    const turns = await readPages<StoredTurn>(edge, 'long', 'turns', (cursor) => ['c', { cursor, limit: 10_000 }]);
    took.turns = performance.now() - t0;
    expect(turns.items.length).toBe(TURNS);
    expect(turns.items.every((t, i) => t.id === idOf(i) && t.seq === i)).toBe(true);
    for (const s of turns.sizes) expect(s.bytes).toBeLessThan(8 * MIB + 4096);
    expect((await edge.call('long', 'turns', 'c', { limit: TURNS })).error).toMatchObject({ code: 'RESULT_TOO_LARGE' });

    const tags = await readPages<TagStat>(edge, 'long', 'tags', (cursor) => ['c', { cursor }]);
    expect(tags.items.length).toBeGreaterThan(0);
    expect(tags.items.map((t) => t.tag)).toEqual([...new Set(tags.items.map((t) => t.tag))].sort());

    const t1 = performance.now();
    const pages = await readPages<ExportData>(edge, 'long', 'export', (cursor) => ['c', { cursor, limit: 10_000 }], (p) => [p as ExportData]);
    took.export = performance.now() - t1;
    const exported = pages.items.flatMap((p) => p.conversations[0]!.turns.map((t) => t.id));
    expect(exported.length).toBe(TURNS);
    expect(exported.every((id, i) => id === idOf(i))).toBe(true);
    for (const s of pages.sizes) expect(s.bytes).toBeLessThan(8 * MIB + 4096);
    expect((await edge.call('long', 'export', 'c')).error).toMatchObject({ code: 'RESULT_TOO_LARGE' });
  });
});
