// memory.stats() over a conversation's life: counters never outlive (or come before) what they count, background
// compactions are counted when their jobs end, close() writes what is left and then touches the driver no more, the
// kept path sum follows a branch move, and a call's input is the engine's to read once.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import type { ChatMessage, Statement, StorageDriver } from '../../../src/contracts/types.js';
import { assistant, createMemory, refCount, user } from '../../support/helpers.js';

afterEach(() => { vi.useRealTimers(); });

/** sqlite-wasm behind a driver whose close() leaves the database open, so the test reads what was left in it. */
async function kept(watch: { batch?: (s: readonly Statement[]) => void; fail?: (s: readonly Statement[]) => boolean } = {}) {
  const inner = await sqliteWasm()();
  const state = { closed: false, afterClose: [] as string[] };
  const driver: StorageDriver = {
    name: inner.name, limits: inner.limits,
    query: (sql, params) => {
      if (state.closed) state.afterClose.push(sql.slice(0, 60));
      return inner.query(sql, params) as never;
    },
    batch: async (s) => {
      if (state.closed) state.afterClose.push(s.map((x) => x.sql.slice(0, 60)).join(' | '));
      if (watch.fail?.(s)) throw new Error('disk I/O error');
      await inner.batch(s);
      watch.batch?.(s);
    },
    close: async () => { state.closed = true; },
  };
  return { inner, driver, state };
}

// At a 1,024-token window these compact both ways: in the calls (hard) and in the background (soft).
const question = (i: number) => user(`question ${i} about the sourdough starter and its feeding schedule ${'and more words '.repeat(10)}`);
const answer = (i: number) => assistant(`answer ${i} ${'keep it warm and feed it daily '.repeat(12)}`);

describe('memory.stats(): counters over a conversation\'s life', () => {
  it('a conversation that only asked leaves nothing; its request is counted once its turns are stored', async () => {
    const { inner, driver } = await kept();
    const m = await createMemory({ storage: driver });
    await m.onMessageInbound({ conversationId: 'patient-jane-doe', message: user('Is this rash serious?') });
    await expect(m.forget({ conversationId: 'patient-jane-doe' })).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    expect((await m.stats()).usage.calls.onMessageInbound).toBe(0);
    // The usual first exchange: the request, then the turns that store the conversation.
    const ctx = await m.onMessageInbound({ conversationId: 'ops', message: question(0) });
    await m.onTurnComplete({ conversationId: 'ops', messages: [question(0), answer(0)] });
    const ops = (await m.stats({ conversationId: 'ops' })).usage;
    expect(ops.calls).toEqual({ onMessageInbound: 1, onTurnComplete: 1 });
    expect(ops.tokens.total).toBe(ctx.budget.total);
    await m.close();
    expect(await inner.query('SELECT DISTINCT conversation_id AS id FROM usage_counters')).toEqual([{ id: 'ops' }]);
  });

  it('counts a background compaction when its job ends, and forgetting the conversation leaves no counter', async () => {
    let runs = 0;
    let counted: () => void = () => undefined;
    const written = new Promise<void>((resolve) => { counted = resolve; });
    const { inner, driver } = await kept({
      // Every write of the counters: done once the table holds more compactions than the calls reported.
      batch: (s) => {
        if (!s.some((x) => x.sql.includes('usage_counters'))) return;
        void Promise.resolve(inner.query<{ n: number }>("SELECT COALESCE(SUM(value), 0) AS n FROM usage_counters WHERE name = 'compaction.runs'"))
          .then(([row]) => { if (Number(row!.n) > runs) counted(); });
      },
    });
    const m = await createMemory({ storage: driver, contextWindow: 1024 });
    for (let i = 0; i < 24; i++) {
      await m.onMessageInbound({ conversationId: 'secret-client', message: question(i) });
      const report = await m.onTurnComplete({ conversationId: 'secret-client', messages: [question(i), answer(i)] });
      if (report.compaction && (report.compaction.turnsCompacted > 0 || report.compaction.summariesMade > 0)) runs++;
    }
    // No call after the last one: the background job's own end counts it (written with the buffer's next write).
    await written;
    await m.forget({ conversationId: 'secret-client' });
    expect((await m.stats({ conversationId: 'secret-client' })).usage.compaction.runs).toBe(0);
    expect((await m.flush()).length).toBeGreaterThan(0);
    await m.close();
    expect(await inner.query('SELECT conversation_id, name FROM usage_counters')).toEqual([]);
  }, 60_000);

  it('close() touches the driver no more, even with figures a failing disk kept back', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'], shouldAdvanceTime: true });
    const { driver, state } = await kept({ fail: (s) => s.some((x) => x.sql.includes('INSERT INTO usage_counters')) });
    const m = await createMemory({ storage: driver });
    await m.onMessageInbound({ conversationId: 'c', message: question(1) });
    await m.onTurnComplete({ conversationId: 'c', messages: [question(1), answer(1)] });
    await m.stats();
    await m.close();
    // Long past every write a timer could have set.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(state.afterClose).toEqual([]);
  });

  it('the kept path sum follows a move to another branch', async () => {
    const m = await createMemory();
    const stored: ChatMessage[] = [];
    for (let i = 0; i < 4; i++) {
      await m.onMessageInbound({ conversationId: 'b', message: question(i) });
      await m.onTurnComplete({ conversationId: 'b', messages: [question(i), answer(i)] });
      stored.push(question(i), answer(i));
    }
    const before = (await m.stats({ conversationId: 'b' })).usage.tokens.wholeHistory;
    // An edit after the second answer: the request moves there first, so its path is the first four messages.
    const turns = await m.turns('b');
    await m.onMessageInbound({ conversationId: 'b', message: question(9), parentId: turns[3]!.id });
    const path = stored.slice(0, 4).reduce((n, x) => n + refCount(x.content as string) + 3, 0);
    expect((await m.stats({ conversationId: 'b' })).usage.tokens.wholeHistory - before).toBe(path);
    await m.close();
  });

  it('reads a call\'s input once, and counts each method\'s error under the conversation it names', async () => {
    const m = await createMemory();
    let reads = 0;
    const input = { get conversationId() { return reads++ === 0 ? 'first' : 'second'; }, messages: [user('hello'), assistant('hi')] };
    await m.onTurnComplete(input as never);
    expect(reads).toBe(1);
    expect((await m.conversations()).map((c) => c.id)).toEqual(['first']);
    expect((await m.stats({ conversationId: 'first' })).usage.calls.onTurnComplete).toBe(1);
    // callTool names its conversation in its third argument, not its first (the tool's name).
    await expect(m.callTool('no_such_tool', {}, { conversationId: 'first' })).rejects.toHaveProperty('code');
    const code = Object.keys((await m.stats()).errors.callTool ?? {})[0]!;
    expect((await m.stats({ conversationId: 'first' })).errors.callTool).toEqual({ [code]: 1 });
    expect((await m.stats({ conversationId: 'no_such_tool' })).errors).toEqual({});
    await m.close();
  });
});
