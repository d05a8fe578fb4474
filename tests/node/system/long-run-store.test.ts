// Issue 12: what a long-running engine must survive — caller lists longer than SQLite's variable limit, a storage
// driver that reports an error after committing, and any number of conversation ids.
import { afterEach, describe, expect, it } from 'vitest';
import { type ChatMessage, type Memory, PagewiseError } from '../../../src/index.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { IN_CHUNK, chunks, createTurnStore, inChunks } from '../../../src/store/turn-store.js';
import { Lru } from '../../../src/common/cache.js';
import { migrate } from '../../../src/store/schema.js';
import { createSummaryStore } from '../../../src/compaction/summary-store.js';
import { createCanonicalizer } from '../../../src/tags/tag-canonicalizer.js';
import { createTagStore } from '../../../src/tags/tag-store.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

/** A driver that counts statements and can be made to fail a batch after committing it. */
function wrapped(driver: StorageDriver): StorageDriver & { failAfterCommit: null | ((sql: string) => boolean); queries: string[] } {
  const self: StorageDriver & { failAfterCommit: null | ((sql: string) => boolean); queries: string[] } = {
    failAfterCommit: null,
    queries: [],
    name: driver.name,
    ...(driver.limits ? { limits: driver.limits } : {}),
    query: (sql, params) => { self.queries.push(sql); return driver.query(sql, params); },
    batch: async (statements) => {
      const fail = self.failAfterCommit;
      await driver.batch(statements);
      if (fail && statements.some((s) => fail(s.sql))) {
        self.failAfterCommit = null;
        throw new PagewiseError('STORAGE_ERROR', 'test', 'I/O error reported after commit (injected)');
      }
    },
    close: () => driver.close(),
  };
  return self;
}

// SQLite's limit on bound variables in one statement (SQLITE_MAX_VARIABLE_NUMBER of the wasm build).
const MAX_VARIABLES = 32_766;

describe('caller lists longer than SQLite allows in one statement', () => {
  it(`stores ${MAX_VARIABLES + 2} messages with ids in one call, and assembles from a caller history that long`, async () => {
    memory = await createMemory({ compaction: false });
    const n = MAX_VARIABLES + 2;
    // One user turn and its replies: one unit, so tagging stays cheap.
    const messages: ChatMessage[] = Array.from({ length: n }, (_, i) => (i === 0 ? user('start', { id: 'm0' }) : assistant(`reply ${i}`, { id: `m${i}` })));
    const report = await memory.onTurnComplete({ conversationId: 'c', messages });
    expect(report).toMatchObject({ stored: n, skipped: 0, totalTurns: n });
    // The same list again: every id is looked up, none stored twice.
    const again = await memory.onTurnComplete({ conversationId: 'c', messages });
    expect(again).toMatchObject({ stored: 0, skipped: n, totalTurns: n });
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('what was reply 7?'), history: messages });
    expect(ctx.budget.total).toBeLessThanOrEqual(ctx.budget.available);
    // The history sent is matched to stored turns by id (the manifest names stored ids).
    expect(ctx.manifest.find((e) => e.kind === 'recent')?.sourceIds).toContain(`m${n - 1}`);
  }, 120_000);

  it('reads by seqs, ids and hashes in slices, in order', async () => {
    const driver = wrapped(await sqliteWasm()());
    await migrate(driver);
    const store = createTurnStore(driver);
    const n = 2 * IN_CHUNK + 7;
    await store.append('c', Array.from({ length: n }, (_, i) => ({
      message: { role: 'user' as const, content: `t${i}` }, id: `id${i}`, text: `t${i}`, contentHash: `h${i % 3}`,
      createdAt: new Date(0).toISOString(), createdMs: 0, tokens: 2,
    })), null, new Date(0).toISOString());
    const seqs = Array.from({ length: n }, (_, i) => n - 1 - i);
    driver.queries.length = 0;
    expect((await store.bySeqs('c', seqs)).map((t) => t.seq)).toEqual([...seqs].reverse());
    expect(driver.queries).toHaveLength(3);
    expect((await store.byIds('c', seqs.map((s) => `id${s}`))).length).toBe(n);
    expect((await store.byHashes('c', ['h0', 'h1', 'h2'])).map((t) => t.seq)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(chunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(await inChunks([] as number[], () => { throw new Error('no statement for an empty list'); })).toEqual([]);
    driver.close();
  });

  it('marks more summary ids stale than one statement can bind', async () => {
    const driver = await sqliteWasm()();
    memory = await createMemory({ contextWindow: 3000, compaction: false, storage: driver });
    const pairs = Array.from({ length: 30 }, (_, i) => [user(`About sourdough step ${i}: feed the starter?`), assistant(`Step ${i}: feed it ${i + 2} grams.`)]).flat();
    await memory.onTurnComplete({ conversationId: 'c', messages: pairs });
    await memory.compact('c');
    const all = await memory.summaries('c');
    expect(all.length).toBeGreaterThan(1);
    // (The public method takes at most 10,000 ids; the store takes any number.)
    const ids = [...Array.from({ length: MAX_VARIABLES }, (_, i) => `sum_unknown_${i}`), ...all.map((s) => s.id)];
    expect(await createSummaryStore(driver).markStale('c', ids)).toBe(all.length);
    expect((await memory.summaries('c')).every((s) => s.stale)).toBe(true);
  });
});

describe('a storage error around an append', () => {
  it('a driver that commits and then reports an error leaves no stale turn count', async () => {
    const driver = wrapped(await sqliteWasm()());
    memory = await createMemory({ storage: driver });
    const pair = (i: number) => [user(`question ${i}`, { id: `u${i}` }), assistant(`answer ${i}`, { id: `a${i}` })];
    expect((await memory.onTurnComplete({ conversationId: 'c', messages: pair(0) })).totalTurns).toBe(2);
    driver.failAfterCommit = (sql) => sql.startsWith('INSERT INTO turns ');
    await expect(memory.onTurnComplete({ conversationId: 'c', messages: pair(1) })).rejects.toMatchObject({ code: 'STORAGE_ERROR' });
    // The rows are in: the retry stores nothing and counts them.
    expect(await memory.onTurnComplete({ conversationId: 'c', messages: pair(1) })).toMatchObject({ stored: 0, skipped: 2, totalTurns: 4 });
    expect(await memory.onTurnComplete({ conversationId: 'c', messages: pair(2) })).toMatchObject({ stored: 2, totalTurns: 6 });
    expect((await memory.turns('c')).map((t) => t.id)).toEqual(['u0', 'a0', 'u1', 'a1', 'u2', 'a2']);
  });

  it('the speakers are read again too', async () => {
    const driver = wrapped(await sqliteWasm()());
    await migrate(driver);
    const store = createTurnStore(driver);
    const turn = (i: number, name: string) => ({ message: { role: 'user' as const, content: `t${i}`, name }, id: `i${i}`, text: `t${i}`, contentHash: `h${i}`, createdAt: new Date(0).toISOString(), createdMs: 0, tokens: 2 });
    await store.append('c', [turn(0, 'Ana')], null, new Date(0).toISOString());
    expect(await store.speakers('c')).toEqual(['Ana']);
    driver.failAfterCommit = () => true;
    await expect(store.append('c', [turn(1, 'Ben')], null, new Date(0).toISOString())).rejects.toThrow(/after commit/);
    expect(await store.turnCount('c')).toBe(2);
    expect((await store.speakers('c')).sort()).toEqual(['Ana', 'Ben']);
    driver.close();
  });
});

describe('per-conversation caches stay bounded', () => {
  it('Lru keeps the most recently used entries', () => {
    const lru = new Lru<string, number>(3);
    for (const [k, v] of [['a', 1], ['b', 2], ['c', 3]] as const) lru.set(k, v);
    expect(lru.get('a')).toBe(1);
    lru.set('d', 4);
    expect(lru.has('b')).toBe(false);
    expect([lru.get('a'), lru.get('c'), lru.get('d'), lru.size]).toEqual([1, 3, 4, 3]);
    lru.set('c', 30);
    lru.set('e', 5);
    expect(lru.has('a')).toBe(false);
    expect(lru.get('c')).toBe(30);
  });

  it('asking about a conversation never stored keeps nothing about it: the next question reads storage again', async () => {
    const driver = wrapped(await sqliteWasm()());
    await migrate(driver);
    const store = createTurnStore(driver);
    for (let i = 0; i < 3; i++) expect(await store.turnCount('nobody')).toBe(0);
    expect(driver.queries.filter((q) => q.includes('MAX(seq)'))).toHaveLength(3);
    driver.close();
  });
});

describe('the tag vocabulary is kept current without reading it whole', () => {
  it('after each save only the tags that changed are read again, and the counts equal a fresh read', async () => {
    const driver = wrapped(await sqliteWasm()());
    await migrate(driver);
    const tags = createTagStore(driver);
    const canonicalizer = createCanonicalizer(tags);
    const now = new Date(0).toISOString();
    const unit = (seq: number, t: string[], related: string[] = []) => ({ unitSeq: seq, endSeq: seq, tags: t, relatedTags: related, tagger: 'test' });
    let seq = 0;
    for (let i = 0; i < 40; i++) await tags.saveUnits('c', [unit(seq++, [`topic-${i % 7}`, `word-${i}`])], new Map(), now);
    await canonicalizer.counts('c');
    const steps = [
      [unit(seq++, ['topic-1', 'fresh'])],
      // Re-tagged: word-3 is lost (no unit carries it any more), topic-0 gained, a related tag added.
      [unit(3, ['topic-0'], ['topic-5'])],
      [unit(seq++, ['topic-2']), unit(seq++, ['topic-2', 'fresh'])],
    ];
    for (const step of steps) {
      const changed = await tags.saveUnits('c', step, new Map(), now);
      driver.queries.length = 0;
      await canonicalizer.refresh('c', changed);
      expect(driver.queries.some((q) => q.includes('ORDER BY units DESC')), 'no whole-vocabulary read').toBe(false);
      expect(new Map(await canonicalizer.counts('c'))).toEqual(new Map(await createCanonicalizer(tags).counts('c')));
    }
    expect((await canonicalizer.counts('c')).has('word-3')).toBe(false);
    expect((await canonicalizer.counts('c')).get('fresh')).toBe(2);
    driver.close();
  });
});
