import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Embedder, Memory } from '../../../src/index.js';
import { workersAiEmbedder, type WorkersAiLike } from '../../../src/embed/workers-ai.js';
import type { ChatMessage } from '../../../src/contracts/types.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

// The private messages' own word: it must reach no request to an embedding endpoint, LLM tagger or summarizer.
const WORD = 'quibbleworth';
const DIMS = 16;

/** A bag-of-words vector, so that texts sharing words lie near each other. */
function vector(text: string): number[] {
  const v = new Array<number>(DIMS).fill(0.01);
  for (const w of text.toLowerCase().match(/\p{L}+/gu) ?? []) {
    let h = 0;
    for (const c of w) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    v[h % DIMS]! += 1;
  }
  return v;
}

/** Every request the endpoints got: path and raw body. */
const requests: { path: string; body: string }[] = [];
let server: Server;
let base: string;

const completion = (content: string) => JSON.stringify({ model: 'm', choices: [{ message: { role: 'assistant', content } }], usage: { prompt_tokens: 10, completion_tokens: 5 } });

beforeAll(async () => {
  // OpenAI-compatible /v1/embeddings and /v1/chat/completions, and Workers AI's REST /ai/run/<model>.
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c; });
    req.on('end', () => {
      const path = req.url ?? '';
      requests.push({ path, body: raw });
      const body = JSON.parse(raw) as { input?: string[]; text?: string[]; messages?: unknown };
      res.writeHead(200, { 'content-type': 'application/json' });
      if (path.endsWith('/embeddings')) res.end(JSON.stringify({ data: body.input!.map((t, index) => ({ index, embedding: vector(t) })) }));
      else if (path.startsWith('/ai/run/')) res.end(JSON.stringify({ success: true, result: { data: body.text!.map(vector) } }));
      else if (JSON.stringify(body.messages).includes('compress part of a conversation')) {
        res.end(completion(JSON.stringify({ summary: 'They talked about watering the beans.', tags: [], relatedTags: [] })));
      } else res.end(completion('{"tags": ["garden"], "relatedTags": ["watering"]}'));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));
beforeEach(() => { requests.length = 0; });

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

/** Exchanges about the garden; the fifth is private, both sides. */
function chat(from: number, to: number): ChatMessage[] {
  return Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    return i === 4
      ? [user(`My locker code word is ${WORD[0]!.toUpperCase()}${WORD.slice(1)}; keep it between us.`, { private: true, id: 'p1' }),
        assistant(`Noted, ${WORD} stays with me.`, { private: true, id: 'p2' })]
      : [user(`Garden question ${i}: when do I water the beans and the tomatoes?`), assistant(`Water the beans in the morning (${i}).`)];
  }).flat();
}

/** The bodies sent to paths containing `part`, lowercased. */
const sent = (part: string): string[] => requests.filter((r) => r.path.includes(part)).map((r) => r.body.toLowerCase());

/** Stores, compacts (forced), embeds in the background, asks a private and a public question; returns the answers. */
async function exercise(m: Memory) {
  await m.onTurnComplete({ conversationId: 'c', messages: chat(0, 24) });
  await m.flush();
  // A second batch: its units are tagged with the stored vocabulary, which now holds the private unit's tags.
  await m.onTurnComplete({ conversationId: 'c', messages: chat(24, 28) });
  await m.compact('c');
  await m.flush();
  const secret = await m.onMessageInbound({ conversationId: 'c', message: user(`What was my locker code word, the ${WORD} one?`, { private: true }) });
  const open = await m.onMessageInbound({ conversationId: 'c', message: user('When do I water the beans and the tomatoes?') });
  await m.flush();
  // The private word is one of the conversation's tags (so it could have leaked through them).
  expect((await m.tags('c')).map((t) => t.tag)).toContain(WORD);
  return { secret, open };
}

describe('private messages never leave the device', () => {
  it('an OpenAI-compatible embedder, LLM tagger and LLM summarizer never receive them; other turns still go there', async () => {
    memory = await createMemory({
      contextWindow: 1500, reserveTokens: 300, tagger: 'llm', summarizer: 'llm',
      llm: { baseUrl: `${base}/v1`, model: 'm' },
      embedder: { provider: 'openai-compatible', baseUrl: `${base}/v1`, model: 'e' },
    });
    const { secret, open } = await exercise(memory);
    const embedded = sent('/embeddings');
    const chats = sent('/chat/completions');
    const tagging = chats.filter((b) => !b.includes('compress part of a conversation'));
    const summarizing = chats.filter((b) => b.includes('compress part of a conversation'));
    expect(embedded.some((b) => b.includes('beans'))).toBe(true);
    expect(tagging.some((b) => b.includes('beans') && b.includes('known tags: garden'))).toBe(true);
    expect(summarizing.some((b) => b.includes('a private message, left out of summaries'))).toBe(true);
    expect([...embedded, ...tagging, ...summarizing].filter((b) => b.includes(WORD))).toEqual([]);

    // Found locally (tags and BM25), without a vector; and nothing waits for one.
    expect(secret.recallText).toMatch(/Quibbleworth/);
    expect(secret.notes).toContain('a private message is not sent to a remote embedder: this answer used tags + BM25 only.');
    expect(open.notes ?? []).toEqual([]);
    const status = await memory.embeddingStatus('c');
    expect(status.embedded).toBe(status.total);
    expect(JSON.stringify(await memory.summaries('c')).toLowerCase()).not.toContain(WORD);
  });

  it('a Workers AI embedder (and the embedding tagger\'s tag names) never receive them', async () => {
    const ai: WorkersAiLike = {
      async run(model, input) {
        const res = await fetch(`${base}/ai/run/${model}`, { method: 'POST', body: JSON.stringify(input) });
        return ((await res.json()) as { result: { data: number[][] } }).result;
      },
    };
    memory = await createMemory({ contextWindow: 1500, reserveTokens: 300, tagger: 'embedding', embedder: workersAiEmbedder(ai, { dimensions: DIMS }) });
    const { secret } = await exercise(memory);
    const embedded = sent('/ai/run/');
    expect(embedded.some((b) => b.includes('beans'))).toBe(true);
    // Tag names are embedded one per text: the garden's are there, the private word's is not.
    expect(embedded.some((b) => b.includes('"tomato"'))).toBe(true);
    expect(embedded.filter((b) => b.includes(WORD))).toEqual([]);
    expect(secret.recallText).toMatch(/Quibbleworth/);
  });

  it('only an embedder that says it is local is given them: one of yours without the flag is taken to be remote', async () => {
    const texts = { local: [] as string[], unflagged: [] as string[] };
    const embedder = (name: keyof typeof texts, local: boolean): Embedder => ({
      modelId: name, dimensions: DIMS, maxBatchSize: 16, ...(local ? { local: true } : {}),
      async embed(batch) { texts[name].push(...batch); return batch.map((t) => Float32Array.from(vector(t))); },
    });
    for (const [name, local] of [['local', true], ['unflagged', false]] as const) {
      memory = await createMemory({ embedder: embedder(name, local) });
      await memory.onTurnComplete({ conversationId: 'c', messages: chat(0, 8) });
      await memory.flush();
      await memory.onMessageInbound({ conversationId: 'c', message: user(`The ${WORD} one?`, { private: true }) });
      await memory.close();
      memory = undefined;
    }
    expect(texts.local.some((t) => t.toLowerCase().includes(WORD))).toBe(true);
    expect(texts.unflagged.some((t) => t.includes('beans'))).toBe(true);
    expect(texts.unflagged.filter((t) => t.toLowerCase().includes(WORD))).toEqual([]);
  });
});
