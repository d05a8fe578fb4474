// The data-control side of the Memory API, as its callers and its parts see it: what forget takes and reports, the
// portable export format, what an import reports, and what the parts are built from.
import type { Canonicalizer } from '../tags/tag-canonicalizer.js';
import type { TagIndex } from '../tags/tag-index.js';
import type { TurnStore } from '../store/turn-store.js';
import type { TreeStore } from '../store/tree.js';
import type { AttachmentStore } from '../store/attachment-store.js';
import type { StorageDriver, Tokenizer } from '../contracts/types.js';

export type { ExportData, ExportedConversation, ExportedTurn, ForgetInput, ForgetReport, ImportReport } from '../contracts/types-data.js';

export interface DataDeps {
  driver: StorageDriver;
  store: TurnStore;
  /** Attachments' bytes (stored once by content hash). */
  attachments: AttachmentStore;
  canonicalizer: Canonicalizer;
  index: TagIndex;
  tokenizer: () => Promise<Tokenizer>;
  serial: <T>(fn: () => Promise<T>) => Promise<T>;
  /** The same queue, also while the memory is closing: the later slots of an import already admitted. */
  resume: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Waits for background work (embedding, compaction) to settle. */
  settle: () => Promise<void>;
  /** Whether background work of the conversation (compaction, vectors) is queued or running. */
  busy: (conversationId: string) => boolean;
  /**
   * Drops every cache of the conversation (turn facts, vector indexes, measured pressure, topics hint); `from`: the
   * first position its turns changed at (left out: anywhere; null: none moved).
   */
  uncache: (conversationId: string, from?: number | null) => void;
  /** Schedules what is derived in the background (vectors; compaction when due). */
  rebuildLater: (conversationId: string) => void;
  maxMessageBytes: number;
  maxAttachmentBytes: number;
  /** How far ahead of this clock a synced change may be stamped (ms); one further ahead is held. */
  maxClockSkewMs: number;
  /** Sync: days a peer not heard from still holds tombstone compaction back (null: until it has read them). */
  tombstoneRetentionDays: number | null;
  /** The conversation as a tree (forget and sync move its positions to the head the tree has after them). */
  tree: TreeStore;
}

/** A stored turn's row as forget and an import's undo remove it. */
export type TurnRow = { rowid: number; seq: number; id: string; text: string; name: string | null };
