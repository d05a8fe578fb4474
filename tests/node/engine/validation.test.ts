import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Memory } from '../../../src/index.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

let memory: Memory;
beforeEach(async () => {
  memory = await createMemory({ maxMessageBytes: 2000 });
  await memory.onTurnComplete({ conversationId: 'c', messages: [user('first'), assistant('second')] });
});
afterEach(async () => { await memory.close(); });

async function expectCode(promise: Promise<unknown>, code: string, messagePart?: RegExp) {
  const error = await promise.then(() => null, (e: unknown) => e as { name: string; code: string; message: string });
  expect(error, `expected ${code}`).not.toBeNull();
  expect(error!.name).toBe('PagewiseError');
  expect(error!.code).toBe(code);
  expect(error!.message).toMatch(/^\[pagewise\] \[[a-z-]+\] /);
  if (messagePart) expect(error!.message).toMatch(messagePart);
}

const BAD_TURNS: [string, unknown, string][] = [
  ['no argument', undefined, 'INVALID_ARGUMENT'],
  ['missing conversationId', { messages: [user('x')] }, 'INVALID_CONVERSATION_ID'],
  ['blank conversationId', { conversationId: '  ', messages: [user('x')] }, 'INVALID_CONVERSATION_ID'],
  ['numeric conversationId', { conversationId: 42, messages: [user('x')] }, 'INVALID_CONVERSATION_ID'],
  ['messages not an array', { conversationId: 'c', messages: 'hi' }, 'INVALID_ARGUMENT'],
  ['empty messages', { conversationId: 'c', messages: [] }, 'INVALID_ARGUMENT'],
  ['message not an object', { conversationId: 'c', messages: ['hi'] }, 'INVALID_MESSAGE'],
  ['unknown role', { conversationId: 'c', messages: [{ role: 'robot', content: 'x' }] }, 'INVALID_ROLE'],
  ['missing content', { conversationId: 'c', messages: [{ role: 'user' }] }, 'EMPTY_MESSAGE'],
  ['whitespace content', { conversationId: 'c', messages: [user('   \n ')] }, 'EMPTY_MESSAGE'],
  ['numeric content', { conversationId: 'c', messages: [{ role: 'user', content: 42 }] }, 'INVALID_CONTENT'],
  ['image part', { conversationId: 'c', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'INVALID_CONTENT'],
  ['too large', { conversationId: 'c', messages: [user('é'.repeat(1001))] }, 'MESSAGE_TOO_LARGE'],
  ['bad createdAt', { conversationId: 'c', messages: [user('x', { createdAt: 'May 8th' })] }, 'INVALID_DATE'],
  ['impossible createdAt', { conversationId: 'c', messages: [user('x', { createdAt: '2024-13-45T00:00:00Z' })] }, 'INVALID_DATE'],
  ['tool without toolCallId', { conversationId: 'c', messages: [{ role: 'tool', content: 'result' }] }, 'INVALID_TOOL_CALL'],
  ['toolCalls not an array', { conversationId: 'c', messages: [{ role: 'assistant', content: '', toolCalls: {} }] }, 'INVALID_TOOL_CALL'],
  ['tool call without name', { conversationId: 'c', messages: [{ role: 'assistant', content: null, toolCalls: [{ id: 'a', type: 'function', function: { arguments: '{}' } }] }] }, 'INVALID_TOOL_CALL'],
  ['tool call arguments object', { conversationId: 'c', messages: [{ role: 'assistant', content: null, toolCalls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: { q: 1 } } }] }] }, 'INVALID_TOOL_CALL'],
  ['user with toolCalls', { conversationId: 'c', messages: [{ role: 'user', content: 'x', toolCalls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }] }] }, 'INVALID_TOOL_CALL'],
  ['empty id', { conversationId: 'c', messages: [user('x', { id: '' })] }, 'INVALID_MESSAGE'],
  ['empty name', { conversationId: 'c', messages: [user('x', { name: '' })] }, 'INVALID_MESSAGE'],
];

describe('bad input to onTurnComplete: typed error, nothing stored', () => {
  for (const [what, input, code] of BAD_TURNS) {
    it(what, async () => {
      await expectCode(memory.onTurnComplete(input as never), code);
      expect((await memory.turns('c')).map((t) => t.text)).toEqual(['first', 'second']);
      expect(await memory.conversations()).toHaveLength(1);
    });
  }

  it('one bad message in a batch stores none of the batch', async () => {
    const e = await memory.onTurnComplete({ conversationId: 'c', messages: [user('fine'), { role: 'nope', content: 'x' } as never, assistant('fine too')] })
      .catch((x: { code: string; path: string; message: string }) => x);
    expect(e).toMatchObject({ code: 'INVALID_ROLE', path: 'messages[1].role' });
    expect((e as { message: string }).message).toMatch(/'system', 'user', 'assistant', 'tool'/);
    expect(await memory.turns('c')).toHaveLength(2);
  });

  it('an assistant message with only tool calls is valid', async () => {
    const report = await memory.onTurnComplete({ conversationId: 'c', messages: [
      { role: 'assistant', content: null, toolCalls: [{ id: 'call1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', toolCallId: 'call1', content: '{"temp": 3}' },
    ] });
    expect(report.stored).toBe(2);
    const turns = await memory.turns('c', { from: 2 });
    expect(turns[0]!.toolCalls![0]!.function.name).toBe('weather');
    expect(turns[0]!.text).toContain('weather({"city":"Oslo"})');
    expect(turns[1]!.toolCallId).toBe('call1');
  });
});

describe('bad input to onMessageInbound and the rest', () => {
  it('rejects a bad message, history and now', async () => {
    await expectCode(memory.onMessageInbound({ conversationId: 'c', message: { role: 'user', content: '' } }), 'EMPTY_MESSAGE');
    await expectCode(memory.onMessageInbound({ conversationId: '', message: user('x') }), 'INVALID_CONVERSATION_ID');
    await expectCode(memory.onMessageInbound({ conversationId: 'c', message: user('x'), history: 'no' as never }), 'INVALID_ARGUMENT');
    await expectCode(memory.onMessageInbound({ conversationId: 'c', message: user('x'), history: [{ role: 'x' }] as never }), 'INVALID_ROLE');
    await expectCode(memory.onMessageInbound({ conversationId: 'c', message: user('x'), now: 'yesterday' }), 'INVALID_DATE');
    await expectCode(memory.onMessageInbound(null as never), 'INVALID_ARGUMENT');
  });

  it('a message that cannot fit the window is BUDGET_EXCEEDED with the figures', async () => {
    const small = await createMemory({ contextWindow: 300, reserveTokens: 100 });
    await expectCode(small.onMessageInbound({ conversationId: 'c', message: user('word '.repeat(400)) }), 'BUDGET_EXCEEDED', /only 200 are available/);
    await small.close();
  });

  it('an unknown conversation is fine for inbound, CONVERSATION_NOT_FOUND for inspection', async () => {
    const ctx = await memory.onMessageInbound({ conversationId: 'new', message: user('hello') });
    expect(ctx.messages).toHaveLength(1);
    await expectCode(memory.turns('nope'), 'CONVERSATION_NOT_FOUND', /memory\.conversations\(\)/);
  });

  it('after close every call is ENGINE_CLOSED', async () => {
    await memory.close();
    await expectCode(memory.onMessageInbound({ conversationId: 'c', message: user('x') }), 'ENGINE_CLOSED');
    await expectCode(memory.onTurnComplete({ conversationId: 'c', messages: [user('x')] }), 'ENGINE_CLOSED');
    await expectCode(memory.conversations(), 'ENGINE_CLOSED');
    await memory.close();
  });

  it('bad options are refused at construction', async () => {
    await expectCode(createMemory({ contextWindow: 10 }), 'INVALID_OPTIONS', /contextWindow/);
    await expectCode(createMemory({ contextWindow: 1000, reserveTokens: 1000 }), 'INVALID_OPTIONS', /reserveTokens/);
    await expectCode(createMemory({ softThreshold: 0.9, hardThreshold: 0.8 }), 'INVALID_OPTIONS', /softThreshold/);
    await expectCode(createMemory({ encoding: 'p50k' as never }), 'INVALID_OPTIONS', /encoding/);
    await expectCode(createMemory({ contextWIndow: 5 } as never), 'INVALID_OPTIONS', /not an option/);
    await expectCode(createMemory({ storage: {} as never }), 'INVALID_OPTIONS', /StorageDriver/);
  });
});

describe('values that cannot be read (a revoked Proxy, a getter that throws): typed errors, nothing stored', () => {
  const revoked = (target: object = []): never => {
    const { proxy, revoke } = Proxy.revocable(target, {});
    revoke();
    return proxy as never;
  };
  const throwing = (value: Record<string, unknown>, key: string): never => Object.defineProperty(value, key, { enumerable: true, get() { throw new Error('boom'); } }) as never;
  const exported = (conversations: unknown, turns: unknown = [user('x', { id: 'i1', createdAt: '2026-01-01T00:00:00Z' })], extra: Record<string, unknown> = {}) => ({
    format: 'pagewise', version: 1, exportedAt: '2026-01-01T00:00:00Z', aliases: [],
    conversations: conversations ?? [{ id: 'imp', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', pins: [], aliases: [], turns, ...extra }],
  }) as never;
  const CASES: [string, (m: Memory) => Promise<unknown>, string][] = [
    ['onTurnComplete(revoked)', (m) => m.onTurnComplete(revoked({})), 'INVALID_ARGUMENT'],
    ['onTurnComplete messages: revoked', (m) => m.onTurnComplete({ conversationId: 'c', messages: revoked() }), 'INVALID_ARGUMENT'],
    ['onTurnComplete messages: a getter that throws', (m) => m.onTurnComplete(throwing({ conversationId: 'c' }, 'messages')), 'INVALID_ARGUMENT'],
    ['a message: revoked', (m) => m.onTurnComplete({ conversationId: 'c', messages: [user('ok'), revoked({})] }), 'INVALID_MESSAGE'],
    ['a message content: revoked', (m) => m.onTurnComplete({ conversationId: 'c', messages: [{ role: 'user', content: revoked() }] }), 'INVALID_CONTENT'],
    ['a content part: a getter that throws', (m) => m.onTurnComplete({ conversationId: 'c', messages: [{ role: 'user', content: [throwing({ type: 'text' }, 'text')] }] }), 'INVALID_CONTENT'],
    ['toolCalls: revoked', (m) => m.onTurnComplete({ conversationId: 'c', messages: [{ role: 'assistant', content: 'x', toolCalls: revoked() }] }), 'INVALID_TOOL_CALL'],
    ['onMessageInbound history: revoked', (m) => m.onMessageInbound({ conversationId: 'c', message: user('x'), history: revoked() }), 'INVALID_ARGUMENT'],
    ['forget messageIds: revoked', (m) => m.forget({ conversationId: 'c', messageIds: revoked() }), 'INVALID_ARGUMENT'],
    ['turns range: revoked', (m) => m.turns('c', revoked({})), 'INVALID_ARGUMENT'],
    ['topics options: revoked', (m) => m.topics('c', revoked({})), 'INVALID_ARGUMENT'],
    ['import(revoked)', (m) => m.import(revoked({})), 'INVALID_ARGUMENT'],
    ['import conversations: revoked', (m) => m.import(exported(revoked())), 'INVALID_ARGUMENT'],
    ['import a conversation: revoked', (m) => m.import(exported([revoked({})])), 'INVALID_ARGUMENT'],
    ['import turns: revoked', (m) => m.import(exported(undefined, revoked())), 'INVALID_ARGUMENT'],
    ['import a turn: a getter that throws', (m) => m.import(exported(undefined, [throwing({ role: 'user', id: 'i1', createdAt: '2026-01-01T00:00:00Z' }, 'content')])), 'INVALID_MESSAGE'],
    ['import pins: revoked', (m) => m.import(exported(undefined, undefined, { pins: revoked() })), 'INVALID_ARGUMENT'],
    ['import aliases: revoked', (m) => m.import(exported(undefined, undefined, { aliases: revoked() })), 'INVALID_ARGUMENT'],
  ];
  for (const [what, call, code] of CASES) {
    it(what, async () => {
      const before = await memory.export();
      await expectCode(call(memory), code, /cannot be read|must be|takes one object/);
      expect({ ...await memory.export(), exportedAt: '' }).toEqual({ ...before, exportedAt: '' });
    });
  }

  it('a getter that answers differently when read again is read once', async () => {
    let reads = 0;
    const part = { type: 'text', get text() { return reads++ === 0 ? 'hello' : { not: 'text' }; } };
    await memory.onTurnComplete({ conversationId: 'c', messages: [{ role: 'user', content: [part as never] }] });
    expect((await memory.turns('c', { from: 2 }))[0]!.text).toBe('hello');
  });
});
