import { generateText, simulateReadableStream, streamText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { memoryMiddleware } from '../../../src/ai-sdk.js';
import { createMemory } from '../../support/helpers.js';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const finishReason = { unified: 'stop' as const, raw: 'stop' };
const promptText = (prompt: unknown) => JSON.stringify(prompt);

describe('pagewise/ai-sdk: memoryMiddleware with the AI SDK\'s own MockLanguageModelV4', () => {
  it('generateText: the second call, sending only its new message, carries what the first exchange said', async () => {
    const memory = await createMemory();
    try {
      const model = new MockLanguageModelV4({
        doGenerate: [
          { content: [{ type: 'text', text: 'Noted: the deploy window is Tuesday 14:00 UTC.' }], finishReason, usage, warnings: [] },
          { content: [{ type: 'text', text: 'Tuesday at 14:00 UTC.' }], finishReason, usage, warnings: [] },
        ],
      });
      const wrapped = wrapLanguageModel({ model, middleware: memoryMiddleware({ memory, conversationId: 'c1' }) });
      const first = await generateText({ model: wrapped, system: 'You are terse.', prompt: 'Our deploy window is Tuesday 14:00 UTC.' });
      expect(first.text).toBe('Noted: the deploy window is Tuesday 14:00 UTC.');
      // Stored by the time generateText resolved.
      expect((await memory.turns('c1')).map((t) => [t.role, t.text])).toEqual([
        ['user', 'Our deploy window is Tuesday 14:00 UTC.'], ['assistant', 'Noted: the deploy window is Tuesday 14:00 UTC.'],
      ]);
      await generateText({ model: wrapped, system: 'You are terse.', prompt: 'When is the deploy window?' });
      const sent = model.doGenerateCalls[1]!.prompt;
      expect(sent[0]).toEqual({ role: 'system', content: 'You are terse.' });
      expect(promptText(sent)).toContain('Our deploy window is Tuesday 14:00 UTC.');
      expect(promptText(sent)).toContain('Noted: the deploy window is Tuesday 14:00 UTC.');
      expect(sent.at(-1)).toMatchObject({ role: 'user', content: [{ type: 'text', text: 'When is the deploy window?' }] });
      expect(await memory.turns('c1')).toHaveLength(4);
    } finally {
      await memory.close();
    }
  });

  it('streamText: the stream reaches the caller unchanged and the exchange is remembered once it is read', async () => {
    const memory = await createMemory();
    try {
      const parts = [
        { type: 'text-start' as const, id: 't' },
        { type: 'text-delta' as const, id: 't', delta: 'The staging ' },
        { type: 'text-delta' as const, id: 't', delta: 'password rotates on Fridays.' },
        { type: 'text-end' as const, id: 't' },
        { type: 'finish' as const, finishReason, usage },
      ];
      const model = new MockLanguageModelV4({
        doStream: [{ stream: simulateReadableStream({ chunks: parts }) }, { stream: simulateReadableStream({ chunks: parts }) }],
      });
      const wrapped = wrapLanguageModel({ model, middleware: memoryMiddleware({ memory, conversationId: 'c2' }) });
      const result = streamText({ model: wrapped, prompt: 'Tell me about the staging password.' });
      const chunks: string[] = [];
      for await (const chunk of result.textStream) chunks.push(chunk);
      expect(chunks).toEqual(['The staging ', 'password rotates on Fridays.']);
      expect((await memory.turns('c2')).map((t) => t.text)).toEqual(['Tell me about the staging password.', 'The staging password rotates on Fridays.']);
      const next = streamText({ model: wrapped, prompt: 'When does it rotate?' });
      await next.text;
      expect(promptText(model.doStreamCalls[1]!.prompt)).toContain('The staging password rotates on Fridays.');
    } finally {
      await memory.close();
    }
  });

  it('tool calls in a reply are stored as tool calls', async () => {
    const memory = await createMemory();
    try {
      const model = new MockLanguageModelV4({
        doGenerate: { content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'lookup', input: '{"city":"Lisbon"}' }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] },
      });
      const wrapped = wrapLanguageModel({ model, middleware: memoryMiddleware({ memory, conversationId: 'c3' }) });
      await generateText({ model: wrapped, prompt: 'Weather in Lisbon?' });
      const [, reply] = await memory.turns('c3');
      expect(reply).toMatchObject({ role: 'assistant', toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"city":"Lisbon"}' } }] });
    } finally {
      await memory.close();
    }
  });
});
