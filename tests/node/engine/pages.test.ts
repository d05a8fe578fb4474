// Paged lists: turns, tags, summaries and export a page at a time (a cursor, null for the first page). Each list
// gives every item once, in order, within the page's limit and byte cap; a bad limit or cursor is typed and changes
// nothing; export pages imported in order give what a whole export and import gives.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Memory } from '../../../src/index.js';
import { pageLimits } from '../../../src/common/pages.js';
import type { Page, StoredTurn, Summary } from '../../../src/contracts/types.js';
import type { ExportData, TagStat } from '../../../src/contracts/types-data.js';
import { b64, png } from '../../fixtures/media.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

const C = 'paged';
const TURNS = 600;
const TOPICS = ['sourdough starter', 'Lisbon trip', 'Postgres migration', 'the dog Biscuit', 'tax forms', 'piano lessons', 'garden tomatoes', 'a marathon plan'];
const caught = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e as { name?: string; code?: string; path?: string; message: string });
const IMAGE = png(64, 48, 3, 'paged-image');
const SAVED = { ...pageLimits };

/** A conversation of `n` turns in export format (ids t0…, a minute apart), about a few things in turn. */
function exported(n: number, conversationId = C, long = 0): ExportData {
  const turns = Array.from({ length: n }, (_, i) => ({
    id: `t${i}`, role: i % 2 === 0 ? 'user' as const : 'assistant' as const, createdAt: new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString(),
    content: `Turn ${i} about ${TOPICS[Math.floor(i / 10) % TOPICS.length]}: step ${i % 10} of the plan, with word${i % 37} noted.${'x'.repeat(long)}`,
  }));
  return { format: 'pagewise', version: 1, exportedAt: new Date().toISOString(), conversations: [{ id: conversationId, createdAt: turns[0]!.createdAt, updatedAt: turns[0]!.createdAt, turns, pins: [], aliases: [] }], aliases: [] };
}

/** Every page of a list, following each cursor; each page's size checked against `limit`. */
async function all<T>(get: (cursor: string | null) => Promise<Page<T>>, limit: number): Promise<{ items: T[]; pages: T[][] }> {
  const pages: T[][] = [];
  let cursor: string | null = null;
  do {
    const page: Page<T> = await get(cursor);
    expect(page.items.length).toBeLessThanOrEqual(limit);
    pages.push(page.items);
    cursor = page.cursor;
    expect(pages.length).toBeLessThan(10_000);
  } while (cursor !== null);
  return { items: pages.flat(), pages };
}

let m: Memory;
let forkId = '';

beforeAll(async () => {
  m = await createMemory();
  await m.import(exported(TURNS));
  // A branch: an edit after t299, two turns on it, then back to the first branch's tip.
  await m.onTurnComplete({ conversationId: C, parentId: 't299', messages: [user('An edited question about the sourdough starter', { id: 'e1' }), assistant('The edited answer', { id: 'e2' })] } as never);
  forkId = 'e1';
  await m.checkout(C, `t${TURNS - 1}`);
  await m.onTurnComplete({ conversationId: C, messages: [user([{ type: 'text', text: 'The floor plan' }, { type: 'image', data: `data:image/png;base64,${b64(IMAGE)}`, name: 'plan.png' }] as never, { id: 'img' }), assistant('Noted the plan', { id: 'img2' })] });
  await m.pin(C, 't5');
  await m.pin(C, 'e2');
  await m.aliases.add('sourdough', 'bread', { conversationId: C });
  await m.compact(C);
  await m.flush();
}, 120_000);

afterEach(() => { Object.assign(pageLimits, SAVED); });

describe('turns a page at a time', () => {
  it('the current path, every turn once, in order, pages of the limit', async () => {
    const whole = await m.turns(C, { limit: 10_000 });
    expect(whole.length).toBe(TURNS + 2);
    const { items, pages } = await all((cursor) => m.turns(C, { cursor, limit: 7 }), 7);
    expect(items).toEqual(whole);
    expect(pages.slice(0, -1).every((p) => p.length === 7)).toBe(true);
    // The default limit is 500.
    expect((await m.turns(C, { cursor: null })).items).toHaveLength(500);
  });

  it("another branch's path, without switching to it", async () => {
    const whole = await m.turns(C, { branch: forkId, limit: 10_000 });
    expect(whole.map((t) => t.id).slice(-3)).toEqual(['t299', 'e1', 'e2']);
    expect((await all((cursor) => m.turns(C, { cursor, limit: 45, branch: forkId }), 45)).items).toEqual(whole);
  });

  it('a page stops at the byte cap, and always holds one turn', async () => {
    pageLimits.pageBytes = 2_000;
    const whole = await m.turns(C, { limit: 10_000 });
    const { items, pages } = await all((cursor) => m.turns(C, { cursor, limit: 100 }), 100);
    expect(items).toEqual(whole);
    for (const p of pages) expect(p.length === 1 || JSON.stringify(p).length <= 2_000).toBe(true);
    expect(Math.max(...pages.map((p) => p.length))).toBeLessThan(100);
    pageLimits.pageBytes = 10;
    expect((await all((cursor) => m.turns(C, { cursor, limit: 100 }), 1)).items).toEqual(whole);
  });

  it('pages hold while the conversation grows; a checkout that moves the cursor\'s turn off the path refuses it', async () => {
    const g = await createMemory();
    await g.import(exported(50, 'g'));
    const first = await g.turns('g', { cursor: null, limit: 30 });
    await g.onTurnComplete({ conversationId: 'g', messages: [user('later', { id: 'n1' }), assistant('later still', { id: 'n2' })] });
    const rest = await all((cursor) => g.turns('g', { cursor: cursor ?? first.cursor, limit: 30 }), 30);
    expect([...first.items, ...rest.items].map((t) => t.id)).toEqual([...Array.from({ length: 50 }, (_, i) => `t${i}`), 'n1', 'n2']);
    // An edit after t9 moves the conversation to a branch without t29: the cursor is refused, typed.
    await g.onTurnComplete({ conversationId: 'g', parentId: 't9', messages: [user('edited', { id: 'x1' })] } as never);
    const e = await caught(g.turns('g', { cursor: first.cursor, limit: 30 }));
    expect(e).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'page.cursor' });
    expect(e.message).toContain('cursor: null');
    await g.close();
  });

  it('a branch\'s path re-routed by a turn written since: the cursor is refused, never two paths mixed', async () => {
    const m = await createMemory();
    await m.import(exported(10, 'r'));
    await m.onTurnComplete({ conversationId: 'r', parentId: 't4', messages: [user('x1', { id: 'x1' }), assistant('x2', { id: 'x2' })] } as never);
    await m.checkout('r', 't9');
    const first = await m.turns('r', { cursor: null, limit: 6, branch: 't2' });
    expect(first.items.map((t) => t.id)).toEqual(['t0', 't1', 't2', 't3', 't4', 'x1']);
    // Unchanged, the next page goes on along the same path.
    expect((await m.turns('r', { cursor: first.cursor, limit: 100, branch: 't2' })).items.map((t) => t.id)).toEqual(['x2']);
    // Written last below t2 now, n1 takes the path through t2 along t5…t9: the cursor no longer stands on it.
    await m.onTurnComplete({ conversationId: 'r', messages: [user('n1', { id: 'n1' })] });
    const e = await caught(m.turns('r', { cursor: first.cursor, limit: 100, branch: 't2' }));
    expect(e).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'page.cursor' });
    const again = await all((cursor) => m.turns('r', { cursor, limit: 4, branch: 't2' }), 4);
    expect(again.items.map((t) => t.id)).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7', 't8', 't9', 'n1']);
    await m.close();
  });
});

describe('tags and summaries a page at a time', () => {
  it('tags: every tag once, by name, with the same statistics as the list', async () => {
    const whole = await m.tags(C);
    expect(whole.length).toBeGreaterThan(20);
    const { items } = await all((cursor) => m.tags(C, { cursor, limit: 6 }), 6);
    expect(items.map((t) => t.tag)).toEqual(whole.map((t) => t.tag).sort());
    const byTag = new Map(whole.map((t) => [t.tag, t]));
    for (const t of items) expect(t).toEqual(byTag.get(t.tag));
  });

  it('summaries: every summary once, in the order they were written; a kind filter pages that kind', async () => {
    const whole = await m.summaries(C);
    expect(whole.length).toBeGreaterThan(10);
    const { items } = await all((cursor) => m.summaries(C, { cursor, limit: 4 }), 4);
    expect(items.map((s) => s.id).sort()).toEqual(whole.map((s) => s.id).sort());
    expect(new Set(items.map((s) => s.id)).size).toBe(items.length);
    const byId = new Map(whole.map((s) => [s.id, s]));
    for (const s of items) expect(s).toEqual(byId.get(s.id));
    const segments = await m.summaries(C, { kind: 'segment' });
    const paged = await all((cursor) => m.summaries(C, { cursor, limit: 3, kind: 'segment' }), 3);
    expect(paged.items.map((s: Summary) => s.id).sort()).toEqual(segments.map((s) => s.id).sort());
  });

  it('summaries: a page stops before the byte cap with large summaries', async () => {
    const whole = await m.summaries(C);
    const biggest = Math.max(...whole.map((s) => JSON.stringify(s).length));
    pageLimits.pageBytes = biggest * 2 + 10;
    const { items, pages } = await all((cursor) => m.summaries(C, { cursor, limit: 1000 }), 1000);
    expect(items).toHaveLength(whole.length);
    for (const p of pages) expect(JSON.stringify(p).length).toBeLessThanOrEqual(pageLimits.pageBytes);
    // Each page but the last is full: its next item would have passed the cap.
    for (let i = 0; i + 1 < pages.length; i++) expect(JSON.stringify([...pages[i]!, pages[i + 1]![0]]).length).toBeGreaterThan(pageLimits.pageBytes - 200);
    expect(pages.length).toBeGreaterThan(1);
  });
});

describe('bad pages are typed and change nothing', () => {
  it('limits', async () => {
    for (const limit of [0, 10_001, 1.5, '5', -1, null]) {
      for (const call of [m.turns(C, { cursor: null, limit } as never), m.tags(C, { cursor: null, limit } as never), m.summaries(C, { cursor: null, limit } as never), m.export(C, { cursor: null, limit } as never)]) {
        expect(await caught(call)).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'page.limit' });
      }
    }
  });

  it("cursors: garbage, another list's, another conversation's, another filter's", async () => {
    const tagsCursor = (await m.tags(C, { cursor: null, limit: 2 })).cursor!;
    const turnsCursor = (await m.turns(C, { cursor: null, limit: 2 })).cursor!;
    for (const cursor of ['garbage!', 'e30', 42, '', tagsCursor.slice(0, -3)]) {
      expect(await caught(m.summaries(C, { cursor, limit: 2 } as never))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'page.cursor' });
    }
    const other = await caught(m.summaries(C, { cursor: tagsCursor, limit: 2 }));
    expect(other).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'page.cursor' });
    expect(other.message).toContain("memory.tags()'s pages, not memory.summaries()'s");
    expect(await caught(m.export(C, { cursor: turnsCursor, limit: 2 }))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'page.cursor' });
    await m.import(exported(3, 'other'));
    expect((await caught(m.turns('other', { cursor: turnsCursor, limit: 2 }))).message).toContain('conversation');
    const segCursor = (await m.summaries(C, { cursor: null, limit: 1, kind: 'segment' })).cursor!;
    expect(await caught(m.summaries(C, { cursor: segCursor, limit: 1 }))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'page.cursor' });
    expect(await caught(m.turns(C, { cursor: null, from: 3 } as never))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'page.from' });
    // The calls without cursor answer arrays as they did.
    expect(Array.isArray(await m.summaries(C))).toBe(true);
    expect(Array.isArray(await m.turns(C, { limit: 3 }))).toBe(true);
  });
});

describe('export a page at a time', () => {
  const pagesOf = async (memory: Memory, limit: number) => {
    const out: (ExportData & { cursor: string | null })[] = [];
    let cursor: string | null = null;
    do {
      const page: ExportData & { cursor: string | null } = await memory.export(C, { cursor, limit });
      expect(page.conversations).toHaveLength(1);
      expect(page.conversations[0]!.turns.length).toBeLessThanOrEqual(limit);
      out.push(page);
      cursor = page.cursor;
    } while (cursor !== null);
    return out;
  };
  // What an import sets to its own time (whole or paged alike) aside.
  const same = (e: ExportData) => ({ ...e, exportedAt: '', conversations: e.conversations.map((c) => ({ ...c, createdAt: '', updatedAt: '', aliases: c.aliases.map((a) => ({ ...a, createdAt: '' })) })) });

  it('pages imported in order into a fresh memory give what a whole export and import gives', async () => {
    const whole = await m.export(C);
    const pages = await pagesOf(m, 50);
    expect(pages.length).toBe(Math.ceil(whole.conversations[0]!.turns.length / 50));
    expect(pages.flatMap((p) => p.conversations[0]!.turns)).toEqual(whole.conversations[0]!.turns);
    const viaWhole = await createMemory();
    await viaWhole.import(whole);
    const viaPages = await createMemory();
    let turns = 0;
    for (const p of pages) turns += (await viaPages.import(p)).turns;
    expect(turns).toBe(whole.conversations[0]!.turns.length);
    expect(same(await viaPages.export(C))).toEqual(same(await viaWhole.export(C)));
    expect(same(await viaPages.export(C))).toEqual(same(whole));
    expect(await viaPages.turns(C, { limit: 10_000 })).toEqual(await viaWhole.turns(C, { limit: 10_000 }));
    expect(await viaPages.branches(C)).toEqual(await viaWhole.branches(C));
    expect((await viaPages.pins(C)).sort()).toEqual(['e2', 't5']);
    expect(await viaPages.pins(C)).toEqual(await viaWhole.pins(C));
    // The same pages again change nothing.
    for (const p of [pages[0]!, pages[3]!, pages[pages.length - 1]!]) expect(await viaPages.import(p)).toMatchObject({ turns: 0, conversations: [] });
    expect(same(await viaPages.export(C))).toEqual(same(whole));
    await Promise.all([viaWhole.close(), viaPages.close()]);
  });

  it('a page out of order is refused, typed, with nothing stored', async () => {
    const pages = await pagesOf(m, 100);
    const fresh = await createMemory();
    const e = await caught(fresh.import(pages[2]!));
    expect(e).toMatchObject({ code: 'ID_CONFLICT', path: 'data.conversations[0].after' });
    expect(e.message).toContain('in the order export() gave them');
    expect(await fresh.conversations()).toEqual([]);
    await fresh.import(pages[0]!);
    expect(await caught(fresh.import(pages[2]!))).toMatchObject({ code: 'ID_CONFLICT' });
    expect((await fresh.turns(C, { limit: 10_000 })).length).toBe(100);
    await fresh.close();
  });

  it('attachments come with the page of the turns that name them; a page keeps to the byte cap', async () => {
    pageLimits.pageBytes = 6_000;
    const pages = await pagesOf(m, 1000);
    const withImage = pages.filter((p) => p.attachments?.length);
    expect(withImage).toHaveLength(1);
    expect(withImage[0]!.conversations[0]!.turns.some((t) => t.id === 'img')).toBe(true);
    for (const p of pages) expect(p.conversations[0]!.turns.length === 1 || JSON.stringify(p).length <= 6_000 + 1024).toBe(true);
    const fresh = await createMemory();
    for (const p of pages) await fresh.import(p);
    expect(same(await fresh.export(C))).toEqual(same(await m.export(C)));
    await fresh.close();
  });
});

describe('large items', () => {
  it('turns and export of long turns stop before the cap', async () => {
    const big = await createMemory();
    await big.import(exported(40, 'big', 3_000));
    pageLimits.pageBytes = 20_000;
    const { items, pages } = await all((cursor) => big.turns('big', { cursor, limit: 100 }), 100);
    expect(items).toHaveLength(40);
    for (const p of pages) expect(JSON.stringify(p).length).toBeLessThanOrEqual(20_000);
    expect(Math.max(...pages.map((p) => p.length))).toBe(3);
    const tagPages = await all((cursor) => big.tags('big', { cursor, limit: 10 }), 10);
    expect(tagPages.items.map((t: TagStat) => t.tag)).toEqual((await big.tags('big')).map((t) => t.tag).sort());
    await big.close();
  });
});

// Keeps the type of a page checked against the overloads.
export type _Check = Page<StoredTurn>;
