/**
 * Running a memory for years: retention policies and their log, the background maintenance that enforces them and
 * rebuilds derived data after an upgrade, and paged lists. Shapes only; the behaviour is in engine/.
 */

// ---------------------------------------------------------------------------------------------
// Retention
// ---------------------------------------------------------------------------------------------

/**
 * What a memory keeps. Every bound is optional; none set keeps everything (the default). Removal goes through
 * forget's path: the text leaves every table, index and the database file, and sync tombstones keep other devices
 * from bringing it back.
 */
export interface RetentionPolicy {
  /**
   * Turns written before the start of the UTC day this many days ago are removed (a conversation left with none is
   * removed whole): once a day at most per conversation.
   */
  maxAgeDays?: number | null;
  /** Conversations beyond this many, those whose latest turn is oldest first, are removed whole. Global only. */
  maxConversations?: number | null;
  /** Conversations whose latest turn was written more than this many days ago are removed whole. */
  idleDays?: number | null;
  /** Pinned turns (and the conversations holding them) are kept whatever their age. Default true. */
  keepPinned?: boolean;
}

/** The `retention` option: the policy for every conversation, and how it is enforced. */
export interface RetentionOptions extends RetentionPolicy {
  /** How often the engine checks the policy in the background, in ms. Default 3,600,000 (an hour); null: only `applyRetention()`. */
  intervalMs?: number | null;
  /** Turns removed per slice (one storage transaction, one slot of the conversation's queue). Default 512. */
  sliceTurns?: number;
}

/** Why retention removed something. */
export type RetentionReason = 'maxAgeDays' | 'maxConversations' | 'idleDays';

/** One removal retention made: what went and why, never its text. */
export interface RetentionLogEntry {
  /** Position in the log: the cursor to read on from. */
  seq: number;
  /** When it was removed (ISO 8601). */
  at: string;
  conversationId: string;
  reason: RetentionReason;
  /** Turns removed. */
  turns: number;
  /** The conversation went whole. */
  conversationRemoved: boolean;
  /** Turns written before this (ISO 8601) went, for `maxAgeDays`. */
  before?: string;
}

/** `memory.applyRetention()`: one pass, or the slice of one the call was given. */
export interface RetentionReport {
  /** Turns removed in this call. */
  turnsRemoved: number;
  /** Conversations removed whole in this call. */
  conversationsRemoved: string[];
  /** Pinned turns kept that the policy would otherwise have removed. */
  pinnedKept: number;
  /** What this call removed, as the log records it. */
  entries: RetentionLogEntry[];
  /** Something is left to remove (the call stopped at its bound): call again, or let the background go on. */
  more: boolean;
}

// ---------------------------------------------------------------------------------------------
// Background maintenance (retention, rebuilds after an upgrade)
// ---------------------------------------------------------------------------------------------

/** Derived data made by an older summarizer, tagger or embedder, rebuilt in the background, newest conversations first. */
export interface RebuildStatus {
  /** What is being rebuilt: summaries (summarizer version), tags (tagger version), vectors (embedding model). */
  kind: 'summaries' | 'tags' | 'vectors';
  /** Items (summaries, conversations, turns) made by the current version. */
  done: number;
  /** Items in all. */
  total: number;
  /** The conversation being rebuilt now, or null when nothing is left. */
  conversationId: string | null;
  /**
   * Why the last slice stopped short (the summarizer failed: the LLM is down): the older data is kept, and a slice
   * tries again once a wait is over (a minute, doubling to an hour) or the next time the memory opens.
   */
  lastError?: string;
}

/** `memory.maintain()`: one slice of the background maintenance that is due. */
export interface MaintenanceReport {
  /** What retention removed in this slice (null: no policy, or nothing due). */
  retention: RetentionReport | null;
  /** The rebuilds under way (empty when everything is current). */
  rebuilds: RebuildStatus[];
  /** More is due: call again (the edge's alarm does), or let the engine's background go on. */
  more: boolean;
  /**
   * With nothing more now, when the next slice falls due by itself, in ms: retention's next check, a retry after a
   * failure's wait (null: none until something is written). The edge sets its next alarm by it.
   */
  nextInMs: number | null;
  /** Tasks whose slice failed (each is tried again at the next check; the other still ran). */
  errors: { task: 'retention' | 'rebuild'; code?: string; message: string }[];
}

// ---------------------------------------------------------------------------------------------
// Paged lists
// ---------------------------------------------------------------------------------------------

/** Which page of a list: where to go on from, and how many at most. */
export interface PageOptions {
  /** The `cursor` the previous page gave; absent or null for the first page. */
  cursor?: string | null;
  /** Items at most (1 to 10,000, default 500). A page also stops before 8 MiB of JSON, whatever the limit. */
  limit?: number;
}

/** One page of a list. */
export interface Page<T> {
  items: T[];
  /** Pass it back for the next page; null when this page is the last. */
  cursor: string | null;
}
