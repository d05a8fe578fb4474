// The standing fault suite, part 2: the reproducers of what a fuzz and load pass found (issue 12), kept as tests.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { type Memory, createMemory as createBare, isPagewiseError } from '../../src/index.js';
import { parseIsoDate } from '../../src/messages.js';
import { sentences } from '../../src/text/sentences.js';
import { assistant, createMemory, user } from './helpers.js';

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
    const script = fileURLToPath(new URL('./fixtures-faults/big-tool-result.ts', import.meta.url));
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
