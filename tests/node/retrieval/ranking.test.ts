// The learned ranking: one scorer over every candidate's features, weights as data that a user can replace.
import { statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { type Memory, isPagewiseError } from '../../../src/index.js';
import type { RankingCandidates } from '../../../src/contracts/types.js';
import { FEATURES, SHIPPED_WEIGHTS, probabilities, readWeights } from '../../../src/retrieval/ranking.js';
import shipped from '../../../src/retrieval/ranking-weights.json' with { type: 'json' };
import { type Example, toJson, train } from '../../bench/train-ranking.js';
import { assistant, createMemory, rng, user } from '../../support/helpers.js';
import { EXCERPT_OVERHEAD, pick, quoter } from '../../../src/assembly/recall-pick.js';
import type { RecallBlock } from '../../../src/retrieval/retriever.js';
import { createTokenizer } from '../../../src/tokens/tokenizer.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

async function caught(p: Promise<unknown>): Promise<unknown> {
  try { await p; } catch (e) { return e; }
  throw new Error('expected a rejection');
}

describe('ranking weights are data, checked', () => {
  it('the shipped file is small, names only computed features, and gives weight beyond the hybrid floor', () => {
    expect(statSync(new URL('../../../src/retrieval/ranking-weights.json', import.meta.url)).size).toBeLessThan(50_000);
    expect(Object.keys(shipped.weights).every((f) => (FEATURES as readonly string[]).includes(f))).toBe(true);
    expect([...SHIPPED_WEIGHTS].filter((w, j) => w !== 0 && !['bm25Rrf', 'vecRrf'].includes(FEATURES[j]!)).length).toBeGreaterThan(2);
  });

  it('a malformed weights object is a typed error naming the path, at createMemory', async () => {
    for (const weights of [null, { format: 'other', weights: {} }, { format: 'pagewise-ranking/1', weights: { nope: 1 } }, { format: 'pagewise-ranking/1', weights: { bm25: Number.NaN } }]) {
      const e = await caught(createMemory({ ranking: { weights: weights as never } }));
      expect(isPagewiseError(e)).toBe(true);
      expect(e).toMatchObject({ code: 'INVALID_OPTIONS', path: 'ranking.weights' });
      expect((e as Error).message).toMatch(/retrain/);
    }
    expect(readWeights({ format: 'pagewise-ranking/1', weights: { bm25: 2 } })[FEATURES.indexOf('bm25')]).toBe(2);
  });

  it('a malformed ranking option is a typed error too', async () => {
    for (const ranking of [3, [], { weight: {} }, { onCandidates: 'log' }]) {
      const e = await caught(createMemory({ ranking: ranking as never }));
      expect(e).toMatchObject({ code: 'INVALID_OPTIONS', path: 'ranking' });
    }
  });

  it('probabilities are a softmax: they sum to 1 and keep the order of the scores', () => {
    const w = readWeights({ format: 'pagewise-ranking/1', weights: { bm25: 3, cos: 1 } });
    const row = (bm25: number, cos: number) => { const r = new Float64Array(FEATURES.length); r[FEATURES.indexOf('bm25')] = bm25; r[FEATURES.indexOf('cos')] = cos; return r; };
    const p = probabilities([row(1, 0), row(0, 1), row(0.5, 0.5)], w);
    expect(p.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    expect(p[0]).toBeGreaterThan(p[2]!);
    expect(p[2]).toBeGreaterThan(p[1]!);
  });
});

describe('training', () => {
  /** Questions whose evidence is the candidate with the most coverage; BM25 is noise. */
  function planted(seed: number, n: number): Example[] {
    const r = rng(seed);
    return Array.from({ length: n }, () => {
      const rows = Array.from({ length: 20 }, () => FEATURES.map((f) => (f === 'coverage' || f === 'bm25' ? r() : 0)));
      const best = rows.reduce((b, row, i) => (row[FEATURES.indexOf('coverage')]! > rows[b]![FEATURES.indexOf('coverage')]! ? i : b), 0);
      return { set: n % 2 ? 'a' : 'b', rows, labels: rows.map((_, i) => i === best) };
    });
  }

  it('is reproducible bit for bit and learns a planted signal, not the noise', () => {
    const data = planted(3, 60);
    const a = train(data, { steps: 200 });
    const b = train(data, { steps: 200 });
    expect([...a]).toEqual([...b]);
    expect(a[FEATURES.indexOf('coverage')]).toBeGreaterThan(3);
    expect(Math.abs(a[FEATURES.indexOf('bm25')]!)).toBeLessThan(a[FEATURES.indexOf('coverage')]! / 4);
    expect(toJson(a, 'planted').weights.coverage).toBeGreaterThan(3);
  });

  it('features left out of `features` keep weight 0', () => {
    const w = train(planted(4, 40), { steps: 100, features: ['bm25'] });
    expect(w[FEATURES.indexOf('coverage')]).toBe(0);
  });
});

describe('the ranker in the engine', () => {
  async function seeded(options: Parameters<typeof createMemory>[0] = {}) {
    const m = await createMemory({ contextWindow: 2000, reserveTokens: 200, protectedRecentTurns: 2, memoryTokens: 400, ...options });
    const messages = [];
    for (let i = 0; i < 150; i++) messages.push(user(`Note ${i}: the garden needs water and the tomatoes need stakes.`), assistant(`Noted ${i}.`));
    messages.splice(20, 0, user('The spare key to the shed is under the blue watering can.'), assistant('Good hiding place.'));
    messages.splice(200, 0, user('I moved the spare key from the watering can to the shed door frame.'), assistant('Noted, the door frame.'));
    await m.onTurnComplete({ conversationId: 'c', messages });
    return m;
  }

  it('onCandidates sees every candidate with its features, named; recall ranks by the weights given', async () => {
    const seen: RankingCandidates[] = [];
    memory = await seeded({ ranking: { onCandidates: (c) => seen.push(c) } });
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('Where is the spare key?') });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.features).toEqual(FEATURES);
    const turns = await memory.turns('c', { limit: 400 });
    const key = turns.filter((t) => t.text.includes('spare key')).map((t) => t.id);
    expect(seen[0]!.candidates.map((c) => c.id)).toEqual(expect.arrayContaining(key));
    for (const c of seen[0]!.candidates) expect(c.features).toHaveLength(FEATURES.length);
    const first = ctx.manifest.find((e) => e.kind === 'recall' && e.scores.rank === 1)!;
    expect(key).toContain(first.sourceIds[0]);
    expect(first.scores.score).toBeGreaterThan(0);
    await memory.close();
    // Weights that reward only the oldest turns: the ranking follows them (the oldest candidate: the turn before the
    // first key turn, its neighbour or in its tagged unit).
    memory = await seeded({ ranking: { weights: { format: 'pagewise-ranking/1', weights: { recency: -40 } } } });
    const old = await memory.onMessageInbound({ conversationId: 'c', message: user('Where is the spare key?') });
    const top = old.manifest.find((e) => e.kind === 'recall' && e.scores.rank === 1)!;
    const candidates = (await memory.turns('c', { limit: 400 }));
    expect(candidates.findIndex((t) => t.id === top.sourceIds[0])).toBe(19);
  });

  it('a broad question still brings each sampled exchange whole (its replies are built by rule, not ranked)', async () => {
    memory = await seeded();
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('What did we discuss?') });
    expect(ctx.broad).toBe(true);
    const turns = await memory.turns('c', { limit: 400 });
    const role = new Map(turns.map((t) => [t.id, t.role]));
    const recalled = ctx.manifest.filter((e) => e.kind === 'recall').flatMap((e) => e.sourceIds);
    expect(recalled.some((id) => role.get(id) === 'user')).toBe(true);
    expect(recalled.some((id) => role.get(id) === 'assistant')).toBe(true);
  });

  it('same stored state and question, same context (the scorer is deterministic)', async () => {
    memory = await seeded();
    const a = await memory.onMessageInbound({ conversationId: 'c', message: user('Where is the spare key now?') });
    const b = await memory.onMessageInbound({ conversationId: 'c', message: user('Where is the spare key now?') });
    expect(b.messages).toEqual(a.messages);
    expect(b.manifest).toEqual(a.manifest);
  });
});

describe('packing by value per token', () => {
  const turn = (seq: number, text: string) => ({ id: `t${seq}`, conversationId: 'c', seq, role: 'user' as const, content: text, text, createdAt: '2024-01-01T00:00:00.000Z', contentHash: '', rowid: seq, createdMs: 0 });
  const block = (seq: number, text: string, value: number): RecallBlock => ({ unitSeq: seq, hits: [turn(seq, text)], pair: [], adjacent: [], scores: {}, tags: [], priority: 0, reason: '', value });

  it('takes the most probability per token first, and a neighbour of a taken turn pays no excerpt lines', async () => {
    const tokenizer = await createTokenizer({ tokenizer: 'js-tiktoken', encoding: 'o200k_base', margin: 1 });
    const long = `The long answer ${'with many words '.repeat(40)}ends here.`;
    // The long turn is the likeliest, but per token the short ones are worth more.
    const blocks = [block(10, long, 0.4), block(20, 'The key is under the mat.', 0.3), block(30, 'Blue door.', 0.2), block(31, 'Yes.', 0.01)];
    const view = quoter(new Set(), 10_000, tokenizer);
    const probe = pick(blocks, 0, tokenizer, '', view);
    const c = (i: number) => probe.cost(view(blocks[i]!.hits[0]!, true));
    // Room for 20 and 30 with their excerpt lines, and for 31 only if it joins 30's excerpt.
    const budget = tokenizer.count('') + 4 + c(1) + c(2) + c(3) + 2 * EXCERPT_OVERHEAD + 1;
    expect(pick(blocks, budget, tokenizer, '', view).turns().map((t) => t.seq)).toEqual([20, 30, 31]);
    // With room for all, all go.
    expect(pick(blocks, 2_000, tokenizer, '', view).turns().map((t) => t.seq).sort((a, b) => a - b)).toEqual([10, 20, 30, 31]);
  });
});
