/**
 * Usage and health figures (`memory.stats()`): what memory injected and saved, why recall picked what it did, how long
 * calls take, what failed, how deep the queues are, what compaction did and how much is stored. Shapes only; the
 * counting is in engine/usage*.ts. `MemoryStats` (types-search.ts) is these figures plus external search's.
 */
import type { RebuildStatus } from './types-ops.js';

/** Latency figures over a rolling window, in ms. */
export interface LatencyStats {
  count: number;
  p50: number;
  p95: number;
  max: number;
}

/**
 * Tokens of the requests `onMessageInbound` assembled, summed, every figure counted with the configured tokenizer as
 * the request's `budget` and `manifest` say.
 */
export interface TokenUsage {
  /** Σ `budget.total`: everything the requests carried. */
  total: number;
  /** Σ `budget.prefix`: the leading system messages. */
  prefix: number;
  /** Σ `budget.history`: history messages sent (recent and older, compressed or whole). */
  history: number;
  /** Σ `budget.message`: the new messages (and the messages after them). */
  message: number;
  /** Σ `budget.overhead`: the chat format's reply priming. */
  overhead: number;
  /** Σ `budget.memory`: everything pagewise injected (the kinds below and the blocks' own framing). */
  memory: number;
  /** Of `memory`: the manifest's `recall` entries (recalled excerpts). */
  recall: number;
  /** Of `memory`: the manifest's `summary` entries. */
  summary: number;
  /** Of `memory`: Σ `budget.topics`, the `<context-topics>` hint. */
  topics: number;
  /** Of `memory`: Σ `budget.search`, web results. */
  search: number;
  /** Of `memory`: the manifest's `attachments` entries (recalled images sent again). */
  attachments: number;
  /**
   * Σ, per request, the tokens of the conversation's stored path (the branch the request was on) as messages: each
   * stored turn's text (counted with the model's tokenizer; attachments not included) plus its 3 tokens of markup.
   * What sending the stored history whole would have cost. Only requests where every stored turn's count was cached
   * or could be counted in the request are included (`unmeasured` counts the others).
   */
  wholeHistory: number;
  /**
   * Σ, per measured request, `max(0, wholeHistory − (prefix + history + memory))`: the stored history's tokens that
   * were not sent, less what memory injected in their place. Never negative: a request where memory added more than
   * it left out saved 0. The new message and the reply priming cost the same either way and are in neither side.
   * A request that passed its own `history` is compared with the stored path all the same.
   */
  saved: number;
  /** Requests whose stored path had too many uncounted turns to measure then (after an import: counted later). */
  unmeasured: number;
}

/** Why a recalled excerpt (a manifest `recall` entry) was there; one excerpt may have several. */
export type RecallSignal =
  /** `scores.tagIdf`: its tags matched the question's. */
  | 'tags'
  /** `scores.bm25`: keywords (full-text search). */
  | 'bm25'
  /** `scores.vector`: the embedding's similarity was measured for it. */
  | 'vector'
  /** `scores.speaker`: the question named its speaker. */
  | 'speaker'
  /** `scores.time`: it lies in the time (or at the position) the question names. */
  | 'time'
  /** `scores.neighbour`: it came in beside a match (or with the turns that complete it). */
  | 'neighbour'
  /** Pinned by the user. */
  | 'pin'
  /** A broad question's sample ("what did we discuss?"). */
  | 'broad'
  /** From another branch (`branches: 'all'`). */
  | 'otherBranch'
  /** None of the above: the learned ranking alone. */
  | 'ranking';

/** Recall as the requests' manifests report it. */
export interface RecallUsage {
  /** Manifest `recall` entries sent. */
  entries: number;
  /** Stored turns they quoted (their `sourceIds`). */
  turns: number;
  /** Entries by signal (an entry counts once under each signal it carries). */
  bySignal: Record<RecallSignal, number>;
}

/**
 * Counters kept in the database (the `usage_counters` table), so they survive a restart: of one conversation, or summed
 * over every conversation stored. Forgetting a conversation removes its counters. A request on a conversation with
 * nothing stored yet is counted once its first turns are (by the `onTurnComplete` that follows it, in the same
 * process), and not at all if none are.
 */
export interface UsageCounters {
  /** Calls that returned. */
  calls: { onMessageInbound: number; onTurnComplete: number };
  tokens: TokenUsage;
  recall: RecallUsage;
  /** Messages `onTurnComplete` stored (new ones; repeats skipped are not counted). */
  turnsStored: number;
  /** Compaction passes that compacted something (hard, soft and manual), from their reports. */
  compaction: { runs: number; turnsCompacted: number; summariesMade: number; tokensFreed: number };
  /** Summaries `regenerateSummaries` rebuilt (lazy background regeneration is not counted). */
  summariesRegenerated: number;
}

/** How deep the engine's queues are now, and the deepest they have been since the memory opened. */
export interface QueueStats {
  /** Calls admitted by the engine's queue: waiting for their conversation's (or the exclusive) slot, and running. */
  calls: { waiting: number; running: number; maxWaiting: number; maxRunning: number };
  /** Background jobs (compaction, regeneration, embedding): queued (not started) and running. */
  background: { queued: number; running: number; maxQueued: number; maxRunning: number };
}

/** The usage and health part of `memory.stats()`. */
export interface UsageStats {
  /** The conversation asked about, or null for the whole memory. */
  conversationId: string | null;
  /** When this memory opened (ISO 8601): where the in-memory figures (`latencyMs`, `calls`, `errors`, maxima) start. */
  since: string;
  /** Persisted counters: of the conversation, or of every conversation. */
  usage: UsageCounters;
  /**
   * Per method (`onMessageInbound`, `onTurnComplete`, every other Memory method called), its duration over its last
   * 1,024 calls, in memory (lost at a restart). For the whole memory even when a conversation is asked about.
   */
  latencyMs: Record<string, LatencyStats>;
  /** Per method, calls since the memory opened (ended either way), in memory. For the whole memory. */
  calls: Record<string, number>;
  /**
   * Per method, PagewiseErrors thrown by code since the memory opened (anything else as `INTERNAL`), in memory — a bad
   * call stores nothing, not even a count. With a conversation: the calls that named it (the last 1,000 conversations
   * with errors are kept).
   */
  errors: Record<string, Record<string, number>>;
  /** Now, for the whole memory. */
  queues: QueueStats;
  /**
   * Bytes stored. The whole memory: the database file's pages (`page_count × page_size`; null where the driver refuses
   * the pragma). A conversation: the UTF-8 bytes of its turns' stored content and its summaries' text (attachments,
   * indexes and vectors not included).
   */
  bytes: number | null;
  /** Vectors stored now (turns and summaries, every model). */
  embeddings: number;
  /**
   * Rebuilds after an upgrade still under way (summaries, tags, vectors), as `memory.maintain()` reports them; empty
   * when everything is current. For the whole memory even when a conversation is asked about.
   */
  rebuilds: RebuildStatus[];
}
