/**
 * The shapes the Memory interface gives and takes beyond the two hooks: forget, export and import (data control),
 * tag statistics and aliases, the LLM cost report. The modules that produce them re-export them.
 */
import type { ChatMessage } from './types.js';

/** What `forget` removes: a whole conversation, or some of its messages (by id, or every exchange carrying a tag). */
export interface ForgetInput {
  conversationId: string;
  /** Stored message ids (as in `report.storedIds` or `memory.turns()`). */
  messageIds?: string[];
  /** A tag (any spelling its aliases know): every exchange (unit) carrying it. */
  tag?: string;
  /** A message id: it and every message after it on any branch through it (drop an abandoned branch by its `start`). */
  branch?: string;
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

/**
 * A stored attachment's bytes, as `memory.attachment()` gives them and an export carries them.
 *
 * @inline
 */
export interface Attachment {
  /** Its id: the SHA-256 of its bytes, hex (a part's `attachment`). */
  id: string;
  mediaType: string;
  /** Bytes. */
  size: number;
  /** The bytes, base64. */
  data: string;
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
  /**
   * On a branch other than the conversation's first (an edit or a regeneration forked it): the id of its branch's
   * first message, and the message that branch follows ('' : the conversation's start).
   */
  branch?: { start: string; after: string };
}

export interface ExportedConversation {
  id: string;
  createdAt: string;
  updatedAt: string;
  /** Every stored message, every branch, in the order they were written (the current branch's are those on the path to `head`). */
  turns: ExportedTurn[];
  /** The message the conversation is at (`memory.branches().head`), when it is not the last one written. */
  head?: string | null;
  pins: { messageId: string; pinnedAt: string }[];
  /** The conversation's own manual aliases. */
  aliases: { alias: string; tag: string; createdAt: string }[];
  /**
   * In a page of an export (`export(id, { cursor })`) after the first: the id of the turn this page's turns follow.
   * `import` checks it is stored, so pages are imported in order.
   */
  after?: string;
}

/**
 * pagewise's portable format (version 1): every stored original with its ids, roles, names, times, parts and tool
 * calls, the attachments they refer to, pins and manual aliases. Derived data (tags, summaries, vectors, token counts) is left out: it is rebuilt.
 */
export interface ExportData {
  format: 'pagewise';
  version: 1;
  exportedAt: string;
  conversations: ExportedConversation[];
  /** Global manual aliases (with an export of every conversation only). */
  aliases: { alias: string; tag: string; createdAt: string }[];
  /**
   * The bytes of every attachment the turns refer to, once each (turns name them by `attachment` id). An attachment
   * whose bytes are not on this device (a sync has not brought them yet) is left out.
   */
  attachments?: Attachment[];
}

export interface ImportReport {
  /** Conversations with something new stored. */
  conversations: string[];
  /** Messages stored; those already there are skipped. */
  turns: number;
  /** Messages already stored (same id, same content). */
  skipped: number;
}

/** One line of `memory.costReport()`: calls of one purpose and model. */
export interface CostLine {
  conversationId: string | null;
  purpose: string;
  provider: string;
  model: string;
  calls: number;
  failures: number;
  inputTokens: number;
  outputTokens: number;
  /** In the pricing's currency; null when no pricing was configured. */
  cost: number | null;
  /** Time spent waiting for the provider. */
  ms: number;
}

/** `memory.costReport()`: usage of the configured LLM per conversation and purpose, with totals. */
export interface CostReport {
  lines: CostLine[];
  total: { calls: number; failures: number; inputTokens: number; outputTokens: number; cost: number | null };
}

/** A tag's statistics in one conversation. */
export interface TagStat {
  tag: string;
  /** Units carrying it (as a tag or a related tag). */
  units: number;
  firstSeq: number;
  lastSeq: number;
  lastUsed: string;
}

/**
 * A manual or learned alias: `alias` is read as `tag`, in every conversation (`conversationId: null`, manual
 * aliases only) or in one conversation. Learned (`'auto'`) aliases always belong to the conversation they were
 * learned from.
 */
export interface TagAlias {
  alias: string;
  tag: string;
  source: 'manual' | 'auto';
  createdAt: string;
  /** The conversation the alias applies to; null: every conversation. */
  conversationId: string | null;
}

/** A suggested alias: two tags that may name the same thing. */
export interface AliasSuggestion {
  alias: string;
  tag: string;
  /** Units carrying each, over the conversations where both spellings occur. */
  aliasUnits: number;
  tagUnits: number;
  /** In how many conversations both spellings occur (suggestions only pair tags of one conversation). */
  conversations: number;
}

/**
 * Tag aliases: `db` is read as `database`. A manual alias applies in every conversation, or in one when given
 * `{ conversationId }`; a learned (`'auto'`) alias applies only in the conversation whose content taught it. In a
 * conversation, its own manual aliases come first, then the global ones, then its learned ones. Arguments of any
 * other type, text that names no tag (`'!!!'`), lone surrogates and spellings over 128 characters are refused with
 * INVALID_ARGUMENT, and nothing changes.
 */
export interface AliasApi {
  /**
   * Records a manual alias and rewrites stored tags spelled that way, in its scope only (one transaction). Both are
   * canonicalized first; the alias must differ from the tag it reads as.
   */
  add(alias: string, tag: string, scope?: { conversationId?: string }): Promise<TagAlias>;
  /** Removes the global alias, or the conversation's own (manual or learned); tags it rewrote stay as they are. */
  remove(alias: string, scope?: { conversationId?: string }): Promise<boolean>;
  /** The global aliases; with a conversation, the global ones followed by that conversation's own. */
  list(scope?: { conversationId?: string }): Promise<TagAlias[]>;
  /**
   * Pairs of tags of one conversation that look like spellings of one thing (edit distance, prefixes, hyphens),
   * at most `limit` (an integer ≥ 1, default 50); over all conversations unless one is given.
   */
  suggest(limit?: number, scope?: { conversationId?: string }): Promise<AliasSuggestion[]>;
}
