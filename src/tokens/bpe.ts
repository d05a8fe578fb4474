/**
 * Byte-pair encoding in O(n log n), counting exactly what gpt-tokenizer and js-tiktoken count.
 *
 * Both packages merge a pre-tokenizer chunk by rescanning every adjacent pair for the lowest rank after each merge:
 * quadratic in the chunk's length, and one chunk can be a whole message ('z' repeated, 'é' repeated, a run of
 * kana or of DNA letters: 100,000 characters took 7 to 18 seconds). Here the same merges are made in the same
 * order, tiktoken's (lowest rank first, the leftmost pair on ties), with a min-heap of the adjacent pairs keyed by
 * (rank, position) and a linked list of the parts: each merge is O(log n) and changes two pairs only.
 *
 * Splitting a long chunk into pieces and summing their counts is not exact (and not an upper bound: a merge can
 * cross the cut and so can a cut lower the count), so nothing here splits: every chunk is the package's own.
 */

/** The mergeable ranks of one encoding as one package sees them, and that package's pre-tokenizer. */
export interface RankTable {
  /** The package's pre-tokenizer (global, unicode). */
  readonly split: RegExp;
  /** Each token's UTF-8 bytes as a binary string (one character per byte, 0–255) to its rank. */
  readonly ranks: ReadonlyMap<string, number>;
  /** The longest key in `ranks`, in bytes, plus a margin: longer byte runs are never one token. */
  readonly maxKeyBytes: number;
  /**
   * gpt-tokenizer's lookups: it looks merged bytes up by decoding them (a TextDecoder, which drops a leading
   * byte-order mark) when they are valid UTF-8, and a whole chunk by its string (so a chunk holding a lone
   * surrogate is never one token). js-tiktoken looks bytes up as they are.
   */
  readonly quirks: 'gpt-tokenizer' | 'js-tiktoken';
}

const BOM0 = 0xef;
const BOM1 = 0xbb;
const BOM2 = 0xbf;
const NO_RANK = -1;
/** Rank multiplier of the heap keys: key = rank × 2^32 + byte position (ranks < 2^21 keep keys exact). */
const POS = 4294967296;

/** Whether a binary string is valid UTF-8, as gpt-tokenizer's `isValidUTF8` decides (no overlongs, no surrogates). */
export function isValidUtf8(b: string): boolean {
  let i = 0;
  const n = b.length;
  while (i < n) {
    const b1 = b.charCodeAt(i);
    let size: number;
    let cp: number;
    if (b1 <= 0x7f) { i++; continue; }
    if ((b1 & 0xe0) === 0xc0) { if (b1 <= 0xc1) return false; size = 2; cp = b1 & 0x1f; }
    else if ((b1 & 0xf0) === 0xe0) { size = 3; cp = b1 & 0x0f; }
    else if ((b1 & 0xf8) === 0xf0) { if (b1 > 0xf4) return false; size = 4; cp = b1 & 0x07; }
    else return false;
    if (i + size > n) return false;
    for (let j = 1; j < size; j++) {
      const c = b.charCodeAt(i + j);
      if ((c & 0xc0) !== 0x80) return false;
      cp = (cp << 6) | (c & 0x3f);
    }
    if ((size === 3 && cp < 0x800) || (size === 4 && cp < 0x10000)) return false;
    if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return false;
    i += size;
  }
  return true;
}

let scratch = new Uint8Array(1024);
const BLOCK = 8192;

/**
 * A string's UTF-8 bytes (lone surrogates as U+FFFD, as TextEncoder writes them) as a binary string, and whether
 * it held a lone surrogate. An ASCII string is its own binary string.
 */
export function utf8Binary(s: string): { bytes: string; loneSurrogate: boolean } {
  const n = s.length;
  let i = 0;
  while (i < n && s.charCodeAt(i) < 0x80) i++;
  if (i === n) return { bytes: s, loneSurrogate: false };
  if (scratch.length < n * 3) scratch = new Uint8Array(Math.max(n * 3, scratch.length * 2));
  const out = scratch;
  let o = 0;
  for (let k = 0; k < i; k++) out[o++] = s.charCodeAt(k);
  let lone = false;
  for (; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) { out[o++] = c; continue; }
    if (c < 0x800) { out[o++] = 0xc0 | (c >> 6); out[o++] = 0x80 | (c & 0x3f); continue; }
    if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < n ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        out[o++] = 0xf0 | (c >> 18); out[o++] = 0x80 | ((c >> 12) & 0x3f); out[o++] = 0x80 | ((c >> 6) & 0x3f); out[o++] = 0x80 | (c & 0x3f);
        continue;
      }
      lone = true;
      c = 0xfffd;
    }
    out[o++] = 0xe0 | (c >> 12); out[o++] = 0x80 | ((c >> 6) & 0x3f); out[o++] = 0x80 | (c & 0x3f);
  }
  let bytes = '';
  for (let k = 0; k < o; k += BLOCK) {
    bytes += String.fromCharCode.apply(null, out.subarray(k, Math.min(o, k + BLOCK)) as unknown as number[]);
  }
  return { bytes, loneSurrogate: lone };
}

/** Chunks up to this many bytes are merged by rescanning (tiktoken's own loop, faster when short). */
const SMALL = 24;
/** Chunks up to this many characters have their counts cached, as the packages cache their merges. */
const CACHED_CHUNK = 128;
const CHUNK_CACHE = 20_000;

/** Merges a chunk's bytes and returns how many parts are left. */
type Merge = (s: string) => number;

/** The rank merging bytes [a, b) of `s` would give, or NO_RANK. */
type RankOf = (s: string, a: number, b: number) => number;

/** How `table`'s package looks merged bytes up: as they are, or (gpt-tokenizer) decoded first. */
function rankLookup(table: RankTable): RankOf {
  const { ranks, maxKeyBytes } = table;
  const gpt = table.quirks === 'gpt-tokenizer';
  return (s: string, a: number, b: number): number => {
    if (b - a > maxKeyBytes) return NO_RANK;
    const key = s.slice(a, b);
    // gpt-tokenizer decodes valid UTF-8 with a TextDecoder before its lookup, which drops a leading BOM.
    if (gpt && key.charCodeAt(0) === BOM0 && key.charCodeAt(1) === BOM1 && key.charCodeAt(2) === BOM2 && isValidUtf8(key)) {
      return ranks.get(key.slice(3)) ?? NO_RANK;
    }
    return ranks.get(key) ?? NO_RANK;
  };
}

/** Parts left after tiktoken's merge loop, rescanning (for short chunks). */
function mergeSmall(s: string, rankOf: RankOf): number {
  const n = s.length;
  const starts: number[] = [];
  const pr: number[] = [];
  for (let i = 0; i <= n; i++) starts.push(i);
  for (let i = 0; i < n - 1; i++) pr.push(rankOf(s, i, i + 2));
  // pr[i] is the rank of merging part i with part i + 1.
  while (pr.length > 0) {
    let best = -1;
    let bestRank = NO_RANK;
    for (let i = 0; i < pr.length; i++) {
      const r = pr[i]!;
      if (r !== NO_RANK && (bestRank === NO_RANK || r < bestRank)) { bestRank = r; best = i; }
    }
    if (best < 0) break;
    starts.splice(best + 1, 1);
    pr.splice(best, 1);
    if (best < pr.length) pr[best] = rankOf(s, starts[best]!, starts[best + 2]!);
    if (best > 0) pr[best - 1] = rankOf(s, starts[best - 1]!, starts[best + 1]!);
  }
  return starts.length - 1;
}

/** Parts left after the same merges, with a heap (O(n log n)); its scratch is grown to the longest chunk seen. */
function createHeapMerge(rankOf: RankOf): Merge {
  let next = new Int32Array(0);
  let prev = new Int32Array(0);
  let pairRank = new Int32Array(0);
  let heap = new Float64Array(0);

  return (s: string): number => {
    const n = s.length;
    if (next.length < n + 1) {
      const size = Math.max(n + 1, next.length * 2);
      next = new Int32Array(size);
      prev = new Int32Array(size);
      pairRank = new Int32Array(size);
      heap = new Float64Array(size * 3);
    }
    let size = 0;
    const push = (key: number): void => {
      let i = size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        const p = heap[parent]!;
        if (p <= key) break;
        heap[i] = p;
        i = parent;
      }
      heap[i] = key;
    };
    const pop = (): number => {
      const top = heap[0]!;
      const last = heap[--size]!;
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= size) break;
        if (c + 1 < size && heap[c + 1]! < heap[c]!) c++;
        if (heap[c]! >= last) break;
        heap[i] = heap[c]!;
        i = c;
      }
      heap[i] = last;
      return top;
    };
    for (let i = 0; i < n; i++) { next[i] = i + 1; prev[i] = i - 1; }
    for (let i = 0; i < n - 1; i++) {
      const r = rankOf(s, i, i + 2);
      pairRank[i] = r;
      if (r !== NO_RANK) push(r * POS + i);
    }
    pairRank[n - 1] = NO_RANK;
    let parts = n;
    while (size > 0) {
      const key = pop();
      const r = Math.floor(key / POS);
      const i = key - r * POS;
      // Stale: the part at i merged leftwards (its rank is NO_RANK) or its right neighbour changed.
      if (pairRank[i] !== r) continue;
      const j = next[i]!;
      const k = next[j]!;
      next[i] = k;
      if (k < n) prev[k] = i;
      pairRank[j] = NO_RANK;
      parts--;
      const right = k < n ? rankOf(s, i, next[k]!) : NO_RANK;
      pairRank[i] = right;
      if (right !== NO_RANK) push(right * POS + i);
      const p = prev[i]!;
      if (p >= 0) {
        const left = rankOf(s, p, k);
        pairRank[p] = left;
        if (left !== NO_RANK) push(left * POS + p);
      }
    }
    return parts;
  };
}

/**
 * A counter of tokens that equals the package's count on every text, in O(n log n) on any text. `table` is the
 * package's own ranks and pre-tokenizer; special-token text is plain text (no special token is allowed).
 */
export function createBpeCounter(table: RankTable): (text: string) => number {
  const { ranks } = table;
  const gpt = table.quirks === 'gpt-tokenizer';
  const split = new RegExp(table.split.source, table.split.flags.includes('g') ? table.split.flags : `${table.split.flags}g`);
  const cache = new Map<string, number>();
  const rankOf = rankLookup(table);
  const mergeHeap = createHeapMerge(rankOf);

  const countChunk = (chunk: string): number => {
    const { bytes, loneSurrogate } = utf8Binary(chunk);
    const n = bytes.length;
    if (n <= 1) return n;
    // A chunk that is one token (gpt-tokenizer looks the string up: a lone surrogate never matches).
    if (!(gpt && loneSurrogate) && ranks.has(bytes)) return 1;
    return n <= SMALL ? mergeSmall(bytes, rankOf) : mergeHeap(bytes);
  };

  return (text: string): number => {
    let total = 0;
    split.lastIndex = 0;
    for (let m = split.exec(text); m !== null; m = split.exec(text)) {
      const chunk = m[0];
      if (chunk.length === 0) { split.lastIndex++; continue; }
      if (chunk.length > CACHED_CHUNK) { total += countChunk(chunk); continue; }
      let c = cache.get(chunk);
      if (c === undefined) {
        c = countChunk(chunk);
        if (cache.size >= CHUNK_CACHE) cache.delete(cache.keys().next().value as string);
        cache.set(chunk, c);
      }
      total += c;
    }
    return total;
  };
}

const binaryCache = new WeakMap<object, RankTable>();

/**
 * gpt-tokenizer's ranks (an array: rank → the token's text, or its bytes when they are not valid UTF-8) as a
 * table, built once per array. Entries stored as bytes that are valid UTF-8 (a leading BOM) are left out: the
 * package never finds them either.
 */
export function gptTokenizerTable(bpe: readonly (string | readonly number[])[], split: RegExp): RankTable {
  const known = binaryCache.get(bpe);
  if (known) return known;
  const ranks = new Map<string, number>();
  let max = 0;
  bpe.forEach((value, rank) => {
    let key: string;
    if (typeof value === 'string') {
      key = utf8Binary(value).bytes;
    } else {
      key = String.fromCharCode(...value);
      if (isValidUtf8(key)) return;
    }
    ranks.set(key, rank);
    if (key.length > max) max = key.length;
  });
  const table: RankTable = { split, ranks, maxKeyBytes: max + 3, quirks: 'gpt-tokenizer' };
  binaryCache.set(bpe, table);
  return table;
}

/** js-tiktoken's ranks (its `bpe_ranks` text: lines of `name offset base64 base64 …`) as a table, once per object. */
export function jsTiktokenTable(data: { pat_str: string; bpe_ranks: string }): RankTable {
  const known = binaryCache.get(data);
  if (known) return known;
  // As js-tiktoken builds it: an object keyed by the base64 text (a later duplicate wins), then its entries.
  const byBase64: Record<string, number> = {};
  for (const line of data.bpe_ranks.split('\n')) {
    if (!line) continue;
    const [, offsetText, ...tokens] = line.split(' ');
    const offset = Number.parseInt(offsetText!, 10);
    tokens.forEach((token, i) => { byBase64[token] = offset + i; });
  }
  const ranks = new Map<string, number>();
  let max = 0;
  for (const [token, rank] of Object.entries(byBase64)) {
    const key = atob(token);
    ranks.set(key, rank);
    if (key.length > max) max = key.length;
  }
  const table: RankTable = { split: new RegExp(data.pat_str, 'ug'), ranks, maxKeyBytes: max, quirks: 'js-tiktoken' };
  binaryCache.set(data, table);
  return table;
}
