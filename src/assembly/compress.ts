import type { CompressionKind, Tokenizer } from '../contracts/types.js';
import { quote, stemsOf } from './passages.js';

/**
 * Progressive compression of one large text (seed 002), lossless steps first: whitespace, then format simplification
 * (JSON minified, tables of like objects as rows, comment-only and blank lines of code dropped), then selective
 * inclusion (the lines or sentences about the question), and only then truncation. Stops at the first level that
 * fits `maxTokens`.
 */
export function compressText(text: string, maxTokens: number, focus: ReadonlySet<string>, tokenizer: Tokenizer): { text: string; level: CompressionKind | null } {
  if (tokenizer.count(text) <= maxTokens) return { text, level: null };
  const spaced = text.replace(/[ \t]+/g, ' ').replace(/ ?\n ?/g, '\n').replace(/\n{3,}/g, '\n\n').trim();
  if (tokenizer.count(spaced) <= maxTokens) return { text: spaced, level: 'whitespace' };
  const formatted = simplify(spaced);
  if (tokenizer.count(formatted) <= maxTokens) return { text: formatted, level: 'format' };
  const selected = select(formatted, maxTokens, focus, tokenizer);
  if (selected !== null) return { text: selected, level: 'selective' };
  return { text: truncate(formatted, maxTokens, tokenizer), level: 'truncated' };
}

/** JSON minified (an array of like objects as a header row and value rows); code without comment-only or blank lines. */
function simplify(text: string): string {
  const trimmed = text.trim();
  if (/^[[{]/.test(trimmed)) {
    try {
      const value = JSON.parse(trimmed) as unknown;
      if (Array.isArray(value) && value.length > 1 && value.every((v) => typeof v === 'object' && v !== null && !Array.isArray(v))) {
        const keys = [...new Set(value.flatMap((v) => Object.keys(v as object)))];
        const cell = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v) ?? '');
        return [keys.join(' | '), ...value.map((v) => keys.map((k) => cell((v as Record<string, unknown>)[k])).join(' | '))].join('\n');
      }
      return JSON.stringify(value);
    } catch {
      // Not JSON: fall through to code and prose.
    }
  }
  return text.replace(/```[\s\S]*?```/g, (block) => block.split('\n')
    .filter((line) => line.trim() !== '' && !/^\s*(\/\/|#(?!!)|--|\/\*|\*)/.test(line)).join('\n'));
}

/** The lines (structured text) or sentences (prose) that bear on the question, within `maxTokens`; null if none do. */
function select(text: string, maxTokens: number, focus: ReadonlySet<string>, tokenizer: Tokenizer): string | null {
  const lines = text.split('\n');
  if (lines.length < 4) {
    // Only worth it when some sentence is about the question; otherwise truncation keeps more context.
    const q = quote(text, focus, maxTokens, tokenizer);
    return q.partial && [...stemsOf(q.text)].some((w) => focus.has(w)) && tokenizer.count(q.text) <= maxTokens ? q.text : null;
  }
  const score = lines.map((l) => [...stemsOf(l)].filter((s) => focus.has(s)).length);
  const cost = lines.map((l) => tokenizer.count(l) + 1);
  const marker = '[…]';
  const chosen = new Set<number>([0]);
  let used = cost[0]! + 2 * tokenizer.count(marker);
  const ranked = lines.map((_, i) => i).filter((i) => score[i]! > 0).sort((a, b) => score[b]! - score[a]! || a - b);
  if (ranked.length === 0) return null;
  for (const i of ranked) {
    if (used + cost[i]! > maxTokens) continue;
    chosen.add(i);
    used += cost[i]!;
  }
  if (chosen.size === 1) return null;
  const order = [...chosen].sort((a, b) => a - b);
  const out: string[] = [];
  order.forEach((i, k) => {
    if (k > 0 && order[k - 1] !== i - 1) out.push(marker);
    out.push(lines[i]!);
  });
  if (order[order.length - 1] !== lines.length - 1) out.push(marker);
  const result = out.join('\n');
  return tokenizer.count(result) <= maxTokens ? result : null;
}

/** The head of `text` within `maxTokens`, cut at a character count found by bisection (never tokenized word by word). */
export function truncate(text: string, maxTokens: number, tokenizer: Tokenizer, marker = ' […truncated]'): string {
  const room = maxTokens - tokenizer.count(marker);
  if (room <= 0) return '';
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (tokenizer.count(text.slice(0, mid)) <= room) lo = mid;
    else hi = mid - 1;
  }
  return `${text.slice(0, lo)}${marker}`;
}
