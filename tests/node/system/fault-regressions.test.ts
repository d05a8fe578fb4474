// The standing fault suite, part 2: the reproducers of what a fuzz and load pass found (issue 12), kept as tests.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { type Memory, createMemory as createBare, isPagewiseError } from '../../../src/index.js';
import { parseIsoDate } from '../../../src/common/messages.js';
import { sentences } from '../../../src/text/sentences.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

async function codeOf(promise: Promise<unknown> | (() => Promise<unknown>)): Promise<string | null> {
  const p = typeof promise === 'function' ? Promise.resolve().then(promise) : promise;
  return p.then(() => null, (e: unknown) => {
    if (!isPagewiseError(e)) throw new Error(`untyped error: ${String(e)}`, { cause: e });
    return e.code;
  });
}

describe('1. long texts are cut in linear time and memory', () => {
  it('a 317 KB log as a tool result and a message of 100,000 one-letter parts, recalled under a 256 MB heap', async () => {
    // Before the fix this child aborted with "JavaScript heap out of memory" inside Intl.Segmenter.
    const script = fileURLToPath(new URL('../../support/fixtures-faults/big-tool-result.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ['--max-old-space-size=256', '--import', 'tsx', script], { timeout: 120_000 });
    const result = JSON.parse(stdout.trim().split('\n').pop()!) as { ok: boolean; partial: boolean; heapMB: number };
    console.log(`big tool result under a 256 MB heap: ${stdout.trim()}`);
    expect(result.ok).toBe(true);
    expect(result.partial).toBe(true);
  }, 120_000);

  it('sentences() gives back the text exactly, in bounded pieces, on hostile shapes', () => {
    const shapes = ['x'.repeat(200_000), 'a. '.repeat(70_000), '😀'.repeat(40_000), 'Hi. '.repeat(10) + 'z'.repeat(3000), 'line\n'.repeat(50_000), ''];
    for (const text of shapes) {
      const parts = sentences(text);
      expect(parts.join('')).toBe(text);
      expect(Math.max(0, ...parts.map((p) => p.length))).toBeLessThanOrEqual(512);
      // No piece ends inside a surrogate pair.
      for (const p of parts) expect(/\p{Cs}/u.test(p)).toBe(false);
    }
  });
});

describe('3. ids that are not well-formed are refused, so two conversations never become one', () => {
  it('conversation ids with lone surrogates', async () => {
    memory = await createMemory();
    expect(await codeOf(memory.onTurnComplete({ conversationId: 'X\uD800', messages: [user('secret of X')] }))).toBe('INVALID_CONVERSATION_ID');
    await memory.onTurnComplete({ conversationId: 'X\uD83D\uDE00', messages: [user('a well-formed emoji id is fine')] });
    expect(await codeOf(memory.turns('X\uDC00'))).toBe('INVALID_CONVERSATION_ID');
    expect((await memory.conversations()).map((c) => c.id)).toEqual(['X\uD83D\uDE00']);
  });

  it('message ids m\\uD800 then m\\uDBFF: typed errors, nothing stored', async () => {
    memory = await createMemory();
    expect(await codeOf(memory.onTurnComplete({ conversationId: 'c', messages: [user('one', { id: 'm\uD800' })] }))).toBe('INVALID_MESSAGE');
    expect(await codeOf(memory.onTurnComplete({ conversationId: 'c', messages: [user('two', { id: 'm\uDBFF' })] }))).toBe('INVALID_MESSAGE');
    expect(await memory.conversations()).toEqual([]);
  });

  it('lone surrogates in content, names, tool calls, pins and tool arguments', async () => {
    memory = await createMemory();
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('hello', { id: 'u1' }), assistant('hi', { id: 'a1' })] });
    const call = (fn: Record<string, unknown>) => ({ role: 'assistant', content: null, toolCalls: [{ id: 'k', type: 'function', function: { name: 'f', arguments: '{}', ...fn } }] });
    const cases: [string, Promise<unknown>, string][] = [
      ['content', memory.onTurnComplete({ conversationId: 'c', messages: [user('bad \uDC00 text')] }), 'INVALID_CONTENT'],
      ['content part', memory.onTurnComplete({ conversationId: 'c', messages: [{ role: 'user', content: [{ type: 'text', text: '\uD800' }] }] }), 'INVALID_CONTENT'],
      ['name', memory.onTurnComplete({ conversationId: 'c', messages: [user('x', { name: 'Eve\uD800' })] }), 'INVALID_MESSAGE'],
      ['name with a line break', memory.onTurnComplete({ conversationId: 'c', messages: [user('x', { name: 'Eve\nSYSTEM' })] }), 'INVALID_MESSAGE'],
      ['tool name', memory.onTurnComplete({ conversationId: 'c', messages: [call({ name: 'f\uD800' }) as never] }), 'INVALID_TOOL_CALL'],
      ['tool arguments', memory.onTurnComplete({ conversationId: 'c', messages: [call({ arguments: '{"q":"\uDFFF"}' }) as never] }), 'INVALID_TOOL_CALL'],
      ['question', memory.onMessageInbound({ conversationId: 'c', message: user('what \uD800?') }), 'INVALID_CONTENT'],
      ['pin', memory.pin('c', 'u1\uD800'), 'INVALID_ARGUMENT'],
    ];
    for (const [what, promise, code] of cases) expect(await codeOf(promise), what).toBe(code);
    expect((await memory.turns('c')).map((t) => t.id)).toEqual(['u1', 'a1']);
  });
});

describe('7. errors that used to be untyped', () => {
  it('each is a PagewiseError that says how to fix it', async () => {
    memory = await createMemory();
    await memory.onTurnComplete({ conversationId: 'A', messages: [user('hello'), assistant('hi')] });
    const m = memory;
    const cases: [string, () => Promise<unknown>, string][] = [
      ['now: 1e16', () => m.onMessageInbound({ conversationId: 'A', message: user('hi'), now: 1e16 }), 'INVALID_DATE'],
      ['turns(A, null)', () => m.turns('A', null as never), 'INVALID_ARGUMENT'],
      ['summaries(A, null)', () => m.summaries('A', null as never), 'INVALID_ARGUMENT'],
      ['regenerateSummaries(A, null)', () => m.regenerateSummaries('A', null as never), 'INVALID_ARGUMENT'],
      ['regenerateSummaries ids [Symbol]', () => m.regenerateSummaries('A', { ids: [Symbol('x')] as never }), 'INVALID_ARGUMENT'],
      ['turns range from 1e300', () => m.turns('A', { from: 1e300 }), 'INVALID_ARGUMENT'],
      ['option Object.create(null)', () => createBare({ embedder: false, contextWindow: Object.create(null) }), 'INVALID_OPTIONS'],
      ['option Symbol', () => createBare({ embedder: false, recallPlacement: Symbol('x') as never }), 'INVALID_OPTIONS'],
      ['storage: () => 1', () => createBare({ embedder: false, storage: (() => 1) as never }), 'INVALID_OPTIONS'],
      ['priority: NaN', () => createBare({ embedder: false, tagRules: [{ match: '*', priority: Number.NaN }] }), 'INVALID_OPTIONS'],
      ['estimateMargin: NaN', () => createBare({ embedder: false, model: 'llama3', estimateMargin: Number.NaN }), 'INVALID_OPTIONS'],
      ['contextWindow: 1e300', () => createBare({ embedder: false, contextWindow: 1e300 }), 'INVALID_OPTIONS'],
    ];
    for (const [what, fn, code] of cases) {
      const error = await fn().then(() => null, (e: unknown) => e);
      expect(isPagewiseError(error, code as never), `${what}: ${String(error)}`).toBe(true);
      expect((error as Error).message, what).toMatch(/^\[pagewise\] \[[a-z-]+\] .*(must|pass|use|returned|range)/i);
    }
    expect((await m.turns('A')).length).toBe(2);
  });
});

describe('8. dates are real dates', () => {
  it('2024-02-30 is refused, not stored as 1 March', async () => {
    memory = await createMemory();
    for (const bad of ['2024-02-30T10:00:00Z', '2023-02-29', '2024-04-31', '2024-05-08T24:00:00Z', '2024-05-08T12:60:00Z']) {
      expect(await codeOf(memory.onTurnComplete({ conversationId: 'c', messages: [user('x', { createdAt: bad })] })), bad).toBe('INVALID_DATE');
    }
    expect(parseIsoDate('2024-02-29T10:00:00Z', 'x')).toBe(Date.UTC(2024, 1, 29, 10));
    expect(await memory.conversations()).toEqual([]);
  });
});

describe('23. what the widened fault suite was written to find', () => {
  it('a conversation id with a leading BOM is its own conversation: export, turns and forget never act on "dave"', async () => {
    memory = await createMemory();
    await memory.onTurnComplete({ conversationId: 'dave', messages: [user('dave keeps the word marmalade', { id: 'd1' }), assistant('noted', { id: 'd2' })] });
    expect(await codeOf(memory.export('\uFEFFdave'))).toBe('CONVERSATION_NOT_FOUND');
    expect(await codeOf(memory.forget({ conversationId: 'dave', messageIds: ['\uFEFFd1'] }))).toBe('NOT_FOUND');
    await memory.onTurnComplete({ conversationId: '\uFEFFdave', messages: [user('the BOM twin keeps the word quince', { id: 'b1' })] });
    expect((await memory.conversations()).map((c) => c.id).sort()).toEqual(['dave', '\uFEFFdave'].sort());
    const exported = await memory.export('\uFEFFdave');
    expect(exported.conversations.map((c) => [c.id, c.turns.map((t) => t.id)])).toEqual([['\uFEFFdave', ['b1']]]);
    await memory.forget({ conversationId: '\uFEFFdave' });
    expect((await memory.turns('dave')).map((t) => t.id)).toEqual(['d1', 'd2']);
    expect((await memory.conversations()).map((c) => c.id)).toEqual(['dave']);
  });

  it('a revoked Proxy as import conversations or turns, forget messageIds, onTurnComplete messages: a typed error', async () => {
    memory = await createMemory();
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('hello', { id: 'u1' }), assistant('hi', { id: 'a1' })] });
    const revoked = () => { const r = Proxy.revocable([], {}); r.revoke(); return r.proxy as never; };
    const m = memory;
    const cases: [string, () => Promise<unknown>][] = [
      ['import conversations', () => m.import({ format: 'pagewise', version: 1, exportedAt: '', aliases: [], conversations: revoked() })],
      ['import turns', () => m.import({ format: 'pagewise', version: 1, exportedAt: '', aliases: [], conversations: [{ id: 'x', createdAt: '', updatedAt: '', turns: revoked(), pins: [], aliases: [] }] })],
      ['forget messageIds', () => m.forget({ conversationId: 'c', messageIds: revoked() })],
      ['onTurnComplete messages', () => m.onTurnComplete({ conversationId: 'c', messages: revoked() })],
      ['onMessageInbound history', () => m.onMessageInbound({ conversationId: 'c', message: user('hi'), history: revoked() })],
    ];
    for (const [what, fn] of cases) expect(await codeOf(fn), what).not.toBeNull();
    expect((await memory.turns('c')).map((t) => t.id)).toEqual(['u1', 'a1']);
  });

  it('an import whose alias is invalid stores none of its turns', async () => {
    memory = await createMemory();
    const data = { format: 'pagewise' as const, version: 1 as const, exportedAt: '2025-01-01T00:00:00.000Z', aliases: [], conversations: [{
      id: 'imp', createdAt: '2025-01-01T00:00:00.000Z', updatedAt: '2025-01-01T00:00:00.000Z', pins: [],
      turns: [{ id: 't1', role: 'user' as const, content: 'hello there', createdAt: '2025-01-01T00:00:00.000Z' }],
      aliases: [{ alias: '', tag: 'database', createdAt: '2025-01-01T00:00:00.000Z' }],
    }] };
    expect(await codeOf(memory.import(data))).toBe('INVALID_ARGUMENT');
    expect(await memory.conversations()).toEqual([]);
  });

  it('the proxy answers {"messages":[null]}, tool_calls [null] and Anthropic content [null] with a 400, forwarding nothing', async () => {
    const { memoryProxy } = await import('../../../src/surfaces/proxy.js');
    memory = await createMemory();
    let forwarded = 0;
    const upstream = { baseUrl: 'http://127.0.0.1:9', apiKey: 'k' };
    const realFetch = globalThis.fetch;
    globalThis.fetch = (async () => { forwarded++; return new Response('{}'); }) as typeof fetch;
    try {
      const proxy = memoryProxy({ memory, authenticate: (r: Request) => (r.headers.get('authorization') === 'Bearer t' ? 'u' : null), openai: upstream, anthropic: upstream });
      const bodies: [string, unknown][] = [
        ['/v1/chat/completions', { messages: [null] }],
        ['/v1/chat/completions', { messages: [{ role: 'assistant', tool_calls: [null] }, { role: 'user', content: 'hi' }] }],
        ['/v1/messages', { messages: [{ role: 'user', content: [null] }] }],
      ];
      for (const [path, body] of bodies) {
        const res = await proxy(new Request(`http://proxy.test${path}`, { method: 'POST', headers: { authorization: 'Bearer t', 'x-pagewise-conversation': 'c1', 'content-type': 'application/json' }, body: JSON.stringify(body) }));
        expect(res.status, JSON.stringify(body)).toBe(400);
      }
    } finally {
      globalThis.fetch = realFetch;
    }
    expect(forwarded).toBe(0);
    expect(await memory.conversations()).toEqual([]);
  });
});
