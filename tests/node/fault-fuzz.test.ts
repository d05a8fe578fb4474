// The standing fault suite, part 1: every public method under generated hostile input. Each call must give a
// correct result or a typed PagewiseError, and a rejected call must change nothing stored. Prints its figures.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Memory, isPagewiseError } from '../../src/index.js';
import { createMemory as createBare } from '../../src/index.js';
import { FAULT_SEED, hostileConversationId, hostileMessage, hostileString, hostileValue, often, validMessage } from './fault-inputs.js';
import { assistant, createMemory, user } from './helpers.js';

const RUNS = 200;
const words = fc.constantFrom('feed cache', 'Rome trip', 'budget', 'db queries');
const range = (max: number) => often(fc.record({ from: often(fc.nat(max)), limit: often(fc.integer({ min: 1, max: 50 })) }, { requiredKeys: [] }));
const scope = often(fc.record({ conversationId: hostileConversationId }, { requiredKeys: [] }));

/** Each public method with a generator of its arguments. */
const METHODS: Record<string, fc.Arbitrary<unknown[]>> = {
  onMessageInbound: fc.tuple(often(fc.record({
    conversationId: often(fc.constantFrom('c', 'd', 'fuzz'), 8), message: fc.oneof({ weight: 3, arbitrary: validMessage }, { weight: 1, arbitrary: hostileMessage }),
    history: often(fc.array(fc.oneof({ weight: 8, arbitrary: validMessage }, { weight: 1, arbitrary: hostileMessage }), { maxLength: 4 }), 4),
    now: often(fc.date({ noInvalidDate: true, min: new Date(-8.64e15), max: new Date(8.64e15) }).map((d) => d.getTime()), 4),
  }, { requiredKeys: ['conversationId', 'message'] }), 8)),
  onTurnComplete: fc.tuple(often(fc.record({ conversationId: often(fc.constantFrom('c', 'd', 'fuzz'), 8), messages: often(fc.array(fc.oneof({ weight: 8, arbitrary: validMessage }, { weight: 1, arbitrary: hostileMessage }), { minLength: 1, maxLength: 4 }), 8) }), 8)),
  conversations: fc.tuple(),
  turns: fc.tuple(hostileConversationId, range(20)),
  tags: fc.tuple(hostileConversationId),
  compact: fc.tuple(hostileConversationId),
  summaries: fc.tuple(hostileConversationId, often(fc.record({ kind: often(fc.constantFrom('segment', 'rollup', 'master', 'tag')) }, { requiredKeys: [] }))),
  regenerateSummaries: fc.tuple(hostileConversationId, often(fc.record({ ids: often(fc.array(hostileString, { maxLength: 3 })), lazy: often(fc.boolean()) }, { requiredKeys: [] }))),
  pin: fc.tuple(hostileConversationId, often(fc.constantFrom('u1', 'a1', 'nope'))),
  unpin: fc.tuple(hostileConversationId, often(fc.constantFrom('u1', 'a1', 'nope'))),
  pins: fc.tuple(hostileConversationId),
  tools: fc.tuple(),
  callTool: fc.tuple(
    often(fc.constantFrom('pagewise_expand', 'pagewise_reload', 'pagewise_search', 'nope')),
    often(fc.oneof({ weight: 6, arbitrary: fc.record({
      query: often(words), id: often(fc.constantFrom('u1', 'a2')), tag: often(fc.constantFrom('feed', 'cache', 'rome')), summaryId: hostileString,
      from: often(fc.nat(40)), maxTokens: often(fc.integer({ min: 50, max: 400 })), offset: often(fc.nat(50)), limit: often(fc.integer({ min: 1, max: 60 })),
    }, { requiredKeys: [] }) }, { weight: 1, arbitrary: fc.json() }), 6),
    often(fc.record({ conversationId: hostileConversationId }), 6),
  ),
  embeddingStatus: fc.tuple(hostileConversationId),
  costReport: fc.tuple(often(fc.constantFrom(undefined, 'c'))),
  'aliases.add': fc.tuple(often(fc.constantFrom('db', 'feeds', 'rome')), often(fc.constantFrom('database', 'feed', 'roma')), scope),
  'aliases.remove': fc.tuple(often(fc.constantFrom('db', 'feeds')), scope),
  'aliases.list': fc.tuple(scope),
  'aliases.suggest': fc.tuple(often(fc.integer({ min: 1, max: 20 })), scope),
  export: fc.tuple(often(fc.oneof(hostileConversationId, fc.constantFrom(undefined, 'c', 'nope')))),
  exportDatabase: fc.tuple(),
  import: fc.tuple(often(fc.record({
    format: often(fc.constantFrom('pagewise', 'other')), version: often(fc.constantFrom(1, 2, '1')),
    conversations: often(fc.array(fc.record({
      id: hostileConversationId,
      turns: often(fc.array(fc.oneof({ weight: 4, arbitrary: validMessage.map((m) => ({ ...(m as object), id: 'x1', createdAt: '2026-01-01T00:00:00Z' })) }, { weight: 1, arbitrary: hostileMessage }), { maxLength: 3 })),
      pins: often(fc.array(fc.record({ messageId: hostileString }), { maxLength: 2 })),
    }, { requiredKeys: ['id'] }), { maxLength: 2 })),
  }, { requiredKeys: [] }))),
  // Last: a forget that succeeds removes what later calls would use.
  forget: fc.tuple(often(fc.record({
    conversationId: hostileConversationId, messageIds: often(fc.array(fc.constantFrom('u1', 'a1', 'nope'), { maxLength: 2 })),
    tag: often(fc.oneof(hostileString, fc.constantFrom('feed', 'rome'))),
  }, { requiredKeys: ['conversationId'] }))),
};

type Outcome = { calls: number; results: number; errors: Record<string, number> };
const outcomes = new Map<string, Outcome>();
let memory: Memory;

function method(name: string): (...args: unknown[]) => Promise<unknown> {
  const [head, tail] = name.split('.') as [string, string | undefined];
  const target = (tail ? (memory as unknown as Record<string, Record<string, unknown>>)[head]! : memory) as Record<string, unknown>;
  const fn = target[tail ?? head] as (...args: unknown[]) => Promise<unknown>;
  return fn.bind(target);
}

/** Everything stored that a rejected call could have changed. */
async function snapshot(): Promise<string> {
  const convs = await memory.conversations();
  const parts: unknown[] = [convs, await memory.aliases.list()];
  for (const c of convs) {
    parts.push(await memory.turns(c.id, { limit: 10_000 }), await memory.tags(c.id), await memory.pins(c.id), (await memory.summaries(c.id)).length,
      await memory.aliases.list({ conversationId: c.id }));
  }
  return JSON.stringify(parts);
}

/** What a resolved call must satisfy. */
async function check(name: string, args: unknown[], result: unknown): Promise<void> {
  if (name === 'onMessageInbound') {
    const r = result as { budget: { total: number; available: number }; messages: unknown[] };
    expect(r.budget.total).toBeLessThanOrEqual(r.budget.available);
    expect(r.messages.length).toBeGreaterThan(0);
  } else if (name === 'onTurnComplete') {
    const input = args[0] as { conversationId: string; messages: unknown[] };
    const r = result as { stored: number; skipped: number; storedIds: string[] };
    expect(r.stored + r.skipped).toBe(input.messages.length);
    const ids = new Set((await memory.turns(input.conversationId, { limit: 10_000 })).map((t) => t.id));
    for (const id of r.storedIds) expect(ids.has(id)).toBe(true);
  } else if (name === 'turns') {
    const seqs = (result as { seq: number }[]).map((t) => t.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  } else if (['conversations', 'tags', 'pins', 'summaries', 'tools', 'aliases.list', 'aliases.suggest'].includes(name)) {
    expect(Array.isArray(result)).toBe(true);
  }
}

beforeAll(async () => {
  memory = await createMemory();
  await memory.onTurnComplete({ conversationId: 'c', messages: [
    user('How do we speed up the feed queries?', { id: 'u1', name: 'Caroline' }), assistant('Add a cache in front of the db.', { id: 'a1' }),
    user('And the Rome trip budget?', { id: 'u2' }), assistant('About 900 euros for the hotel.', { id: 'a2' }),
  ] });
  await memory.onTurnComplete({ conversationId: 'd', messages: [user('Unrelated conversation about feeds.'), assistant('Noted.')] });
});

afterAll(async () => {
  await memory.close();
  const rows = [...outcomes].map(([name, o]) => `${name.padEnd(20)} ${String(o.calls).padStart(5)} calls  ${String(o.results).padStart(4)} results  ${Object.entries(o.errors).map(([c, n]) => `${c} ${n}`).join(', ')}`);
  const total = [...outcomes.values()].reduce((n, o) => n + o.calls, 0);
  console.log(`fault suite (fast-check seed ${FAULT_SEED}): ${total} generated calls, 0 untyped errors, stored data unchanged by every rejected call\n${rows.join('\n')}`);
});

describe('every public method under hostile input (fast-check)', () => {
  for (const [name, args] of Object.entries(METHODS)) {
    it(name, async () => {
      const o: Outcome = { calls: 0, results: 0, errors: {} };
      outcomes.set(name, o);
      await fc.assert(fc.asyncProperty(args, async (list) => {
        const before = await snapshot();
        o.calls++;
        let result: unknown;
        try {
          result = await method(name)(...list);
        } catch (error) {
          if (!isPagewiseError(error)) throw new Error(`${name} threw an untyped error: ${String(error)}`, { cause: error });
          expect(error.message).toMatch(/^\[pagewise\] \[[a-z-]+\] /);
          o.errors[error.code] = (o.errors[error.code] ?? 0) + 1;
          await memory.flush();
          expect(await snapshot(), `${name} was rejected (${error.code}) but changed what is stored`).toBe(before);
          return;
        }
        o.results++;
        await check(name, list, result);
      }), { seed: FAULT_SEED, numRuns: name === 'conversations' || name === 'tools' || name === 'exportDatabase' ? 5 : RUNS, endOnFailure: true });
    });
  }

  it('createMemory with hostile options: a working engine or a typed error', async () => {
    const o: Outcome = { calls: 0, results: 0, errors: {} };
    outcomes.set('createMemory', o);
    const option = (good: fc.Arbitrary<unknown>) => often(good, 1);
    const options = fc.record({
      contextWindow: option(fc.integer({ min: 256, max: 200_000 })), reserveTokens: option(fc.nat(4096)), model: option(fc.constantFrom('gpt-4o', 'llama3')),
      tagRules: option(fc.array(fc.record({ match: option(fc.constantFrom('*', 'debug*')), priority: option(fc.integer({ min: 0, max: 10 })), ttlDays: option(fc.integer({ min: 1, max: 30 })) }), { maxLength: 2 })),
      tagKeywords: option(fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.array(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 2 }))),
      storage: option(fc.constant(undefined)), topicsHint: option(fc.boolean()), encoding: option(fc.constantFrom('o200k_base', 'cl100k_base')),
      estimateMargin: option(fc.double({ min: 1, max: 4, noNaN: true })), summaryRatio: option(fc.double({ min: 0.05, max: 1, noNaN: true })),
    }, { requiredKeys: [] });
    await fc.assert(fc.asyncProperty(fc.oneof({ weight: 5, arbitrary: options }, { weight: 1, arbitrary: hostileValue }), async (opts) => {
      o.calls++;
      let engine: Memory;
      try {
        engine = await createBare({ embedder: false, ...(opts as object) } as never);
      } catch (error) {
        if (!isPagewiseError(error)) throw new Error(`createMemory threw an untyped error: ${String(error)}`, { cause: error });
        o.errors[error.code] = (o.errors[error.code] ?? 0) + 1;
        return;
      }
      o.results++;
      await engine.onTurnComplete({ conversationId: 'o', messages: [user('hello there'), assistant('hi')] });
      await engine.close();
    }), { seed: FAULT_SEED, numRuns: 150, endOnFailure: true });
    expect(o.results).toBeGreaterThan(10);
  });

  it('each method of a closed engine fails with ENGINE_CLOSED', async () => {
    const closed = await createMemory();
    await closed.close();
    for (const name of Object.keys(METHODS).filter((n) => n !== 'tools')) {
      const [head, tail] = name.split('.') as [string, string | undefined];
      const target = (tail ? (closed as unknown as Record<string, Record<string, unknown>>)[head]! : closed) as Record<string, (...a: unknown[]) => Promise<unknown>>;
      const error = await target[tail ?? head]!('c', {}).then(() => null, (e: unknown) => e);
      expect(isPagewiseError(error, 'ENGINE_CLOSED'), `${name} on a closed engine`).toBe(true);
    }
  });
});
