import { PagewiseError } from '../contracts/errors.js';
import type { RecallResult } from '../retrieval/retriever.js';
import type { TurnRecord } from '../store/turn-store.js';
import { TOKENS_PER_REQUEST, blockTokens } from '../tokens/chat-format.js';
import type { AssembledContext, ChatMessage, DroppedEntry, ManifestEntry, MessageSource, Tokenizer } from '../contracts/types.js';
import { EXCERPT_OVERHEAD, chooseSummaries, pick, quoter } from './recall-pick.js';
import { joinMemory, renderExcerpt, renderMemory, renderWebResults } from '../text/render.js';
import { type ShownWeb, type WebInput, pickWeb, webEntries } from './web-pick.js';
import type { Summary } from '../contracts/types.js';

/** A summary that may be paged in, with why. */
export interface SummaryCandidate {
  summary: Summary;
  reason: string;
  /** Takes only what the excerpts leave of the recall budget (a specific question's summaries: evidence first). */
  leftover?: boolean;
}

/** A message that may be sent, with what it costs and where it came from. */
export interface HistoryItem {
  message: ChatMessage;
  /** The stored turn's id, when it is stored. */
  sourceId: string | null;
  /** The stored turn's seq, when it is stored. */
  seq: number | null;
  /** Tokens in the request, markup included. */
  tokens: number;
  /** For a message that stands for several stored turns (a compressed tool run): their ids and seqs. */
  covers?: string[];
  coverSeqs?: number[];
  /** Its index in the caller's history, when it came from there. */
  index?: number;
  /** Of `tokens`, what is an estimate (attachments without the facts their rule needs). */
  estimated?: number;
  /** Sent rewritten (a compressed tool run, an offloaded or shortened message). */
  rewritten?: true;
}

export interface AssemblyInput {
  conversationId: string;
  tokenizer: Tokenizer;
  window: number;
  reserve: number;
  /** Recalled excerpts at most (doubled for broad and temporal questions). */
  memoryTokens: number;
  /** memoryTokens is the default: memory may also take what the target leaves unspent. */
  fillTarget: boolean;
  /** What a request aims for when the question does not need more. */
  targetTokens: number;
  protectedRecentTurns: number;
  prefix: HistoryItem[];
  /** Chronological, without the prefix and the new message. */
  history: HistoryItem[];
  /** Whether `history` reaches back to the start of the conversation. */
  historyComplete: boolean;
  /** Recall reaches past the history (other branches): it runs even when the whole history fits. */
  beyondHistory?: boolean;
  message: HistoryItem;
  /** Messages after the new one (this round's tool calls and results): sent whole after it, like it never dropped. */
  after: HistoryItem[];
  /** The `<context-topics>` hint, '' for none. */
  hint: string;
  placement: 'message' | 'prependText';
  /** Broad questions may use the whole window. */
  wide: boolean;
  /** Temporal questions may recall half as much again (and go over the target by as much). */
  temporal: boolean;
  /** Finds recall candidates, best first, leaving out the seqs already sent. */
  recall: (exclude: ReadonlySet<number>) => Promise<RecallResult>;
  /** Whether turns before `history` were compacted (then memory is assembled even when the active history fits). */
  compacted: boolean;
  /** Summaries to page in, in priority order (they are shown oldest first). */
  summaries: readonly SummaryCandidate[];
  /** The share of the recall budget summaries may take; excerpts get the rest. */
  summaryShare: number;
  /** Web results (external search), placed first in the memory block within their share of its budget. */
  web?: WebInput;
}

const MODULE = 'assembler';

function ids(items: readonly HistoryItem[]): string[] {
  return items.flatMap((i) => i.covers ?? (i.sourceId === null ? [] : [i.sourceId]));
}

function sum(items: readonly HistoryItem[]): number {
  return items.reduce((n, i) => n + i.tokens, 0);
}

/** Of the items' tokens, what is an estimate. */
function estimated(items: readonly HistoryItem[]): number {
  return items.reduce((n, i) => n + (i.estimated ?? 0), 0);
}

/** The manifest's estimate field for these items: present only when some of their tokens are estimates. */
const estimateOf = (items: readonly HistoryItem[]) => (estimated(items) > 0 ? { estimatedTokens: estimated(items) } : {});

/** Where an item came from, for `AssembledContext.sources`. */
function sourceOf(item: HistoryItem): MessageSource {
  const rewritten = item.rewritten ? { rewritten: true as const } : {};
  if (item.index !== undefined) return { kind: 'history', index: item.index, ...rewritten };
  return item.sourceId !== null && item.seq !== null ? { kind: 'stored', id: item.sourceId, ...rewritten } : { kind: 'memory' };
}

function droppedHistory(items: readonly HistoryItem[], reason: DroppedEntry['reason']): DroppedEntry | null {
  if (items.length === 0) return null;
  const sourceIds = ids(items);
  const entry: DroppedEntry = { kind: 'history', sourceIds: sourceIds.length <= 20 ? sourceIds : [], tokens: sum(items), scores: {}, reason };
  if (sourceIds.length > 20) entry.range = { fromId: sourceIds[0]!, toId: sourceIds[sourceIds.length - 1]!, count: sourceIds.length };
  return entry;
}

/** Consecutive turns as `<excerpt>` runs, chronological. */
function excerpts(turns: readonly TurnRecord[]): string[] {
  const sorted = [...turns].sort((a, b) => a.seq - b.seq);
  const runs: TurnRecord[][] = [];
  for (const t of sorted) {
    const run = runs[runs.length - 1];
    if (run && run[run.length - 1]!.seq === t.seq - 1) run.push(t);
    else runs.push([t]);
  }
  return runs.map(renderExcerpt);
}

/** What a request may spend: what always goes (prefix, message), the target, and the cap on recent turns and memory. */
function budgetOf(input: AssemblyInput) {
  const available = input.window - input.reserve;
  // Temporal questions may go over the target by the extra half of memory they may recall.
  const extra = input.temporal ? Math.floor(input.memoryTokens / 2) : 0;
  const target = input.wide ? available : Math.min(available, input.targetTokens + extra);
  const prefixTokens = sum(input.prefix);
  const fixed = prefixTokens + input.message.tokens + sum(input.after) + TOKENS_PER_REQUEST;
  if (fixed > available) {
    throw new PagewiseError('BUDGET_EXCEEDED', MODULE,
      `The new message and the system prefix need ${fixed} tokens but only ${available} are available (contextWindow ${input.window} − reserveTokens ${input.reserve}). Shorten the message or system prompt, or raise contextWindow.`);
  }
  const cap = input.wide ? 2 * input.memoryTokens : input.temporal ? Math.floor(1.5 * input.memoryTokens) : input.memoryTokens;
  // After compaction memory (summaries, recall of the compacted past) keeps its share: the active history is sent
  // whole only if it fits beside it.
  const fitsAll = input.historyComplete && fixed + sum(input.history) + (input.compacted ? cap : 0) <= target;
  return { available, target, prefixTokens, fixed, cap, fitsAll };
}

type Budget = ReturnType<typeof budgetOf>;

/**
 * Protected recent turns, newest first; they stay contiguous, so the first that does not fit ends them. Unless the
 * whole conversation fits the target, they get at most half of it (the newest turn always, if it fits at all), so
 * that long recent turns do not crowd out what the question asks about. Returns where they start and what they leave.
 */
function protectRecent(history: readonly HistoryItem[], protectedRecentTurns: number, budget: Budget) {
  let start = history.length;
  let left = budget.available - budget.fixed;
  const floor = Math.max(0, history.length - protectedRecentTurns);
  const recentCap = budget.fitsAll ? left : Math.floor((budget.target - budget.fixed) / 2);
  let recentUsed = 0;
  while (start > floor && history[start - 1]!.tokens <= left && (start === history.length || recentUsed + history[start - 1]!.tokens <= recentCap)) {
    start--;
    left -= history[start]!.tokens;
    recentUsed += history[start]!.tokens;
  }
  return { start, left, floor };
}

/** The memory a request carries: the topics hint and the recall block, and what they cost as sent. */
interface Memory {
  prependText: string;
  recallText: string;
  memoryTokens: number;
  topicTokens: number;
  /** Of memoryTokens, the web results; and what they could take (their share of the recall budget). */
  webTokens: number;
  webBudget: number;
}

const NO_MEMORY: Memory = { prependText: '', recallText: '', memoryTokens: 0, topicTokens: 0, webTokens: 0, webBudget: 0 };

/**
 * The hint and the recall block within what `left` leaves, with their manifest and dropped entries. `sentHistory` is
 * the history that goes: its turns are never recalled.
 */
async function assembleMemory(input: AssemblyInput, budget: Budget, left: number, sentHistory: readonly HistoryItem[], manifest: ManifestEntry[], dropped: DroppedEntry[]): Promise<Memory> {
  const { tokenizer } = input;
  const fullHintCost = input.hint ? blockTokens(tokenizer, input.hint) : 0;
  const hint = input.hint && fullHintCost <= left ? input.hint : '';
  const hintCost = hint ? fullHintCost : 0;
  left -= hintCost;
  const used = budget.available - left;
  const { cap } = budget;
  // With memoryTokens left to its default, memory may take what the request's target leaves (recent turns shorter than
  // their half leave it unspent otherwise); temporal questions keep their extra to the cap.
  const reach = input.fillTarget ? Math.max(cap, input.targetTokens - used) : cap;
  const recallBudget = Math.min(left, Math.max(Math.min(reach, budget.target - used), Math.floor(cap / 4)));
  const sent = new Set<number>();
  for (const item of sentHistory) for (const seq of item.coverSeqs ?? (item.seq === null ? [] : [item.seq])) sent.add(seq);
  const recalled = await recallWithin(input, recallBudget, sent, hint, hintCost);
  if (input.web) webEntries(input.web, recalled.web, input.placement, manifest, dropped, tokenizer);
  summaryEntries(input, recalled.shown, manifest, dropped);
  const prependText = input.placement === 'prependText' ? [hint, recalled.recallText].filter(Boolean).join('\n') : hint;
  // As sent: the hint's block (or hint and recall in one block) plus, for 'message', the recall's own message.
  const memoryTokens = hintCost + recalled.recallCost;
  const topicTokens = hint ? tokenizer.count(hint) : 0;
  if (hint) manifest.push({ kind: 'topics', placement: 'prependText', sourceIds: [], tokens: hintCost, scores: {}, reason: 'context-topics hint: what earlier conversation can be recalled' });
  recallEntries(input.placement, recalled, manifest, dropped);
  const webTokens = recalled.web.length > 0 ? tokenizer.count(renderWebResults(recalled.web.map((w) => w.text))) : 0;
  return { prependText, recallText: recalled.recallText, memoryTokens, topicTokens, webTokens, webBudget: recalled.webBudget };
}

type ShownSummary = { candidate: SummaryCandidate; text: string; cost: number };

/**
 * Recalled excerpts and summaries within `recallBudget`, the block counted exactly as sent (beside the hint when
 * they share one); the latest additions are dropped until it fits.
 */
async function recallWithin(input: AssemblyInput, recallBudget: number, sent: ReadonlySet<number>, hint: string, hintCost: number) {
  const { tokenizer } = input;
  // Web results first, within their share; recalled memory gets the rest.
  const webBudget = input.web ? Math.floor(recallBudget * input.web.share) : 0;
  const web: ShownWeb[] = input.web ? pickWeb(input.web, webBudget, tokenizer) : [];
  const webBlock = () => renderWebResults(web.map((w) => w.text));
  const memoryBudget = recallBudget - (web.length > 0 ? blockTokens(tokenizer, webBlock()) : 0);
  const found: RecallResult = memoryBudget > EXCERPT_OVERHEAD * 2 ? await input.recall(sent) : { blocks: [], expired: [] };
  const view = quoter(found.focus ?? new Set(), memoryBudget, tokenizer);
  const shown = chooseSummaries(input.summaries.filter((c) => !c.leftover), Math.floor(memoryBudget * input.summaryShare), tokenizer);
  const picked = pick(found.blocks, memoryBudget, tokenizer, renderMemory([''], shown.map((c) => c.text)), view);
  const extra = input.summaries.filter((c) => c.leftover);
  if (extra.length > 0) {
    const spent = blockTokens(tokenizer, renderMemory(excerpts(picked.turns()), shown.map((c) => c.text)));
    shown.push(...chooseSummaries(extra, Math.min(memoryBudget - spent, Math.floor(memoryBudget * input.summaryShare)), tokenizer));
    shown.sort((a, b) => a.candidate.summary.firstSeq - b.candidate.summary.firstSeq || b.candidate.summary.level - a.candidate.summary.level);
  }
  // Exact count of the final block (one tokenizer pass over it); drop the latest additions until it fits, web last.
  let recallText = '';
  let recallCost = 0;
  for (;;) {
    recallText = joinMemory(webBlock(), renderMemory(excerpts(picked.turns()), shown.map((c) => c.text)));
    recallCost = recallText === '' ? 0 : input.placement === 'message'
      ? blockTokens(tokenizer, recallText)
      : blockTokens(tokenizer, [hint, recallText].filter(Boolean).join('\n')) - hintCost;
    if (recallCost <= recallBudget || (!picked.undo() && shown.pop() === undefined && web.pop() === undefined)) break;
  }
  return { found, view, shown, picked, recallText, recallCost, web, webBudget };
}

/** The summaries shown (manifest) and those left out (dropped). */
function summaryEntries(input: AssemblyInput, shown: readonly ShownSummary[], manifest: ManifestEntry[], dropped: DroppedEntry[]): void {
  for (const c of shown) {
    manifest.push({
      kind: 'summary', placement: input.placement === 'message' ? 'messages' : 'prependText', sourceIds: [], tokens: c.cost, scores: {},
      tags: c.candidate.summary.tags, summaryId: c.candidate.summary.id, level: c.candidate.summary.level,
      covers: { fromSeq: c.candidate.summary.firstSeq, toSeq: c.candidate.summary.lastSeq }, reason: c.candidate.reason,
    });
  }
  for (const c of input.summaries) {
    if (shown.some((x) => x.candidate === c)) continue;
    dropped.push({ kind: 'summary', sourceIds: [c.summary.id], tokens: c.summary.tokens, scores: {}, reason: 'budget' });
  }
}

/** The recalled blocks sent (manifest, with the turns that complete them), left out for budget, or expired (dropped). */
function recallEntries(placement: AssemblyInput['placement'], recalled: Awaited<ReturnType<typeof recallWithin>>, manifest: ManifestEntry[], dropped: DroppedEntry[]): void {
  const { found, view, picked } = recalled;
  for (const [block, turns] of picked.byBlock()) {
    const neighbour = turns.some((t) => !block.hits.some((h) => h.seq === t.seq));
    manifest.push({
      kind: 'recall',
      placement: placement === 'message' ? 'messages' : 'prependText',
      sourceIds: turns.sort((a, b) => a.seq - b.seq).map((t) => t.id),
      tokens: turns.reduce((n, t) => n + picked.cost(t), 0),
      // A ranked turn's own flag says whether a channel found it or it came in beside one that did.
      scores: { ...block.scores, neighbour: neighbour || block.scores.neighbour === true },
      tags: block.tags,
      ...(turns.some((t) => view.partial.has(t)) ? { partialIds: turns.filter((t) => view.partial.has(t)).map((t) => t.id) } : {}),
      reason: neighbour ? `${block.reason}; with the turns that complete it` : block.reason,
      ...(block.otherBranch ? { otherBranch: true as const } : {}),
    });
  }
  for (const block of found.blocks) {
    if (picked.has(block)) continue;
    dropped.push({ kind: 'recall', sourceIds: block.hits.map((t) => t.id), tokens: block.hits.reduce((n, t) => n + picked.cost(view(t, true)), 0), scores: block.scores, reason: 'budget' });
  }
  for (const block of found.expired) {
    dropped.push({ kind: 'recall', sourceIds: block.hits.map((t) => t.id), tokens: 0, scores: block.scores, reason: 'expired' });
  }
}

/**
 * The history that goes, from `start` (less the tool results cut off from their call), with its manifest entries
 * (prefix first, the new message last) and the dropped entries of what stays out.
 */
function historyEntries(input: AssemblyInput, start: number, recent: ReturnType<typeof protectRecent>, prefixTokens: number, manifest: ManifestEntry[], dropped: DroppedEntry[]): HistoryItem[] {
  const { history } = input;
  const protectedStart = recent.start;
  // A tool result whose call was cut off would be rejected by the provider: drop it with the call.
  let orphanEnd = start;
  while (orphanEnd < history.length && history[orphanEnd]!.message.role === 'tool') orphanEnd++;
  const kept = history.slice(orphanEnd);
  const keptOlder = history.slice(orphanEnd, Math.max(orphanEnd, protectedStart));
  const keptRecent = history.slice(Math.max(orphanEnd, protectedStart));
  const left_out = droppedHistory(history.slice(0, start), start === protectedStart && protectedStart === recent.floor ? 'unrelated' : 'budget');
  if (left_out) dropped.push(left_out);
  const orphanDrop = droppedHistory(history.slice(start, orphanEnd), 'orphaned-tool-result');
  if (orphanDrop) dropped.push(orphanDrop);

  if (input.prefix.length > 0) {
    manifest.unshift({ kind: 'prefix', placement: 'messages', sourceIds: ids(input.prefix), tokens: prefixTokens, scores: {}, ...estimateOf(input.prefix), reason: 'system prefix: always sent' });
  }
  if (keptOlder.length > 0) {
    manifest.push({ kind: 'history', placement: 'messages', sourceIds: ids(keptOlder), tokens: sum(keptOlder), scores: {}, ...estimateOf(keptOlder), reason: input.compacted ? 'active history: everything since the last compaction fits the target' : 'older history: the whole conversation fits the target' });
  }
  if (keptRecent.length > 0) {
    manifest.push({ kind: 'recent', placement: 'messages', sourceIds: ids(keptRecent), tokens: sum(keptRecent), scores: {}, ...estimateOf(keptRecent),
      reason: `protected recent turns (the last ${input.protectedRecentTurns})` });
  }
  const round = [input.message, ...input.after];
  manifest.push({ kind: 'message', placement: 'messages', sourceIds: ids(round), tokens: sum(round), scores: {}, ...estimateOf(round),
    reason: input.after.length === 0 ? 'the new message' : `the new message and the ${input.after.length} after it (this round's tool calls and results)` });
  return kept;
}

/**
 * Fits a request into `window − reserve`. The prefix and the new message always go (or BUDGET_EXCEEDED), then the
 * protected recent turns. A conversation that fits the target is sent whole; otherwise older turns unrelated to
 * the question are left out and the related ones are paged in as excerpts: the hits first, then the turns that
 * complete them, then their neighbours, while the recall budget lasts. The final blocks are counted whole, so
 * `total ≤ available` holds exactly.
 */
export async function assemble(input: AssemblyInput): Promise<Omit<AssembledContext, 'matchedTags' | 'broad' | 'temporal' | 'head'> & { webBudget: number }> {
  const { tokenizer, history } = input;
  const budget = budgetOf(input);
  const { available, prefixTokens } = budget;
  const manifest: ManifestEntry[] = [];
  const dropped: DroppedEntry[] = [];

  const recent = protectRecent(history, input.protectedRecentTurns, budget);
  let start = recent.start;
  let memory = NO_MEMORY;
  // After compaction the active history may fit whole, yet the compacted past still needs its summaries and recall
  // (and so do the branches the conversation left, when asked for).
  if (budget.fitsAll && !input.compacted && !input.beyondHistory && !(input.web && input.web.items.length > 0)) {
    start = 0;
  } else {
    let left = recent.left;
    if (budget.fitsAll) {
      left -= sum(history.slice(0, start));
      start = 0;
    }
    memory = await assembleMemory(input, budget, left, history.slice(start), manifest, dropped);
  }
  const kept = historyEntries(input, start, recent, prefixTokens, manifest, dropped);

  const { prependText, recallText, memoryTokens, topicTokens, webTokens } = memory;
  const historyTokens = sum(kept);
  const recallMessage: ChatMessage[] = input.placement === 'message' && recallText ? [{ role: 'system', content: recallText }] : [];
  const messageTokens = input.message.tokens + sum(input.after);
  const total = prefixTokens + memoryTokens + historyTokens + messageTokens + TOKENS_PER_REQUEST;
  return {
    conversationId: input.conversationId,
    prependText,
    recallText,
    messages: [...input.prefix.map((i) => i.message), ...kept.map((i) => i.message), ...recallMessage, input.message.message, ...input.after.map((i) => i.message)],
    sources: [...input.prefix.map(sourceOf), ...kept.map(sourceOf), ...recallMessage.map((): MessageSource => ({ kind: 'memory' })), { kind: 'message' }, ...input.after.map((_, index): MessageSource => ({ kind: 'after', index }))],
    budget: {
      window: input.window,
      reserve: input.reserve,
      available,
      prefix: prefixTokens,
      memory: memoryTokens,
      topics: topicTokens,
      search: webTokens,
      history: historyTokens,
      message: messageTokens,
      overhead: TOKENS_PER_REQUEST,
      total,
      free: available - total,
      estimated: estimated([...input.prefix, ...kept, input.message, ...input.after]),
      encoding: tokenizer.encoding,
      exact: tokenizer.exact,
    },
    manifest,
    dropped,
    webBudget: memory.webBudget,
  };
}
