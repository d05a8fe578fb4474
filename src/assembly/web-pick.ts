// Which web results a request carries within their share of the memory budget, each cut around the question's words.
import { quote } from './passages.js';
import { type WebResultText, renderWebResult, renderWebResults } from '../text/render.js';
import { blockTokens } from '../tokens/chat-format.js';
import type { DroppedEntry, ManifestEntry, Tokenizer } from '../contracts/types.js';

/** Web results offered to the assembler (the search step's, best first). */
export interface WebInput {
  items: readonly WebResultText[];
  /** The share of the memory budget they may take. */
  share: number;
  /** The question's words (stems): each result is cut to its passages about them. */
  focus: ReadonlySet<string>;
  /** Why they are there (the trigger), for the manifest. */
  reason: string;
}

/** One result as placed: its rendered block and what it costs in the memory block (its line break included). */
export interface ShownWeb {
  index: number;
  text: string;
  cost: number;
  partial: boolean;
}

// Below this many tokens of text a result says too little to be worth its title and URL.
const MIN_TEXT = 24;

/**
 * The results within `budget`, in rank order: each may take an even part of what is left (a short one leaves the rest
 * to those after it), its text cut to the passages that share the question's words, or its first words.
 */
export function pickWeb(web: WebInput, budget: number, tokenizer: Tokenizer): ShownWeb[] {
  const shown: ShownWeb[] = [];
  if (web.items.length === 0 || budget <= 0) return shown;
  let left = budget - blockTokens(tokenizer, renderWebResults(['']));
  web.items.forEach((item, index) => {
    const frame = tokenizer.count(renderWebResult({ ...item, text: '' })) + 1;
    // Rank first: a result whose title and URL are long still gets room for some text before those after it.
    const per = Math.min(left, Math.max(Math.floor(left / (web.items.length - index)), frame + MIN_TEXT));
    const room = per - frame;
    if (room < MIN_TEXT) return;
    const q = quote(item.text, web.focus, room, tokenizer);
    let text = q.text;
    let cost = tokenizer.count(renderWebResult({ ...item, text })) + 1;
    // quote() counts sentence by sentence; the rendered block is counted whole, and cut further if it must be.
    while (cost > per && text.length > 0) {
      text = text.slice(0, Math.floor(text.length * Math.min(0.95, per / cost))).trimEnd();
      cost = tokenizer.count(renderWebResult({ ...item, text: `${text} […]` })) + 1;
    }
    if (text.length === 0 || cost > left) return;
    const partial = q.partial || text !== q.text;
    const rendered = renderWebResult({ ...item, text: text !== q.text ? `${text} […]` : text });
    shown.push({ index, text: rendered, cost, partial });
    left -= cost;
  });
  return shown;
}

/** The results placed (manifest, first of memory) and those left out for budget (dropped). */
export function webEntries(web: WebInput, shown: readonly ShownWeb[], placement: 'message' | 'prependText', manifest: ManifestEntry[], dropped: DroppedEntry[], tokenizer: Tokenizer): void {
  web.items.forEach((item, index) => {
    const where = { url: item.url, title: item.title, provider: item.provider, ...(item.publishedAt ? { publishedAt: item.publishedAt } : {}) };
    const s = shown.find((x) => x.index === index);
    if (s) {
      manifest.push({
        kind: 'search', placement: placement === 'message' ? 'messages' : 'prependText', sourceIds: [], tokens: s.cost, scores: { rank: index + 1 },
        reason: `web result ${index + 1} of ${web.items.length} (${item.provider})${s.partial ? ', cut to its passages about the question' : ''}: ${web.reason}`, web: where,
      });
    } else {
      dropped.push({ kind: 'search', sourceIds: [], tokens: tokenizer.count(renderWebResult(item)), scores: { rank: index + 1 }, reason: 'budget', web: where });
    }
  });
}
