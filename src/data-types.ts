// The data-control side of the Memory API, as its callers and its parts see it: what forget takes and reports, the
// portable export format, what an import reports, and what the parts are built from.
import type { Canonicalizer } from './tags/tag-canonicalizer.js';
import type { TagIndex } from './tags/tag-index.js';
import type { TurnStore } from './store/turn-store.js';
import type { ChatMessage, StorageDriver, Tokenizer } from './types.js';

/** What `forget` removes: a whole conversation, or some of its messages (by id, or every exchange carrying a tag). */
export interface ForgetInput {
  conversationId: string;
  /** Stored message ids (as in `report.storedIds` or `memory.turns()`). */
  messageIds?: string[];
  /** A tag (any spelling its aliases know): every exchange (unit) carrying it. */
  tag?: string;
}

/** What `forget` removed. Derived data of the conversation (tags, summaries, vectors) is rebuilt without it. */
export interface ForgetReport {
  conversationId: string;
  /** Ids of the removed messages. */
  messageIds: string[];
  /** Summaries removed (all of the conversation's: they are rebuilt from what is left when compaction is next due). */
  summaries: number;
  /** The conversation itself is gone (nothing was left of it). */
  conversationRemoved: boolean;
}

/** One stored message in the portable format. */
export interface ExportedTurn {
  id: string;
  role: ChatMessage['role'];
  name?: string;
  content: ChatMessage['content'];
  toolCalls?: ChatMessage['toolCalls'];
  toolCallId?: string;
  createdAt: string;
  private?: true;
}

export interface ExportedConversation {
  id: string;
  createdAt: string;
  updatedAt: string;
  /** Every stored message, in order. */
  turns: ExportedTurn[];
  pins: { messageId: string; pinnedAt: string }[];
  /** The conversation's own manual aliases. */
  aliases: { alias: string; tag: string; createdAt: string }[];
}

/**
 * pagewise's portable format (version 1): every stored original with its ids, roles, names, times and tool calls,
 * pins and manual aliases. Derived data (tags, summaries, vectors, token counts) is left out: it is rebuilt.
 */
export interface ExportData {
  format: 'pagewise';
  version: 1;
  exportedAt: string;
  conversations: ExportedConversation[];
  /** Global manual aliases (with an export of every conversation only). */
  aliases: { alias: string; tag: string; createdAt: string }[];
}

export interface ImportReport {
  /** Conversations with something new stored. */
  conversations: string[];
  /** Messages stored; those already there are skipped. */
  turns: number;
  /** Messages already stored (same id, same content). */
  skipped: number;
}

export interface DataDeps {
  driver: StorageDriver;
  store: TurnStore;
  canonicalizer: Canonicalizer;
  index: TagIndex;
  tokenizer: () => Promise<Tokenizer>;
  serial: <T>(fn: () => Promise<T>) => Promise<T>;
  /** The same queue, also while the memory is closing: the later slots of an import already admitted. */
  resume: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Waits for background work (embedding, compaction) to settle. */
  settle: () => Promise<void>;
  /** Drops every cache of the conversation (turn facts, vector indexes, measured pressure, topics hint). */
  uncache: (conversationId: string) => void;
  /** Schedules what is derived in the background (vectors; compaction when due). */
  rebuildLater: (conversationId: string) => void;
  maxMessageBytes: number;
}

/** A stored turn's row as forget and an import's undo remove it. */
export type TurnRow = { rowid: number; seq: number; id: string; text: string; name: string | null };
