import { PagewiseError } from '../contracts/errors.js';
import { createBpeCounter, gptTokenizerTable } from './bpe.js';
import type { EncodingName, Tokenizer, TokenizerOption } from '../contracts/types.js';

/** What picks a tokenizer: the implementation, the encoding, and whether counts are estimates. */
export interface TokenizerChoice {
  tokenizer: TokenizerOption;
  encoding: EncodingName;
  /** Multiplier applied to counts when the model is unknown; 1 when exact. */
  margin: number;
}

const O200K = /^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|chatgpt-4o|o1|o3|o4)/i;
const CL100K = /^(gpt-4|gpt-3\.5|text-embedding-3|text-embedding-ada)/i;

/**
 * The encoding a model counts with, or `null` when the model is unknown (then counts are an o200k_base estimate
 * with a safety margin: tokenizers of other vendors differ by tens of percent).
 */
export function encodingForModel(model: string): EncodingName | null {
  if (O200K.test(model)) return 'o200k_base';
  if (CL100K.test(model)) return 'cl100k_base';
  return null;
}

/**
 * Texts up to this many characters are counted by gpt-tokenizer itself; longer ones by `createBpeCounter` over the
 * package's own ranks and pre-tokenizer (same count, O(n log n)). The package rescans a chunk for its lowest-ranked
 * pair after every merge: measured on one chunk of N characters (the worst case of a text of N characters), at 256
 * both take ≤ 1.5 ms, at 512 the package takes up to 7 ms (kana) against 0.5 ms, at 4,096 up to 120 ms against
 * 3.6 ms, at 100,000 6–26 s (o200k_base; cl100k_base up to 119 s) against 0.05 s. On ordinary text the linear
 * counter is as fast or faster (1 MiB of prose: 0.29 s against 0.10 s), so above the threshold it counts every
 * text, without a second pass to find long chunks. Below it the package's encoder, already loaded, counts, and the linear counter's table (one Map of
 * 200,000 entries, ~0.2 s to build) is only built once a long text comes.
 */
const PACKAGE_MAX_CHARS = 256;

// Both packages throw on text that looks like a special token (`<|endoftext|>`); user text is plain text. The
// linear counter allows no special token either.
async function loadGptTokenizer(encoding: EncodingName): Promise<(text: string) => number> {
  const o200k = encoding === 'o200k_base';
  const [mod, ranks, params] = await Promise.all([
    o200k ? import('gpt-tokenizer/encoding/o200k_base') : import('gpt-tokenizer/encoding/cl100k_base'),
    // The same module the encoding imports: no second copy of the ranks.
    o200k ? import('gpt-tokenizer/bpeRanks/o200k_base') : import('gpt-tokenizer/bpeRanks/cl100k_base'),
    import('gpt-tokenizer/encodingParams/constants'),
  ]);
  const options = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };
  let linear: ((text: string) => number) | null = null;
  return (text) => {
    if (text.length <= PACKAGE_MAX_CHARS) return mod.countTokens(text, options);
    linear ??= createBpeCounter(gptTokenizerTable(ranks.default, o200k ? params.O200K_TOKEN_SPLIT_REGEX : params.CL100K_TOKEN_SPLIT_REGEX));
    return linear(text);
  };
}

/** Loads a tokenizer package's counter for an encoding. */
export type TokenizerPackage = (encoding: EncodingName) => Promise<(text: string) => number>;

// gpt-tokenizer (the default) always; js-tiktoken where an entry registers it (pagewise, pagewise/node, the worker):
// pagewise/edge leaves it out, so that a Worker's bundle does not carry a second copy of the encodings' ranks.
const packages: Partial<Record<'gpt-tokenizer' | 'js-tiktoken', TokenizerPackage>> = { 'gpt-tokenizer': loadGptTokenizer };

/** Makes `tokenizer: name` available (the entries that carry js-tiktoken call it). */
export function registerTokenizerPackage(name: 'js-tiktoken', load: TokenizerPackage): void {
  packages[name] = load;
}

/**
 * Makes the tokenizer once, loading its package lazily. Counts are exact (the package's own numbers) and take
 * O(n log n) on any text (see `bpe.ts`). Counting short texts is the hot path, so counts of the same text are cached
 * (bounded).
 */
export async function createTokenizer(choice: TokenizerChoice): Promise<Tokenizer> {
  const { tokenizer, encoding, margin } = choice;
  if (typeof tokenizer === 'object') return tokenizer;
  let countRaw: (text: string) => number;
  try {
    const load = packages[tokenizer];
    if (!load) {
      throw new PagewiseError('INVALID_OPTIONS', 'tokens', `The ${tokenizer} tokenizer is not in this build (pagewise/edge carries gpt-tokenizer only): use tokenizer: 'gpt-tokenizer', or import pagewise's main entry.`);
    }
    countRaw = await load(encoding);
  } catch (cause) {
    if (cause instanceof PagewiseError) throw cause;
    throw new PagewiseError('INVALID_OPTIONS', 'tokens', `Could not load the ${tokenizer} tokenizer for ${encoding}: is the package installed?`, { cause });
  }
  const exact = margin === 1;
  const cache = new Map<string, number>();
  return {
    name: tokenizer,
    encoding,
    exact,
    cacheKey: exact ? encoding : `${encoding}*${margin}`,
    count(text: string): number {
      if (text.length === 0) return 0;
      const hit = cache.get(text);
      if (hit !== undefined) return hit;
      const raw = countRaw(text);
      const n = exact ? raw : Math.ceil(raw * margin);
      if (text.length <= 4096) {
        if (cache.size >= 4096) cache.delete(cache.keys().next().value as string);
        cache.set(text, n);
      }
      return n;
    },
  };
}
