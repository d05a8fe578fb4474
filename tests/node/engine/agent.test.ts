import { afterEach, describe, expect, it } from 'vitest';
import { compressText } from '../../../src/assembly/compress.js';
import { createTokenizer } from '../../../src/tokens/tokenizer.js';
import { type Memory } from '../../../src/index.js';
import type { ChatMessage } from '../../../src/contracts/types.js';
import { assistant, createMemory, recount, user } from '../../support/helpers.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

function toolRound(i: number, payload: string): ChatMessage[] {
  const id = `call_${i}`;
  return [
    { id: `c${i}`, role: 'assistant', content: null, toolCalls: [{ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/file${i}.ts` }) } }] },
    { id: `r${i}`, role: 'tool', toolCallId: id, content: payload },
  ];
}

describe('working view (seed 001 and 002)', () => {
  it('compresses a long tool run keeping each call, offloads a large message to a preview, and reloads it by id', async () => {
    memory = await createMemory({ contextWindow: 4000, compaction: false, protectedRecentTurns: 2 });
    const big = `${'The quarterly report lists revenue by region. '.repeat(300)}The secret figure is 42.`;
    const messages: ChatMessage[] = [user('Please review the repository.', { id: 'u0' })];
    for (let i = 0; i < 5; i++) messages.push(...toolRound(i, `export const value${i} = ${i}; // ${'x'.repeat(400)}`));
    messages.push(assistant('I read five files; all fine.', { id: 'a0' }), user('Here is the report:\n' + big, { id: 'u1' }), assistant('Noted the report.', { id: 'a1' }));
    await memory.onTurnComplete({ conversationId: 'c', messages });
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('Thanks. What next?'), history: messages });
    expect(recount(ctx)).toBe(ctx.budget.total);
    const compressed = Object.assign({}, ...ctx.manifest.map((e) => e.compressed ?? {})) as Record<string, string>;
    expect(compressed.c0).toBe('tool-run');
    expect(compressed.r4).toBe('tool-run');
    expect(compressed.u1).toBe('offloaded');
    const run = ctx.messages.find((m) => String(m.content).startsWith('[pagewise: 10 tool messages compressed'))!;
    for (let i = 0; i < 5; i++) expect(String(run.content)).toContain(`read_file({"path":"src/file${i}.ts"})`);
    expect(ctx.messages.some((m) => m.role === 'tool')).toBe(false);
    const offloaded = ctx.messages.find((m) => String(m.content).includes('offloaded this message'))!;
    expect(String(offloaded.content)).toContain('pagewise_reload');
    expect(String(offloaded.content).length).toBeLessThan(600);
    const reloaded = await memory.callTool('pagewise_reload', JSON.stringify({ id: 'u1', maxTokens: 8000 }), { conversationId: 'c' });
    expect(reloaded.content).toContain('The secret figure is 42.');
    expect(reloaded.truncated).toBe(false);
    const page = await memory.callTool('pagewise_reload', { id: 'u1', maxTokens: 200 }, { conversationId: 'c' });
    expect(page.truncated).toBe(true);
    const offset = Number(/continue with offset (\d+)/.exec(page.content)![1]);
    const rest = await memory.callTool('pagewise_reload', { id: 'u1', offset, maxTokens: 8000 }, { conversationId: 'c' });
    // Each page quotes its part of the text in one delimited <turn> block.
    const quotedText = (content: string) => /^<turn [^\n]*>\n([\s\S]*)\n<\/turn>$/m.exec(content)?.[1] ?? '';
    expect(page.content).toMatch(/^Each <turn> block below quotes/);
    expect(quotedText(page.content) + quotedText(rest.content)).toBe('Here is the report:\n' + big);
    // The stored originals are untouched.
    const stored = await memory.turns('c');
    expect(stored.find((t) => t.id === 'u1')?.content).toBe('Here is the report:\n' + big);
  });

  it('compresses the current round\'s tool results progressively, leaving the call interface whole', async () => {
    memory = await createMemory({ contextWindow: 2500, compaction: false });
    const rows = Array.from({ length: 120 }, (_, i) => ({ id: i, city: i === 77 ? 'Reykjavik' : `City ${i}`, temperature: i % 30, note: 'ok' }));
    const history: ChatMessage[] = [user('What is the temperature in Reykjavik?', { id: 'q' }), ...toolRound(9, JSON.stringify(rows, null, 2))];
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('Answer from the tool result, please: Reykjavik temperature?'), history });
    expect(recount(ctx)).toBe(ctx.budget.total);
    const tool = ctx.messages.find((m) => m.role === 'tool')!;
    expect(tool.toolCallId).toBe('call_9');
    expect(ctx.messages.find((m) => m.toolCalls)?.toolCalls?.[0]?.function.arguments).toBe(JSON.stringify({ path: 'src/file9.ts' }));
    expect(String(tool.content)).toContain('Reykjavik');
    const level = Object.assign({}, ...ctx.manifest.map((e) => e.compressed ?? {})).r9;
    expect(['format', 'selective', 'truncated']).toContain(level);
  });

  it('progressive levels stop at the first that fits', async () => {
    const tok = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
    const spaced = 'word     word\n\n\n\n\nword   '.repeat(40);
    expect(compressText(spaced, tok.count(spaced) - 40, new Set(), tok).level).toBe('whitespace');
    const json = JSON.stringify([{ a: 1, b: 'x' }, { a: 2, b: 'y' }, { a: 3, b: 'z' }], null, 4);
    expect(compressText(json, tok.count('a | b\n1 | x\n2 | y\n3 | z'), new Set(), tok)).toEqual({ text: 'a | b\n1 | x\n2 | y\n3 | z', level: 'format' });
    const prose = Array.from({ length: 40 }, (_, i) => (i === 30 ? 'The Reykjavik office reported minus four degrees.' : `Line ${i} is about nothing much at all here.`)).join('\n');
    const selective = compressText(prose, 60, new Set(['reykjavik']), tok);
    expect(selective.level).toBe('selective');
    expect(selective.text).toContain('Reykjavik office');
    expect(tok.count(selective.text)).toBeLessThanOrEqual(60);
    const cut = compressText('z'.repeat(5000), 50, new Set(), tok);
    expect(cut.level).toBe('truncated');
    expect(tok.count(cut.text)).toBeLessThanOrEqual(50);
  });
});

describe('memory tools and pins', () => {
  async function compacted(): Promise<Memory> {
    // Recall kept small, so that the unpinned password exchange is not among what a garden question recalls anyway
    // (as the neighbour of a garden turn).
    const m = await createMemory({ contextWindow: 3000, memoryTokens: 300 });
    const messages: ChatMessage[] = [];
    for (let i = 0; i < 80; i++) {
      messages.push(user(`Garden log ${i}: the tomatoes need water on day ${i}, and the beans need a trellis before the next storm.`, { id: `u${i}` }),
        assistant(`Noted garden entry ${i}: water the tomatoes deeply in the morning and tie the beans to the trellis.`, { id: `a${i}` }));
    }
    messages[10] = user('Our wifi password is hunter2-orchard, please remember it.', { id: 'u5' });
    messages[11] = assistant('Saved.', { id: 'a5' });
    await m.onTurnComplete({ conversationId: 'c', messages });
    await m.flush();
    return m;
  }

  it('expands a summary back to its verbatim turns, expands a tag, searches, and refuses bad calls with codes', async () => {
    memory = await compacted();
    const tools = await memory.tools();
    expect(tools.map((t) => t.function.name)).toEqual(['pagewise_expand', 'pagewise_reload', 'pagewise_search']);
    expect(tools[0]!.type).toBe('function');
    const [segment] = await memory.summaries('c', { kind: 'segment' });
    const expanded = await memory.callTool('pagewise_expand', { summaryId: segment!.id }, { conversationId: 'c' });
    const turns = await memory.turns('c', { from: segment!.firstSeq, limit: segment!.lastSeq - segment!.firstSeq + 1 });
    expect(expanded.sourceIds).toEqual(turns.map((t) => t.id));
    for (const t of turns) expect(expanded.content).toContain(String(t.content));
    const small = await memory.callTool('pagewise_expand', { summaryId: segment!.id, maxTokens: 60 }, { conversationId: 'c' });
    expect(small.truncated).toBe(true);
    expect(small.content).toMatch(/continue with from: \d+/);
    const [tag] = await memory.tags('c');
    const byTag = await memory.callTool('pagewise_expand', JSON.stringify({ tag: tag!.tag }), { conversationId: 'c' });
    expect(byTag.sourceIds.length).toBeGreaterThan(0);
    const found = await memory.callTool('pagewise_search', { query: 'wifi password' }, { conversationId: 'c' });
    expect(found.content).toContain('hunter2-orchard');
    await expect(memory.callTool('pagewise_fly', {}, { conversationId: 'c' })).rejects.toMatchObject({ code: 'UNKNOWN_TOOL' });
    await expect(memory.callTool('pagewise_expand', '{not json', { conversationId: 'c' })).rejects.toMatchObject({ code: 'INVALID_TOOL_CALL' });
    await expect(memory.callTool('pagewise_expand', { summaryId: 'sum_nope' }, { conversationId: 'c' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a pinned message is recalled first when it is not in the history sent', async () => {
    memory = await compacted();
    await expect(memory.pin('c', 'nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const ask = user('What should I do in the garden today?');
    const before = await memory.onMessageInbound({ conversationId: 'c', message: ask });
    expect(before.recallText).not.toContain('hunter2-orchard');
    await memory.pin('c', 'u5');
    expect(await memory.pins('c')).toEqual(['u5']);
    const after = await memory.onMessageInbound({ conversationId: 'c', message: ask });
    expect(after.recallText).toContain('hunter2-orchard');
    expect(after.manifest.find((e) => e.kind === 'recall')?.reason).toBe('pinned by the user');
    expect(await memory.unpin('c', 'u5')).toBe(true);
  });
});
