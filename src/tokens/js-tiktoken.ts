import { createBpeCounter, jsTiktokenTable } from './bpe.js';
import { registerTokenizerPackage } from './tokenizer.js';
import type { EncodingName } from '../contracts/types.js';

/**
 * js-tiktoken's own encoder is never faster than the linear counter over its ranks (100 characters of prose: 230 µs
 * against 9 µs; 3,000 × 'é': 3.6 s against 1.6 ms) and takes longer to build (2.3 s to the first count against
 * 0.8 s), so only its ranks and pre-tokenizer are loaded and every text is counted by `createBpeCounter` (the same
 * count: tested).
 */
export async function loadJsTiktoken(encoding: EncodingName): Promise<(text: string) => number> {
  const ranks = encoding === 'o200k_base'
    ? (await import('js-tiktoken/ranks/o200k_base')).default
    : (await import('js-tiktoken/ranks/cl100k_base')).default;
  let linear: ((text: string) => number) | null = null;
  return (text) => (linear ??= createBpeCounter(jsTiktokenTable(ranks)))(text);
}

/** Makes `tokenizer: 'js-tiktoken'` available (the main entry, pagewise/node and the worker call it; pagewise/edge does not). */
export function useJsTiktoken(): void {
  registerTokenizerPackage('js-tiktoken', loadJsTiktoken);
}
