// Wrap without changing: every request of a corpus of real-shaped ones (vision, PDF, audio, tool loops with thinking
// blocks and their signatures, prompt caching, fields no API has yet) goes through memoryProxy to a fake upstream,
// and what the upstream received is diffed against what the caller sent. The only differences allowed are the
// documented ones: memory joined to the system prompt (after the app's own text), older messages trimmed whole from
// the front, and recalled images sent again just before the new message (recallAttachments is not used by the proxy,
// so that never happens here). Streamed and not, both protocols.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryProxy, proxyConversationKey } from '../../../src/surfaces/proxy.js';
import type { Memory } from '../../../src/index.js';
import { createMemory } from '../../support/helpers.js';
import { startUpstream, type Upstream } from '../../support/upstream.js';
import { b64, pdf, png, wav } from '../../fixtures/media.js';

type Json = Record<string, unknown>;
let up: Upstream;
beforeAll(async () => { up = await startUpstream(); });
afterAll(() => up.close());

const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => { pending.push(p); } };
const settled = async () => { await Promise.all(pending.splice(0)); };

const sse = (events: unknown[]) => `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`;
const anthropicSse = (events: Json[]) => events.map((e) => `event: ${String(e.type)}\ndata: ${JSON.stringify(e)}\n\n`).join('');
const openaiReply = (stream: boolean) => (stream
  ? { type: 'text/event-stream', body: sse([{ choices: [{ index: 0, delta: { role: 'assistant', content: 'Noted.' } }] }]) }
  : { body: JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'Noted.' }, finish_reason: 'stop' }] }) });
const anthropicReply = (stream: boolean) => (stream
  ? { type: 'text/event-stream', body: anthropicSse([
    { type: 'message_start', message: { id: 'm', role: 'assistant', content: [] } },
    { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'The user wants a note.' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig-streamed' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Noted.' } },
    { type: 'content_block_stop', index: 1 },
    { type: 'message_stop' },
  ]) }
  : { body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', content: [{ type: 'thinking', thinking: 'The user wants a note.', signature: 'sig-plain' }, { type: 'text', text: 'Noted.' }] }) });

const PNG = png(800, 600, 1);
const PNG2 = png(64, 64, 2);
const PDF = pdf(3);
const WAV = wav(1500);

/** The memory the proxy joined to the system prompt: what a received system text has after the caller's. */
function memoryPart(callerText: unknown, received: unknown): { memory: string; restored: unknown } {
  if (typeof received === 'string') {
    if (typeof callerText !== 'string' || callerText === '') return { memory: received, restored: undefined };
    expect(received.startsWith(`${callerText}\n\n`) || received === callerText).toBe(true);
    return { memory: received.slice(callerText.length + 2), restored: callerText };
  }
  if (Array.isArray(received) && Array.isArray(callerText) && received.length === callerText.length + 1) {
    const last = received[received.length - 1] as Json;
    expect(last.type).toBe('text');
    return { memory: String(last.text), restored: received.slice(0, -1) };
  }
  return { memory: '', restored: received };
}

/** Whether the request has history before its last user message (a tool loop's round starts at that message). */
function hasHistory(kind: 'openai' | 'anthropic', messages: Json[]): boolean {
  const isUser = (m: Json) => m.role === 'user' && !(kind === 'anthropic' && Array.isArray(m.content) && (m.content as Json[]).every((b) => b.type === 'tool_result'));
  const last = messages.map(isUser).lastIndexOf(true);
  return messages.slice(0, last).some((m) => m.role !== 'system' && m.role !== 'developer');
}

/**
 * Checks the received request is the caller's less the documented changes; returns how many of the caller's messages
 * were trimmed, the memory joined to the system prompt, and the stored turns inserted (a request with nothing before
 * its new message but a system prompt gets the conversation from memory).
 */
function diff(kind: 'openai' | 'anthropic', sent: Json, received: Json): { trimmed: number; memory: string; inserted: Json[] } {
  const callerMessages = sent.messages as Json[];
  let messages = [...(received.messages as Json[])];
  let memory = '';
  const rest = { ...received };
  if (kind === 'openai') {
    const first = callerMessages[0];
    const isSystem = (m: Json | undefined) => m?.role === 'system' || m?.role === 'developer';
    if (isSystem(first)) {
      const m = memoryPart(first!.content, messages[0]!.content);
      memory = m.memory;
      messages[0] = { ...messages[0], content: m.restored };
    } else if (messages[0]?.role === 'system' && !isSystem(first)) {
      memory = String(messages[0].content);
      messages = messages.slice(1);
    }
  } else {
    const m = memoryPart(sent.system, received.system);
    memory = m.memory;
    if (m.restored === undefined) delete rest.system;
    else rest.system = m.restored;
  }
  if (memory !== '') expect(memory).toMatch(/^<(prior-conversation|context-topics)>/);
  // The rest of the body, key for key.
  expect({ ...rest, messages: undefined }).toStrictEqual({ ...sent, messages: undefined });
  const prefix = kind === 'openai' ? callerMessages.findIndex((m) => m.role !== 'system' && m.role !== 'developer') : 0;
  const history = hasHistory(kind, callerMessages);
  // With history, a suffix of the conversation; without, the stored turns memory chose, then the new message's round.
  const inserted = history ? [] : messages.slice(prefix, messages.length - (callerMessages.length - prefix));
  const trimmed = callerMessages.length - (messages.length - inserted.length);
  expect(trimmed).toBeGreaterThanOrEqual(0);
  // Every message of the caller's that goes on, as the caller wrote it, byte for byte once serialized.
  expect(JSON.stringify(messages)).toBe(JSON.stringify([...callerMessages.slice(0, prefix), ...inserted, ...callerMessages.slice(prefix + trimmed)]));
  return { trimmed, memory, inserted };
}

async function through(memory: Memory, kind: 'openai' | 'anthropic', body: Json, conversation: string): Promise<{ received: Json; status: number }> {
  const stream = body.stream === true;
  up.next.push(kind === 'openai' ? openaiReply(stream) : anthropicReply(stream));
  const proxy = memoryProxy({
    memory, authenticate: (r) => (r.headers.get('authorization') === 'Bearer client' ? 'u1' : null),
    openai: { baseUrl: `${up.base}/v1`, apiKey: 'sk' }, anthropic: { baseUrl: up.base, apiKey: 'sk' },
  });
  const before = up.seen.length;
  const res = await proxy(new Request(`http://proxy.test${kind === 'openai' ? '/v1/chat/completions' : '/v1/messages'}`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer client', 'x-pagewise-conversation': conversation }, body: JSON.stringify(body),
  }), ctx);
  await res.text();
  await settled();
  expect(up.seen.length, await Promise.resolve(`the upstream got the request (status ${res.status})`)).toBe(before + 1);
  return { received: up.seen[before]!.body, status: res.status };
}

// Real-shaped requests, as the providers document them.
const openaiCorpus: [string, Json][] = [
  ['vision: a data URL and a remote image, detail', { model: 'gpt-4.1', messages: [
    { role: 'system', content: 'You describe images.' },
    { role: 'user', content: [{ type: 'text', text: 'What is in these?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${b64(PNG)}`, detail: 'high' } }, { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg?sig=abc', detail: 'low' } }] },
  ] }],
  ['a PDF as file_data, and a file uploaded to the provider', { model: 'gpt-4.1', messages: [
    { role: 'developer', content: [{ type: 'text', text: 'Summarize documents.' }] },
    { role: 'user', content: [{ type: 'file', file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${b64(PDF)}` } }, { type: 'file', file: { file_id: 'file-abc123' } }, { type: 'text', text: 'Summarize both.' }] },
  ] }],
  ['audio input', { model: 'gpt-4o-audio-preview', modalities: ['text'], messages: [
    { role: 'user', content: [{ type: 'text', text: 'Transcribe this.' }, { type: 'input_audio', input_audio: { data: b64(WAV), format: 'wav' } }] },
  ] }],
  ['a tool loop with parallel calls and reasoning_content', { model: 'deepseek-reasoner', tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }], messages: [
    { role: 'user', content: 'Weather in Oslo and Lisbon?' },
    { role: 'assistant', content: null, reasoning_content: 'Two cities: call the tool twice.', tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
      { id: 'call_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Lisbon"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp":-3}' },
    { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '{"temp":19}' }] },
  ] }],
  ['prompt caching and fields no API has yet', { model: 'gpt-5', prompt_cache_key: 'tenant-7', store: true, metadata: { trace: 'x' }, reasoning_effort: 'high', response_format: { type: 'json_object' }, future_flag: { nested: [1, 2.5, 'é'] }, messages: [
    { role: 'system', content: 'Answer in JSON.', x_future: true },
    { role: 'user', content: [{ type: 'text', text: 'Hello', x_annotation: { weight: 2 } }, { type: 'input_video', input_video: { url: 'https://example.com/v.mp4' } }], name: 'ana' },
  ] }],
];

const anthropicCorpus: [string, Json][] = [
  ['vision with cache_control, a remote image', { model: 'claude-sonnet-4-5', max_tokens: 1024, system: [{ type: 'text', text: 'You describe images.', cache_control: { type: 'ephemeral' } }], messages: [
    { role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64(PNG) }, cache_control: { type: 'ephemeral', ttl: '1h' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/dog.png' } },
      { type: 'text', text: 'Compare them.' }] },
  ] }],
  ['a PDF document with citations and a text document', { model: 'claude-sonnet-4-5', max_tokens: 1024, system: 'Cite your sources.', messages: [
    { role: 'user', content: [
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: b64(PDF) }, title: 'Q3 report', citations: { enabled: true }, cache_control: { type: 'ephemeral' } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'The grass is green.' }, title: 'Facts' },
      { type: 'text', text: 'What do they say?' }] },
  ] }],
  ['a tool loop with thinking, redacted thinking and signatures', { model: 'claude-sonnet-4-5', max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 2048 }, tools: [{ name: 'weather', input_schema: { type: 'object' } }], messages: [
    { role: 'user', content: 'Weather in Oslo?' },
    { role: 'assistant', content: [
      { type: 'thinking', thinking: 'I should call the weather tool.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
      { type: 'tool_use', id: 'toolu_01', name: 'weather', input: { city: 'Oslo' } }] },
    { role: 'user', content: [
      { type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'text', text: '-3 °C, snow' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64(PNG2) } }], cache_control: { type: 'ephemeral' } }] },
  ] }],
  ['server tools and blocks no API has yet', { model: 'claude-opus-4-1', max_tokens: 512, metadata: { user_id: 'u-1' }, container: 'c-9', future: { a: [1, { b: null }] }, messages: [
    { role: 'user', content: [{ type: 'text', text: 'Search the news.', citations: null }] },
    { role: 'assistant', content: [
      { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'news' } },
      { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [{ type: 'web_search_result', url: 'https://example.com', title: 'News', encrypted_content: 'Eq…' }] },
      { type: 'text', text: 'Here is the news.', citations: [{ type: 'web_search_result_location', url: 'https://example.com', cited_text: 'x' }] }] },
    { role: 'user', content: [{ type: 'future_block', payload: { x: 1 } }, { type: 'text', text: 'More, please.' }] },
  ] }],
];

describe('the proxy passes every part through: 0 altered bytes outside the documented changes', () => {
  for (const [kind, corpus] of [['openai', openaiCorpus], ['anthropic', anthropicCorpus]] as const) {
    for (const [name, request] of corpus) {
      for (const stream of [false, true]) {
        it(`${kind}, ${stream ? 'streamed' : 'plain'}: ${name}`, async () => {
          const memory = await createMemory();
          try {
            // Something to recall first, so that memory really is added.
            await memory.onTurnComplete({ conversationId: proxyConversationKey('u1', 'c'), messages: [{ role: 'user', content: 'My favourite city is Oslo, I keep photos of it.' }, { role: 'assistant', content: 'Oslo it is.' }] });
            const body: Json = { ...request, ...(stream ? { stream: true } : {}) };
            const { received, status } = await through(memory, kind, body, 'c');
            expect(status).toBe(200);
            const { trimmed, inserted } = diff(kind, body, received);
            expect(trimmed).toBe(0);
            // Without history in the request, the stored exchange comes first, written back.
            expect(inserted.map((m) => m.role)).toEqual(hasHistory(kind, body.messages as Json[]) ? [] : ['user', 'assistant']);
            // What was stored of the exchange: the request's last round and the reply, parts kept.
            const turns = await memory.turns(proxyConversationKey('u1', 'c'));
            const reply = turns.at(-1)!;
            expect(reply.role).toBe('assistant');
            expect(reply.text).toBe('Noted.');
            if (kind === 'anthropic') expect(reply.content).toContainEqual({ type: 'reasoning', text: 'The user wants a note.', signature: stream ? 'sig-streamed' : 'sig-plain' });
          } finally {
            await memory.close();
          }
        });
      }
    }
  }
});

describe('the proxy trims older history whole and adds memory, and nothing else', () => {
  // A conversation longer than the window: the caller sends all of it every time, as chat apps do.
  const history = (kind: 'openai' | 'anthropic'): Json[] => {
    const out: Json[] = [];
    const image = kind === 'openai'
      ? { type: 'image_url', image_url: { url: `data:image/png;base64,${b64(PNG2)}` } }
      : { type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64(PNG2) }, cache_control: { type: 'ephemeral' } };
    out.push({ role: 'user', content: [{ type: 'text', text: 'This is the floor plan of the Lisbon flat; the budget is 500 dollars a night.' }, image] });
    out.push({ role: 'assistant', content: 'A bright two-room flat in Alfama.' });
    for (let i = 0; i < 40; i++) {
      out.push({ role: 'user', content: `Question ${i}: what about the weather on day ${i} of the trip, and which museum opens early that day?` });
      out.push({ role: 'assistant', content: `Day ${i}: mild and sunny; the tile museum opens at nine, the coach museum at ten, and lunch is best near the river.` });
    }
    out.push({ role: 'user', content: 'Remind me of the budget for the flat.' });
    return out;
  };

  for (const kind of ['openai', 'anthropic'] as const) {
    for (const stream of [false, true]) {
      it(`${kind}, ${stream ? 'streamed' : 'plain'}: a suffix of the caller's messages, unchanged, and the recalled start in the system prompt`, async () => {
        const memory = await createMemory({ contextWindow: 2048 });
        try {
          const messages = history(kind);
          const conversation = `long-${stream}`;
          // The first exchange was stored when it happened (through the proxy too).
          await memory.onTurnComplete({ conversationId: proxyConversationKey('u1', conversation), messages: messages.slice(0, -1).map((m) => (typeof m.content === 'string' ? m : { role: 'user', content: [{ type: 'text', text: (m.content as Json[])[0]!.text }, { type: 'image', data: b64(PNG2), mediaType: 'image/png' }] })) as never });
          const body = { model: kind === 'openai' ? 'gpt-4.1' : 'claude-sonnet-4-5', max_tokens: 256, system: kind === 'anthropic' ? 'Be brief.' : undefined, messages, ...(stream ? { stream: true } : {}) };
          if (kind === 'openai') delete (body as Json).system;
          const { received } = await through(memory, kind, body, conversation);
          const { trimmed, memory: added } = diff(kind, body, received);
          expect(trimmed).toBeGreaterThan(10);
          expect(added).toContain('budget is 500 dollars');
          // The image travels with the recalled excerpt as its reference, not as bytes.
          expect(added).toContain('[image (image/png');
          const first = (received.messages as Json[])[kind === 'openai' ? 1 : 0]!;
          expect(first.role).toBe('user');
        } finally {
          await memory.close();
        }
      });
    }
  }
});

describe('what the proxy stores keeps every part', () => {
  it('OpenAI: the image is stored once as an attachment, its bytes read back; a resent history stores nothing twice', async () => {
    const memory = await createMemory();
    try {
      const request = openaiCorpus[0]![1];
      await through(memory, 'openai', request, 'v');
      const key = proxyConversationKey('u1', 'v');
      const [question, reply] = await memory.turns(key);
      expect(question!.content).toMatchObject([{ type: 'text', text: 'What is in these?' }, { type: 'image', mediaType: 'image/png', size: PNG.length, width: 800, height: 600, detail: 'high' }, { type: 'image', url: 'https://example.com/cat.jpg?sig=abc', detail: 'low' }]);
      // The recall line names the image without the URL's query (signed URLs carry credentials there).
      expect(question!.text).toContain('[image at example.com/cat.jpg]');
      const id = (question!.content as unknown as Json[])[1]!.attachment as string;
      expect((await memory.attachment(key, id)).data).toBe(b64(PNG));
      expect(reply!.text).toBe('Noted.');
      // The next request carries the whole history again: nothing is stored twice.
      const next = { ...request, messages: [...(request.messages as Json[]), { role: 'assistant', content: 'Noted.' }, { role: 'user', content: 'And the colours?' }] };
      await through(memory, 'openai', next, 'v');
      expect((await memory.turns(key)).map((t) => t.text)).toEqual([question!.text, 'Noted.', 'And the colours?', 'Noted.']);
    } finally {
      await memory.close();
    }
  });

  it('Anthropic: a tool loop is stored as its round — calls, results with their image, thinking with its signature', async () => {
    const memory = await createMemory();
    try {
      await through(memory, 'anthropic', anthropicCorpus[2]![1], 't');
      const turns = await memory.turns(proxyConversationKey('u1', 't'));
      expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(turns[1]!.content).toEqual([
        { type: 'reasoning', text: 'I should call the weather tool.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
        { type: 'reasoning', text: '', encrypted: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
      ]);
      expect(turns[1]!.toolCalls).toEqual([{ id: 'toolu_01', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }]);
      // Reasoning is kept apart: not in the searchable text.
      expect(turns[1]!.text).not.toContain('weather tool');
      expect(turns[2]!.content).toMatchObject([{ type: 'text', text: '-3 °C, snow' }, { type: 'image', mediaType: 'image/png', width: 64, height: 64 }]);
      expect(turns[3]!.content).toEqual([{ type: 'reasoning', text: 'The user wants a note.', signature: 'sig-plain' }, { type: 'text', text: 'Noted.' }]);
    } finally {
      await memory.close();
    }
  });
});

describe('a tool loop through the proxy', () => {
  it('the next step sends the round as the caller has it, counted, once: its stored first step is neither history nor recalled', async () => {
    const memory = await createMemory();
    try {
      const key = proxyConversationKey('u1', 'loop');
      await memory.onTurnComplete({ conversationId: key, messages: [{ role: 'user', content: 'I live in Oslo.' }, { role: 'assistant', content: 'Noted.' }] });
      const question = { role: 'user', content: 'What is the weather where I live?' };
      const call = { role: 'assistant', content: [{ type: 'thinking', thinking: 'Call the tool for Oslo.', signature: 'sig-1' }, { type: 'tool_use', id: 'toolu_9', name: 'weather', input: { city: 'Oslo' } }] };
      up.next.push({ body: JSON.stringify({ id: 'm1', type: 'message', role: 'assistant', content: call.content }) });
      const step1: Json = { model: 'claude-sonnet-4-5', max_tokens: 256, messages: [question] };
      await through(memory, 'anthropic', step1, 'loop');
      // The first step's reply (memory's reply was consumed above): stored as the round so far.
      expect((await memory.turns(key)).map((t) => t.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
      up.next.shift();
      const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: '-3 °C' }] };
      const step2: Json = { model: 'claude-sonnet-4-5', max_tokens: 256, messages: [question, call, result] };
      const { received } = await through(memory, 'anthropic', step2, 'loop');
      const { inserted } = diff('anthropic', step2, received);
      // Only the earlier exchange comes from memory; the question and its call are the caller's, once.
      expect(inserted.map((m) => JSON.stringify(m.content))).toEqual([JSON.stringify([{ type: 'text', text: 'I live in Oslo.' }]), JSON.stringify([{ type: 'text', text: 'Noted.' }])]);
      expect(JSON.stringify(received)).not.toContain('<excerpt>');
      const turns = await memory.turns(key);
      expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'tool', 'assistant']);
    } finally {
      await memory.close();
    }
  });
});
