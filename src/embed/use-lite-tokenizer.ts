/**
 * The Universal Sentence Encoder Lite tokenizer (SentencePiece unigram, Viterbi over a trie of the vocabulary).
 *
 * Ported from `@energetic-ai/embeddings` 0.2.0 (Apache-2.0, © Jonathan Wilde), itself derived from TensorFlow.js
 * models' `universal-sentence-encoder` (Apache-2.0, © Google LLC). Same ids for the same text; changed: the prefix
 * search walks the trie from an index instead of copying the rest of the string at every position (quadratic on long
 * turns), and the lattice is arrays instead of objects keyed by position. That package is not a dependency because it
 * loads `@energetic-ai/core`, a Node-only TF.js bundle (fs, worker_threads); pagewise runs the same graph on TF.js in
 * Node and in the browser worker.
 */

/** `[piece, log-probability]` pairs; the first six entries are reserved symbols. */
export type UseVocabulary = ReadonlyArray<readonly [string, number]>;

interface TrieNode {
  children: Map<string, TrieNode>;
  /** Vocabulary index when a piece ends here, else -1. */
  index: number;
  score: number;
  length: number;
}

const SEPARATOR = '\u2581';
const RESERVED = 6;

function node(length: number): TrieNode {
  return { children: new Map(), index: -1, score: 0, length };
}

export function createUseTokenizer(vocabulary: UseVocabulary) {
  const root = node(0);
  for (let i = RESERVED; i < vocabulary.length; i++) {
    let n = root;
    const symbols = [...vocabulary[i]![0]];
    for (const s of symbols) {
      let next = n.children.get(s);
      if (!next) { next = node(n.length + 1); n.children.set(s, next); }
      n = next;
    }
    n.index = i;
    n.score = vocabulary[i]![1];
  }

  return {
    /** Token ids of `text` (NFKC, spaces as ▁), consecutive unknowns merged into one 0. */
    encode(text: string): number[] {
      const normalized = text.normalize('NFKC');
      const symbols = normalized.length > 0 ? [...(SEPARATOR + normalized.replace(/ /g, SEPARATOR))] : [];
      const n = symbols.length;
      // ends[e] = the pieces ending at e, as [start, index, score].
      const ends: Array<Array<[number, number, number]>> = Array.from({ length: n + 1 }, () => []);
      for (let i = 0; i < n; i++) {
        let t = root.children.get(symbols[i]!);
        let found = false;
        for (let j = i; j < n && t; j++) {
          if (t.index >= 0) { ends[j + 1]!.push([i, t.index, t.score]); found = true; }
          t = t.children.get(symbols[j + 1]!);
        }
        if (!found) ends[i + 1]!.push([i, 0, 0]);
      }
      const best = new Float64Array(n + 1);
      const words = new Int32Array(n + 1);
      const lengths = new Int32Array(n + 1);
      for (let e = 0; e <= n; e++) {
        // The original visits start positions in ascending order (object keys) and keeps the last of equal scores.
        const pieces = ends[e]!.sort((a, b) => a[0] - b[0]);
        for (const [start, index, score] of pieces) {
          const total = score + best[start]!;
          if (best[e] === 0 || total >= best[e]!) {
            best[e] = total;
            words[e] = index;
            lengths[e] = e - start;
          }
        }
      }
      const ids: number[] = [];
      for (let e = n; e > 0; e -= lengths[e]! || 1) ids.push(words[e]!);
      const merged: number[] = [];
      let previousUnknown = false;
      for (const id of ids) {
        if (!(previousUnknown && id === 0)) merged.push(id);
        previousUnknown = id === 0;
      }
      return merged.reverse();
    },
  };
}

export type UseTokenizer = ReturnType<typeof createUseTokenizer>;
