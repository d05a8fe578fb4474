import { PagewiseError } from '../errors.js';
import type { RecallBlock } from '../retrieval/retriever.js';
import { TOKENS_PER_MESSAGE, TOKENS_PER_REQUEST, blockTokens } from '../tokens/chat-format.js';
import type { AssembledContext, ChatMessage, DroppedEntry, ManifestEntry, Tokenizer } from '../types.js';
import { renderExcerpt, renderMemory } from './render.js';

/** A message that may be sent, with what it costs and where it came from. */
export interface HistoryItem {
  message: ChatMessage;
  /** The stored turn's id, when it is stored. */
  sourceId: string | null;
  /** The stored turn's seq, when it is stored. */
  seq: number | null;
  /** Tokens in the request, markup included. */
  tokens: number;
}

export interface AssemblyInput {
  conversationId: string;
  tokenizer: Tokenizer;
  window: number;
  reserve: number;
  memoryTokens: number;
  protectedRecentTurns: number;
  prefix: HistoryItem[];
  /** Chronological, without the prefix and the new message. */
  history: HistoryItem[];
  message: HistoryItem;
  /** Finds recall blocks, best first, leaving out the seqs already sent. */
  recall: (exclude: ReadonlySet<number>) => Promise<RecallBlock[]>;
}

const MODULE = 'assembler';

function ids(items: readonly HistoryItem[]): string[] {
  return items.flatMap((i) => (i.sourceId === null ? [] : [i.sourceId]));
}

function sum(items: readonly HistoryItem[]): number {
  return items.reduce((n, i) => n + i.tokens, 0);
}

function droppedHistory(items: readonly HistoryItem[], reason: DroppedEntry['reason']): DroppedEntry | null {
  if (items.length === 0) return null;
  const sourceIds = ids(items);
  const entry: DroppedEntry = { kind: 'history', sourceIds: sourceIds.length <= 20 ? sourceIds : [], tokens: sum(items), scores: {}, reason };
  if (sourceIds.length > 20) entry.range = { fromId: sourceIds[0]!, toId: sourceIds[sourceIds.length - 1]!, count: sourceIds.length };
  return entry;
}

/**
 * Fits a request into `window − reserve`: the prefix and the new message always (or BUDGET_EXCEEDED), then the
 * protected recent turns, then recalled memory up to `memoryTokens` and as much contiguous older history as fits.
 * Every figure is counted with the tokenizer; the final memory block is counted whole, so the invariant
 * `memory + messages ≤ available` holds exactly.
 */
export async function assemble(input: AssemblyInput): Promise<Omit<AssembledContext, 'matchedTags' | 'broad' | 'temporal'>> {
  const { tokenizer, history } = input;
  const available = input.window - input.reserve;
  const prefixTokens = sum(input.prefix);
  const fixed = prefixTokens + input.message.tokens + TOKENS_PER_REQUEST;
  if (fixed > available) {
    throw new PagewiseError('BUDGET_EXCEEDED', MODULE,
      `The new message and the system prefix need ${fixed} tokens but only ${available} are available (contextWindow ${input.window} − reserveTokens ${input.reserve}). Shorten the message or system prompt, or raise contextWindow.`);
  }
  let left = available - fixed;
  const manifest: ManifestEntry[] = [];
  const dropped: DroppedEntry[] = [];

  // Protected recent turns, newest first; they stay contiguous, so the first that does not fit ends them.
  let start = history.length;
  const protectedFloor = Math.max(0, history.length - input.protectedRecentTurns);
  while (start > protectedFloor && history[start - 1]!.tokens <= left) {
    start--;
    left -= history[start]!.tokens;
  }
  const protectedStart = start;

  // Older history: all of it when it fits, else leave room for recalled memory and fill newest first.
  const older = history.slice(0, protectedStart);
  const olderFits = start === protectedFloor && sum(older) <= left;
  let memoryBudget = 0;
  if (olderFits) {
    start = 0;
    left -= sum(older);
    memoryBudget = Math.min(input.memoryTokens, left);
  } else if (start === protectedFloor) {
    memoryBudget = Math.min(input.memoryTokens, left);
    let historyLeft = left - memoryBudget;
    while (start > 0 && history[start - 1]!.tokens <= historyLeft) {
      start--;
      historyLeft -= history[start]!.tokens;
    }
  }
  // Recalled memory: greedy by rank within the budget, then rendered chronologically and counted whole.
  const sent = new Set<number>();
  for (const item of history.slice(start)) if (item.seq !== null) sent.add(item.seq);
  const blocks = memoryBudget > TOKENS_PER_MESSAGE ? await input.recall(sent) : [];
  const chosen: { block: RecallBlock; text: string; tokens: number }[] = [];
  let memoryEstimate = blockTokens(tokenizer, renderMemory(['']));
  for (const block of blocks) {
    const text = renderExcerpt(block.turns);
    const tokens = tokenizer.count(text) + 1;
    if (memoryEstimate + tokens <= memoryBudget) {
      chosen.push({ block, text, tokens });
      memoryEstimate += tokens;
    } else {
      dropped.push({ kind: 'recall', sourceIds: block.turns.map((t) => t.id), tokens, scores: block.scores, reason: 'budget' });
    }
  }
  let prependText = '';
  let memoryTokens = 0;
  for (;;) {
    const ordered = [...chosen].sort((a, b) => a.block.turns[0]!.seq - b.block.turns[0]!.seq);
    prependText = renderMemory(ordered.map((c) => c.text));
    memoryTokens = blockTokens(tokenizer, prependText);
    if (memoryTokens <= memoryBudget || chosen.length === 0) break;
    const worst = chosen.pop()!;
    dropped.push({ kind: 'recall', sourceIds: worst.block.turns.map((t) => t.id), tokens: worst.tokens, scores: worst.block.scores, reason: 'budget' });
  }

  // Memory budget that recall left unused goes back to older history, up to the first turn already recalled.
  const recalled = new Set(chosen.flatMap((c) => c.block.turns.map((t) => t.seq)));
  let spare = memoryBudget - memoryTokens;
  while (start > 0 && start <= protectedFloor && history[start - 1]!.tokens <= spare && !recalled.has(history[start - 1]!.seq ?? -1)) {
    start--;
    spare -= history[start]!.tokens;
  }

  // A tool result whose call was cut off would be rejected by the provider: drop it with the call.
  let orphanEnd = start;
  while (orphanEnd < history.length && history[orphanEnd]!.message.role === 'tool') orphanEnd++;
  const orphans = history.slice(start, orphanEnd);
  const kept = history.slice(orphanEnd);
  const keptOlder = history.slice(orphanEnd, Math.max(orphanEnd, protectedStart));
  const keptRecent = history.slice(Math.max(orphanEnd, protectedStart));
  const cut = droppedHistory(history.slice(0, start), 'budget');
  if (cut) dropped.push(cut);
  const orphanDrop = droppedHistory(orphans, 'orphaned-tool-result');
  if (orphanDrop) dropped.push(orphanDrop);

  if (input.prefix.length > 0) {
    manifest.push({ kind: 'prefix', placement: 'messages', sourceIds: ids(input.prefix), tokens: prefixTokens, scores: {}, reason: 'system prefix: always sent' });
  }
  for (const c of chosen) {
    manifest.push({ kind: 'recall', placement: 'prependText', sourceIds: c.block.turns.map((t) => t.id), tokens: c.tokens, scores: c.block.scores, reason: c.block.reason });
  }
  if (keptOlder.length > 0) {
    manifest.push({ kind: 'history', placement: 'messages', sourceIds: ids(keptOlder), tokens: sum(keptOlder), scores: {},
      reason: olderFits ? 'older history: all of it fits' : 'older history: the most recent that fit beside recalled memory' });
  }
  if (keptRecent.length > 0) {
    manifest.push({ kind: 'recent', placement: 'messages', sourceIds: ids(keptRecent), tokens: sum(keptRecent), scores: {},
      reason: `protected recent turns (the last ${input.protectedRecentTurns})` });
  }
  manifest.push({ kind: 'message', placement: 'messages', sourceIds: ids([input.message]), tokens: input.message.tokens, scores: {}, reason: 'the new message' });

  const historyTokens = sum(kept);
  const total = prefixTokens + memoryTokens + historyTokens + input.message.tokens + TOKENS_PER_REQUEST;
  return {
    conversationId: input.conversationId,
    prependText,
    messages: [...input.prefix, ...kept, input.message].map((i) => i.message),
    budget: {
      window: input.window,
      reserve: input.reserve,
      available,
      prefix: prefixTokens,
      memory: memoryTokens,
      history: historyTokens,
      message: input.message.tokens,
      overhead: TOKENS_PER_REQUEST,
      total,
      free: available - total,
      encoding: tokenizer.encoding,
      exact: tokenizer.exact,
    },
    manifest,
    dropped,
  };
}
