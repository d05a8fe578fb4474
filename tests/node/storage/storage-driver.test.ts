import { afterEach, describe, expect, it } from 'vitest';
import { createVectorStore } from '../../../src/embed/vector-store.js';
import type { ExportData, Memory, StorageDriver } from '../../../src/index.js';
import { DURABLE_OBJECT_LIMITS, jsonLists, limitsOf } from '../../../src/storage/limits.js';
import { MAX_MATCH_BYTES, ftsMatch } from '../../../src/text/fts-words.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { createImportanceStore } from '../../../src/store/importance-store.js';
import { migrate } from '../../../src/store/schema.js';
import { createTurnStore } from '../../../src/store/turn-store.js';
import { createTagStore, type UnitTags } from '../../../src/tags/tag-store.js';
import { storageDriverCases } from '../../support/conformance/storage-driver.js';
import { expectedMatch } from '../../support/conformance/storage-limits.js';
import { createMemory } from '../../support/helpers.js';

describe('StorageDriver conformance: sqlite-wasm in memory (Node)', () => {
  for (const c of storageDriverCases) {
    it(c.name, async () => {
      const driver = await sqliteWasm({ vfs: 'memory' })();
      try { await c.run(driver); } finally { await driver.close(); }
    });
  }
});

// The same SQLite held to the edge's limits by SQLite itself (sqlite3_limit): what fails in a Durable Object fails
// here, in Node, with no workerd.
describe('StorageDriver conformance: sqlite-wasm with the Durable Object\'s limits (Node)', () => {
  for (const c of storageDriverCases) {
    it(c.name, async () => {
      const driver = await sqliteWasm({ vfs: 'memory', limits: DURABLE_OBJECT_LIMITS })();
      try { await c.run(driver); } finally { await driver.close(); }
    });
  }
});

describe('declared limits', () => {
  it('sqlite-wasm declares its build\'s limits, as SQLite reports them, or the lower ones asked for', async () => {
    const d = await sqliteWasm()();
    try {
      expect(d.limits).toEqual({ maxParams: 32_766, maxCompoundTerms: 500, maxStatementBytes: 1e9, maxRowBytes: 1e9, maxFunctionArgs: 1000 });
    } finally { await d.close(); }
    const low = await sqliteWasm({ limits: { maxParams: 40 } })();
    try {
      expect(low.limits).toMatchObject({ maxParams: 40, maxCompoundTerms: 500 });
      await expect(async () => low.query(`SELECT 1 WHERE 1 IN (${Array(41).fill('?').join(', ')})`, Array(41).fill(1))).rejects.toMatchObject({ code: 'STORAGE_ERROR' });
    } finally { await low.close(); }
  });

  it('refuses limits pagewise cannot work within, with what to do, and closes what it opened', async () => {
    expect(() => sqliteWasm({ limits: { maxParams: 10 } })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/maxParams must be a whole number of at least 32.*Leave it out/) }));
    expect(() => sqliteWasm({ limits: { maxRows: 10 } as never })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringContaining('limits.maxRows is not a storage limit') }));
    await expect(sqliteWasm({ limits: { maxParams: 40_000 } })()).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringContaining("above this sqlite-wasm build's 32766") });
    const inner = await sqliteWasm()();
    let closed = false;
    const custom: StorageDriver = { name: 'custom', limits: { maxParams: 2.5 }, query: inner.query, batch: inner.batch, close: () => { closed = true; return inner.close(); } };
    await expect(createMemory({ storage: custom })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringContaining("The custom driver's limits.maxParams must be a whole number") });
    expect(closed).toBe(true);
  });

  it('takes the Durable Object\'s limits for those a driver does not declare', async () => {
    const inner = await sqliteWasm()();
    try {
      expect(limitsOf({ name: 'plain', query: inner.query, batch: inner.batch, close: inner.close })).toEqual(DURABLE_OBJECT_LIMITS);
      expect(limitsOf({ name: 'some', limits: { maxParams: 999 }, query: inner.query, batch: inner.batch, close: inner.close })).toEqual({ ...DURABLE_OBJECT_LIMITS, maxParams: 999 });
    } finally { await inner.close(); }
  });
});

describe('pagewise on SQLite held to lower limits (Node)', () => {
  let memory: Memory | undefined;
  afterEach(async () => {
    await memory?.close();
    memory = undefined;
  });

  it('splits JSON lists at the driver\'s string limit (here 64 KB): recalls, units, vectors, 10,000 weighted tags', async () => {
    const driver = await sqliteWasm({ limits: { maxRowBytes: 65_536 } })();
    try {
      await migrate(driver);
      const turns = createTurnStore(driver);
      const at = new Date(0).toISOString();
      await turns.append('c', Array.from({ length: 10_000 }, (_, i) => ({
        message: { role: 'user' as const, content: `t${i}` }, id: `turn-${i}`, text: `t${i}`, contentHash: `h${i}`, createdAt: at, createdMs: 0, tokens: 2,
      })), null, at);
      const ids = Array.from({ length: 10_000 }, (_, i) => `turn-${i}`);
      expect(jsonLists(ids, limitsOf(driver)).length).toBeGreaterThan(1);
      const importance = createImportanceStore(driver);
      await importance.recalled('c', ids, 1);
      expect((await importance.recallCounts('c', ids)).size).toBe(10_000);

      const tags = createTagStore(driver);
      const vocabulary = Array.from({ length: 10_000 }, (_, i) => `tag-${i}`);
      // Unit k carries tag k and tag 9,999 − k: in different JSON lists of the weights, so its parts are summed.
      const units: UnitTags[] = Array.from({ length: 5000 }, (_, k) => ({ unitSeq: 2 * k, endSeq: 2 * k + 1, tags: [vocabulary[k]!, vocabulary[9999 - k]!], relatedTags: [], tagger: 'test' }));
      await tags.saveUnits('c', units, new Map(), at);
      const seqs = Array.from({ length: 10_000 }, (_, i) => i);
      expect((await tags.unitOf('c', seqs)).size).toBe(10_000);
      expect((await tags.tagsOf('c', seqs)).size).toBe(5000);
      const weights = new Map(vocabulary.map((t, i) => [t, 1 + (i % 7) * 0.125]));
      expect(jsonLists([...weights], limitsOf(driver)).length).toBeGreaterThan(1);
      const got = await tags.matchUnits('c', weights, 50);
      expect(got).toEqual(expectedMatch(units, weights, 50, 128));
      expect((await createVectorStore(driver).storedSummaries('c', seqs)).size).toBe(0);
    } finally {
      await driver.close();
    }
  });

  it('keeps a question\'s full-text search under the string limit, however long its words (2.5 MB question, 2 MB limit)', async () => {
    memory = await createMemory({ storage: sqliteWasm({ limits: DURABLE_OBJECT_LIMITS }), compaction: false, contextWindow: 1_000_000, maxMessageBytes: 3_000_000 });
    await memory.onTurnComplete({ conversationId: 'c', messages: [{ role: 'user', content: 'A question about databases.' }, { role: 'assistant', content: 'An answer about databases.' }] });
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: { role: 'user', content: `databases ${'k'.repeat(2_500_000)} again` } });
    expect(ctx.messages.at(-1)!.content).toHaveLength(2_500_016);
    const terms = Array.from({ length: 32 }, (_, i) => `${i}${'w'.repeat(1000)}`);
    expect(new TextEncoder().encode(ftsMatch(terms)!).length).toBeLessThanOrEqual(MAX_MATCH_BYTES);
  });

  it('imports, reads and forgets 1,000 messages at the Durable Object\'s limits; a row too large is refused, nothing stored', async () => {
    memory = await createMemory({ storage: sqliteWasm({ limits: DURABLE_OBJECT_LIMITS }), compaction: false, contextWindow: 3000 });
    const turns = Array.from({ length: 1000 }, (_, i) => ({
      id: `m${i}`, role: i % 2 ? 'assistant' as const : 'user' as const, createdAt: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
      content: `Message ${i} about ${['gardening', 'databases', 'travel', 'cooking', 'music'][i % 5]} and topic ${i % 37}.`,
    }));
    const data = { format: 'pagewise', version: 1, exportedAt: new Date().toISOString(), aliases: [], conversations: [{ id: 'c', turns, pins: turns.slice(0, 150).map((t) => ({ messageId: t.id })), aliases: [] }] } as unknown as ExportData;
    expect(await memory.import(data)).toEqual({ conversations: ['c'], turns: 1000, skipped: 0 });
    expect((await memory.export('c')).conversations[0]!.pins).toHaveLength(150);
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: { role: 'user', content: 'What did we say about databases, travel, cooking, music and gardening, topics 3, 5 and 8?' } });
    expect(ctx.recallText.length).toBeGreaterThan(0);
    const forgotten = await memory.forget({ conversationId: 'c', messageIds: turns.slice(0, 300).map((t) => t.id) });
    expect(forgotten.messageIds).toHaveLength(300);
    expect((await memory.conversations())[0]!.turns).toBe(700); // the turns stored, not the highest position + 1
    expect(await memory.turns('c', { from: 0, limit: 2000 })).toHaveLength(700);

    // 1.2 MB of text is under maxMessageBytes (2 MB here), but its row (content as JSON, and text) is over 2 MB.
    memory = await (async () => { await memory!.close(); return createMemory({ storage: sqliteWasm({ limits: DURABLE_OBJECT_LIMITS }), compaction: false, maxMessageBytes: 2_000_000 }); })();
    const big = 'q'.repeat(1_200_000);
    await expect(memory.onTurnComplete({ conversationId: 'd', messages: [{ role: 'user', content: 'hello' }, { role: 'assistant', content: big }] }))
      .rejects.toMatchObject({ code: 'MESSAGE_TOO_LARGE', message: expect.stringContaining('2000000-byte row limit') });
    expect(await memory.conversations()).toEqual([]);
    const tooBig = { ...data, conversations: [{ id: 'e', turns: [...turns.slice(0, 10), { ...turns[10]!, content: big }], pins: [], aliases: [] }] } as unknown as ExportData;
    await expect(memory.import(tooBig)).rejects.toMatchObject({ code: 'MESSAGE_TOO_LARGE', path: 'data.conversations[0].turns[10]' });
    expect(await memory.conversations()).toEqual([]);
  });
});
