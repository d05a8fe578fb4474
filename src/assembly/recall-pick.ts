// Which recalled turns a request carries within the recall budget, and how long ones are cut to their passages.
import type { RecallBlock } from '../retrieval/retriever.js';
import type { TurnRecord } from '../store/turn-store.js';
import type { Summary, Tokenizer } from '../contracts/types.js';
import { quote } from './passages.js';
import { renderSummary, renderTurn } from '../text/render.js';

// Per excerpt: the `<excerpt>` and `</excerpt>` lines and the first turn's time stamp (an estimate: the final block
// is counted exactly).
export const EXCERPT_OVERHEAD = 18;
// The least a long recalled hit is cut to.
const HIT_FLOOR = 64;

/** How a recalled turn is shown: whole, or (long ones) cut to its passages about the question. */
export type TurnView = ((t: TurnRecord, hit: boolean) => TurnRecord) & { partial: Set<TurnRecord> };

/**
 * Long recalled turns cut to their passages about the question: a hit to at most a sixteenth of the recall budget
 * (and at least HIT_FLOOR tokens), the turns that complete it to half of that. Cut when first needed, once.
 */
export function quoter(focus: ReadonlySet<string>, budget: number, tokenizer: Tokenizer): TurnView {
  const hitMax = Math.max(HIT_FLOOR, Math.floor(budget / 16));
  const partial = new Set<TurnRecord>();
  const seen = new Map<string, TurnRecord>();
  const view = (t: TurnRecord, hit: boolean): TurnRecord => {
    const key = `${t.seq}:${hit}`;
    let shown = seen.get(key);
    if (!shown) {
      const q = quote(t.text, focus, hit ? hitMax : Math.floor(hitMax / 2), tokenizer);
      shown = q.partial ? { ...t, text: q.text } : t;
      if (q.partial) partial.add(shown);
      seen.set(key, shown);
    }
    return shown;
  };
  return Object.assign(view, { partial });
}

interface Packing {
  cost: (t: TurnRecord) => number;
  view: TurnView;
  /** Whether every one of these turns sits beside one already taken (it joins that excerpt). */
  joins: (turns: readonly TurnRecord[]) => boolean;
  tryAdd: (block: RecallBlock, raw: readonly TurnRecord[], newRun: boolean) => void;
}

/**
 * Ranked turns (blocks with a `value`) by value per token, higher tag-rule priority first: each step takes the block
 * whose probability per token is highest, counting a new excerpt's lines unless it joins one already taken — so a
 * confident head goes whole, the tail is the cheapest turns that still count, and a neighbour costs only itself.
 */
function packByValue(valued: readonly RecallBlock[], p: Packing): void {
  const priorities = [...new Set(valued.map((b) => b.priority))].sort((a, b) => b - a);
  for (const priority of priorities) {
    const left = valued.filter((b) => b.priority === priority);
    const own = new Map(left.map((b) => [b, b.hits.reduce((n, t) => n + p.cost(p.view(t, true)), 0)]));
    while (left.length > 0) {
      let best = 0;
      let bestDensity = -1;
      left.forEach((b, i) => {
        const d = b.value! / (own.get(b)! + (p.joins(b.hits) ? 0 : EXCERPT_OVERHEAD));
        if (d > bestDensity) { best = i; bestDensity = d; }
      });
      const b = left.splice(best, 1)[0]!;
      p.tryAdd(b, b.hits, true);
    }
  }
}

/**
 * Chooses recalled turns within `budget`: every block's hits in rank order, then the turns that complete them, then
 * their neighbours; then the same for the spare blocks. Remembers the order of additions so the exact recount can undo the last ones.
 */
export function pick(blocks: readonly RecallBlock[], budget: number, tokenizer: Tokenizer, empty: string, view: TurnView) {
  const costs = new Map<TurnRecord, number>();
  const cost = (t: TurnRecord): number => {
    let c = costs.get(t);
    if (c === undefined) { c = tokenizer.count(renderTurn(t, false)) + 1; costs.set(t, c); }
    return c;
  };
  const owner = new Map<number, RecallBlock>();
  const order: TurnRecord[] = [];
  let used = tokenizer.count(empty) + 4;
  // A turn beside one already taken joins its excerpt: no new excerpt's lines to pay for.
  const joins = (turns: readonly TurnRecord[]) => turns.every((t) => owner.has(t.seq - 1) || owner.has(t.seq + 1));
  const tryAdd = (block: RecallBlock, raw: readonly TurnRecord[], newRun: boolean): void => {
    const fresh = raw.filter((t) => !owner.has(t.seq)).map((t) => view(t, newRun));
    if (fresh.length === 0) return;
    const c = fresh.reduce((n, t) => n + cost(t), 0) + (newRun && !joins(fresh) ? EXCERPT_OVERHEAD : 0);
    if (used + c > budget) return;
    used += c;
    for (const t of fresh) { owner.set(t.seq, block); order.push(t); }
  };
  // Blocks built by rule (pins, a broad question's sample, other branches): each set hits first, then the turns that
  // complete them, then their neighbours. Those that outrank the ranked turns go first; the spare ones last.
  const fill = (set: readonly RecallBlock[]) => {
    for (const b of set) tryAdd(b, b.hits, true);
    for (const b of set) if (owner.get(b.hits[0]!.seq) === b) for (const t of b.pair) tryAdd(b, [t], false);
    for (const b of set) if (owner.get(b.hits[0]!.seq) === b) for (const t of b.adjacent) tryAdd(b, [t], false);
  };
  const rest = blocks.filter((b) => b.value === undefined);
  fill(rest.filter((b) => !b.spare && b.priority > 0));
  packByValue(blocks.filter((b) => b.value !== undefined), { cost, view, joins, tryAdd });
  fill(rest.filter((b) => !b.spare && b.priority <= 0));
  fill(rest.filter((b) => b.spare));
  return {
    turns: () => order,
    cost,
    has: (b: RecallBlock) => b.hits.some((t) => owner.get(t.seq) === b),
    /** Removes the last addition; false when there is nothing left to remove. */
    undo(): boolean {
      const t = order.pop();
      if (!t) return false;
      owner.delete(t.seq);
      return true;
    },
    byBlock(): Map<RecallBlock, TurnRecord[]> {
      const out = new Map<RecallBlock, TurnRecord[]>();
      for (const t of order) {
        const b = owner.get(t.seq)!;
        const list = out.get(b) ?? [];
        list.push(t);
        out.set(b, list);
      }
      return out;
    },
  };
}

/**
 * Summaries within `budget`, taken in priority order, shown oldest first (each counted as rendered, plus its line
 * break).
 */
export function chooseSummaries<C extends { summary: Summary }>(candidates: readonly C[], budget: number, tokenizer: Tokenizer): { candidate: C; text: string; cost: number }[] {
  const out: { candidate: C; text: string; cost: number }[] = [];
  let used = 0;
  for (const candidate of candidates) {
    const text = renderSummary(candidate.summary);
    const cost = tokenizer.count(text) + 1;
    if (used + cost > budget) continue;
    used += cost;
    out.push({ candidate, text, cost });
  }
  return out.sort((a, b) => a.candidate.summary.firstSeq - b.candidate.summary.firstSeq || b.candidate.summary.level - a.candidate.summary.level);
}
