import { PagewiseError } from '../errors.js';
import type { EncodingName, Tokenizer, TokenizerOption } from '../types.js';

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

// Both packages throw on text that looks like a special token (`<|endoftext|>`); user text is plain text.
async function loadGptTokenizer(encoding: EncodingName): Promise<(text: string) => number> {
  const mod = encoding === 'o200k_base'
    ? await import('gpt-tokenizer/encoding/o200k_base')
    : await import('gpt-tokenizer/encoding/cl100k_base');
  const options = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };
  return (text) => mod.countTokens(text, options);
}

async function loadJsTiktoken(encoding: EncodingName): Promise<(text: string) => number> {
  const { Tiktoken } = await import('js-tiktoken/lite');
  const ranks = encoding === 'o200k_base'
    ? (await import('js-tiktoken/ranks/o200k_base')).default
    : (await import('js-tiktoken/ranks/cl100k_base')).default;
  const enc = new Tiktoken(ranks);
  return (text) => enc.encode(text, [], []).length;
}

/**
 * Makes the tokenizer once, loading its package lazily. Counting short texts is the hot path, so counts of the
 * same text are cached (bounded).
 */
export async function createTokenizer(choice: TokenizerChoice): Promise<Tokenizer> {
  const { tokenizer, encoding, margin } = choice;
  if (typeof tokenizer === 'object') return tokenizer;
  let countRaw: (text: string) => number;
  try {
    countRaw = tokenizer === 'js-tiktoken' ? await loadJsTiktoken(encoding) : await loadGptTokenizer(encoding);
  } catch (cause) {
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
