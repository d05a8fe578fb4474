import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Memory } from '../../../src/index.js';
import { storedOverlap } from '../../../src/store/reconcile.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

let memory: Memory;
beforeEach(async () => { memory = await createMemory(); });
afterEach(async () => { await memory.close(); });

const texts = async (c = 'c') => (await memory.turns(c)).map((t) => t.text);

describe('onTurnComplete stores each message once, verbatim', () => {
  it('accepts the whole history each time and stores only what is new', async () => {
    const h = [user('one'), assistant('two')];
    expect((await memory.onTurnComplete({ conversationId: 'c', messages: h })).stored).toBe(2);
    h.push(user('three'), assistant('four'));
    const r = await memory.onTurnComplete({ conversationId: 'c', messages: h });
    expect(r).toMatchObject({ stored: 2, skipped: 2, totalTurns: 4, compaction: null });
    expect(await texts()).toEqual(['one', 'two', 'three', 'four']);
  });

  it('accepts only the tail, and re-sending the same tail is a no-op', async () => {
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('one'), assistant('two')] });
    await memory.onTurnComplete({ conversationId: 'c', messages: [assistant('two'), user('three'), assistant('four')] });
    const again = await memory.onTurnComplete({ conversationId: 'c', messages: [user('three'), assistant('four')] });
    expect(again).toMatchObject({ stored: 0, skipped: 2, storedIds: [] });
    expect(await texts()).toEqual(['one', 'two', 'three', 'four']);
  });

  it('keeps repeated identical messages at their positions ("ok", "ok")', async () => {
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('ok'), assistant('ok')] });
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('ok'), assistant('ok'), user('ok'), assistant('fine')] });
    expect(await texts()).toEqual(['ok', 'ok', 'ok', 'fine']);
  });

  it('with caller ids: the same exchange repeated is new, a re-sent id is skipped', async () => {
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('hi', { id: 'u1' }), assistant('hello', { id: 'a1' })] });
    const r = await memory.onTurnComplete({ conversationId: 'c', messages: [user('hi', { id: 'u2' }), assistant('hello', { id: 'a2' })] });
    expect(r.storedIds).toEqual(['u2', 'a2']);
    const again = await memory.onTurnComplete({ conversationId: 'c', messages: [assistant('hello', { id: 'a1' }), user('more', { id: 'u3' })] });
    expect(again.storedIds).toEqual(['u3']);
    expect((await memory.turns('c')).map((t) => t.id)).toEqual(['u1', 'a1', 'u2', 'a2', 'u3']);
  });

  it('refuses a known id with different content (ID_CONFLICT) and stores nothing of that call', async () => {
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('hi', { id: 'u1' })] });
    const e = await memory.onTurnComplete({ conversationId: 'c', messages: [user('new', { id: 'u9' }), user('edited', { id: 'u1' })] }).catch((x) => x);
    expect(e).toMatchObject({ name: 'PagewiseError', code: 'ID_CONFLICT', path: 'messages[1].id' });
    expect(await texts()).toEqual(['hi']);
  });

  it('a whole history whose old part was edited still stores only the new tail', async () => {
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('a'), assistant('b'), user('c'), assistant('d')] });
    const r = await memory.onTurnComplete({ conversationId: 'c', messages: [user('a (edited)'), assistant('b'), user('c'), assistant('d'), user('e')] });
    expect(r.stored).toBe(1);
    expect(await texts()).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('keeps content verbatim: parts, names, tool calls, createdAt', async () => {
    const parts = [{ type: 'text' as const, text: 'part one' }, { type: 'text' as const, text: '  part two  ' }];
    await memory.onTurnComplete({ conversationId: 'c', messages: [
      user(parts as never, { name: 'Caroline', createdAt: '2023-05-08T13:56:00+02:00', id: 'x1' }),
    ] });
    const [t] = await memory.turns('c');
    expect(t).toMatchObject({ id: 'x1', seq: 0, role: 'user', name: 'Caroline', content: parts, createdAt: '2023-05-08T11:56:00.000Z' });
    expect(t!.text).toBe('part one\n  part two  ');
    expect(t!.contentHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('stamps the time of storage when createdAt is absent; conversations are listed', async () => {
    const before = Date.now();
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('x')] });
    await memory.onTurnComplete({ conversationId: 'd', messages: [user('y')] });
    const [t] = await memory.turns('c');
    expect(Date.parse(t!.createdAt)).toBeGreaterThanOrEqual(before - 1);
    expect((await memory.conversations()).map((c) => [c.id, c.turns]).sort()).toEqual([['c', 1], ['d', 1]]);
  });

  it('serialises concurrent calls: no duplicates, no lost turns', async () => {
    const calls = Array.from({ length: 20 }, (_, i) =>
      memory.onTurnComplete({ conversationId: 'c', messages: [user(`q${i}`, { id: `q${i}` }), assistant(`a${i}`, { id: `a${i}` })] }));
    calls.push(...calls.slice(0, 5).map(() => memory.onTurnComplete({ conversationId: 'c', messages: [user('q0', { id: 'q0' })] })));
    await Promise.all(calls);
    const turns = await memory.turns('c');
    expect(turns).toHaveLength(40);
    expect(turns.map((t) => t.seq)).toEqual(turns.map((_, i) => i));
  });
});

describe('storedOverlap', () => {
  const k = (h: string, id = `pw_${h}`) => ({ id, contentHash: h });
  it('finds the longest stored suffix that starts the incoming list', () => {
    expect(storedOverlap([k('a'), k('b'), k('c')], [k('b'), k('c'), k('d')])).toBe(2);
    expect(storedOverlap([k('a'), k('b')], [k('a'), k('b'), k('c')])).toBe(2);
    expect(storedOverlap([k('a'), k('b')], [k('x')])).toBe(0);
    expect(storedOverlap([], [k('x')])).toBe(0);
  });
  it('a caller id decides over content', () => {
    expect(storedOverlap([k('a', 'u1')], [{ id: 'u2', contentHash: 'a' }])).toBe(0);
    expect(storedOverlap([k('a', 'u1')], [{ id: 'u1', contentHash: 'a' }])).toBe(1);
  });
});
