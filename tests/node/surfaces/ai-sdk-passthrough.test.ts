// pagewise/ai-sdk wraps without changing: the prompt the model receives is the prompt the middleware received, but for
// what memory documents it adds (one system message; recalled images before the new message) and the oldest history
// it trims. An outer recorder middleware sees the prompt before pagewise does; the AI SDK's own MockLanguageModelV4
// receives what pagewise passes on.
import type { LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4Middleware, LanguageModelV4Prompt, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { type ModelMessage, generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { memoryMiddleware } from '../../../src/ai-sdk.js';
import type { AssembledContext, ChatMessage, InboundInput, MemoryOptions, StoredTurn } from '../../../src/contracts/types.js';
import { createMemory } from '../../support/helpers.js';

type Memory = Awaited<ReturnType<typeof createMemory>>;
type Mode = 'generateText' | 'streamText';
const MODES: Mode[] = ['generateText', 'streamText'];

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const stop = { unified: 'stop' as const, raw: 'stop' };

// A 1×1 PNG, a one-page PDF, and a short WAV of silence.
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const png = (): Uint8Array => Uint8Array.from(atob(PNG_B64), (c) => c.charCodeAt(0));
const pdf = (): Uint8Array => new TextEncoder().encode('%PDF-1.4\n1 0 obj << /Type /Page >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
function wav(): Uint8Array {
  const samples = 800;
  const out = new Uint8Array(44 + samples).fill(128);
  const view = new DataView(out.buffer);
  const ascii = (at: number, s: string) => [...s].forEach((c, i) => view.setUint8(at + i, c.charCodeAt(0)));
  ascii(0, 'RIFF'); view.setUint32(4, 36 + samples, true); ascii(8, 'WAVE'); ascii(12, 'fmt ');
  view.setUint32(16, 16, true); view.setUint16(20, 1, true); view.setUint16(22, 1, true); view.setUint32(24, 8000, true);
  view.setUint32(28, 8000, true); view.setUint16(32, 1, true); view.setUint16(34, 8, true); ascii(36, 'data'); view.setUint32(40, samples, true);
  return out;
}
const base64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes));

const cache = { anthropic: { cacheControl: { type: 'ephemeral' } } };
// Options no provider knows yet: passed on as they are.
const future = { futureProvider: { someNewFlag: true, nested: { list: [1, 'two', null] } } };

/** A deep copy that keeps what equality needs to see: bytes copied, URLs as URLs, keys whose value is undefined. */
function snapshot(value: unknown): unknown {
  if (value instanceof Uint8Array) return new Uint8Array(value);
  if (value instanceof URL) return new URL(value.href);
  if (Array.isArray(value)) return value.map(snapshot);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, snapshot(v)]));
  return value;
}

interface Recorded {
  /** The prompt array pagewise got (the same array object). */
  array: LanguageModelV4Prompt;
  /** Its messages as they were then (the same objects). */
  prompt: LanguageModelV4Prompt;
  /** A deep copy taken then. */
  copy: unknown;
}

/** An outer middleware that records the prompt the pagewise middleware receives. */
function recorder(log: string[] = []): { middleware: LanguageModelV4Middleware; calls: Recorded[] } {
  const calls: Recorded[] = [];
  return {
    calls,
    middleware: {
      specificationVersion: 'v4',
      async transformParams({ params }) {
        log.push('recorder');
        calls.push({ array: params.prompt, prompt: [...params.prompt], copy: snapshot(params.prompt) });
        return params;
      },
    },
  };
}

/** A memory whose onMessageInbound inputs and answers are kept (the real engine answers). */
function spied(memory: Memory): { memory: Memory; inputs: InboundInput[]; outputs: AssembledContext[] } {
  const inputs: InboundInput[] = [];
  const outputs: AssembledContext[] = [];
  const proxy = new Proxy(memory, {
    get(target, key) {
      if (key === 'onMessageInbound') {
        return async (input: InboundInput) => {
          inputs.push(input);
          const ctx = await target.onMessageInbound(input);
          outputs.push(ctx);
          return ctx;
        };
      }
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { memory: proxy, inputs, outputs };
}

const stream = (parts: LanguageModelV4StreamPart[]) => new ReadableStream<LanguageModelV4StreamPart>({
  start(controller) {
    for (const p of parts) controller.enqueue(p);
    controller.close();
  },
});

/** The same reply as generated content and as stream parts. */
interface Reply { content: LanguageModelV4Content[]; parts: LanguageModelV4StreamPart[] }
const textReply = (text: string): Reply => ({
  content: [{ type: 'text', text }],
  parts: [{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: text }, { type: 'text-end', id: 't' }, { type: 'finish', finishReason: stop, usage }],
});

/** A mock model answering each call with the next reply (the last one repeats), generated or streamed. */
function mockModel(replies: Reply[], provider = 'mock-provider'): MockLanguageModelV4 {
  let n = 0;
  const next = () => replies[Math.min(n++, replies.length - 1)]!;
  const finish = (r: Reply) => (r.content.some((c) => c.type === 'tool-call') ? { unified: 'tool-calls' as const, raw: 'tool_use' } : stop);
  return new MockLanguageModelV4({
    provider,
    // URLs are passed on, not downloaded.
    supportedUrls: { '*/*': [/^https:\/\//] },
    doGenerate: async () => {
      const r = next();
      return { content: r.content, finishReason: finish(r), usage, warnings: [] };
    },
    doStream: async () => ({ stream: stream(next().parts) }),
  });
}

const received = (model: MockLanguageModelV4): LanguageModelV4CallOptions[] => [...model.doGenerateCalls, ...model.doStreamCalls];

/** Runs one call to completion (a stream read to its end; an error part fails the test). */
async function call(mode: Mode, options: Parameters<typeof generateText>[0]): Promise<string> {
  if (mode === 'generateText') return (await generateText(options)).text;
  const result = streamText(options as Parameters<typeof streamText>[0]);
  for await (const part of result.fullStream) if (part.type === 'error') throw part.error;
  return result.text;
}

/** The wrapped model: the recorder outside, pagewise inside. */
function setup(memory: Memory, model: MockLanguageModelV4, conversationId: string, extra: Partial<Parameters<typeof memoryMiddleware>[0]> = {}) {
  const rec = recorder();
  const wrapped = wrapLanguageModel({ model, middleware: [rec.middleware, memoryMiddleware({ memory, conversationId, ...extra })] });
  return { wrapped, calls: rec.calls };
}

const leadingSystem = (prompt: LanguageModelV4Prompt) => {
  const i = prompt.findIndex((m) => m.role !== 'system');
  return i < 0 ? prompt.length : i;
};

/**
 * Checks that `sent` is `recorded` with only the documented changes, and says what they were: the memory system
 * message (right after the leading system messages), the re-attached images (just before the new message), and how
 * many older messages were trimmed (a prefix of the history; what is kept is a suffix, each the caller's own object,
 * unchanged since the recorder saw it).
 */
function passThrough(rec: Recorded, sent: LanguageModelV4Prompt) {
  const recorded = rec.prompt;
  // pagewise changed neither the array it was given nor any message in it.
  expect(rec.array).toHaveLength(recorded.length);
  rec.array.forEach((m, i) => expect(m).toBe(recorded[i]));
  expect(snapshot(recorded)).toStrictEqual(rec.copy);
  const lead = leadingSystem(recorded);
  const last = recorded.map((m) => m.role).lastIndexOf('user');
  const added = sent.filter((m) => !recorded.includes(m));
  const kept = sent.filter((m) => recorded.includes(m));
  const memoryAt = sent.findIndex((m) => added.includes(m) && m.role === 'system');
  const imagesAt = sent.findIndex((m) => added.includes(m) && m.role === 'user');
  expect(added).toHaveLength((memoryAt >= 0 ? 1 : 0) + (imagesAt >= 0 ? 1 : 0));
  if (memoryAt >= 0) expect(memoryAt).toBe(lead);
  if (imagesAt >= 0) expect(sent[imagesAt + 1]).toBe(recorded[last]);
  const firstKept = kept.length > lead ? recorded.indexOf(kept[lead]!) : recorded.length;
  const expected = [...recorded.slice(0, lead), ...recorded.slice(firstKept)];
  // received minus memory === recorded.slice(0, lead) + recorded.slice(firstKept): the caller's objects, in order.
  expect(kept).toHaveLength(expected.length);
  kept.forEach((m, i) => expect(m).toBe(expected[i]));
  const copies = rec.copy as unknown[];
  expect(snapshot(kept)).toStrictEqual([...copies.slice(0, lead), ...copies.slice(firstKept)]);
  expect(firstKept).toBeLessThanOrEqual(last);
  return {
    memory: memoryAt >= 0 ? (sent[memoryAt] as { role: 'system'; content: string }).content : null,
    images: imagesAt >= 0 ? sent[imagesAt]! : null,
    trimmed: firstKept - lead,
  };
}

/**
 * The history sent is the one the engine kept: prompt message j (before the new one) is sent iff every pagewise message
 * it became — one per message, one per tool result — is a `{ kind: 'history' }` source of the engine's answer.
 */
function keptAsEngineSaid(rec: Recorded, sent: LanguageModelV4Prompt, ctx: AssembledContext) {
  const recorded = rec.prompt;
  const last = recorded.map((m) => m.role).lastIndexOf('user');
  const kept = new Set(ctx.sources.flatMap((s) => (s.kind === 'history' ? [s.index] : [])));
  let next = 0;
  const expected = recorded.slice(0, last).map((m) => {
    const n = m.role === 'tool' ? m.content.filter((p) => p.type === 'tool-result').length : 1;
    next += n;
    return Array.from({ length: n }, (_, i) => next - n + i).every((i) => kept.has(i));
  });
  expect(recorded.slice(0, last).map((m) => sent.includes(m))).toEqual(expected);
  // Some history was left out, and some kept besides the system prompt.
  expect(expected.filter((k) => !k).length).toBeGreaterThan(0);
}

/** An earlier exchange of the conversation, so that memory has something to recall. */
async function seed(memory: Memory, conversationId: string) {
  await memory.onTurnComplete({ conversationId, messages: [
    { role: 'user', content: 'Note for later: the staging database password rotates every Friday at noon.' },
    { role: 'assistant', content: 'Noted: the staging database password rotates every Friday at noon.' },
  ] });
}

/** One request of the corpus: the app's instructions (its system prompt) and messages, and the provider it goes to. */
interface Case {
  name: string;
  instructions?: Parameters<typeof generateText>[0]['instructions'];
  messages: () => ModelMessage[];
  provider?: string;
  /** What else to check of the request sent and of what pagewise read, with nothing to add. */
  check?: (sent: LanguageModelV4Prompt, input: InboundInput, memory: Memory, conversationId: string) => Promise<void>;
}

// Every new message asks about the seeded exchange, so that memory has something to add when the target is tight.
const QUESTION = 'Also, when does the staging database password rotate?';

const vision: Case = {
  name: 'vision: images as bytes, base64 and URL, cache control on parts and messages',
  instructions: 'You are a careful assistant.',
  messages: () => [
    { role: 'user', content: [{ type: 'text', text: 'Here is the first photo.' }, { type: 'file', data: png(), mediaType: 'image/png', providerOptions: cache }], providerOptions: cache },
    { role: 'assistant', content: 'A red square.' },
    { role: 'user', content: [{ type: 'text', text: 'And this one, as base64.' }, { type: 'file', data: PNG_B64, mediaType: 'image/png' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'The same square.', providerOptions: future }] },
    {
      role: 'user',
      content: [{ type: 'text', text: `And the one on the web? ${QUESTION}` }, { type: 'file', data: new URL('https://example.com/cat.png'), mediaType: 'image/png', providerOptions: cache }],
      providerOptions: future,
    },
  ],
  async check(sent, input) {
    // The bytes reached the model as the caller's Uint8Array, the base64 as its string, the URL as a URL.
    const files = sent.flatMap((m) => (m.role === 'user' ? m.content.filter((p) => p.type === 'file') : []));
    expect(files.map((f) => f.data.type)).toEqual(['data', 'data', 'url']);
    expect(files[0]!.data.type === 'data' && files[0]!.data.data instanceof Uint8Array).toBe(true);
    expect(files[0]!.data).toStrictEqual({ type: 'data', data: png() });
    expect(files[0]!.providerOptions).toEqual(cache);
    expect(files[1]!.data).toStrictEqual({ type: 'data', data: PNG_B64 });
    expect(files[2]!.data.type === 'url' && files[2]!.data.url.href).toBe('https://example.com/cat.png');
    expect(sent.at(-1)!.providerOptions).toEqual(future);
    // What pagewise read: images with their bytes, the URL as a URL.
    expect(input.history![1]).toEqual({ role: 'user', content: [{ type: 'text', text: 'Here is the first photo.' }, { type: 'image', mediaType: 'image/png', data: png() }] });
    expect(input.history![3]).toEqual({ role: 'user', content: [{ type: 'text', text: 'And this one, as base64.' }, { type: 'image', mediaType: 'image/png', data: PNG_B64 }] });
    expect(input.message.content).toEqual([{ type: 'text', text: `And the one on the web? ${QUESTION}` }, { type: 'image', mediaType: 'image/png', url: 'https://example.com/cat.png' }]);
  },
};

const documents: Case = {
  name: 'a PDF with its filename, and audio',
  messages: () => [
    { role: 'user', content: [{ type: 'text', text: 'Summarize this contract.' }, { type: 'file', data: pdf(), mediaType: 'application/pdf', filename: 'contract.pdf', providerOptions: cache }] },
    { role: 'assistant', content: 'It is a one-page contract.' },
    { role: 'user', content: [{ type: 'text', text: `Transcribe this voice memo. ${QUESTION}` }, { type: 'file', data: wav(), mediaType: 'audio/wav', filename: 'memo.wav' }] },
  ],
  async check(sent, input, memory, conversationId) {
    expect(input.mediaTokens).toBeUndefined();
    expect(input.history![0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'Summarize this contract.' }, { type: 'file', name: 'contract.pdf', mediaType: 'application/pdf', data: pdf() }] });
    expect(input.message).toEqual({ role: 'user', content: [{ type: 'text', text: `Transcribe this voice memo. ${QUESTION}` }, { type: 'audio', name: 'memo.wav', mediaType: 'audio/wav', data: wav() }] });
    // Stored: the audio by its content hash, its bytes once.
    const question = (await memory.turns(conversationId)).at(-2)!;
    expect(question.content).toEqual([
      { type: 'text', text: `Transcribe this voice memo. ${QUESTION}` },
      expect.objectContaining({ type: 'audio', attachment: expect.stringMatching(/^[0-9a-f]{64}$/), mediaType: 'audio/wav', name: 'memo.wav', size: wav().length }),
    ]);
    const id = (question.content as { attachment?: string }[])[1]!.attachment!;
    expect((await memory.attachment(conversationId, id)).data).toBe(base64(wav()));
    expect(sent.at(-1)!.content).toContainEqual({ type: 'file', data: { type: 'data', data: wav() }, mediaType: 'audio/wav', filename: 'memo.wav' });
  },
};

const toolLoop: Case = {
  name: 'a tool loop with signed and redacted reasoning, json tool results, unknown provider options',
  provider: 'anthropic.messages',
  instructions: [{ role: 'system', content: 'You check the weather.', providerOptions: cache }],
  messages: () => [
    { role: 'user', content: 'What is the weather in Lisbon and Porto?' },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'I should look both cities up.', providerOptions: { anthropic: { signature: 'sig-abc' } } },
        { type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: 'RW5jcnlwdGVk' } } },
        { type: 'tool-call', toolCallId: 'call_1', toolName: 'weather', input: { city: 'Lisbon' } },
        { type: 'tool-call', toolCallId: 'call_2', toolName: 'weather', input: { city: 'Porto' }, providerOptions: future },
      ],
    },
    {
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'call_1', toolName: 'weather', output: { type: 'json', value: { temp: 21, sky: 'clear' } } },
        { type: 'tool-result', toolCallId: 'call_2', toolName: 'weather', output: { type: 'json', value: { temp: 18, sky: 'cloudy' } }, providerOptions: future },
      ],
    },
    {
      role: 'assistant',
      content: [{ type: 'reasoning', text: 'Both are known now.', providerOptions: { anthropic: { signature: 'sig-def' }, ...future } }, { type: 'text', text: 'Lisbon: 21°C and clear. Porto: 18°C and cloudy.' }],
    },
    { role: 'user', content: QUESTION },
  ],
  async check(sent, input) {
    expect(sent[0]).toEqual({ role: 'system', content: 'You check the weather.', providerOptions: cache });
    const assistant = sent.find((m) => m.role === 'assistant')!;
    expect(assistant.content.slice(0, 2)).toStrictEqual([
      { type: 'reasoning', text: 'I should look both cities up.', providerOptions: { anthropic: { signature: 'sig-abc' } } },
      { type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: 'RW5jcnlwdGVk' } } },
    ]);
    // What pagewise read: reasoning as reasoning, tool calls as tool calls, one tool message per result.
    expect(input.mediaTokens).toBe('anthropic');
    expect(input.history).toEqual([
      { role: 'system', content: 'You check the weather.' },
      { role: 'user', content: 'What is the weather in Lisbon and Porto?' },
      {
        role: 'assistant',
        content: [{ type: 'reasoning', text: 'I should look both cities up.', signature: 'sig-abc' }, { type: 'reasoning', text: '', encrypted: 'RW5jcnlwdGVk' }],
        toolCalls: [
          { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Lisbon"}' } },
          { id: 'call_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Porto"}' } },
        ],
      },
      { role: 'tool', toolCallId: 'call_1', content: '{"temp":21,"sky":"clear"}' },
      { role: 'tool', toolCallId: 'call_2', content: '{"temp":18,"sky":"cloudy"}' },
      { role: 'assistant', content: [{ type: 'reasoning', text: 'Both are known now.', signature: 'sig-def' }, { type: 'text', text: 'Lisbon: 21°C and clear. Porto: 18°C and cloudy.' }] },
    ]);
  },
};

describe('pagewise/ai-sdk passes the prompt through: only memory\'s documented changes', () => {
  it('wrapLanguageModel({ middleware: [recorder, pagewise] }) runs the recorder first: it sees the prompt before pagewise', async () => {
    const memory = await createMemory();
    try {
      await seed(memory, 'order');
      const log: string[] = [];
      const rec = recorder(log);
      const inner = memoryMiddleware({ memory, conversationId: 'order' });
      const logged: LanguageModelV4Middleware = { ...inner, transformParams: (o) => { log.push('pagewise'); return inner.transformParams!(o); } };
      const model = mockModel([textReply('Fridays at noon.')]);
      await generateText({ model: wrapLanguageModel({ model, middleware: [rec.middleware, logged] }), prompt: 'When does the staging database password rotate?' });
      expect(log).toEqual(['recorder', 'pagewise']);
      // The recorder saw no memory; the model did.
      expect(JSON.stringify(rec.calls[0]!.prompt)).not.toContain('every Friday at noon');
      expect(JSON.stringify(model.doGenerateCalls[0]!.prompt)).toContain('every Friday at noon');
    } finally {
      await memory.close();
    }
  });

  describe.each(MODES)('%s', (mode) => {
    it.each([vision, documents, toolLoop])('$name: with nothing to add, the model receives the prompt as recorded', async (c) => {
      const memory = await createMemory();
      try {
        await seed(memory, 'corpus');
        const spy = spied(memory);
        const model = mockModel([textReply('It rotates every Friday at noon.')], c.provider);
        const { wrapped, calls } = setup(spy.memory, model, 'corpus');
        await call(mode, { model: wrapped, ...(c.instructions ? { instructions: c.instructions } : {}), messages: c.messages() });
        const sent = received(model)[0]!.prompt;
        // The history fits: memory adds nothing and trims nothing (the conversation is the caller's).
        expect(passThrough(calls[0]!, sent)).toEqual({ memory: null, images: null, trimmed: 0 });
        expect(sent).toHaveLength(calls[0]!.prompt.length);
        sent.forEach((m, i) => expect(m).toBe(calls[0]!.prompt[i]));
        expect(spy.inputs[0]!.rewriteHistory).toBe(false);
        await c.check?.(sent, spy.inputs[0]!, memory, 'corpus');
      } finally {
        await memory.close();
      }
    });

    it.each([vision, documents, toolLoop])('$name: with memory to add (a tight target), one system message is inserted and older history trimmed whole', async (c) => {
      const memory = await createMemory({ targetTokens: 100 });
      try {
        await seed(memory, 'tight');
        const spy = spied(memory);
        const model = mockModel([textReply('It rotates every Friday at noon.')], c.provider);
        const { wrapped, calls } = setup(spy.memory, model, 'tight');
        await call(mode, { model: wrapped, ...(c.instructions ? { instructions: c.instructions } : {}), messages: c.messages() });
        const sent = received(model)[0]!.prompt;
        const { memory: added, trimmed } = passThrough(calls[0]!, sent);
        expect(added).toContain('every Friday at noon');
        expect(trimmed).toBeGreaterThan(0);
        keptAsEngineSaid(calls[0]!, sent, spy.outputs[0]!);
      } finally {
        await memory.close();
      }
    });

    it('a long history at a small context window: older messages are trimmed whole, the kept ones are a suffix, unchanged', async () => {
      const memory = await createMemory({ contextWindow: 2048 } satisfies MemoryOptions);
      try {
        await seed(memory, 'long');
        const messages: ModelMessage[] = [];
        for (let i = 0; i < 30; i++) {
          messages.push({ role: 'user', content: [{ type: 'text', text: `Question ${i}: tell me about the ${i}th milestone of the roadmap, its owner, its dates and the risks we listed for it in the planning review.` }, ...(i % 7 === 0 ? [{ type: 'file' as const, data: png(), mediaType: 'image/png' }] : [])] });
          messages.push({ role: 'assistant', content: [
            { type: 'reasoning', text: `Milestone ${i} was discussed earlier.`, providerOptions: { anthropic: { signature: `sig-${i}` } } },
            { type: 'text', text: `Milestone ${i} is owned by team ${i % 4}; it runs for ${i + 2} weeks and its main risk is the vendor delivery slipping again.`, providerOptions: future },
            ...(i % 5 === 0 ? [{ type: 'tool-call' as const, toolCallId: `call_${i}`, toolName: 'roadmap', input: { milestone: i } }] : []),
          ] });
          if (i % 5 === 0) {
            messages.push({ role: 'tool', content: [
              { type: 'tool-result', toolCallId: `call_${i}`, toolName: 'roadmap', output: { type: 'json', value: { milestone: i, status: 'on track' } } },
            ] });
          }
        }
        messages.push({ role: 'user', content: `Which milestone is the riskiest? ${QUESTION}` });
        const spy = spied(memory);
        const model = mockModel([textReply('Milestone 29.')]);
        const { wrapped, calls } = setup(spy.memory, model, 'long');
        await call(mode, { model: wrapped, instructions: 'You are terse.', messages });
        const sent = received(model)[0]!.prompt;
        const { trimmed, memory: added } = passThrough(calls[0]!, sent);
        expect(trimmed).toBeGreaterThan(0);
        expect(added).toContain('every Friday at noon');
        keptAsEngineSaid(calls[0]!, sent, spy.outputs[0]!);
        expect(sent.filter((m) => m.role !== 'system').length).toBeGreaterThan(1);
        expect(sent[0]).toEqual({ role: 'system', content: 'You are terse.' });
      } finally {
        await memory.close();
      }
    });
  });
});

describe('pagewise/ai-sdk follows the engine\'s sources exactly', () => {
  it('a tool message goes only with all its results, a message pagewise cannot read goes with the next one, memory is one system message', async () => {
    const inputs: InboundInput[] = [];
    const stored: ChatMessage[] = [];
    // Any Memory: this one answers with sources that keep one of two tool results (which the engine would not do).
    const stub = {
      async onMessageInbound(input: InboundInput): Promise<AssembledContext> {
        inputs.push(input);
        const h = input.history!;
        return {
          conversationId: input.conversationId, prependText: '<context-topics>deploys</context-topics>', recallText: 'RECALLED',
          messages: [h[0]!, h[4]!, h[5]!, { role: 'system', content: 'RECALLED' }, input.message],
          sources: [{ kind: 'history', index: 0 }, { kind: 'history', index: 4 }, { kind: 'history', index: 5 }, { kind: 'memory' }, { kind: 'message' }],
          budget: {} as AssembledContext['budget'], manifest: [], dropped: [], matchedTags: [], broad: false, temporal: false, head: null,
        };
      },
      async onTurnComplete(input: { messages: ChatMessage[] }) {
        stored.push(...input.messages);
      },
    } as unknown as Memory;
    const model = mockModel([textReply('ok')]);
    const wrapped = wrapLanguageModel({ model, middleware: memoryMiddleware({ memory: stub, conversationId: 'stub' }) });
    const prompt: LanguageModelV4Prompt = [
      { role: 'system', content: 'S' },
      { role: 'user', content: [{ type: 'text', text: 'old question' }] },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'f', input: {} }, { type: 'tool-call', toolCallId: 'c2', toolName: 'f', input: {} }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'f', output: { type: 'text', value: 'one' } }, { type: 'tool-result', toolCallId: 'c2', toolName: 'f', output: { type: 'text', value: 'two' } }] },
      { role: 'user', content: [{ type: 'file', mediaType: 'application/pdf', data: { type: 'reference', reference: { openai: 'file-abc' } } }] },
      { role: 'assistant', content: [{ type: 'text', text: 'answer' }] },
      { role: 'user', content: [{ type: 'text', text: 'new' }] },
    ];
    await wrapped.doGenerate({ prompt });
    // The file by reference is nothing pagewise can read: the history it got has 6 messages, not 7.
    expect(inputs[0]!.history!.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'assistant']);
    const sent = model.doGenerateCalls[0]!.prompt;
    expect(sent).toHaveLength(5);
    expect(sent[0]).toBe(prompt[0]);
    expect(sent[1]).toEqual({ role: 'system', content: '<context-topics>deploys</context-topics>\n\nRECALLED' });
    expect(sent.slice(2)).toEqual(prompt.slice(4));
    sent.slice(2).forEach((m, i) => expect(m).toBe(prompt[4 + i]));
    expect(stored).toEqual([{ role: 'user', content: 'new' }, { role: 'assistant', content: 'ok' }]);
  });
});

describe('pagewise/ai-sdk stores the exchange: parts as parts, reasoning as reasoning', () => {
  const reasoningReply: Reply = {
    content: [
      { type: 'reasoning', text: 'The user wants the square\'s colour.', providerMetadata: { anthropic: { signature: 'sig-reply' } } },
      { type: 'reasoning', text: '', providerMetadata: { anthropic: { redactedData: 'UmVkYWN0ZWQ=' } } },
      { type: 'text', text: 'It is red.' },
      { type: 'file', mediaType: 'image/png', data: { type: 'data', data: PNG_B64 } },
    ],
    parts: [
      { type: 'reasoning-start', id: 'r1' },
      { type: 'reasoning-delta', id: 'r1', delta: 'The user wants ' },
      { type: 'reasoning-delta', id: 'r1', delta: 'the square\'s colour.' },
      { type: 'reasoning-end', id: 'r1', providerMetadata: { anthropic: { signature: 'sig-reply' } } },
      { type: 'reasoning-start', id: 'r2', providerMetadata: { anthropic: { redactedData: 'UmVkYWN0ZWQ=' } } },
      { type: 'reasoning-end', id: 'r2' },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'It is ' },
      { type: 'text-delta', id: 't', delta: 'red.' },
      { type: 'text-end', id: 't' },
      { type: 'file', mediaType: 'image/png', data: { type: 'data', data: PNG_B64 } },
      { type: 'finish', finishReason: stop, usage },
    ],
  };

  describe.each(MODES)('%s', (mode) => {
    it('the user\'s image is stored once as an attachment; the reply\'s reasoning as reasoning parts, its text without them', async () => {
      const memory = await createMemory();
      try {
        const model = mockModel([reasoningReply]);
        const { wrapped } = setup(memory, model, 'store');
        const text = await call(mode, { model: wrapped, messages: [{ role: 'user', content: [{ type: 'text', text: 'What colour is this square?' }, { type: 'file', data: png(), mediaType: 'image/png' }] }] });
        expect(text).toBe('It is red.');
        const [question, reply] = await memory.turns('store') as [StoredTurn, StoredTurn];
        expect(question.content).toEqual([
          { type: 'text', text: 'What colour is this square?' },
          expect.objectContaining({ type: 'image', attachment: expect.stringMatching(/^[0-9a-f]{64}$/), mediaType: 'image/png', width: 1, height: 1 }),
        ]);
        const id = (question.content as { attachment?: string }[])[1]!.attachment!;
        expect((await memory.attachment('store', id)).data).toBe(PNG_B64);
        expect(reply.content).toEqual([
          { type: 'reasoning', text: 'The user wants the square\'s colour.', signature: 'sig-reply' },
          { type: 'reasoning', text: '', encrypted: 'UmVkYWN0ZWQ=' },
          { type: 'text', text: 'It is red.' },
          // The image the model made: stored by the same hash as the user's (the same bytes).
          expect.objectContaining({ type: 'image', attachment: id, mediaType: 'image/png' }),
        ]);
        expect(reply.text).not.toContain('The user wants');
        expect(reply.text.startsWith('It is red.')).toBe(true);
      } finally {
        await memory.close();
      }
    });

    it('a second call that sends only its new message gets the stored image back, with the same bytes, as a file part', async () => {
      const memory = await createMemory();
      try {
        const model = mockModel([textReply('A red square.'), textReply('It was red.')]);
        const { wrapped, calls } = setup(memory, model, 'again');
        await call(mode, { model: wrapped, messages: [{ role: 'user', content: [{ type: 'text', text: 'Look at this square.' }, { type: 'file', data: png(), mediaType: 'image/png' }] }] });
        await call(mode, { model: wrapped, instructions: 'You are terse.', prompt: 'What colour was the square I showed you?' });
        const sent = received(model)[1]!.prompt;
        const recorded = calls[1]!.prompt;
        // The caller's own system message and new message; the history from memory between them.
        expect(sent[0]).toBe(recorded[0]);
        expect(sent.at(-1)).toBe(recorded.at(-1));
        const stored = sent.find((m) => m.role === 'user' && m !== recorded.at(-1))!;
        expect(stored.content).toEqual([{ type: 'text', text: 'Look at this square.' }, { type: 'file', mediaType: 'image/png', data: { type: 'data', data: PNG_B64 } }]);
        expect(sent.find((m) => m.role === 'assistant')).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'A red square.' }] });
        expect(await memory.turns('again')).toHaveLength(4);
      } finally {
        await memory.close();
      }
    });

    it('a live tool loop: each step passes through, later steps add no copy of what the first stored, the loop is stored once', async () => {
      const memory = await createMemory();
      try {
        const toolStep: Reply = {
          content: [
            { type: 'reasoning', text: 'Look the city up.', providerMetadata: { anthropic: { signature: 'sig-step' } } },
            { type: 'tool-call', toolCallId: 'call_9', toolName: 'weather', input: '{"city":"Lisbon"}' },
          ],
          parts: [
            { type: 'reasoning-start', id: 'r' },
            { type: 'reasoning-delta', id: 'r', delta: 'Look the city up.', providerMetadata: { anthropic: { signature: 'sig-step' } } },
            { type: 'reasoning-end', id: 'r' },
            { type: 'tool-call', toolCallId: 'call_9', toolName: 'weather', input: '{"city":"Lisbon"}' },
            { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage },
          ],
        };
        const model = mockModel([toolStep, textReply('It is 21°C in Lisbon.')], 'anthropic.messages');
        const { wrapped, calls } = setup(memory, model, 'loop');
        const weather = tool({ inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }), execute: async ({ city }) => ({ city, temp: 21 }) });
        const text = await call(mode, { model: wrapped, prompt: 'How warm is Lisbon?', tools: { weather }, stopWhen: stepCountIs(3) });
        expect(text).toBe('It is 21°C in Lisbon.');
        const steps = received(model);
        expect(steps).toHaveLength(2);
        // Step 2 carries the step-1 assistant message (its reasoning signed) and the tool result after the new message:
        // passed on as they are, and memory's stored copy of them not added again.
        const second = steps[1]!.prompt;
        passThrough(calls[1]!, second);
        expect(second.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
        expect(second[1]!.content[0]).toEqual({ type: 'reasoning', text: 'Look the city up.', providerOptions: { anthropic: { signature: 'sig-step' } } });
        const turns = await memory.turns('loop');
        expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
        expect(turns[1]).toMatchObject({
          content: [{ type: 'reasoning', text: 'Look the city up.', signature: 'sig-step' }],
          toolCalls: [{ id: 'call_9', type: 'function', function: { name: 'weather', arguments: '{"city":"Lisbon"}' } }],
        });
        expect(turns[2]).toMatchObject({ toolCallId: 'call_9', content: '{"city":"Lisbon","temp":21}' });
      } finally {
        await memory.close();
      }
    });
  });

  it('recallAttachments: a recalled turn\'s image comes back as a user message of file parts just before the new message', async () => {
    // A tight target: the caller's history does not fit, so memory recalls (a history that fits is the whole conversation).
    const memory = await createMemory({ targetTokens: 50 });
    try {
      await memory.onTurnComplete({ conversationId: 'recall', messages: [
        { role: 'user', content: [{ type: 'text', text: 'Here is the whiteboard photo from the launch planning meeting.' }, { type: 'image', data: PNG_B64, mediaType: 'image/png' }] } satisfies ChatMessage,
        { role: 'assistant', content: 'Got the whiteboard photo from the launch planning meeting.' },
      ] });
      const model = mockModel([textReply('It listed the launch steps.')]);
      const { wrapped, calls } = setup(memory, model, 'recall', { recallAttachments: true });
      await generateText({ model: wrapped, messages: [
        { role: 'user', content: 'Hello again. Today I want to go through the open questions of the release checklist, one by one, slowly.' },
        { role: 'assistant', content: 'Hello! Sure, let us go through the open questions of the release checklist one by one.' },
        { role: 'user', content: 'What did the whiteboard photo from the launch planning meeting show?' },
      ] });
      const sent = model.doGenerateCalls[0]!.prompt;
      const { memory: added, images } = passThrough(calls[0]!, sent);
      expect(added).toContain('whiteboard');
      expect(images).not.toBeNull();
      expect(images!.content).toContainEqual({ type: 'file', mediaType: 'image/png', data: { type: 'data', data: PNG_B64 } });
    } finally {
      await memory.close();
    }
  });
});
