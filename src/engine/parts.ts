// The parts createMemory composes, each built from what it needs: the stores on the driver, the topics hint, the
// taggers and the tag index, the compactor, and the background jobs of a conversation.
import { createTreeStore, type TreeStore } from '../store/tree.js';
import type { Background } from '../common/background.js';
import { CACHED_CONVERSATIONS, Lru } from '../common/cache.js';
import { type Atomic, type CompactionSettings, type Compactor, createCompactor } from '../compaction/compactor.js';
import { type SummaryStore, createSummaryStore } from '../compaction/summary-store.js';
import type { Semantic } from '../embed/semantic.js';
import { makeSummarizer } from './support.js';
import { type Ledger, createLedger } from '../llm/ledger.js';
import type { ResolvedOptions } from './options.js';
import { topicsHint } from '../assembly/topics-hint.js';
import { type AttachmentStore, createAttachmentStore } from '../store/attachment-store.js';
import { type ImportanceStore, createImportanceStore } from '../store/importance-store.js';
import { type TurnStore, createTurnStore } from '../store/turn-store.js';
import { embeddingTagger } from '../tags/embedding-tagger.js';
import { keywordTagger } from '../tags/keyword-tagger.js';
import { llmTagger } from '../tags/llm-tagger.js';
import { type Canonicalizer, createCanonicalizer } from '../tags/tag-canonicalizer.js';
import { type TagIndex, createTagIndex } from '../tags/tag-index.js';
import type { TagRules } from '../tags/tag-rules.js';
import { type TagStore, createTagStore } from '../tags/tag-store.js';
import { type ThingJudge, createThingJudge } from '../tags/thing-tags.js';
import { createTokenizer } from '../tokens/tokenizer.js';
import type { CompactionReport, LlmProvider, StorageDriver, Summary, Tagger, Tokenizer } from '../contracts/types.js';

const HINT_EVERY = 16;

/** What the engine keeps in SQLite, each store on the one driver. */
export interface Stores {
  store: TurnStore;
  tagStore: TagStore;
  canonicalizer: Canonicalizer;
  /** Which tags name things, for the topics shown (the hint, broad questions, topics()); retrieval uses every tag. */
  thingJudge: ThingJudge;
  summaryStore: SummaryStore;
  importance: ImportanceStore;
  ledger: Ledger;
  /** Attachments' bytes, stored once by content hash. */
  attachments: AttachmentStore;
  /** The conversation as a tree: branches, the head, positions on the path to it. */
  tree: TreeStore;
}

export function createStores(driver: StorageDriver): Stores {
  const store = createTurnStore(driver);
  const tagStore = createTagStore(driver);
  const canonicalizer = createCanonicalizer(tagStore);
  const thingJudge = createThingJudge({ turns: store, tags: tagStore });
  return {
    store, tagStore, canonicalizer, thingJudge, summaryStore: createSummaryStore(driver), importance: createImportanceStore(driver), ledger: createLedger(driver),
    attachments: createAttachmentStore(driver), tree: createTreeStore(driver),
  };
}

/** The configured tokenizer, loaded on first use (once). */
export function lazyTokenizer(opts: ResolvedOptions): () => Promise<Tokenizer> {
  let tokenizerPromise: Promise<Tokenizer> | undefined;
  return () => (tokenizerPromise ??= createTokenizer({ tokenizer: opts.tokenizer, encoding: opts.encoding, margin: opts.margin }));
}

export interface Hints {
  /** The conversation's topics hint, made again only every HINT_EVERY units; '' when the hint is off. */
  hintFor(conversationId: string, tok: Tokenizer): Promise<string>;
  delete(conversationId: string): void;
  clear(): void;
}

/**
 * The hint changes only every HINT_EVERY units, so the stable head of the prompt stays cacheable. Kept for the most
 * recently used conversations only: an engine may see any number of conversation ids.
 */
export function createHints(d: { tagStore: TagStore; thingJudge: ThingJudge; topicsHintTokens: number }): Hints {
  const hints = new Lru<string, { key: number; text: string }>(CACHED_CONVERSATIONS);
  return {
    async hintFor(conversationId, tok) {
      if (d.topicsHintTokens === 0) return '';
      const key = Math.floor((await d.tagStore.unitCount(conversationId)) / HINT_EVERY);
      const cached = hints.get(conversationId);
      if (cached && cached.key === key) return cached.text;
      const text = await topicsHint({ tags: d.tagStore, things: d.thingJudge }, conversationId, d.topicsHintTokens, tok);
      hints.set(conversationId, { key, text });
      return text;
    },
    delete: (conversationId) => { hints.delete(conversationId); },
    clear: () => hints.clear(),
  };
}

/** The taggers tried in order (the keyword tagger last) and the tag index they fill. */
export function createEngineTagIndex(d: Pick<Stores, 'store' | 'tagStore' | 'canonicalizer'> & {
  opts: ResolvedOptions; llm: LlmProvider | undefined; semantic: Semantic; background: Background;
}): TagIndex {
  const { opts, llm, semantic, background } = d;
  const keyword = keywordTagger({ tagKeywords: opts.tagKeywords });
  const taggers: Tagger[] = opts.tagger === 'keyword' ? [keyword]
    : opts.tagger === 'llm' ? [llmTagger(llm!), keyword]
    : opts.tagger === 'embedding' ? [embeddingTagger({ embed: semantic.embedBackground, later: background.later, signal: background.signal, keyword }), keyword]
    : [opts.tagger, ...(llm ? [llmTagger(llm)] : []), keyword];
  return createTagIndex({ turns: d.store, tags: d.tagStore, canonicalizer: d.canonicalizer, taggers, minTags: opts.minTags, maxTags: opts.maxTags });
}

function compactionSettings(opts: ResolvedOptions): CompactionSettings {
  return {
    contextWindow: opts.contextWindow, softThreshold: opts.softThreshold, hardThreshold: opts.hardThreshold,
    protectedRecentTurns: opts.protectedRecentTurns, sumWindow: opts.sumWindow, nSum: opts.nSum, nSumSum: opts.nSumSum,
    maxSumLevel: opts.maxSumLevel, maxConcurrentSummaries: opts.maxConcurrentSummaries, summaryRatio: opts.summaryRatio,
    summaryTokens: opts.summaryTokens,
  };
}

/** The compactor with the configured summarizer (the extractive one as its fallback). */
export function createEngineCompactor(d: Pick<Stores, 'store' | 'tagStore' | 'summaryStore' | 'canonicalizer'> & {
  opts: ResolvedOptions; llm: LlmProvider | undefined; rules: TagRules; tokenizer: () => Promise<Tokenizer>;
}): Compactor {
  const { summarizer, fallback } = makeSummarizer(d.opts, d.llm, d.tokenizer);
  return createCompactor({
    turns: d.store, tags: d.tagStore, summaries: d.summaryStore, canonicalizer: d.canonicalizer, rules: d.rules, tokenizer: d.tokenizer,
    summarizer, fallback, settings: compactionSettings(d.opts),
  });
}

export interface BackgroundJobs {
  /** A soft-threshold compaction of the conversation, in its background lane. */
  compactLater(conversationId: string): void;
  /** Rebuilds the stale summaries an assembly used, in the conversation's background lane. */
  regenerateLater(conversationId: string, stale: readonly Summary[]): void;
}

/** Background work of a conversation takes its key step by step (never the exclusive slot), in its own lane. */
export function createBackgroundJobs(d: Pick<Stores, 'summaryStore' | 'ledger'> & {
  keyed(conversationId: string): Atomic; background: Background; compactor: Compactor; semantic: Semantic;
  /** Reports of background compactions, handed out by flush(). */
  reports: CompactionReport[]; backgroundSliceTurns: number | null;
  /** Counts a background compaction's report as its job ends (memory.stats(): not left waiting for a later call). */
  counted?: (report: CompactionReport) => Promise<void>;
}): BackgroundJobs {
  const { keyed, background, compactor, semantic, ledger } = d;
  return {
    compactLater(conversationId) {
      const atomic = keyed(conversationId);
      background.later(`compact:${conversationId}`, async () => {
        const report = await compactor.compact(conversationId, 'soft', atomic, background.signal, d.backgroundSliceTurns);
        if (report) {
          d.reports.push(report);
          await d.counted?.(report).catch(() => undefined);
        }
        // New summaries wait for their vectors like turns do (flush() returns once they have them).
        semantic.schedule(conversationId);
        await atomic(() => ledger.flush()).catch(() => undefined);
      }, conversationId);
    },
    regenerateLater(conversationId, stale) {
      const atomic = keyed(conversationId);
      background.later(`regenerate:${conversationId}`, async () => {
        const fresh = await atomic(() => d.summaryStore.byIds(conversationId, stale.map((x) => x.id)));
        await compactor.regenerate(conversationId, fresh.filter((x) => x.stale), atomic, background.signal).catch(() => 0);
        semantic.schedule(conversationId);
        await atomic(() => ledger.flush()).catch(() => undefined);
      }, conversationId);
    },
  };
}
