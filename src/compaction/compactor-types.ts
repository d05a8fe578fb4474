import type { TurnStore } from '../store/turn-store.js';
import type { Canonicalizer } from '../tags/tag-canonicalizer.js';
import type { TagRules } from '../tags/tag-rules.js';
import type { TagStore } from '../tags/tag-store.js';
import type { Summarizer, Tokenizer } from '../contracts/types.js';
import type { SummaryStore } from './summary-store.js';

export interface CompactionSettings {
  contextWindow: number;
  softThreshold: number;
  hardThreshold: number;
  protectedRecentTurns: number;
  /** Turns per level-1 summary at most (seed 004's `sum_window`). */
  sumWindow: number;
  /** Compact also once this many turns are past the protected ones, whatever their tokens (null: tokens only). */
  nSum: number | null;
  /** Summaries of one level rolled into one of the next (seed 004's `n_sum_sum`). */
  nSumSum: number;
  /** The master summary's level (seed 004's `max_sum_lvl`). */
  maxSumLevel: number;
  maxConcurrentSummaries: number;
  /** Summary length as a share of the source's tokens. */
  summaryRatio: number;
  /** Tokens per summary at most. */
  summaryTokens: number;
}

export interface CompactorDeps {
  turns: TurnStore;
  tags: TagStore;
  summaries: SummaryStore;
  canonicalizer: Canonicalizer;
  rules: TagRules;
  tokenizer: () => Promise<Tokenizer>;
  summarizer: Summarizer;
  /** Used when `summarizer` fails on a segment (the LLM is down): never fails. */
  fallback: Summarizer;
  settings: CompactionSettings;
}

/** Runs a storage phase without interleaving with other engine operations. */
export type Atomic = <T>(fn: () => Promise<T>) => Promise<T>;
