import { branchApi } from './branches.js';
import { attachmentApi } from './attachments.js';
import { createBackground } from '../common/background.js';
import { withSync } from '../common/sync.js';
import { dataApi } from './data-control.js';
import { createSemantic, makeEmbedder } from '../embed/semantic.js';
import { hierarchyApi } from './hierarchy.js';
import { inboundApi } from './inbound.js';
import { inspectionApi } from './inspection.js';
import { createBackgroundJobs, createEngineCompactor, createEngineTagIndex, createHints, createStores, lazyTokenizer } from './parts.js';
import { createEngineQueue } from './queue.js';
import { gateBatches, makeLlm, openStorage } from './support.js';
import { turnCompleteApi } from './turn.js';
import { searchApi } from './search-api.js';
import { createUsage } from './usage.js';
import type { TelemetryOption } from './telemetry.js';
import { createSearch } from '../search/search.js';
import { PagewiseError } from '../contracts/errors.js';
import type { Memory } from '../contracts/memory.js';
import { type ResolvedOptions, resolveOptions } from './options.js';
import { schedulerModeOf } from './scheduler.js';
import { migrate } from '../store/schema.js';
import { MAINTENANCE_LANE, createMaintenance } from './maintenance.js';
import { createRetention } from './retention.js';
import { createRebuild } from './rebuild.js';
import { createTagRules } from '../tags/tag-rules.js';
import type { CompactionReport, MemoryOptions, StorageDriver } from '../contracts/types.js';
import type { ExportData } from '../contracts/types-data.js';

export type { Memory } from '../contracts/memory.js';

const MODULE = 'engine';

/**
 * Creates the engine. In Node the default storage is in-memory SQLite (sqlite-wasm); in the browser use
 * `connect()` from `pagewise/client`, which runs this same engine in a worker on OPFS.
 *
 * The engine is a list of parts and how they connect: the stores on one driver, the queue every call takes, the
 * background lanes, the embedder, the tag index, the compactor; then the Memory API's sides, each built from the
 * parts it uses (the request path, the write path, inspection, data control, the memory hierarchy).
 *
 * @example
 * const memory = await createMemory({ contextWindow: 8192 });
 * const ctx = await memory.onMessageInbound({ conversationId: 'c1', message: { role: 'user', content: 'Hi!' } });
 * const reply = await llm([{ role: 'system', content: ctx.prependText }, ...ctx.messages]);
 * await memory.onTurnComplete({ conversationId: 'c1', messages: [...ctx.messages.slice(-1), reply] });
 */
export async function createMemory(options: MemoryOptions = {}): Promise<Memory> {
  const opts = resolveOptions(options);
  const driver = await openDriver(opts);
  const stores = createStores(driver);
  const { store, tagStore, canonicalizer, thingJudge, summaryStore, importance, ledger } = stores;
  const llm = makeLlm(opts, ledger);
  const rules = createTagRules(opts.tagRules);
  const hints = createHints({ tagStore, thingJudge, topicsHintTokens: opts.topicsHintTokens });
  const tokenizer = lazyTokenizer(opts);
  const queue = createEngineQueue(schedulerModeOf(options));
  const { serial, resume, keyed, on } = queue;
  const background = createBackground();
  const reports: CompactionReport[] = [];
  const semantic = createSemantic({
    driver, embedder: makeEmbedder(opts.embedder, opts.onModelProgress), implicit: opts.embedderImplicit, threshold: opts.similarityThreshold,
    background, serial: (fn, conversationId) => keyed(conversationId)(fn), onProgress: opts.onEmbeddingProgress,
  });
  if (opts.preloadEmbedder) semantic.warm();
  const index = createEngineTagIndex({ ...stores, opts, llm, semantic, background });
  const compactor = createEngineCompactor({ ...stores, opts, llm, rules, tokenizer });
  const search = opts.search ? createSearch(opts.search, llm, background.signal) : null;
  // Retention and rebuilds after an upgrade, a slice at a time (engine/maintenance.ts).
  // Rebuilds after an upgrade (summaries, vectors): rebuilds.status() is the progress memory.stats() shows.
  const rebuilds = createRebuild({ ...stores, opts, llm, rules, tokenizer, keyed, semantic, background, hints });
  // Retention (engine/retention.ts): its slices take only their conversation's slot, in its background lane.
  const retention = createRetention({
    ...stores, driver, index, keyed, on, serial, check: queue.check, background, option: opts.retention,
    uncache: (conversationId, from) => uncache(conversationId, from), rebuildLater: (conversationId) => rebuildLater(conversationId),
    wake: () => { if (opts.maintenance === 'auto') maintenance.start(); },
  });
  // The next check by itself: retention's interval, or a rebuild's retry after a wait, whichever comes first.
  const recheckMs = () => {
    const due = [retention.recheckMs(), rebuilds.retryInMs()].filter((ms): ms is number => ms !== null);
    return due.length > 0 ? Math.min(...due) : null;
  };
  const maintenance = createMaintenance({ rebuild: rebuilds.slice, retention: retention.retention, recheckMs }, background);
  // Every method counted for memory.stats() and OpenTelemetry (engine/usage.ts).
  const usage = createUsage({ driver, store, tokenizer, queue, background, rebuildStatus: () => rebuilds.status(), telemetry: opts.telemetry as TelemetryOption, flushCalls: driver.name === 'durable-object-sql' ? 1 : undefined });
  const jobs = createBackgroundJobs({ ...stores, keyed, background, compactor, semantic, reports, backgroundSliceTurns: opts.backgroundSliceTurns, counted: usage.compacted });

  const uncache = (conversationId: string, from?: number | null) => { store.uncache(conversationId); tagStore.uncache(conversationId); canonicalizer.uncache(conversationId); semantic.uncache(conversationId); compactor.uncache(conversationId, from); thingJudge.uncache(conversationId); hints.delete(conversationId); usage.uncache(conversationId); };
  const rebuildLater = (conversationId: string) => { semantic.schedule(conversationId); if (opts.compaction) jobs.compactLater(conversationId); };
  // A move to another branch: what was derived from the positions that changed is made again for the turns there now.
  const branching = { driver, store, canonicalizer, index, tree: stores.tree, uncache, after: async (conversationId: string) => { await index.indexNew(conversationId, new Date().toISOString()); rebuildLater(conversationId); } };
  const { pathTurns, ...branches } = branchApi({ ...branching, on });
  const { recoverImports, ...data } = dataApi({
    driver, store, attachments: stores.attachments, canonicalizer, index, tokenizer, serial, resume, maxMessageBytes: opts.maxMessageBytes, maxAttachmentBytes: opts.maxAttachmentBytes, maxClockSkewMs: opts.maxClockSkewMs, tombstoneRetentionDays: opts.tombstoneRetentionDays,
    settle: () => background.idle(MAINTENANCE_LANE),
    busy: (conversationId) => background.busy(conversationId),
    uncache, rebuildLater, tree: stores.tree,
  });
  // An import that a crash cut short is undone before anything reads the store.
  try {
    await resume(recoverImports);
  } catch (cause) {
    await driver.close();
    throw cause;
  }
  // An import runs in many slots of the queue; close() lets one already admitted finish (or undo itself) first.
  const imports = new Set<Promise<unknown>>();

  if (opts.maintenance === 'auto') maintenance.start();

  return usage.wrap(withSync({
    ...inboundApi({ ...stores, opts, on, tokenizer, semantic, index, rules, hints, jobs, branching, search }),
    ...searchApi({ search, store, keyed, check: queue.check, tokenizer, maxResults: opts.search?.maxResults ?? 3 }),
    ...turnCompleteApi({ ...stores, opts, on, tokenizer, index, semantic, hints, compactor, background, jobs, branching }),
    ...inspectionApi({ ...stores, serial, on, semantic, hints, pathTurns }),
    ...branches,
    ...attachmentApi({ attachments: stores.attachments, serial }),
    ...data,
    import(input: ExportData) {
      const run = data.import(input);
      imports.add(run);
      const done = () => { imports.delete(run); };
      run.then(done, done);
      return run;
    },
    ...hierarchyApi({ serial, keyed, on, index, compactor, embedLater: semantic.schedule, modelSettled: semantic.settled, summaries: summaryStore, importance, ledger, turns: store, tags: tagStore, tokenizer, background, reports }),

    applyRetention: retention.applyRetention,
    setRetention: retention.setRetention,
    retentionLog: retention.retentionLog,
    maintain: () => queue.check().then(() => maintenance.maintain()),

    async close() {
      if (!queue.shut()) return;
      maintenance.stop();
      await background.stop(new PagewiseError('ENGINE_CLOSED', MODULE, 'The memory was closed.'));
      await Promise.allSettled(imports);
      // Every call admitted before (and every slot of an import admitted before) has ended.
      await resume(async () => undefined);
      // The usage counters of the calls that ended, before the driver closes.
      await usage.settle();
      await ledger.flush().catch(() => undefined);
      await driver.close();
    },
  }));
}

/** The configured storage, gated (see gateBatches) and migrated; closed again when the migration fails. */
async function openDriver(opts: ResolvedOptions): Promise<StorageDriver> {
  const driver = gateBatches(await openStorage(opts));
  try {
    await migrate(driver);
  } catch (cause) {
    await driver.close();
    throw cause;
  }
  return driver;
}
