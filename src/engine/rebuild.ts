// Upgrades that finish themselves: derived data an older summarizer or embedding model made is rebuilt in the
// background, a slice at a time (engine/maintenance.ts runs the slices; at the edge, one per alarm), newest
// conversations first. Summaries are rewritten in place, each in its own transaction, so recall reads the old text
// until the new one lands; a conversation's tag index made by another tagger or version is made again beside the
// stored one and replaces it whole (rebuild-tags.ts); vectors of another model are replaced by the embedding queue
// (semantic.ts), which this schedules conversation by conversation, newest first (rebuild-vectors.ts). A rebuild whose
// summarizer or embedder fails says so and waits before asking it again (createRetry). One kind of slice per maintain():
// summaries first, then tags once no summary is left to rebuild (or the summarizer failed); vectors are only handed
// to their queue, so each slice does that too.
import type { Background } from '../common/background.js';
import { yieldToEventLoop } from '../common/pace.js';
import type { Atomic } from '../compaction/compactor.js';
import type { Maker, SummaryStore } from '../compaction/summary-store.js';
import type { RebuildStatus } from '../contracts/types-ops.js';
import type { LlmProvider, Summarizer } from '../contracts/types.js';
import type { Semantic } from '../embed/semantic.js';
import type { Ledger } from '../llm/ledger.js';
import type { ResolvedOptions } from './options.js';
import { type Stores, createEngineCompactor, createEngineTagIndex } from './parts.js';
import { createTagRebuild } from './rebuild-tags.js';
import { createRetry, createVectorRebuild } from './rebuild-vectors.js';
import { makeSummarizer } from './support.js';
import type { TagRules } from '../tags/tag-rules.js';
import type { Tokenizer } from '../contracts/types.js';

/** Summaries rebuilt per slice at most: a hook on the conversation waits at most for one of them to be written. */
export const SLICE_SUMMARIES = 8;
/** A slice also ends after the summary that takes it past this long (an LLM summarizer answers in seconds). */
export const SLICE_MS = 2_000;

/** What the ledger records a rebuild's LLM calls under (`memory.costReport()`): an upgrade's cost, apart from compaction's. */
export const REBUILD_PURPOSE = 'rebuild';

export interface RebuildDeps extends Pick<Stores, 'store' | 'tagStore' | 'summaryStore' | 'canonicalizer' | 'ledger' | 'thingJudge'> {
  opts: ResolvedOptions;
  llm: LlmProvider | undefined;
  rules: TagRules;
  tokenizer: () => Promise<Tokenizer>;
  /** A conversation's slots: a rebuild takes only its conversation's, step by step. */
  keyed(conversationId: string): Atomic;
  semantic: Semantic;
  background: Background;
  /** The topics hints made from a conversation's tags (dropped when its tag index is replaced). */
  hints?: { delete(conversationId: string): void };
}

/** The configured LLM, its calls recorded as the rebuild's. */
function asRebuild(llm: LlmProvider | undefined): LlmProvider | undefined {
  return llm && { name: llm.name, model: llm.model, complete: (request) => llm.complete({ ...request, purpose: REBUILD_PURPOSE }) };
}

/** Who makes summaries now (the fallback's own summaries stand while the configured summarizer is another). */
export function makerOf(summarizer: Summarizer, fallback: Summarizer): Maker {
  return { name: summarizer.name, version: summarizer.version, fallbackPrefix: summarizer === fallback ? null : `${fallback.name} (` };
}

export interface Rebuild {
  /** One slice of every rebuild under way, with their progress (what `maintain()` reports). */
  slice(signal: AbortSignal): Promise<{ statuses: RebuildStatus[]; more: boolean }>;
  /** Every rebuild's progress, from counts only (no text read): for `memory.stats()`. Empty: everything is current. */
  status(): Promise<RebuildStatus[]>;
  /**
   * When a slice is due again by itself, ms from now, though the last one said no more: a retry after a failure's
   * wait, or a look at vectors the queue is making. Null: none (the engine's loop re-checks then, the edge's alarm).
   */
  retryInMs(): number | null;
}

export function createRebuild(d: RebuildDeps): Rebuild {
  const llm = asRebuild(d.llm);
  const { summarizer, fallback } = makeSummarizer(d.opts, llm, d.tokenizer);
  const maker = makerOf(summarizer, fallback);
  // A compactor of its own, for the summarizer over the LLM whose calls the ledger records as the rebuild's.
  const regenerate = createEngineCompactor({ ...d, llm }).regenerate;
  const summaries = createSummaryRebuild(d.summaryStore, d.ledger, maker, d.keyed, regenerate, d.semantic);
  const vectors = createVectorRebuild(d.semantic, d.background);
  // A tag index of its own: the configured taggers, the LLM's calls the rebuild's; an embedding tagger's tag-name
  // vectors are the engine's tagger's to make (a unit's tags are the keyword tagger's either way).
  const index = createEngineTagIndex({ ...d, llm, background: { ...d.background, later: () => undefined } });
  const tags = createTagRebuild({ ...d, index });
  return {
    async slice(signal) {
      const s = await summaries.slice(signal);
      // While summaries are left, the tags' progress only.
      const waiting = s.more ? await tags.status() : null;
      const t = s.more ? { status: waiting, more: waiting !== null } : await tags.slice(signal);
      const v = await vectors.slice();
      return { statuses: [s.status, t.status, v.status].filter((x): x is RebuildStatus => x !== null), more: s.more || t.more || v.more };
    },
    async status() {
      return [await summaries.status(), await tags.status(), await vectors.status()].filter((x): x is RebuildStatus => x !== null && x.done < x.total);
    },
    retryInMs() {
      const due = [summaries.retryInMs(), tags.retryInMs(), vectors.retryInMs()].filter((ms): ms is number => ms !== null);
      return due.length > 0 ? Math.min(...due) : null;
    },
  };
}

type Regenerate = ReturnType<typeof createEngineCompactor>['regenerate'];

/** Summaries another summarizer or version made, rewritten with the current one: one conversation's, up to a slice. */
function createSummaryRebuild(store: SummaryStore, ledger: Ledger, maker: Maker, keyed: RebuildDeps['keyed'], regenerate: Regenerate, semantic: Semantic) {
  // The last failure (the summarizer failed): the slice that met it stops, and the summarizer is not asked again
  // until the failure's wait is over (another rebuild's slices go on meanwhile).
  const retry = createRetry();
  const status = async (conversationId: string | null): Promise<RebuildStatus> => {
    const lastError = retry.error();
    return { kind: 'summaries', ...(await store.versions(maker)), conversationId, ...(lastError ? { lastError } : {}) };
  };
  return {
    status: async (): Promise<RebuildStatus> => status(await store.outdatedConversation(maker)),
    retryInMs: retry.dueInMs,

    async slice(signal: AbortSignal): Promise<{ status: RebuildStatus | null; more: boolean }> {
      const conversationId = await store.outdatedConversation(maker);
      if (conversationId === null) {
        retry.succeeded();
        return { status: null, more: false };
      }
      if (retry.waiting()) return { status: await status(conversationId), more: false };
      const atomic = keyed(conversationId);
      const started = performance.now();
      let failed = false;
      for (let n = 0; n < SLICE_SUMMARIES && !signal.aborted && performance.now() - started < SLICE_MS;) {
        // One at a time, read again each time: a roll-up is rebuilt from its sources' new text.
        const [next] = await atomic(() => store.outdated(conversationId, maker, 1));
        if (!next) break;
        let thrown: string | null = null;
        const done = await regenerate(conversationId, [next], atomic, signal, true).catch((cause: unknown) => {
          thrown = cause instanceof Error ? cause.message : String(cause);
          return -1;
        });
        if (done !== 1) {
          // The summarizer failed (its fallback answered, or it threw): the old summary stays; a slice tries again
          // once the failure's wait is over.
          failed = !signal.aborted;
          if (failed) retry.failed(thrown ?? `${maker.name} failed; the summary made by the earlier version is kept`);
          break;
        }
        retry.succeeded();
        n++;
        // A macrotask turn after each summary: with a synchronous driver the slice resolves through microtasks only,
        // and a call waiting on the event loop (the worker's next request, a timer) would wait for the whole rebuild.
        await yieldToEventLoop();
      }
      // New text takes a new vector; the LLM's calls go to the ledger.
      semantic.schedule(conversationId);
      await atomic(() => ledger.flush()).catch(() => undefined);
      const now = await status(await atomic(() => store.outdatedConversation(maker)));
      return { status: { ...now, conversationId: now.done < now.total ? conversationId : now.conversationId }, more: !failed && !signal.aborted && now.done < now.total };
    },
  };
}
