// Issue 12: the cost of each hook must not grow with the conversation. Measured as the rows SQLite hands back and the
// statements it runs (deterministic, unlike time): per call late in a long conversation against the same early on,
// with compaction cycling in a small window. tests/bench/long-run.ts measures the time at 100,000 turns.
import { describe, expect, it } from 'vitest';
import { createCompactor } from '../../../src/compaction/compactor.js';
import { MAX_POSTINGS, analyzeQuery } from '../../../src/retrieval/query.js';
import type { QueryContext } from '../../../src/retrieval/query.js';
import { createSummaryStore } from '../../../src/compaction/summary-store.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { createTurnStore } from '../../../src/store/turn-store.js';
import { createCanonicalizer } from '../../../src/tags/tag-canonicalizer.js';
import { createTagRules } from '../../../src/tags/tag-rules.js';
import { createTagStore } from '../../../src/tags/tag-store.js';
import { createTokenizer } from '../../../src/tokens/tokenizer.js';
import type { StorageDriver, Summarizer } from '../../../src/contracts/types.js';
import { syntheticChat } from '../../bench/long-run.js';
import { createMemory } from '../../support/helpers.js';

function counting(driver: StorageDriver) {
  const self = {
    rows: 0,
    statements: 0,
    name: driver.name,
    query: async (sql: string, params?: Parameters<StorageDriver['query']>[1]) => {
      const rows = await driver.query(sql, params);
      self.rows += rows.length;
      self.statements++;
      return rows;
    },
    batch: async (statements: Parameters<StorageDriver['batch']>[0]) => { self.statements += statements.length; await driver.batch(statements); },
    close: () => driver.close(),
  };
  return self as typeof self & StorageDriver;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('per-call work does not grow with the conversation', () => {
  it('rows read and statements run per onTurnComplete (with its background compaction) and per onMessageInbound, late against early', async () => {
    const driver = counting(await sqliteWasm()());
    // A small window: compaction cycles every ~60 turns, so the late calls see dozens of compactions behind them.
    const memory = await createMemory({ contextWindow: 4000, storage: driver });
    const chat = syntheticChat(11);
    const PAIRS = 800;
    const turn: { rows: number; statements: number }[] = [];
    const ask: { rows: number; statements: number }[] = [];
    const measure = async (fn: () => Promise<unknown>) => {
      const rows = driver.rows;
      const statements = driver.statements;
      await fn();
      return { rows: driver.rows - rows, statements: driver.statements - statements };
    };
    for (let i = 0; i < PAIRS; i++) {
      if (i % 5 === 4) ask.push(await measure(() => memory.onMessageInbound({ conversationId: 'c', message: chat.question(i).message })));
      turn.push(await measure(async () => {
        await memory.onTurnComplete({ conversationId: 'c', messages: chat.next(i) });
        // The background compaction is part of the cost of the turn that started it.
        await memory.flush();
      }));
    }
    const summaries = await memory.summaries('c');
    await memory.close();
    expect(summaries.length).toBeGreaterThan(150);
    const early = (xs: typeof turn, from: number, to: number) => ({ rows: mean(xs.slice(from, to).map((x) => x.rows)), statements: mean(xs.slice(from, to).map((x) => x.statements)) });
    const turnEarly = early(turn, 100, 200);
    const turnLate = early(turn, PAIRS - 100, PAIRS);
    const askEarly = early(ask, 20, 40);
    const askLate = early(ask, ask.length - 20, ask.length);
    const figures = { turnEarly, turnLate, askEarly, askLate };
    expect(turnLate.rows / turnEarly.rows, JSON.stringify(figures)).toBeLessThan(1.5);
    expect(turnLate.statements / turnEarly.statements, JSON.stringify(figures)).toBeLessThan(1.5);
    expect(askLate.rows / askEarly.rows, JSON.stringify(figures)).toBeLessThan(1.5);
    expect(askLate.statements / askEarly.statements, JSON.stringify(figures)).toBeLessThan(1.5);
  }, 180_000);

  it('pressure carried forward equals a fresh measure, across appends and compactions', async () => {
    const driver = await sqliteWasm()();
    const memory = await createMemory({ contextWindow: 3000, storage: driver });
    const tokenizer = () => createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
    const fresh = () => {
      const tags = createTagStore(driver);
      const never: Summarizer = { name: 'never', version: 1, summarize: () => { throw new Error('not called'); } };
      return createCompactor({
        turns: createTurnStore(driver), tags, summaries: createSummaryStore(driver), canonicalizer: createCanonicalizer(tags), rules: createTagRules([{ match: '*', priority: 5 }]),
        tokenizer, summarizer: never, fallback: never,
        settings: { contextWindow: 3000, softThreshold: 0.7, hardThreshold: 0.85, protectedRecentTurns: 6, sumWindow: 12, nSum: null, nSumSum: 3, maxSumLevel: 3, maxConcurrentSummaries: 4, summaryRatio: 0.25, summaryTokens: 150 },
      });
    };
    const carried = fresh();
    const chat = syntheticChat(3);
    let compactions = 0;
    for (let i = 0; i < 120; i++) {
      const report = await memory.onTurnComplete({ conversationId: 'c', messages: chat.next(i) });
      compactions += (report.compaction ? 1 : 0) + (await memory.flush()).length;
      if (i % 7 === 0 || i > 110) expect((await carried.pressure('c')).tokens, `call ${i}`).toBe((await fresh().pressure('c')).tokens);
    }
    expect(compactions).toBeGreaterThan(2);
    await memory.close();
  });
});

describe('a question costs what its rarest words cost', () => {
  it(`keeps the rarest question words while their postings fit ${MAX_POSTINGS}, the rarest always`, async () => {
    // Postings per index token (all conversations), as turns_fts_vocab would count them in a very long conversation.
    const docs = new Map([['reserv', 120], ['budget', MAX_POSTINGS - 100], ['ryokan', 15], ['kyoto', 900]]);
    const context = (postings: Map<string, number>) => ({
      turns: { speakers: async () => [], indexedTurns: async () => 10_000_000, tokenDocs: async (ts: readonly string[]) => new Map(ts.flatMap((t) => (postings.has(t) ? [[t, postings.get(t)!] as const] : []))) },
      tags: { unitCount: async () => 1, vocabulary: async () => [] },
      index: { runChain: async () => ({ result: { tags: [], relatedTags: [] }, tagger: 'keyword', failures: [] }) },
      canonicalizer: { counts: async () => new Map(), canonical: async () => [] },
      minTags: 2, maxTags: 8,
    }) as unknown as QueryContext;
    const terms = async (text: string, postings = docs) => (await analyzeQuery(context(postings), 'c', text, Date.UTC(2024, 5, 1), new Date(Date.UTC(2024, 5, 1)).toISOString())).terms;
    // ryokan 15 + reserv 120 + kyoto 900 fit; budget would take them past the limit.
    expect(await terms('Which budget did the ryokan reservation in Kyoto get?')).toEqual(['ryokan', 'reservation', 'kyoto']);
    // The rarest stays even over the limit.
    expect(await terms('budget plans', new Map([['budget', 5 * MAX_POSTINGS], ['plan', 6 * MAX_POSTINGS]]))).toEqual(['budget']);
    // Under the limit nothing is left out.
    expect(await terms('budget for the ryokan', new Map([['budget', 50], ['ryokan', 15]]))).toEqual(['budget', 'ryokan']);
  });
});
