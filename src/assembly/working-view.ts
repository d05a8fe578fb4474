import { inline, quoted } from '../common/as-data.js';
import { messageText } from '../common/messages.js';
import { messageTokens } from '../tokens/chat-format.js';
import type { ChatMessage, CompressionKind, Tokenizer } from '../contracts/types.js';
import type { HistoryItem } from './assembler.js';
import { compressText } from './compress.js';

export interface WorkingViewOptions {
  /** Tokens the history may use. */
  budget: number;
  protectedRecentTurns: number;
  minConsecutiveToolMessages: number;
  /** Characters above which a message is offloaded (shown as a preview and its id). */
  largePayloadThreshold: number;
  offloadPreview: number;
  /** Stored ids the user pinned: never compressed. */
  pinned: ReadonlySet<string>;
  /** Importance of a stored turn (recency, how often it was recalled): the least important is offloaded first. */
  importance: (item: HistoryItem, index: number) => number;
  /** Index stems of the question: selective inclusion keeps the parts about it. */
  focus: ReadonlySet<string>;
  tokenizer: Tokenizer;
}

const sum = (items: readonly HistoryItem[]): number => items.reduce((n, i) => n + i.tokens, 0);

function isToolMessage(m: ChatMessage): boolean {
  return m.role === 'tool' || (m.role === 'assistant' && (m.toolCalls?.length ?? 0) > 0);
}

function withText(item: HistoryItem, message: ChatMessage, tokenizer: Tokenizer): HistoryItem {
  const { estimated: _estimated, ...rest } = item;
  return { ...rest, message, tokens: messageTokens(tokenizer, message, tokenizer.count(messageText(message))), rewritten: true };
}

/** A caller's text shortened to one line, as data. */
function preview(text: string, chars: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return inline(flat.length <= chars ? flat : `${flat.slice(0, chars)}…`);
}

/**
 * The working view of seed 001: what is sent, derived from the append-only original (which never changes). Applied
 * in order, only while the history is over `budget`: (1) runs of more than `minConsecutiveToolMessages` tool
 * messages before the current round become one message that keeps each call's name and arguments; (2) messages
 * over `largePayloadThreshold` characters before the latest assistant message, outside the protected recent turns,
 * are offloaded: a preview and the id to reload them by; (3) the same for the protected turns; (4) is compaction
 * (summaries, after each turn); (5) the current round's tool results are compressed progressively (whitespace,
 * format, selective inclusion, truncation), the calls left whole.
 */
export function workingView(history: readonly HistoryItem[], o: WorkingViewOptions): { history: HistoryItem[]; compressed: Map<string, CompressionKind> } {
  let items = [...history];
  const compressed = new Map<string, CompressionKind>();
  if (sum(items) <= o.budget) return { history: items, compressed };
  const lastUser = items.map((i) => i.message.role).lastIndexOf('user');
  const roundStart = lastUser < 0 ? items.length : lastUser;

  // (1) Tool runs before the current round, oldest first, while the whole is over budget.
  const out: HistoryItem[] = [];
  let total = sum(items);
  for (let i = 0; i < items.length;) {
    let j = i;
    while (j < roundStart && isToolMessage(items[j]!.message) && !o.pinned.has(items[j]!.sourceId ?? '')) j++;
    if (j - i > o.minConsecutiveToolMessages && total > o.budget) {
      const run = items.slice(i, j);
      const results = new Map(run.filter((r) => r.message.role === 'tool').map((r) => [r.message.toolCallId, messageText(r.message)]));
      const lines = run.flatMap((r) => (r.message.toolCalls ?? []).map((c) =>
        `- ${inline(c.function.name)}(${inline(c.function.arguments)}) → ${preview(results.get(c.id) ?? '(no result)', o.offloadPreview)}`));
      const ids = run.flatMap((r) => (r.sourceId ? [r.sourceId] : []));
      const message: ChatMessage = {
        role: 'assistant',
        content: `[pagewise: ${run.length} tool messages compressed; calls kept, results shortened. Full results: pagewise_reload with an id of ${ids.slice(0, 3).map(quoted).join(', ')}${ids.length > 3 ? ', …' : ''}]\n${lines.join('\n')}`,
      };
      const merged = withText({ message, sourceId: run[0]!.sourceId, seq: run[0]!.seq, tokens: 0, covers: ids, coverSeqs: run.flatMap((r) => (r.seq === null ? [] : [r.seq])) }, message, o.tokenizer);
      for (const id of ids) compressed.set(id, 'tool-run');
      out.push(merged);
      total += merged.tokens - sum(run);
      i = j;
    } else {
      // Not a long run: keep everything up to its end (a run's tail is never longer than the run).
      const end = Math.max(i + 1, j);
      out.push(...items.slice(i, end));
      i = end;
    }
  }
  items = out;

  // (2)–(3) Offloading, least important first; first outside the protected turns, then within them.
  const offload = (keepProtected: boolean): void => {
    const latestAssistant = items.map((i) => i.message.role).lastIndexOf('assistant');
    const protectedFrom = items.length - o.protectedRecentTurns;
    const candidates = items.map((item, index) => ({ item, index }))
      .filter(({ item, index }) => index < latestAssistant && (!keepProtected || index < protectedFrom) && item.sourceId !== null
        && !o.pinned.has(item.sourceId) && !compressed.has(item.sourceId) && messageText(item.message).length > o.largePayloadThreshold)
      .sort((a, b) => o.importance(a.item, a.index) - o.importance(b.item, b.index));
    for (const { item, index } of candidates) {
      if (sum(items) <= o.budget) return;
      const text = messageText(item.message);
      const message: ChatMessage = {
        ...item.message,
        content: `[pagewise offloaded this message: ${text.length} characters, id ${quoted(item.sourceId!)}. Preview: ${preview(text, o.offloadPreview)} — call pagewise_reload with {"id": ${quoted(item.sourceId!)}} for the full text.]`,
      };
      if (message.toolCalls) message.toolCalls = item.message.toolCalls!;
      items[index] = withText(item, message, o.tokenizer);
      compressed.set(item.sourceId!, 'offloaded');
    }
  };
  offload(true);
  if (sum(items) > o.budget) offload(false);

  // (5) The current round's tool results, largest first, progressively.
  const results = items.map((item, index) => ({ item, index }))
    .filter(({ item, index }) => index > roundStart && item.message.role === 'tool' && !o.pinned.has(item.sourceId ?? ''))
    .sort((a, b) => b.item.tokens - a.item.tokens);
  for (const { item, index } of results) {
    const over = sum(items) - o.budget;
    if (over <= 0) break;
    const text = messageText(item.message);
    const target = Math.max(64, item.tokens - over);
    const c = compressText(text, target, o.focus, o.tokenizer);
    if (c.level === null) continue;
    items[index] = withText(item, { ...item.message, content: c.text }, o.tokenizer);
    if (item.sourceId) compressed.set(item.sourceId, c.level);
  }
  return { history: items, compressed };
}
