// Paged lists at the edge, in real workerd (Miniflare 4), over Workers RPC: a 2,000-turn conversation whose answers
// are made large against a small byte cap and a small RPC allowance (bindings of the test Worker; the defaults are
// 8 MiB a page and 31 MiB an answer, tested on 50,000 turns in pages-edge-long.test.ts). Every list pages through it
// without an RPC error; the unpaged calls answer RESULT_TOO_LARGE, typed; export pages imported in order into
// another object rebuild the conversation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredTurn, Summary } from '../../../src/contracts/types.js';
import type { ExportData, TagStat } from '../../../src/contracts/types-data.js';
import { buildConversation, idOf, readPages, startPagesEdge, type PagesEdge } from '../../support/edge/pages-steps.js';

const TURNS = 2_000;
const PAGE_BYTES = 48 * 1024;
const RESULT_BYTES = 96 * 1024;
let edge: PagesEdge;

beforeAll(async () => {
  edge = await startPagesEdge({ PAGE_BYTES: String(PAGE_BYTES), RESULT_BYTES: String(RESULT_BYTES) });
  await buildConversation(edge, 'u1', 'c', TURNS, 700, 2);
}, 300_000);

afterAll(async () => { await edge?.dispose(); });

const ids = (n: number) => Array.from({ length: n }, (_, i) => idOf(i));

describe('paged lists over Workers RPC', () => {
  it('turns, tags, summaries and export page through the conversation; each page within its limit and cap', async () => {
    const turns = await readPages<StoredTurn>(edge, 'u1', 'turns', (cursor) => ['c', { cursor, limit: 300 }]);
    expect(turns.items.map((t) => t.id)).toEqual(ids(TURNS));
    expect(turns.items.map((t) => t.seq)).toEqual(turns.items.map((_, i) => i));
    for (const s of turns.sizes) expect(s.items).toBeLessThanOrEqual(300);
    for (const s of turns.sizes) expect(s.bytes).toBeLessThanOrEqual(PAGE_BYTES + 1024);
    expect(turns.sizes.length).toBeGreaterThan(TURNS / 300);

    const tags = await readPages<TagStat>(edge, 'u1', 'tags', (cursor) => ['c', { cursor, limit: 5 }]);
    expect(tags.items.length).toBeGreaterThan(5);
    expect(tags.items.map((t) => t.tag)).toEqual([...new Set(tags.items.map((t) => t.tag))].sort());

    const summaries = await readPages<Summary>(edge, 'u1', 'summaries', (cursor) => ['c', { cursor, limit: 10_000 }]);
    expect(summaries.items.length).toBeGreaterThan(10);
    expect(new Set(summaries.items.map((s) => s.id)).size).toBe(summaries.items.length);
    for (const s of summaries.sizes) expect(s.bytes).toBeLessThanOrEqual(PAGE_BYTES + 1024);
    // What the unpaged call would answer is over the allowance: it is refused, typed, with the fix.
    expect(summaries.sizes.reduce((n, s) => n + s.bytes, 0)).toBeGreaterThan(RESULT_BYTES);
    const unpaged = await edge.call('u1', 'summaries', 'c');
    expect(unpaged.error).toMatchObject({ name: 'PagewiseError', code: 'RESULT_TOO_LARGE' });
    expect(unpaged.error!.message).toContain("pass { cursor: null, limit } and follow each page's cursor");
    expect((await edge.call('u1', 'turns', 'c', { limit: 5000 })).error).toMatchObject({ code: 'RESULT_TOO_LARGE' });
    expect((await edge.call('u1', 'export', 'c')).error).toMatchObject({ code: 'RESULT_TOO_LARGE' });
    // A small answer of the same methods crosses as before.
    expect((await edge.ok<StoredTurn[]>('u1', 'turns', 'c', { limit: 10 })).map((t) => t.id)).toEqual(ids(10));
    expect(await edge.ok<unknown[]>('u1', 'conversations')).toHaveLength(1);

    // Export pages imported in order into another object: the same conversation.
    const pages = await readPages<ExportData>(edge, 'u1', 'export', (cursor) => ['c', { cursor, limit: 1000 }], (p) => [p as ExportData]);
    expect(pages.items.flatMap((p) => p.conversations[0]!.turns.map((t) => t.id))).toEqual(ids(TURNS));
    for (const p of pages.items) await edge.ok('u2', 'import', p);
    const copy = await readPages<StoredTurn>(edge, 'u2', 'turns', (cursor) => ['c', { cursor, limit: 1000 }]);
    expect(copy.items).toEqual(turns.items);
  });

  it('a bad cursor or limit is typed over RPC, with its path', async () => {
    const tagsCursor = (await edge.ok<{ cursor: string }>('u1', 'tags', 'c', { cursor: null, limit: 1 })).cursor;
    expect((await edge.call('u1', 'summaries', 'c', { cursor: tagsCursor })).error).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'page.cursor' });
    expect((await edge.call('u1', 'turns', 'c', { cursor: null, limit: 0 })).error).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'page.limit' });
  });
});
