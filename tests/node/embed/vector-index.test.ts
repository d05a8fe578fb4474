import { describe, expect, it } from 'vitest';
import { createVectorIndex, type SearchFilter, type VectorHit } from '../../../src/embed/vector-index.js';
import { quantize, type StoredVector } from '../../../src/embed/vector-store.js';
import { rng } from '../../support/rng.js';

/** Zero-mean, unit-variance noise (uniform: cheap, and the clusters need no more). */
function noise(rand: () => number): () => number {
  return () => (rand() - 0.5) * Math.sqrt(12);
}

function unit(v: Float32Array): Float32Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n) || 1;
  return v.map((x) => x / n);
}

/** `count` unit vectors around `centres` random directions (noise of norm ≈ `spread` before normalizing). */
function clustered(seed: number, count: number, dims: number, centres: number, spread: number): { vectors: Float32Array[]; near: (c: number) => Float32Array } {
  const g = noise(rng(seed));
  const middle = Array.from({ length: centres }, () => unit(Float32Array.from({ length: dims }, g)));
  const near = (c: number) => unit(middle[c % centres]!.map((x) => x + (spread / Math.sqrt(dims)) * g()));
  return { vectors: Array.from({ length: count }, (_, i) => near(i)), near };
}

function stored(vectors: Float32Array[], timeOf = (i: number) => i * 1000, refOf = (i: number) => i): StoredVector[] {
  return vectors.map((v, i) => { const q = quantize(v); return { ref: refOf(i), createdMs: timeOf(i), scale: q.scale, vector: q.bytes }; });
}

/** Every vector scored as the index scores it: int8 · float query in four sums, times the scale as a float32. */
function scoreAll(items: readonly StoredVector[], query: Float32Array): Array<StoredVector & { score: number }> {
  const latest = new Map<number, StoredVector>();
  for (const v of items) latest.set(v.ref, v);
  return [...latest.values()].map((v) => {
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const d = query.length;
    let j = 0;
    for (; j + 3 < d; j += 4) {
      s0 += query[j]! * v.vector[j]!;
      s1 += query[j + 1]! * v.vector[j + 1]!;
      s2 += query[j + 2]! * v.vector[j + 2]!;
      s3 += query[j + 3]! * v.vector[j + 3]!;
    }
    for (; j < d; j++) s0 += query[j]! * v.vector[j]!;
    return { ref: v.ref, createdMs: v.createdMs, scale: v.scale, vector: v.vector, score: (s0 + s1 + s2 + s3) * Math.fround(v.scale) };
  });
}

const eligible = (v: StoredVector, filter: SearchFilter) =>
  !filter.exclude?.has(v.ref) && !(filter.window && (v.createdMs < filter.window.fromMs || v.createdMs > filter.window.toMs));

/** The exact answer from all scores: eligible, at or above the threshold, by score then ref (descending). */
function exactFrom(scored: ReadonlyArray<StoredVector & { score: number }>, limit: number, threshold: number, filter: SearchFilter = {}): VectorHit[] {
  const order = (a: VectorHit, b: VectorHit) => b.score - a.score || b.ref - a.ref;
  // Insertion into the best `limit` so far (a full sort per call made the test slow).
  const best: VectorHit[] = [];
  for (const v of scored) {
    if (v.score < threshold || !eligible(v, filter)) continue;
    const hit = { ref: v.ref, score: v.score };
    if (best.length === limit && order(hit, best[limit - 1]!) >= 0) continue;
    let at = best.length;
    while (at > 0 && order(hit, best[at - 1]!) < 0) at--;
    best.splice(at, 0, hit);
    if (best.length > limit) best.pop();
  }
  return best;
}

const reference = (items: readonly StoredVector[], query: Float32Array, limit: number, threshold: number, filter: SearchFilter = {}) =>
  exactFrom(scoreAll(items, query), limit, threshold, filter);

const recallOf = (found: VectorHit[], exact: VectorHit[]) => {
  if (exact.length === 0) return found.length === 0 ? 1 : 0;
  const refs = new Set(found.map((h) => h.ref));
  return exact.filter((h) => refs.has(h.ref)).length / exact.length;
};

describe('vector index: same answers as an exact scan', () => {
  it('small sets: filters, threshold, limit and order match the exact scan exactly (130-d: widths not divisible by 8)', () => {
    const rand = rng(3);
    const { vectors } = clustered(11, 400, 130, 6, 1.2);
    // Times out of order, refs sparse: nothing may assume position = ref or sorted times.
    const items = stored(vectors, (i) => ((i * 7919) % 400) * 1000, (i) => i * 3 + 1);
    const index = createVectorIndex(130);
    index.add(items.slice(0, 150));
    index.add(items.slice(150));
    expect(index.size).toBe(400);
    for (let k = 0; k < 40; k++) {
      const query = unit(Float32Array.from({ length: 130 }, () => rand() - 0.5).map((x, j) => x + vectors[k * 9]![j]!));
      const exclude = new Set(Array.from({ length: k * 5 }, () => Math.floor(rand() * 400) * 3 + 1));
      const from = Math.floor(rand() * 400) * 1000;
      // A set larger than the index is read per vector instead of by position.
      const many = new Set([...exclude, ...Array.from({ length: 600 }, (_, i) => 10_000 + i)]);
      const filters: SearchFilter[] = [{}, { exclude }, { window: { fromMs: from, toMs: from + 60_000 } }, { exclude, window: { fromMs: 0, toMs: from } }, { exclude: many }];
      const scored = scoreAll(items, query);
      for (const filter of filters) {
        for (const [limit, threshold] of [[10, -1], [48, 0.3], [1, 0], [500, 0.1], [10, 0.99]] as const) {
          expect(index.search(query, limit, threshold, filter)).toEqual(exactFrom(scored, limit, threshold, filter));
        }
      }
    }
    expect(index.search(new Float32Array(129), 10, -1)).toEqual([]);
  });

  it('large clustered sets (the index path): recall@10 ≥ 0.99 against the exact scan, with and without filters', () => {
    const dims = 384;
    const n = 30_000;
    const { vectors, near } = clustered(5, n, dims, 40, 1.1);
    const items = stored(vectors);
    const index = createVectorIndex(dims);
    index.add(items);
    const recall: number[] = [];
    for (let k = 0; k < 24; k++) {
      // Queries inside a cluster: hundreds of vectors score close to the 10th best, the hard case for 1-bit estimates.
      const query = near(k * 7 + 3);
      const scored = scoreAll(items, query);
      const byRef = new Map(scored.map((v) => [v.ref, v]));
      const top = exactFrom(scored, 40, -1);
      const filters: SearchFilter[] = [
        {},
        // The best matches excluded (turns already in the context): the shortlist must reach further down.
        { exclude: new Set(top.map((h) => h.ref)) },
        // A window that leaves a third of the vectors.
        { window: { fromMs: 10_000_000, toMs: 20_000_000 } },
      ];
      for (const filter of filters) {
        const found = index.search(query, 10, -1, filter);
        recall.push(recallOf(found, exactFrom(scored, 10, -1, filter)));
        // Whatever it returns is right: exact scores, eligible, sorted.
        for (const h of found) {
          expect(byRef.get(h.ref)!.score).toBe(h.score);
          expect(eligible(byRef.get(h.ref)!, filter)).toBe(true);
        }
        expect(found).toEqual([...found].sort((a, b) => b.score - a.score || b.ref - a.ref));
      }
      // A threshold between the 5th and the 30th best: the hits above it, not 10 regardless.
      const threshold = (top[4]!.score + top[30]!.score) / 2;
      const above = index.search(query, 10, threshold);
      recall.push(recallOf(above, exactFrom(scored, 10, threshold)));
      expect(above.every((h) => h.score >= threshold)).toBe(true);
    }
    const mean = recall.reduce((a, b) => a + b, 0) / recall.length;
    expect(mean).toBeGreaterThanOrEqual(0.99);
    // A narrow window leaves few vectors: they are scanned exactly, so the answer is the exact one.
    const query = near(17);
    const narrow: SearchFilter = { window: { fromMs: 5_000_000, toMs: 5_400_000 }, exclude: new Set([5001, 5002, 5003]) };
    expect(index.search(query, 10, -1, narrow)).toEqual(reference(items, query, 10, -1, narrow));
  });

  it('the index path handles widths that do not fill the last 32-bit code word (130-d)', () => {
    const { vectors, near } = clustered(21, 6000, 130, 12, 1.1);
    const items = stored(vectors);
    const index = createVectorIndex(0);
    index.add(items);
    const recall: number[] = [];
    for (let k = 0; k < 12; k++) {
      const query = near(k * 5 + 1);
      const scored = scoreAll(items, query);
      recall.push(recallOf(index.search(query, 10, -1), exactFrom(scored, 10, -1)));
      recall.push(recallOf(index.search(query, 48, 0.3), exactFrom(scored, 48, 0.3)));
    }
    expect(recall.reduce((a, b) => a + b, 0) / recall.length).toBeGreaterThanOrEqual(0.99);
  });

  it('adding a ref again replaces its vector (and its sign bits) in place', () => {
    const dims = 384;
    const { vectors, near } = clustered(9, 20_000, dims, 40, 1.1);
    const items = stored(vectors);
    const index = createVectorIndex(dims);
    // In batches, as the queue adds them: the arrays grow (and the codes are copied) several times.
    for (let i = 0; i < items.length; i += 3000) index.add(items.slice(i, i + 3000));
    const query = near(1234);
    const before = index.search(query, 10, -1);
    const old = vectors[77]!;
    expect(index.search(old, 1, -1)[0]!.ref).toBe(77);
    // Ref 77 (another cluster) now holds the query itself: it must come first, with its new exact score.
    const q = quantize(query);
    const replaced: StoredVector = { ref: 77, createdMs: 77_000, scale: q.scale, vector: q.bytes };
    index.add([replaced]);
    expect(index.size).toBe(20_000);
    const after = index.search(query, 10, -1);
    const all = [...items.filter((v) => v.ref !== 77), replaced];
    expect(after[0]!.ref).toBe(77);
    expect(after[0]!.score).toBeGreaterThan(0.99);
    expect(recallOf(after, reference(all, query, 10, -1))).toBeGreaterThanOrEqual(0.9);
    expect(after.slice(1).map((h) => h.ref)).toEqual(before.filter((h) => h.ref !== 77).slice(0, 9).map((h) => h.ref));
    // Its old vector is gone: a query at its old place no longer finds it among its old neighbours.
    expect(index.search(old, 10, -1).map((h) => h.ref)).not.toContain(77);
  });

  it('learns its width from the first vector and ignores vectors of another width', () => {
    const { vectors } = clustered(2, 50, 24, 3, 1);
    const items = stored(vectors);
    const index = createVectorIndex(0);
    expect(index.search(vectors[0]!, 5, -1)).toEqual([]);
    index.add([...items, { ref: 999, createdMs: 0, scale: 1, vector: new Int8Array(25) }]);
    expect(index.size).toBe(50);
    expect(index.search(vectors[3]!, 5, -1)).toEqual(reference(items, vectors[3]!, 5, -1));
    expect(index.search(vectors[3]!, 0, -1)).toEqual([]);
  });
});
