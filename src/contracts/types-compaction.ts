/**
 * Part of the contract file (types.ts re-exports it): the shapes of compaction, summaries, pins and memory tools.
 * Nothing here has behaviour.
 */

/** A summary as stored: one row of the memory hierarchy. */
export interface Summary {
  /** `sum_…`; tools and the manifest name summaries by it. */
  id: string;
  conversationId: string;
  /**
   * `segment`: consecutive turns on shared tags (level 1). `rollup`: `nSumSum` summaries of one level (level 2 up
   * to `maxSumLevel − 1`). `master`: the whole compacted past (level `maxSumLevel`). `tag`: one cover tag's segments
   * rolled up (seed 000's layer 2; level 2).
   */
  kind: 'segment' | 'rollup' | 'master' | 'tag';
  level: number;
  /** For `tag` summaries. */
  tag?: string;
  /** The turns it covers, first and last seq (inclusive). */
  firstSeq: number;
  lastSeq: number;
  /** When the first and last covered turns were written (ISO 8601). */
  from: string;
  to: string;
  /** Turn ids (segments) or summary ids (roll-ups, master, tag summaries): what it was made from. */
  sourceIds: string[];
  text: string;
  /** The tags of everything it covers (never fewer), plus any a summarizer added. */
  tags: string[];
  relatedTags: string[];
  /** Tokens of `text`. */
  tokens: number;
  /** `extractive`, `llm:<model>`, or `extractive (llm failed)`. */
  madeBy: string;
  /** The summarizer's version (prompt or algorithm) when it was made. */
  promptVersion: number;
  createdAt: string;
  /** The summary that rolled this one up, if any. */
  parentId?: string;
  /** Marked for regeneration (made by an older version, or asked for): rebuilt when next needed. */
  stale: boolean;
}

/** What one compaction did (`report.compaction`, `memory.compact()`, `memory.flush()`). */
export interface CompactionReport {
  conversationId: string;
  /** `soft`: proactive (ran in the background); `hard`: ran before `onTurnComplete` returned; `manual`: `memory.compact()`. */
  trigger: 'soft' | 'hard' | 'manual';
  segmentsCompacted: number;
  turnsCompacted: number;
  /** Active-history tokens (prefix, summaries on the frontier, turns after the watermark) before and after. */
  tokensBefore: number;
  tokensAfter: number;
  tokensFreed: number;
  /** The greedy set cover of the compacted turns' tags: the tags whose summaries describe everything compacted. */
  tagsCovered: string[];
  /** Summaries written: segments, roll-ups, the master, tag summaries. */
  summariesMade: number;
  /** Segments the LLM failed on, summarized extractively instead (regenerate them later). */
  fallbacks: number;
  /** The first seq not compacted, after. */
  watermark: number;
  durationMs: number;
  /** Set when it stopped early (abort, closed engine, storage error); what was committed before stays. */
  stoppedBy?: string;
  /**
   * Set when it stopped before the protected turns (at its bound — a hard pass's, `maxTurns`, `backgroundSliceTurns` —
   * or where another pass took over) with turns still to compact: `memory.compact(conversationId, { maxTurns })` goes
   * on from there (so does the next pass the thresholds call for).
   */
  more?: true;
}

/** A memory tool in the OpenAI function-calling format (`tools` of a chat-completions request). */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** What `memory.callTool()` returns: the text for the `tool` message, and what it drew on. */
export interface ToolResult {
  /** Send this as the `tool` message's content. */
  content: string;
  /** Stored turns and summaries it included. */
  sourceIds: string[];
  tokens: number;
  /** Whether it was cut to `maxTokens`; page on with `from`. */
  truncated: boolean;
}
