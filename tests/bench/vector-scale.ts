// Vector search at scale: the exact scan (the index as it was) against createVectorIndex at 10,000 and 100,000
// stored vectors, on realistic vectors (binary codes behave very differently on real embeddings than on uniform
// random ones). Prints p50/p95 ms of both, recall@k of the index against the exact scan (same threshold and
// filters), and bytes per stored vector.
//
// Vectors: `realTurns` dataset turns (LoCoMo + LongMemEval, a seeded sample, cut at MAX_CHARS like the queue does)
// and every dataset question, embedded by all-MiniLM-L6-v2 from `modelPath` (a few minutes on 2 cores). No dataset
// conversation has 100,000 turns, and embedding that many would take hours, so the stored vectors past the real
// ones are derived from them, reproducibly (seeded): normalize((1 − t)·a + t·b + n), with a and b real turns drawn
// at random, t uniform in [0, 0.35) and n Gaussian noise of 0.02 per component. Each sits at a cosine of about 0.9
// from its main parent: the set keeps the real vectors' anisotropy, per-dimension spread and question-to-turn score
// range (which is what decides how well sign bits rank them), and at 100,000 each real turn has ~25 close variants,
// so a question's top 10 is crowded with near-equal scores: a demanding case for a shortlist, like a long
// conversation that keeps coming back to the same topic. Queries are the real question vectors.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { quantize, MAX_CHARS, type StoredVector } from '../../src/embed/vector-store.js';
import { createVectorIndex, type SearchFilter, type VectorHit } from '../../src/embed/vector-index.js';
import { messageText } from '../../src/common/messages.js';
import { rng } from '../support/rng.js';
import { loadLocomo, loadLongMemEval } from './datasets.js';
import { mean, percentile } from './metrics.js';

const SIZES = [10_000, 100_000];
// The shipped model's folder (node_modules/@pagewise/all-minilm-l6-v2/).
const DEFAULT_MODEL_PATH = `${dirname(createRequire(import.meta.url).resolve('@pagewise/all-minilm-l6-v2/package.json'))}/`;

// A collection before reading memory figures (exposed at run time: the bench runs under plain tsx).
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;
// Array buffers are freed by a sweeper after the collection: a few rounds with pauses let the figures settle.
async function gc(): Promise<void> {
  for (let i = 0; i < 5; i++) { collect(); await new Promise((resolve) => setTimeout(resolve, 100)); }
}

export interface VectorScaleOptions {
  /** transformers.js localModelPath holding all-MiniLM-L6-v2/ (the main engineer will point it at the shipped model). */
  modelPath?: string;
  /** Real dataset turns embedded (the rest of each size is derived from them). */
  realTurns?: number;
  /** Questions searched per configuration. */
  queries?: number;
}

/** Real turn and question vectors (unit length) from the encoder. */
export async function embedDatasets(modelPath: string, realTurns: number): Promise<{ turns: Float32Array[]; questions: Float32Array[] }> {
  const { pipeline, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.localModelPath = modelPath;
  const extract = await pipeline('feature-extraction', 'all-MiniLM-L6-v2', { dtype: 'q8' });
  const conversations = [...loadLocomo(), ...loadLongMemEval()];
  const texts = [...new Set(conversations.flatMap((c) => c.batches.flat().map((m) => messageText(m).slice(0, MAX_CHARS))).filter((t) => t.trim().length > 0))];
  const rand = rng(2024);
  for (let i = texts.length - 1; i > 0; i--) { const j = Math.floor(rand() * (i + 1)); [texts[i], texts[j]] = [texts[j]!, texts[i]!]; }
  const sample = texts.slice(0, realTurns);
  const questions = [...new Set(conversations.flatMap((c) => c.questions.map((q) => q.question)))];
  const embed = async (list: string[]): Promise<Float32Array[]> => {
    // Batches of similar length (less padding), results back in input order.
    const order = list.map((_, i) => i).sort((a, b) => list[a]!.length - list[b]!.length);
    const out: Float32Array[] = new Array(list.length);
    for (let i = 0; i < order.length; i += 32) {
      const batch = order.slice(i, i + 32);
      const t = await extract(batch.map((k) => list[k]!), { pooling: 'mean', normalize: true });
      const data = t.data as Float32Array;
      const d = data.length / batch.length;
      batch.forEach((k, n) => { out[k] = data.slice(n * d, n * d + d); });
    }
    return out;
  };
  const t0 = performance.now();
  const q = await embed(questions);
  const turns = await embed(sample);
  console.log(`embedded ${sample.length} turns + ${questions.length} questions in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  return { turns, questions: q };
}

/** `n` unit vectors: the real ones first, then derived ones (see the header). */
export function deriveVectors(real: readonly Float32Array[], n: number, seed = 7): Float32Array[] {
  const rand = rng(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(rand() || Number.MIN_VALUE)) * Math.cos(2 * Math.PI * rand());
  const out: Float32Array[] = real.slice(0, n);
  while (out.length < n) {
    const a = real[Math.floor(rand() * real.length)]!;
    const b = real[Math.floor(rand() * real.length)]!;
    const t = rand() * 0.35;
    const v = new Float32Array(a.length);
    let norm = 0;
    for (let j = 0; j < v.length; j++) { v[j] = (1 - t) * a[j]! + t * b[j]! + 0.02 * gauss(); norm += v[j]! * v[j]!; }
    norm = Math.sqrt(norm);
    for (let j = 0; j < v.length; j++) v[j]! /= norm;
    out.push(v);
  }
  return out;
}

/** The exact scan: createVectorIndex as it was before the 1-bit estimates (contiguous int8, every eligible vector scored). */
function exactIndex(stored: readonly StoredVector[]) {
  const dims = stored[0]!.vector.length;
  const count = stored.length;
  const data = new Int8Array(count * dims);
  const scales = new Float32Array(count);
  const refs = new Int32Array(count);
  const times = new Float64Array(count);
  stored.forEach((v, at) => { data.set(v.vector, at * dims); scales[at] = v.scale; refs[at] = v.ref; times[at] = v.createdMs; });
  return (query: Float32Array, limit: number, threshold: number, filter: SearchFilter = {}): VectorHit[] => {
    const hits: VectorHit[] = [];
    let floor = threshold;
    const d = dims;
    for (let i = 0; i < count; i++) {
      if (filter.exclude?.has(refs[i]!)) continue;
      if (filter.window && (times[i]! < filter.window.fromMs || times[i]! > filter.window.toMs)) continue;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      const base = i * d;
      let j = 0;
      for (; j + 3 < d; j += 4) {
        s0 += query[j]! * data[base + j]!;
        s1 += query[j + 1]! * data[base + j + 1]!;
        s2 += query[j + 2]! * data[base + j + 2]!;
        s3 += query[j + 3]! * data[base + j + 3]!;
      }
      for (; j < d; j++) s0 += query[j]! * data[base + j]!;
      const score = (s0 + s1 + s2 + s3) * scales[i]!;
      if (score < floor) continue;
      hits.push({ ref: refs[i]!, score });
      if (hits.length >= limit * 4) {
        // By score then ref, like the final order (the old scan cut by score alone: ties at the cut could differ).
        hits.sort((a, b) => b.score - a.score || b.ref - a.ref);
        hits.length = limit;
        floor = hits[limit - 1]!.score;
      }
    }
    return hits.sort((a, b) => b.score - a.score || b.ref - a.ref).slice(0, limit);
  };
}

interface Case { name: string; limit: number; threshold: number; filter: (n: number) => SearchFilter }

// Turn i is stamped i minutes after the epoch.
const MINUTE = 60_000;
const CASES: Case[] = [
  { name: 'k=10, no threshold', limit: 10, threshold: -1, filter: () => ({}) },
  { name: 'k=48, threshold 0.3 (searchTurns)', limit: 48, threshold: 0.3, filter: () => ({}) },
  {
    name: 'k=10, 2% window + 200 excluded', limit: 10, threshold: -1,
    filter: (n) => ({ window: { fromMs: Math.floor(n * 0.49) * MINUTE, toMs: Math.floor(n * 0.51) * MINUTE }, exclude: new Set(Array.from({ length: 200 }, (_, i) => Math.floor(n * 0.49) + 3 * i)) }),
  },
];

/** The report, from real turn and question vectors (exported so a cached set can be fed in). */
export async function vectorScaleReport(turns: readonly Float32Array[], questions: readonly Float32Array[], queries = 300): Promise<void> {
  const dims = turns[0]!.length;
  console.log(`\nVector search at scale (${dims}-d, ${turns.length} real turn vectors, ${Math.min(queries, questions.length)} real questions per row; exact = the previous exact scan)`);
  console.log('| stored  | search                            | exact p50 / p95 ms | index p50 / p95 ms | recall@k | bytes/vector |');
  console.log('|---------|-----------------------------------|--------------------|--------------------|----------|--------------|');
  // One function per size: nothing of the previous size stays reachable when the next one measures its memory.
  for (const n of SIZES) await sizeRows(n, turns, questions, queries);
  console.log(`bytes/vector: typed arrays the index allocates per stored vector (the exact scan alone: ${dims + 16}, int8 + scale + ref + time); the ref → position Map comes on top in both`);
}

async function sizeRows(n: number, turns: readonly Float32Array[], questions: readonly Float32Array[], queries: number): Promise<void> {
  const stored: StoredVector[] = deriveVectors(turns, n).map((v, i) => { const q = quantize(v); return { ref: i, createdMs: i * MINUTE, scale: q.scale, vector: q.bytes }; });
  await gc();
  const before = process.memoryUsage().arrayBuffers;
  const index = createVectorIndex(0);
  index.add(stored);
  await gc();
  const bytes = (process.memoryUsage().arrayBuffers - before) / n;
  const exactScan = exactIndex(stored);
  for (const c of CASES) {
    const filter = c.filter(n);
    const exactMs: number[] = [];
    const indexMs: number[] = [];
    const recall: number[] = [];
    const list = questions.slice(0, queries);
    // Warm-up (JIT) on a few questions first, then alternate the two so load on the machine hits both alike.
    for (const q of list.slice(0, 10)) { exactScan(q, c.limit, c.threshold, filter); index.search(q, c.limit, c.threshold, filter); }
    for (const q of list) {
      let t = performance.now();
      const exact = exactScan(q, c.limit, c.threshold, filter);
      exactMs.push(performance.now() - t);
      t = performance.now();
      const found = index.search(q, c.limit, c.threshold, filter);
      indexMs.push(performance.now() - t);
      if (exact.length > 0) {
        const refs = new Set(found.map((h) => h.ref));
        recall.push(exact.filter((h) => refs.has(h.ref)).length / exact.length);
      }
    }
    const fmt = (l: number[]) => `${percentile(l, 50).toFixed(2).padStart(6)} / ${percentile(l, 95).toFixed(2).padStart(6)}`.padEnd(18);
    console.log(`| ${n.toLocaleString('en').padEnd(7)} | ${c.name.padEnd(33)} | ${fmt(exactMs)} | ${fmt(indexMs)} | ${(recall.length ? mean(recall).toFixed(4) : '—').padEnd(8)} | ${bytes.toFixed(0).padEnd(12)} |`);
  }
}

export async function vectorScaleBench(options: VectorScaleOptions = {}): Promise<void> {
  const { turns, questions } = await embedDatasets(options.modelPath ?? DEFAULT_MODEL_PATH, options.realTurns ?? 4000);
  await vectorScaleReport(turns, questions, options.queries);
}
