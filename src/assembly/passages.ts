import { stemsOf } from '../text/fts-words.js';

export { stemsOf } from '../text/fts-words.js';
import { sentences } from '../text/sentences.js';
import type { Tokenizer } from '../contracts/types.js';

/** What a recalled turn is shown as: its text, or the passages of it that bear on the question. */
export interface Quote {
  text: string;
  /** Whether sentences were left out. */
  partial: boolean;
}

const GAP = ' […] ';


/**
 * A long turn cut to at most `maxTokens`: the sentences that share the most words with the question (`focus`, as
 * stems), then the sentences around them, in their original order with `[…]` where text was left out. A turn with
 * no matching sentence keeps its beginning. Short turns are returned whole.
 */
export function quote(text: string, focus: ReadonlySet<string>, maxTokens: number, tokenizer: Tokenizer): Quote {
  // A token is at least one character (an estimate: the final block is counted exactly).
  if (text.length <= maxTokens) return { text, partial: false };
  const parts = sentences(text);
  // Sentences are counted (and cached) one by one: a long turn is never tokenized whole.
  const cost = parts.map((p) => tokenizer.count(p));
  if (cost.reduce((a, b) => a + b, 0) <= maxTokens) return { text, partial: false };
  const score = parts.map((p) => [...stemsOf(p)].filter((s) => focus.has(s)).length);
  const gap = tokenizer.count(GAP);
  const chosen = new Set<number>();
  let used = 0;
  const take = (i: number): boolean => {
    if (i < 0 || i >= parts.length || chosen.has(i)) return false;
    if (used + cost[i]! + gap > maxTokens) return false;
    chosen.add(i);
    used += cost[i]! + gap;
    return true;
  };
  const ranked = parts.map((_, i) => i).filter((i) => score[i]! > 0).sort((a, b) => score[b]! - score[a]! || a - b);
  for (const i of ranked) take(i);
  if (chosen.size === 0) take(0);
  // Widen around what was taken, nearest first, while it fits.
  const seeds = [...chosen];
  for (let d = 1; d < parts.length && used + gap < maxTokens; d++) for (const i of seeds) { take(i + d); take(i - d); }
  if (chosen.size === 0) {
    // Not even one sentence fits: the first words that do.
    const words = text.split(/\s+/);
    let out = '';
    for (const w of words) {
      const next = out ? `${out} ${w}` : w;
      if (tokenizer.count(next) + gap > maxTokens) break;
      out = next;
    }
    return { text: `${out}${GAP.trimEnd()}`, partial: true };
  }
  const order = [...chosen].sort((a, b) => a - b);
  let out = order[0]! > 0 ? GAP.trimStart() : '';
  order.forEach((i, k) => {
    if (k > 0 && order[k - 1] !== i - 1) out = `${out.trimEnd()}${GAP}`;
    out += parts[i];
  });
  if (order[order.length - 1]! < parts.length - 1) out = `${out.trimEnd()}${GAP.trimEnd()}`;
  return { text: out.trim(), partial: true };
}
