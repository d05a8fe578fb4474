import type { StoredVector } from './vector-store.js';

export interface VectorHit {
  ref: number;
  score: number;
}

export interface SearchFilter {
  /** Refs left out (turns already in the context). */
  exclude?: ReadonlySet<number>;
  /** Only vectors whose time lies in [fromMs, toMs]. */
  window?: { fromMs: number; toMs: number };
}

// Vectors scored both ways (a strided sample of all stored ones) to learn, per query, how far the 1-bit estimates
// stray from the exact scores: 128 residuals give their standard deviation within about 6%.
const SAMPLE = 128;
// The rescoring margin in those standard deviations. The residuals are close to normal and barely depend on the
// score (0.037–0.039 from cosine −0.2 to 0.6 on MiniLM vectors; the largest among 1,000 true top-10 members of real
// questions at 100,000 vectors was 2.6σ): a true top-k member is left out with odds of about 3e-5.
const MARGIN_Z = 4;
// The index path always scores SAMPLE + 2·limit vectors exactly, about as many again inside the margin, and pays a
// 1-bit estimate per vector (a tenth of an exact score at 384-d). Below a few times that fixed work it saves well
// under a millisecond (measured crossover at 384-d: about 500 vectors, for limit 10 and 48 alike), so the exact
// scan, which has no estimation error at all, takes those: up to 4 × (SAMPLE + 2·limit) eligible vectors.
const INDEX_ABOVE = 4;

/**
 * The stored vectors as columns (struct of arrays, grown by doubling): int8 components, scale, ref and time of
 * each, and beside them its sign bits (bit j & 31 of word j >> 5 set when component j > 0; padding bits 0) and
 * 1/|x|₁ of the stored (dequantized) vector. `dims` is 0 until learned from the first vector (remote embedders know
 * their width only after the first reply); codeWords is learned with it.
 */
class VectorColumns {
  dims: number;
  codeWords: number;
  capacity = 0;
  count = 0;
  data = new Int8Array(0);
  scales = new Float32Array(0);
  refs = new Int32Array(0);
  times = new Float64Array(0);
  codes = new Uint32Array(0);
  inverseL1 = new Float32Array(0);
  readonly position = new Map<number, number>();

  constructor(dims: number) {
    this.dims = dims;
    this.codeWords = Math.ceil(dims / 32);
  }

  /** Learns the width from the first vector, when it was not given. */
  learn(vectors: readonly StoredVector[]): void {
    if (this.dims === 0 && vectors.length > 0) {
      this.dims = vectors[0]!.vector.length;
      this.codeWords = Math.ceil(this.dims / 32);
    }
  }

  /** Room for `need` vectors; true when the columns were reallocated. */
  grow(need: number): boolean {
    if (need <= this.capacity) return false;
    const capacity = this.capacity = Math.max(need, this.capacity * 2, 64);
    const d = new Int8Array(capacity * this.dims); d.set(this.data); this.data = d;
    const s = new Float32Array(capacity); s.set(this.scales); this.scales = s;
    const r = new Int32Array(capacity); r.set(this.refs); this.refs = r;
    const t = new Float64Array(capacity); t.set(this.times); this.times = t;
    const c = new Uint32Array(capacity * this.codeWords); c.set(this.codes); this.codes = c;
    const l = new Float32Array(capacity); l.set(this.inverseL1); this.inverseL1 = l;
    return true;
  }

  /** Stores `v` (replacing its ref's vector, if any); a vector of another width is skipped. */
  put(v: StoredVector): void {
    if (v.vector.length !== this.dims) return;
    const at = this.position.get(v.ref) ?? this.count++;
    this.position.set(v.ref, at);
    this.data.set(v.vector, at * this.dims);
    this.scales[at] = v.scale;
    this.refs[at] = v.ref;
    this.times[at] = v.createdMs;
    this.encode(at);
  }

  private encode(at: number): void {
    const { dims, codeWords, data, codes } = this;
    const base = at * dims;
    const code = at * codeWords;
    codes.fill(0, code, code + codeWords);
    let l1 = 0;
    for (let j = 0; j < dims; j++) {
      const v = data[base + j]!;
      if (v > 0) codes[code + (j >> 5)]! |= 1 << (j & 31);
      l1 += Math.abs(v);
    }
    l1 *= this.scales[at]!;
    this.inverseL1[at] = l1 > 0 ? 1 / l1 : 0;
  }

  /** The exact int8 score. The exact scan and the rescoring share it, so both give a vector the same score. */
  dot(query: Float32Array, i: number): number {
    const d = this.dims;
    const data = this.data;
    // Four accumulators: V8 pipelines them (~1.7× a single sum at 512-d); the tail handles widths not divisible by 4.
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
    return (s0 + s1 + s2 + s3) * this.scales[i]!;
  }

  /** The 1-bit estimate of vector i's score, with the query's lookup tables (see queryTables). */
  estimate(tables: Float32Array, i: number): number {
    const nw = this.codeWords;
    const codes = this.codes;
    const c = i * nw;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (let w = 0; w < nw; w++) {
      const x = codes[c + w]!;
      const t = w << 10;
      s0 += tables[t | (x & 255)]!;
      s1 += tables[t | 256 | ((x >>> 8) & 255)]!;
      s2 += tables[t | 512 | ((x >>> 16) & 255)]!;
      s3 += tables[t | 768 | (x >>> 24)]!;
    }
    return (s0 + s1 + s2 + s3) * this.inverseL1[i]!;
  }
}

/**
 * Per-search scratch, reused: eligible positions, their estimates, a generation stamp per position (excluded or
 * already rescored in the current search) and the query's lookup tables.
 */
class SearchScratch {
  eligible = new Int32Array(0);
  estimates = new Float32Array(0);
  stamps = new Uint32Array(0);
  generation = 0;
  tables = new Float32Array(0);

  /** Fresh scratch for `capacity` positions (after the columns grew). */
  resize(capacity: number): void {
    this.eligible = new Int32Array(capacity);
    this.estimates = new Float32Array(capacity);
    this.stamps = new Uint32Array(capacity);
    this.generation = 0;
  }

  nextGeneration(): number {
    this.generation = (this.generation + 1) >>> 0;
    if (this.generation === 0) { this.stamps.fill(0); this.generation = 1; }
    return this.generation;
  }

  /**
   * tables[b·256 + p] = Σ over the 8 components j of byte b (components 8b…8b+7: byte b & 3 of word b >> 2) of ±q_j
   * (+ where p has j's bit set): Σ_j q_j·sign(x_j) is then one lookup per code byte. Padding components count as 0.
   */
  queryTables(query: Float32Array, codeWords: number): Float32Array {
    if (this.tables.length !== codeWords * 1024) this.tables = new Float32Array(codeWords * 1024);
    const tables = this.tables;
    for (let b = 0; b < codeWords * 4; b++) {
      const t = b << 8;
      let none = 0;
      for (let k = 0; k < 8; k++) none -= query[b * 8 + k] ?? 0;
      tables[t] = none;
      for (let p = 1; p < 256; p++) {
        const low = p & -p;
        tables[t + p] = tables[t + (p ^ low)]! + 2 * (query[b * 8 + 31 - Math.clz32(low)] ?? 0);
      }
    }
    return tables;
  }
}

/** Hits at or above the floor; keeps the best `limit` (score, then ref, descending) once it holds 4×limit. */
function collector(refs: Int32Array, limit: number, threshold: number) {
  const hits: VectorHit[] = [];
  let floor = threshold;
  const order = (a: VectorHit, b: VectorHit) => b.score - a.score || b.ref - a.ref;
  return {
    offer(i: number, score: number): void {
      if (score < floor) return;
      hits.push({ ref: refs[i]!, score });
      if (hits.length >= limit * 4) {
        hits.sort(order);
        hits.length = limit;
        floor = hits[limit - 1]!.score;
      }
    },
    /** The limit-th best score so far, or the threshold while fewer hits are held. */
    kth(): number {
      if (hits.length < limit) return threshold;
      hits.sort(order);
      hits.length = limit;
      return (floor = hits[limit - 1]!.score);
    },
    result(): VectorHit[] { return hits.sort(order).slice(0, limit); },
  };
}

/**
 * Estimates every eligible vector (into `scratch.estimates`, by slot) and returns the slots of the best `short`
 * estimates (a min-heap: order unspecified).
 */
function shortlist(columns: VectorColumns, scratch: SearchScratch, tab: Float32Array, m: number, short: number): Int32Array {
  // Shortlist heap (min at the root) of the best `short` estimates: slots in `eligible` order.
  const heapKey = new Float64Array(short);
  const heapAt = new Int32Array(short);
  let heapSize = 0;
  const bits = columns.codes, inv = columns.inverseL1, nw = columns.codeWords, el = scratch.eligible, out = scratch.estimates;
  for (let e = 0; e < m; e++) {
    const i = el[e]!;
    // estimate(i), inlined: the hot loop. Reading words and splitting bytes out beats four byte reads by ~8%.
    const c = i * nw;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (let w = 0; w < nw; w++) {
      const x = bits[c + w]!;
      const t = w << 10;
      s0 += tab[t | (x & 255)]!;
      s1 += tab[t | 256 | ((x >>> 8) & 255)]!;
      s2 += tab[t | 512 | ((x >>> 16) & 255)]!;
      s3 += tab[t | 768 | (x >>> 24)]!;
    }
    const est = (s0 + s1 + s2 + s3) * inv[i]!;
    out[e] = est;
    if (heapSize < short) {
      let k = heapSize++;
      while (k > 0) {
        const parent = (k - 1) >> 1;
        if (heapKey[parent]! <= est) break;
        heapKey[k] = heapKey[parent]!; heapAt[k] = heapAt[parent]!; k = parent;
      }
      heapKey[k] = est; heapAt[k] = e;
    } else if (est > heapKey[0]!) {
      let k = 0;
      for (;;) {
        let child = 2 * k + 1;
        if (child >= short) break;
        if (child + 1 < short && heapKey[child + 1]! < heapKey[child]!) child++;
        if (heapKey[child]! >= est) break;
        heapKey[k] = heapKey[child]!; heapAt[k] = heapAt[child]!; k = child;
      }
      heapKey[k] = est; heapAt[k] = e;
    }
  }
  return heapAt.subarray(0, heapSize);
}

/** How far estimates stray from exact scores for this query: bias and spread of the residuals on a strided sample. */
function residuals(columns: VectorColumns, query: Float32Array, tables: Float32Array): { bias: number; spread: number } {
  const count = columns.count;
  const step = Math.max(1, Math.floor(count / SAMPLE));
  let n = 0, sum = 0, squares = 0;
  for (let i = 0; i < count; i += step) {
    const r = columns.dot(query, i) - columns.estimate(tables, i);
    n++; sum += r; squares += r * r;
  }
  const bias = sum / n;
  return { bias, spread: Math.sqrt(Math.max(0, squares / n - bias * bias)) };
}

/** The indexed search over the `m` eligible slots (see createVectorIndex); `gen` stamps what is rescored. */
function searchIndexed(columns: VectorColumns, scratch: SearchScratch, query: Float32Array, m: number, limit: number, threshold: number, gen: number): VectorHit[] {
  const tables = scratch.queryTables(query, columns.codeWords);
  const heap = shortlist(columns, scratch, tables, m, Math.min(m, 2 * limit));
  const { bias, spread } = residuals(columns, query, tables);
  const { eligible, estimates, stamps } = scratch;

  const hits = collector(columns.refs, limit, threshold);
  for (let h = 0; h < heap.length; h++) {
    const i = eligible[heap[h]!]!;
    stamps[i] = gen;
    hits.offer(i, columns.dot(query, i));
  }
  // The k-th best exact score so far is at most the true k-th: any vector that could beat it has an estimate of
  // at least kth − bias − MARGIN_Z·spread.
  // (Less a hair for the estimates' float32 rounding: with no spread at all, ties at the k-th score stay in.)
  const cut = hits.kth() - bias - MARGIN_Z * spread - 1e-6;
  for (let e = 0; e < m; e++) {
    if (estimates[e]! < cut) continue;
    const i = eligible[e]!;
    if (stamps[i] === gen) continue;
    hits.offer(i, columns.dot(query, i));
  }
  return hits.result();
}

/**
 * Filters first: the eligible positions into `scratch.eligible` (returns how many), excluded refs stamped with `gen`
 * (by position) unless the set outgrows the index.
 */
function filterEligible(columns: VectorColumns, scratch: SearchScratch, filter: SearchFilter, gen: number): number {
  const { count, refs, times, position } = columns;
  const { stamps, eligible } = scratch;
  const exclude = filter.exclude;
  const stampExcluded = exclude !== undefined && exclude.size <= count;
  if (stampExcluded) for (const ref of exclude) { const p = position.get(ref); if (p !== undefined) stamps[p] = gen; }
  const window = filter.window;
  let m = 0;
  for (let i = 0; i < count; i++) {
    if (stampExcluded ? stamps[i] === gen : exclude?.has(refs[i]!)) continue;
    if (window && (times[i]! < window.fromMs || times[i]! > window.toMs)) continue;
    eligible[m++] = i;
  }
  return m;
}

/**
 * One conversation's vectors in memory for cosine search (unit vectors, int8 with one scale each; the query stays
 * Float32). Filters first, then the top `limit` at or above `threshold` by exact int8 score, sorted by score then
 * ref (both descending). Appended as the background queue embeds; adding a ref again replaces its vector.
 *
 * Few eligible vectors (a small index, or filters that leave few) are scanned exactly. Past that, the search runs on
 * each vector's sign bits (48 bytes at 384-d) and the reciprocal of its L1 norm, kept beside the int8 vector:
 * est = Σ q_j·sign(x_j) / |x|₁ is exact when x is parallel to q and near 0 for unrelated vectors, and tracks the
 * cosine within about 0.04 (1σ) at 384-d; with per-byte lookup tables of the query it costs dims/8 additions.
 * Then, among the eligible vectors only (so filters never thin the shortlist):
 *   1. the best 2·limit estimates are scored exactly: their limit-th best score (or the threshold, if higher or if
 *      fewer pass it) is a lower bound τ on the true limit-th best;
 *   2. every vector whose estimate reaches τ − bias − MARGIN_Z·σ (bias and σ of the residuals, measured on this
 *      query) is scored exactly, so a vector that could belong to the top is left out only when its estimate
 *      strays by more than MARGIN_Z·σ.
 * The shortlist thus adapts to the query, the filters and the threshold instead of being a tuned size. Scores are
 * always the exact int8 ones (the same arithmetic as the exact scan), so hits, threshold and order match it.
 */
export function createVectorIndex(dimensions: number) {
  const columns = new VectorColumns(dimensions);
  const scratch = new SearchScratch();
  return {
    get size() { return columns.count; },

    add(vectors: readonly StoredVector[]): void {
      columns.learn(vectors);
      if (columns.grow(columns.count + vectors.length)) scratch.resize(columns.capacity);
      for (const v of vectors) columns.put(v);
    },

    search(query: Float32Array, limit: number, threshold: number, filter: SearchFilter = {}): VectorHit[] {
      if (query.length !== columns.dims || columns.count === 0 || !(limit >= 1)) return [];
      limit = Math.floor(limit);
      const gen = scratch.nextGeneration();
      const m = filterEligible(columns, scratch, filter, gen);
      if (m > INDEX_ABOVE * (SAMPLE + 2 * limit)) return searchIndexed(columns, scratch, query, m, limit, threshold, gen);
      const hits = collector(columns.refs, limit, threshold);
      for (let e = 0; e < m; e++) { const i = scratch.eligible[e]!; hits.offer(i, columns.dot(query, i)); }
      return hits.result();
    },

    /** The exact scores of the given refs (those stored; the others are absent), for features of known candidates. */
    scores(query: Float32Array, refs: Iterable<number>): Map<number, number> {
      const out = new Map<number, number>();
      if (query.length !== columns.dims) return out;
      for (const ref of refs) { const at = columns.position.get(ref); if (at !== undefined) out.set(ref, columns.dot(query, at)); }
      return out;
    },
  };
}

export type VectorIndex = ReturnType<typeof createVectorIndex>;
