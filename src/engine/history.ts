import type { HistoryItem } from '../assembly/assembler.js';
import { contentHash, validateMessage } from '../common/messages.js';
import { type TurnRecord, type TurnStore, turnMessage } from '../store/turn-store.js';
import { TOKENS_PER_MESSAGE } from '../tokens/chat-format.js';
import { messageCost } from '../tokens/message-cost.js';
import type { ChatMessage, MediaRule, Tokenizer } from '../contracts/types.js';
import { prefixLength, storedTextTokens } from '../store/stored-tokens.js';

// Pages of stored history grow from FIRST_PAGE to MAX_PAGE: most questions need only the last few dozen turns.
const FIRST_PAGE = 32;
const MAX_PAGE = 512;

/** The history to assemble from: leading system messages (the prefix) and the rest, chronological. */
export interface HistoryView {
  prefix: HistoryItem[];
  history: HistoryItem[];
  /** Whether `history` reaches back to the start of the conversation (or to the compaction watermark). */
  complete: boolean;
}

function storedItem(t: TurnRecord, textTokens: number, tokenizer: Tokenizer, rule: MediaRule): HistoryItem {
  const message = turnMessage(t);
  const cost = messageCost(tokenizer, message, rule, textTokens);
  return { message, sourceId: t.id, seq: t.seq, tokens: cost.tokens, ...(cost.estimated > 0 ? { estimated: cost.estimated } : {}) };
}

/**
 * The stored conversation as history, newest first until `enough` tokens are loaded (older turns could not be sent
 * anyway), with its leading system turns as the prefix.
 */
export async function storedHistory(store: TurnStore, tokenizer: Tokenizer, rule: MediaRule, conversationId: string, enough: number, recent: number, fromSeq = 0): Promise<HistoryView> {
  const head = await store.range(conversationId, 0, 16);
  const prefixEnd = prefixLength(head);
  const prefixTurns = head.slice(0, prefixEnd);
  // Turns before the watermark were compacted: summaries and recall stand for them.
  const floor = Math.max(prefixEnd, fromSeq);
  const loaded: TurnRecord[] = [];
  const counts = await storedTextTokens(store, tokenizer, prefixTurns);
  let before = Number.MAX_SAFE_INTEGER;
  let tokens = 0;
  let complete = false;
  let size = FIRST_PAGE;
  // Every message costs at least its markup: past this many turns the conversation cannot fit whole, and only the
  // `recent` (protected) turns can be sent as history.
  if ((await store.turnCount(conversationId)) - floor > enough / TOKENS_PER_MESSAGE) {
    const page = recent > 0 ? (await store.before(conversationId, before, recent)).filter((t) => t.seq >= floor).reverse() : [];
    for (const [rowid, n] of await storedTextTokens(store, tokenizer, page)) counts.set(rowid, n);
    return {
      prefix: prefixTurns.map((t) => storedItem(t, counts.get(t.rowid)!, tokenizer, rule)),
      history: page.map((t) => storedItem(t, counts.get(t.rowid)!, tokenizer, rule)),
      complete: false,
    };
  }
  while (tokens <= enough) {
    const fetched = await store.before(conversationId, before, size);
    const page = fetched.filter((t) => t.seq >= floor);
    if (page.length === 0) { complete = true; break; }
    for (const [rowid, n] of await storedTextTokens(store, tokenizer, page)) counts.set(rowid, n);
    for (const t of page) {
      loaded.push(t);
      tokens += counts.get(t.rowid)!;
    }
    before = page[page.length - 1]!.seq;
    if (fetched.length < size || before <= floor) { complete = true; break; }
    size = Math.min(MAX_PAGE, size * 2);
  }
  loaded.reverse();
  return {
    prefix: prefixTurns.map((t) => storedItem(t, counts.get(t.rowid)!, tokenizer, rule)),
    history: loaded.map((t) => storedItem(t, counts.get(t.rowid)!, tokenizer, rule)),
    complete,
  };
}

/**
 * The caller's history, validated, with each message matched to its stored turn (by id, else by content from the
 * newest) so the manifest names stored ids and recall does not repeat what is sent.
 */
export async function callerHistory(store: TurnStore, tokenizer: Tokenizer, rule: MediaRule, conversationId: string, raw: unknown[], limits: { maxMessageBytes: number; maxAttachmentBytes: number }, resolve: (messages: ChatMessage[]) => Promise<ChatMessage[]>): Promise<HistoryView> {
  // `resolve`: attachments named by id, checked against the conversation and given the store's facts.
  const messages = await resolve(raw.map((m, i) => validateMessage(m, `history[${i}]`, limits.maxMessageBytes, limits.maxAttachmentBytes)));
  const hashes = await Promise.all(messages.map(contentHash));
  const withId = messages.flatMap((m) => (m.id ? [m.id] : []));
  // A message stored on another branch is not sent as a stored turn of this one (its seq says nothing here).
  const byId = new Map((await store.byIds(conversationId, withId)).filter((t) => t.seq >= 0).map((t) => [t.id, t]));
  const byHash = new Map<string, TurnRecord[]>();
  for (const t of await store.byHashes(conversationId, [...new Set(hashes)])) {
    const list = byHash.get(t.contentHash) ?? [];
    list.push(t);
    byHash.set(t.contentHash, list);
  }
  const items: HistoryItem[] = new Array(messages.length);
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    const stored = m.id ? byId.get(m.id) : byHash.get(hashes[i]!)?.pop();
    items[i] = { ...itemFor(m, stored ?? null, tokenizer, rule), index: i };
  }
  const prefixEnd = prefixLength(items.map((i) => i.message));
  return { prefix: items.slice(0, prefixEnd), history: items.slice(prefixEnd), complete: true };
}

/** A message as a history item: stored ones carry their id and seq; attachments are counted by `rule`. */
export function itemFor(message: ChatMessage, stored: TurnRecord | null, tokenizer: Tokenizer, rule: MediaRule): HistoryItem {
  const cost = messageCost(tokenizer, message, rule);
  return {
    message,
    sourceId: stored?.id ?? message.id ?? null,
    seq: stored?.seq ?? null,
    tokens: cost.tokens,
    ...(cost.estimated > 0 ? { estimated: cost.estimated } : {}),
  };
}
