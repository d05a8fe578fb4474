import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMemory, type Embedder, type EmbeddingProgress, type Memory, type StorageDriver } from '../../../src/index.js';
import { remoteEmbedder } from '../../../src/embed/remote.js';
import { createVectorIndex } from '../../../src/embed/vector-index.js';
import { quantize } from '../../../src/embed/vector-store.js';
import { transformersEmbedder } from '../../../src/embed/transformers.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { assistant, user } from '../../support/helpers.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

/** A driver that outlives the engines using it (a reload). */
function shared(driver: StorageDriver): StorageDriver {
  return { name: driver.name, query: (sql, params) => driver.query(sql, params), batch: (s) => driver.batch(s), close: () => undefined };
}

/**
 * A stand-in for the embedder seam in tests about the queue's bookkeeping (not about retrieval quality): a hashed
 * bag of words. Counts its calls and can be told to fail.
 */
function hashed(modelId: string, fail = false): Embedder & { texts: number } {
  const e = {
    modelId, dimensions: 64, maxBatchSize: 8, threshold: 0.1, texts: 0,
    async embed(texts: readonly string[]) {
      if (fail) throw new Error('model server unreachable');
      e.texts += texts.length;
      return texts.map((t) => {
        const v = new Float32Array(64);
        for (const w of t.toLowerCase().match(/[a-z]+/g) ?? []) v[[...w].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 64, 7)]! += 1;
        return v;
      });
    },
  };
  return e;
}

/**
 * `hashed`, whose background embedding waits once it has embedded `free` texts, until `release()` or until the engine
 * closes (its signal aborts); a question's vector (embedQuery) comes at once. How far the queue got when the test
 * looks is then the test's doing, not the machine's speed.
 */
function held(modelId: string, free: number) {
  const e = hashed(modelId);
  const run = e.embed.bind(e);
  let release!: () => void;
  const released = new Promise<void>((ok) => { release = ok; });
  return Object.assign(e, {
    release,
    async embed(texts: readonly string[], signal?: AbortSignal) {
      if (e.texts >= free) {
        await new Promise<void>((ok, fail) => {
          void released.then(ok);
          signal?.addEventListener('abort', () => fail(signal.reason), { once: true });
        });
      }
      return run(texts);
    },
    embedQuery: async (text: string) => (await run([text]))[0]!,
  });
}

// A window small enough that most of a short conversation is recalled rather than sent whole.
const SMALL = { contextWindow: 4096, memoryTokens: 300, protectedRecentTurns: 0, targetTokens: 400 };

const FILLER = Array.from({ length: 16 }, (_, i) => `Okay, let us keep going with item ${i} of the checklist then.`);

const TOPICS = [
  'The temperature sensors post readings to the Flask API over MQTT.',
  'Route the vocal mic through the compressor before the reverb bus.',
  'The training job checkpoints the model weights every epoch.',
  'We moved the login page to passkeys and dropped SMS codes.',
  'Firmware updates are signed with an ed25519 key.',
  'Mix the kick drum a little quieter under the bass.',
  'The validation loss stopped improving after ten epochs.',
  'Grafana shows the sensor battery levels per room.',
];

async function seed(m: Memory, id: string, texts: readonly string[]): Promise<void> {
  let t = Date.parse('2026-03-01T10:00:00Z');
  for (const text of texts) {
    await m.onTurnComplete({ conversationId: id, messages: [user(text, { createdAt: new Date(t).toISOString() }), assistant('Noted.', { createdAt: new Date(t + 1000).toISOString() })] });
    t += 3_600_000;
  }
}

describe('all-MiniLM-L6-v2, the shipped encoder (real pretrained model, offline, in a worker thread)', () => {
  it('recalls a turn by meaning when the question shares no word with it (seed 000 cross-vocabulary), and not without embeddings', async () => {
    const target = 'We added materialized views to precompute the timeline ranking; Postgres refreshes them every five minutes.';
    const texts = [...TOPICS.slice(0, 4), target, ...TOPICS.slice(4)];
    const question = { role: 'user' as const, content: 'What did we do about the slow feed queries?' };
    const options = { contextWindow: 4096, memoryTokens: 300, protectedRecentTurns: 0, targetTokens: 400 };
    for (const embedder of [undefined, false] as const) {
      memory = await createMemory({ ...options, ...(embedder === false ? { embedder } : {}) });
      await seed(memory, 'c', [...texts, ...texts.map((t) => `${t} (again)`).slice(0, 8), 'Anything else?']);
      await memory.flush();
      const ctx = await memory.onMessageInbound({ conversationId: 'c', message: question });
      const recalled = ctx.manifest.filter((e) => e.kind === 'recall');
      const hit = recalled.find((e) => ctx.recallText.includes('materialized views') && e.reason.includes('meaning'));
      if (embedder === false) {
        expect(ctx.recallText).not.toContain('materialized views');
        expect(recalled.every((e) => e.scores.vector === undefined)).toBe(true);
      } else {
        expect(ctx.recallText).toContain('materialized views');
        expect(hit?.scores.vector).toBeGreaterThan(0.3);
        expect(ctx.notes).toBeUndefined();
        const status = await memory.embeddingStatus('c');
        expect(status).toMatchObject({ modelId: 'transformers:all-MiniLM-L6-v2@q8', lastError: null });
        expect(status.embedded).toBe(status.total);
      }
      await memory.close();
      memory = undefined;
    }
  });

  it('gives the vectors of sentence-transformers (cosine ≥ 0.99, a 462-token text truncated at 256), in-process and in its thread', async () => {
    const { readFile } = await import('node:fs/promises');
    const ref = JSON.parse(await readFile(new URL('../../fixtures/minilm-reference.json', import.meta.url), 'utf8')) as { texts: string[]; vectors: number[][] };
    const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a).reduce((s, x, i) => s + x * b[i]!, 0);
    for (const thread of [true, false]) {
      const e = transformersEmbedder({ provider: 'transformers', thread });
      const vectors = await e.embed(ref.texts);
      expect(e.dimensions).toBe(384);
      vectors.forEach((v, i) => {
        expect(dot(v, v)).toBeCloseTo(1, 4);
        expect(dot(v, ref.vectors[i]!)).toBeGreaterThanOrEqual(0.99);
      });
      // The question path gives the passage path's vector exactly (no prefix for this model; every background text is
      // run alone, as a question is: 8-bit activations are scaled per run).
      expect(Array.from(await e.embedQuery!(ref.texts[0]!))).toEqual(Array.from(vectors[0]!));
    }
  });

  it('embeds the question ahead of queued background texts: an import being embedded does not hold up a request', async () => {
    memory = await createMemory({ ...SMALL, preloadEmbedder: true });
    await memory.flush(); // the model is loaded (flush waits for a load under way)
    await memory.onTurnComplete({ conversationId: 'c', messages: Array.from({ length: 300 }, (_, i) => user(`Log line ${i}: the ingest worker processed batch ${i * 7} without errors.`)) });
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('Did anything fail during ingestion?') });
    const during = await memory.embeddingStatus('c');
    // The question's vector was computed while most of the import still waited for its own.
    expect(ctx.notes?.some((n) => n.includes('not embedded yet'))).toBe(true);
    expect(during.embedded).toBeLessThan(during.total);
    await memory.flush();
    const after = await memory.embeddingStatus('c');
    expect(after.embedded).toBe(after.total);
  });
});

describe('the background embedding queue', () => {
  it('embeds after onTurnComplete returns, reports progress, serves BM25 meanwhile, and resumes after a reload', async () => {
    const driver = await sqliteWasm()();
    const events: EmbeddingProgress[] = [];
    // The queue embeds two batches, then waits: the engine is closed before it is done.
    const slow = held('hash-a', 16);
    memory = await createMemory({ ...SMALL, embedder: slow, storage: shared(driver), onEmbeddingProgress: (p) => events.push(p) });
    await seed(memory, 'c', Array.from({ length: 30 }, (_, i) => `Turn ${i} about the greenhouse irrigation valves.`));
    // Closing before the queue is done: what was committed stays, the rest waits for the next engine.
    await memory.close();
    const after = await driver.query<{ n: number }>("SELECT COUNT(*) AS n FROM embeddings WHERE model_id = 'hash-a'");
    expect(Number(after[0]!.n)).toBeLessThan(60);

    // The next engine's queue waits until the question has been answered from what is there.
    const next = held('hash-a', 0);
    memory = await createMemory({ ...SMALL, embedder: next, storage: shared(driver), onEmbeddingProgress: (p) => events.push(p) });
    const during = await memory.onMessageInbound({ conversationId: 'c', message: user('Which irrigation valves did we discuss?') });
    expect(during.notes?.some((n) => n.includes('not embedded yet'))).toBe(true);
    expect(during.recallText).toContain('irrigation');
    next.release();
    await memory.flush();
    const status = await memory.embeddingStatus('c');
    expect(status.embedded).toBe(60);
    expect(status.total).toBe(60);
    expect(events.at(-1)).toMatchObject({ conversationId: 'c', modelId: 'hash-a', embedded: 60, total: 60 });
    expect(events.length).toBeGreaterThan(2);
    const done = await memory.onMessageInbound({ conversationId: 'c', message: user('Which irrigation valves did we discuss?') });
    expect(done.notes).toBeUndefined();
    await memory.close();
    memory = undefined;
    await driver.close();
  });

  it('flush() resolves only when every turn and every summary compaction wrote has its vector', async () => {
    memory = await createMemory({ contextWindow: 2048, embedder: hashed('h') });
    const behind: number[] = [];
    for (let i = 0; i < 40; i++) {
      await memory.onTurnComplete({ conversationId: 'c', messages: [user(`Step ${i} of the garden plan: ${TOPICS[i % TOPICS.length]} ${FILLER[i % FILLER.length]}`), assistant(`Noted step ${i}; ${FILLER[(i + 3) % FILLER.length]}`)] });
      // As a chat does: each exchange, then flush (a soft compaction runs after that exchange's embedding job).
      await memory.flush();
      const status = await memory.embeddingStatus('c');
      behind.push(status.total - status.embedded);
    }
    const summaries = await memory.summaries('c');
    expect(summaries.length).toBeGreaterThan(0);
    expect((await memory.embeddingStatus('c')).total).toBe(80 + summaries.length);
    expect(behind.every((n) => n === 0)).toBe(true);
  });

  it('a question asked while the model loads is answered at once from tags + BM25, with a note; later ones use the model', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const slow = Object.assign(hashed('slow'), { load: () => gate });
    memory = await createMemory({ ...SMALL, embedder: slow, preloadEmbedder: true });
    await seed(memory, 'c', [...TOPICS, ...FILLER]);
    const first = await memory.onMessageInbound({ conversationId: 'c', message: user('Which key signs the firmware updates?') });
    expect(first.notes).toContain('embedding model still loading: this answer used tags + BM25 only.');
    expect(first.recallText).toContain('ed25519');
    expect(slow.texts).toBe(0);
    release();
    await memory.flush();
    const later = await memory.onMessageInbound({ conversationId: 'c', message: user('Which key signs the firmware updates?') });
    expect(later.notes).toBeUndefined();
    expect(later.manifest.some((e) => e.kind === 'recall' && e.scores.vector !== undefined)).toBe(true);
  });

  it('yields to the event loop between batches: a request arriving by a timer (a worker message) is served mid-queue', async () => {
    // Synchronous work resolved through microtasks only, like TF.js' WASM backend.
    const busy: Embedder = {
      modelId: 'busy', dimensions: 4, maxBatchSize: 8,
      async embed(texts) {
        const end = performance.now() + 5;
        while (performance.now() < end) { /* model work */ }
        return texts.map(() => Float32Array.of(1, 0, 0, 0));
      },
    };
    memory = await createMemory({ embedder: busy });
    await memory.onTurnComplete({ conversationId: 'c', messages: Array.from({ length: 400 }, (_, i) => user(`message ${i}`)) });
    const m = memory;
    const embeddedWhenServed = await new Promise<number>((resolve) => setTimeout(() => { void m.embeddingStatus('c').then((s) => resolve(s.embedded)); }, 0));
    expect(embeddedWhenServed).toBeLessThan(400);
    await memory.flush();
    expect((await memory.embeddingStatus('c')).embedded).toBe(400);
  });

  it('a model change re-embeds in the background and never mixes vector spaces', async () => {
    const driver = await sqliteWasm()();
    memory = await createMemory({ embedder: hashed('hash-a'), storage: shared(driver) });
    await seed(memory, 'c', TOPICS);
    await memory.flush();
    await memory.close();
    const b = hashed('hash-b');
    memory = await createMemory({ embedder: b, storage: shared(driver) });
    expect(await memory.embeddingStatus('c')).toMatchObject({ modelId: 'hash-b', embedded: 0, total: 16 });
    await memory.onMessageInbound({ conversationId: 'c', message: user('sensor battery') });
    await memory.flush();
    expect(b.texts).toBe(16 + 1);
    const models = await driver.query<{ model_id: string; n: number }>('SELECT model_id, COUNT(*) AS n FROM embeddings GROUP BY model_id');
    expect(models.map((r) => [r.model_id, Number(r.n)])).toEqual([['hash-b', 16]]);
    await memory.close();
    memory = undefined;
    await driver.close();
  });

  it('an embedder that fails degrades to tags + BM25 with a note; nothing fails and nothing is stored wrong', async () => {
    memory = await createMemory({ ...SMALL, embedder: hashed('broken', true) });
    await seed(memory, 'c', [...TOPICS, ...FILLER]);
    await memory.flush();
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('Which key signs the firmware updates?') });
    expect(ctx.recallText).toContain('ed25519');
    expect(ctx.notes?.join(' ')).toContain('model server unreachable');
    expect(await memory.turns('c')).toHaveLength(48);
    expect((await memory.embeddingStatus('c')).embedded).toBe(0);
  });

  it('a missing optional package is a clear note, not a failure', async () => {
    memory = await createMemory({ ...SMALL, embedder: { provider: 'transformers', model: 'no-such-model', localModelPath: '/nonexistent' } });
    await seed(memory, 'c', [...TOPICS, ...FILLER]);
    await memory.flush(); // waits for the load under way, which fails
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('Which sensors post readings?') });
    expect(ctx.notes?.join(' ')).toMatch(/could not load "no-such-model"/);
    expect(ctx.recallText).toContain('sensors');
  });
});

describe('vector search', () => {
  it('int8 storage keeps the cosine within 0.01 and the order of a float search; filters apply before scoring', () => {
    let s = 42;
    const rand = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) - 0.5;
    const vecs = Array.from({ length: 500 }, () => Float32Array.from({ length: 130 }, rand));
    const unit = (v: Float32Array) => { const n = Math.hypot(...v); return v.map((x) => x / n); };
    const index = createVectorIndex(130);
    index.add(vecs.map((v, i) => { const q = quantize(v); return { ref: i, createdMs: i * 1000, scale: q.scale, vector: q.bytes }; }));
    const query = unit(vecs[7]!.map((x, i) => x + 0.5 * vecs[9]![i]!));
    const exact = vecs.map((v, i) => ({ ref: i, score: unit(v).reduce((a, x, j) => a + x * query[j]!, 0) })).sort((a, b) => b.score - a.score);
    const hits = index.search(query, 10, -1);
    expect(hits.map((h) => h.ref).slice(0, 3)).toEqual(exact.slice(0, 3).map((h) => h.ref));
    for (const h of hits) expect(Math.abs(h.score - exact.find((e) => e.ref === h.ref)!.score)).toBeLessThan(0.01);
    expect(index.search(query, 10, -1, { exclude: new Set([7, 9]) }).map((h) => h.ref)).not.toContain(7);
    expect(index.search(query, 10, -1, { window: { fromMs: 100_000, toMs: 200_000 } }).every((h) => h.ref >= 100 && h.ref <= 200)).toBe(true);
    expect(index.search(query, 10, 0.99)).toEqual([]);
  });
});

describe('remote embeddings (OpenAI-compatible /v1/embeddings, local server)', () => {
  let server: Server;
  let base: string;
  const seen: Array<{ auth?: string; body: { model: string; input: string[] } }> = [];
  let failures = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => { raw += c; });
      req.on('end', () => {
        const body = JSON.parse(raw) as { model: string; input: string[] };
        seen.push({ auth: req.headers.authorization, body });
        if (failures > 0) { failures--; res.writeHead(503).end('busy'); return; }
        if (body.model === 'bad') { res.writeHead(200, { 'content-type': 'application/json' }).end('{"data": []}'); return; }
        const data = body.input.map((t, index) => ({ index, embedding: [t.length % 7, 1, t.includes('sensor') ? 3 : 0] }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: data.reverse(), model: body.model }));
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

  it('sends the protocol, retries a 503, orders by index, and reports a malformed reply as EMBEDDING_ERROR', async () => {
    const e = remoteEmbedder({ provider: 'openai-compatible', baseUrl: base, model: 'text-embedding-3-small', apiKey: 'sk-test', retryDelayMs: 1 });
    failures = 1;
    const [a, b] = await e.embed(['sensor one', 'x']);
    expect(seen.at(-1)).toMatchObject({ auth: 'Bearer sk-test', body: { model: 'text-embedding-3-small', input: ['sensor one', 'x'] } });
    expect(seen.length).toBe(2);
    expect([...a!]).toEqual([3, 1, 3]);
    expect([...b!]).toEqual([1, 1, 0]);
    expect(e.dimensions).toBe(3);
    const bad = remoteEmbedder({ provider: 'openai-compatible', baseUrl: base, model: 'bad' });
    await expect(bad.embed(['a'])).rejects.toMatchObject({ code: 'EMBEDDING_ERROR' });
  });

  it('embeds stored turns through the engine (plain-data options, as the edge would)', async () => {
    memory = await createMemory({ embedder: { provider: 'openai-compatible', baseUrl: base, model: 'm', retryDelayMs: 1 } });
    await seed(memory, 'c', TOPICS.slice(0, 3));
    await memory.flush();
    expect(await memory.embeddingStatus('c')).toMatchObject({ modelId: 'openai-compatible:m', embedded: 6, total: 6 });
    // The width is learned from the replies: the stored vectors are searchable (the server's vectors mark "sensor").
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('sensor') });
    expect(ctx.notes).toBeUndefined();
  });
});

describe('transformers.js (a tiny ONNX model generated by the test, local files only)', () => {
  it('loads offline with progress, mean-pools and normalizes exactly, and serves the engine; nothing is fetched', async () => {
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { writeTinyModel, tinyModel } = await import('../../fixtures/tiny-onnx.js');
    const dir = writeTinyModel(mkdtempSync(join(tmpdir(), 'pagewise-tiny-')));
    const fetched: string[] = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      fetched.push(String(input instanceof Request ? input.url : input));
      return realFetch(input, init);
    }) as typeof fetch;
    try {
      const progress: string[] = [];
      // In-process: this test watches fetch on this thread.
      const e = transformersEmbedder({ provider: 'transformers', model: 'tiny-minilm', localModelPath: dir, thread: false }, (p) => progress.push(p.status));
      const [a, b, c] = await e.embed(['the sensor readings', 'sensor readings were high', 'my dog likes the park']);
      expect(progress.at(-1)).toBe('ready');
      expect(e.dimensions).toBe(16);
      const dot = (x: Float32Array, y: Float32Array) => x.reduce((s, v, i) => s + v * y[i]!, 0);
      expect(dot(a!, a!)).toBeCloseTo(1, 5);
      expect(dot(a!, b!)).toBeGreaterThan(dot(a!, c!));
      // Expected by hand: the mean of the embedding rows of the tokenizer's ids ([CLS] … [SEP]), normalized.
      const hf = await import('@huggingface/transformers');
      const tok = await hf.AutoTokenizer.from_pretrained('tiny-minilm');
      const ids = (tok('the sensor readings').input_ids.tolist() as bigint[][])[0]!.map(Number);
      const raw = tinyModel(16);
      const table = (() => {
        // The table is the graph's first initializer: rebuild it from the same seed instead of parsing protobuf.
        let s = 1;
        const t = new Float32Array(30522 * 16);
        for (let i = 0; i < t.length; i++) { s = (s * 1103515245 + 12345) % 2147483648; t[i] = s / 2147483648 - 0.5; }
        return t;
      })();
      expect(raw.length).toBeGreaterThan(table.byteLength);
      const mean = new Float32Array(16);
      for (const id of ids) for (let j = 0; j < 16; j++) mean[j]! += table[id * 16 + j]! / ids.length;
      const norm = Math.hypot(...mean);
      for (let j = 0; j < 16; j++) expect(a![j]).toBeCloseTo(mean[j]! / norm, 5);

      memory = await createMemory({ ...SMALL, embedder: { provider: 'transformers', model: 'tiny-minilm', localModelPath: dir, thread: false } });
      await seed(memory, 'c', [...TOPICS, ...FILLER]);
      await memory.flush();
      expect(await memory.embeddingStatus('c')).toMatchObject({ modelId: 'transformers:tiny-minilm', embedded: 48, total: 48 });
      const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('Tell me about the battery levels per room') });
      expect(ctx.recallText).toContain('Grafana');
      expect(ctx.manifest.some((m) => m.kind === 'recall' && m.scores.vector !== undefined)).toBe(true);
    } finally {
      globalThis.fetch = realFetch;
    }
    expect(fetched).toEqual([]);
  });
});
