// Embedding figures: model load, throughput, query latency, a 10,000-turn import becoming fully embedded (and
// retrieval during it), onMessageInbound with the query embedding at 10,000 and 100,000 stored vectors.
import { createMemory } from '../../src/index.js';
import { messageText } from '../../src/common/messages.js';
import { transformersEmbedder } from '../../src/embed/transformers.js';
import type { Embedder } from '../../src/contracts/types.js';
import { loadLocomo } from './datasets.js';
import { percentile } from './metrics.js';

const ms = (list: number[]) => `p50 ${percentile(list, 50).toFixed(1)} ms, p95 ${percentile(list, 95).toFixed(1)} ms (n=${list.length})`;
const TOPICS = ['database indexing', 'marathon training', 'tenant rights', 'sourdough baking', 'kubernetes upgrades', 'tax filing', 'guitar practice', 'garden planning', 'travel to Japan', 'react hooks'];

function pair(i: number, rand: () => number) {
  const topic = TOPICS[Math.floor(rand() * TOPICS.length)]!;
  return [
    { role: 'user' as const, content: `Question ${i} about ${topic}: what should I do next about item ${Math.floor(rand() * 1000)}?` },
    { role: 'assistant' as const, content: `For ${topic}, step ${i}: check the details of item ${Math.floor(rand() * 1000)}, then write down what changed and why it matters for the plan.` },
  ];
}

/** Stored vectors at random (fast), the question through the real encoder: measures search + query embedding. */
function randomTurnsRealQueries(real: Embedder, questions: Set<string>): Embedder {
  let seed = 11;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) - 0.5;
  return {
    modelId: real.modelId, dimensions: real.dimensions, maxBatchSize: 256, threshold: real.threshold,
    embedQuery: (text, signal) => real.embedQuery!(text, signal),
    async embed(texts, signal) {
      if (texts.length === 1 && questions.has(texts[0]!)) return real.embed(texts, signal);
      return texts.map(() => Float32Array.from({ length: real.dimensions }, rand));
    },
  };
}

async function inboundAt(turns: number, embedder: Embedder, questions: string[]): Promise<void> {
  const memory = await createMemory({ contextWindow: 8192, reserveTokens: 1024, compaction: false, embedder });
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const t0 = performance.now();
  for (let i = 0; i < turns / 2; i += 50) {
    await memory.onTurnComplete({ conversationId: 's', messages: Array.from({ length: 50 }, (_, k) => pair(i + k, rand)).flat() });
  }
  await memory.flush();
  const ingest = (performance.now() - t0) / 1000;
  const status = await memory.embeddingStatus('s');
  const inbound: number[] = [];
  for (const content of questions) {
    const t = performance.now();
    await memory.onMessageInbound({ conversationId: 's', message: { role: 'user', content } });
    inbound.push(performance.now() - t);
  }
  await memory.close();
  console.log(`onMessageInbound at ${turns.toLocaleString('en')} stored turns (${status.embedded.toLocaleString('en')} vectors; stored vectors random, question embedded by all-MiniLM-L6-v2; ingest ${ingest.toFixed(0)} s): ${ms(inbound.slice(5))}`);
}

export async function embeddingBench(): Promise<void> {
  console.log('\nEmbeddings (all-MiniLM-L6-v2 8-bit, transformers.js on onnxruntime-node CPU, Node, 2 cores)');
  const texts = loadLocomo()[1]!.batches.flat().map(messageText).slice(0, 640);
  const chars = Math.round(texts.reduce((n, x) => n + x.length, 0) / texts.length);
  let e = transformersEmbedder({ provider: 'transformers' });
  for (const thread of [false, true]) {
    // A fresh process would load once; the in-process and the threaded model are separate loads.
    const candidate = transformersEmbedder({ provider: 'transformers', thread });
    let t = performance.now();
    await candidate.load!();
    const load = performance.now() - t;
    t = performance.now();
    for (let i = 0; i < texts.length; i += 16) await candidate.embed(texts.slice(i, i + 16));
    const secs = (performance.now() - t) / 1000;
    console.log(`${thread ? 'worker thread' : 'in-process  '}: model load ${load.toFixed(0)} ms · throughput ${(texts.length / secs).toFixed(0)} texts/s (LoCoMo turns, mean ${chars} chars, batches of 16 run 2 at a time)`);
    if (thread) e = candidate;
  }
  const questions = loadLocomo()[1]!.questions.slice(0, 105).map((q) => q.question);
  const q: number[] = [];
  let t = 0;
  for (const text of questions) { t = performance.now(); await e.embedQuery!(text); q.push(performance.now() - t); }
  console.log(`query embedding ${ms(q.slice(5))}`);

  // A 10,000-turn import: stored at once, embedded in the background; questions asked while it runs.
  const memory = await createMemory({ contextWindow: 8192, reserveTokens: 1024, compaction: false, embedder: e });
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  t = performance.now();
  for (let i = 0; i < 5000; i += 100) await memory.onTurnComplete({ conversationId: 'import', messages: Array.from({ length: 100 }, (_, k) => pair(i + k, rand)).flat() });
  const stored = (performance.now() - t) / 1000;
  const during: number[] = [];
  let found = 0;
  let noted = 0;
  for (let i = 0; i < 20; i++) {
    const s = performance.now();
    const ctx = await memory.onMessageInbound({ conversationId: 'import', message: { role: 'user', content: `Which step should I check for item ${i * 37} in ${TOPICS[i % 10]}?` } });
    during.push(performance.now() - s);
    if (ctx.recallText.length > 0) found++;
    if (ctx.notes?.some((n) => n.includes('not embedded yet'))) noted++;
    await new Promise((r) => setTimeout(r, 500));
  }
  await memory.flush();
  const embedded = (performance.now() - t) / 1000;
  const after: number[] = [];
  for (const content of questions.slice(0, 60)) {
    const s = performance.now();
    await memory.onMessageInbound({ conversationId: 'import', message: { role: 'user', content } });
    after.push(performance.now() - s);
  }
  const status = await memory.embeddingStatus('import');
  await memory.close();
  console.log(`10,000-turn import: stored in ${stored.toFixed(1)} s, fully embedded ${embedded.toFixed(0)} s after the import began (${status.embedded}/${status.total}); `
    + `${found}/20 questions asked meanwhile recalled excerpts (${noted} noted unembedded turns), onMessageInbound meanwhile ${ms(during)}`);
  console.log(`onMessageInbound at 10,000 embedded turns (question embedded on the request path): ${ms(after.slice(5))}`);
  await inboundAt(100_000, randomTurnsRealQueries(e, new Set(questions)), questions);
}
