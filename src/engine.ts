import { assemble } from './assembly/assembler.js';
import { summaryPlan } from './assembly/summary-plan.js';
import { createBackground } from './background.js';
import { stemsOf } from './assembly/passages.js';
import { workingView } from './assembly/working-view.js';
import { type Atomic, createCompactor } from './compaction/compactor.js';
import { createSummaryStore } from './compaction/summary-store.js';
import { checkObject, gateBatches, makeLlm, makeSummarizer, newTurns, openStorage, optionalObject } from './engine-support.js';
import { PagewiseError } from './errors.js';
import { createLedger } from './llm/ledger.js';
import { hierarchyApi } from './engine-hierarchy.js';
import { createSemantic, makeEmbedder } from './embed/semantic.js';
import { createImportanceStore } from './store/importance-store.js';
import { TOKENS_PER_REQUEST } from './tokens/chat-format.js';
import { callerHistory, itemFor, storedHistory } from './history.js';
import { contentHash, describe, messageText, parseNow, readArray, validateConversationId, validateMessage } from './messages.js';
import { type ResolvedOptions, resolveOptions } from './options.js';
import { topicsHint } from './assembly/topics-hint.js';
import { dataApi } from './data-control.js';
import { mainTopics, sampleBroad } from './retrieval/broad.js';
import { warmDateParser } from './retrieval/intent.js';
import { analyzeQuery } from './retrieval/query.js';
import { type RecallBlock, recall } from './retrieval/retriever.js';
import { keywordTagger } from './tags/keyword-tagger.js';
import { llmTagger } from './tags/llm-tagger.js';
import { embeddingTagger } from './tags/embedding-tagger.js';
import { createCanonicalizer } from './tags/tag-canonicalizer.js';
import { createTagIndex } from './tags/tag-index.js';
import { createTagRules } from './tags/tag-rules.js';
import { createTagStore } from './tags/tag-store.js';
import { createThingJudge } from './tags/thing-tags.js';
import { storedOverlap } from './store/reconcile.js';
import { migrate } from './store/schema.js';
import { type NewTurn, createTurnStore, publicTurn } from './store/turn-store.js';
import { CACHED_CONVERSATIONS, Lru } from './cache.js';
import { countCacheKey } from './tokens/chat-format.js';
import { createTokenizer } from './tokens/tokenizer.js';
import { createScheduler, schedulerModeOf } from './scheduler.js';
import type { Memory } from './memory.js';
import type { CompactionReport, MemoryOptions, Summary, Tagger, Tokenizer } from './types.js';

export type { Memory } from './memory.js';

const MODULE = 'engine';
const RECALL_HITS = 16;

/**
 * Creates the engine. In Node the default storage is in-memory SQLite (sqlite-wasm); in the browser use
 * `connect()` from `pagewise/client`, which runs this same engine in a worker on OPFS.
 *
 * @example
 * const memory = await createMemory({ contextWindow: 8192 });
 * const ctx = await memory.onMessageInbound({ conversationId: 'c1', message: { role: 'user', content: 'Hi!' } });
 * const reply = await llm([{ role: 'system', content: ctx.prependText }, ...ctx.messages]);
 * await memory.onTurnComplete({ conversationId: 'c1', messages: [...ctx.messages.slice(-1), reply] });
 */
export async function createMemory(options: MemoryOptions = {}): Promise<Memory> {
  const opts = resolveOptions(options);
  const driver = gateBatches(await openStorage(opts));
  try {
    await migrate(driver);
  } catch (cause) {
    await driver.close();
    throw cause;
  }
  const store = createTurnStore(driver);
  const tagStore = createTagStore(driver);
  const canonicalizer = createCanonicalizer(tagStore);
  // Which tags name things, for the topics shown (the hint, broad questions, topics()); retrieval uses every tag.
  const thingJudge = createThingJudge({ turns: store, tags: tagStore });
  const summaryStore = createSummaryStore(driver);
  const importance = createImportanceStore(driver);
  const ledger = createLedger(driver);
  const llm = makeLlm(opts, ledger);
  const keyword = keywordTagger({ tagKeywords: opts.tagKeywords });
  const rules = createTagRules(opts.tagRules);
  // The hint changes only every HINT_EVERY units, so the stable head of the prompt stays cacheable. Kept for the
  // most recently used conversations only: an engine may see any number of conversation ids.
  const hints = new Lru<string, { key: number; text: string }>(CACHED_CONVERSATIONS);
  let tokenizerPromise: Promise<Tokenizer> | undefined;
  const tokenizer = () => (tokenizerPromise ??= createTokenizer({ tokenizer: opts.tokenizer, encoding: opts.encoding, margin: opts.margin }));
  let closed = false;
  // Calls on one conversation run one at a time, in order; calls on different conversations interleave at their
  // awaits; what spans conversations runs alone. The rule, and why it is safe, is at createScheduler.
  const scheduler = createScheduler(schedulerModeOf(options));
  const refused = () => Promise.reject(new PagewiseError('ENGINE_CLOSED', MODULE, 'This memory is closed; create a new one with createMemory() (or connect()).'));
  // Exclusive, also while closing: the later slots of an import already admitted.
  const resume = <T>(fn: () => Promise<T>): Promise<T> => scheduler.run(null, fn);
  const serial = <T>(fn: () => Promise<T>): Promise<T> => (closed ? refused() : resume(fn));
  // One conversation's slots (background work takes them step by step).
  const keyed = (conversationId: string): Atomic => (fn) => (closed ? refused() : scheduler.run(conversationId, fn));
  // A call on the conversation `read` names: read (caller input, once) before it is queued, so it can take that key.
  const on = <T>(read: () => string, fn: (conversationId: string) => Promise<T>): Promise<T> => {
    if (closed) return refused();
    let conversationId: string;
    try {
      conversationId = read();
    } catch (error) {
      return Promise.reject(error);
    }
    return scheduler.run(conversationId, () => fn(conversationId));
  };
  // An import runs in many slots of the queue; close() lets one already admitted finish (or undo itself) first.
  const imports = new Set<Promise<unknown>>();
  const inline: Atomic = (fn) => fn();
  const background = createBackground();
  const reports: CompactionReport[] = [];
  const semantic = createSemantic({
    driver, embedder: makeEmbedder(opts, opts.onModelProgress), implicit: opts.embedderImplicit, threshold: opts.similarityThreshold,
    background, serial: (fn, conversationId) => keyed(conversationId)(fn), onProgress: opts.onEmbeddingProgress,
  });
  if (opts.preloadEmbedder) semantic.warm();
  const taggers: Tagger[] = opts.tagger === 'keyword' ? [keyword]
    : opts.tagger === 'llm' ? [llmTagger(llm!), keyword]
    : opts.tagger === 'embedding' ? [embeddingTagger({ embed: semantic.embedBackground, later: background.later, signal: background.signal, keyword }), keyword]
    : [opts.tagger, ...(llm ? [llmTagger(llm)] : []), keyword];
  const index = createTagIndex({ turns: store, tags: tagStore, canonicalizer, taggers, minTags: opts.minTags, maxTags: opts.maxTags });
  const { summarizer, fallback } = makeSummarizer(opts, llm, tokenizer);
  const compactor = createCompactor({
    turns: store, tags: tagStore, summaries: summaryStore, canonicalizer, rules, tokenizer, summarizer, fallback,
    settings: {
      contextWindow: opts.contextWindow, softThreshold: opts.softThreshold, hardThreshold: opts.hardThreshold,
      protectedRecentTurns: opts.protectedRecentTurns, sumWindow: opts.sumWindow, nSum: opts.nSum, nSumSum: opts.nSumSum,
      maxSumLevel: opts.maxSumLevel, maxConcurrentSummaries: opts.maxConcurrentSummaries, summaryRatio: opts.summaryRatio,
      summaryTokens: opts.summaryTokens,
    },
  });
  // Background work of a conversation takes its key step by step (never the exclusive slot), in its own lane.
  const compactLater = (conversationId: string): void => {
    const atomic = keyed(conversationId);
    background.later(`compact:${conversationId}`, async () => {
      const report = await compactor.compact(conversationId, 'soft', atomic, background.signal, opts.backgroundSliceTurns);
      if (report) reports.push(report);
      // New summaries wait for their vectors like turns do (flush() returns once they have them).
      semantic.schedule(conversationId);
      await atomic(() => ledger.flush()).catch(() => undefined);
    }, conversationId);
  };
  const regenerateLater = (conversationId: string, stale: readonly Summary[]): void => {
    const atomic = keyed(conversationId);
    background.later(`regenerate:${conversationId}`, async () => {
      const fresh = await atomic(() => summaryStore.byIds(conversationId, stale.map((x) => x.id)));
      await compactor.regenerate(conversationId, fresh.filter((x) => x.stale), atomic, background.signal).catch(() => 0);
      semantic.schedule(conversationId);
      await atomic(() => ledger.flush()).catch(() => undefined);
    }, conversationId);
  };

  const hintFor = async (conversationId: string, tok: Tokenizer): Promise<string> => {
    if (opts.topicsHintTokens === 0) return '';
    const key = Math.floor((await tagStore.unitCount(conversationId)) / HINT_EVERY);
    const cached = hints.get(conversationId);
    if (cached && cached.key === key) return cached.text;
    const text = await topicsHint({ tags: tagStore, things: thingJudge }, conversationId, opts.topicsHintTokens, tok);
    hints.set(conversationId, { key, text });
    return text;
  };

  const { recoverImports, ...data } = dataApi({
    driver, store, canonicalizer, index, tokenizer, serial, resume, maxMessageBytes: opts.maxMessageBytes,
    settle: () => background.idle(),
    uncache: (conversationId) => { store.uncache(conversationId); tagStore.uncache(conversationId); canonicalizer.uncache(conversationId); semantic.uncache(conversationId); compactor.uncache(conversationId); thingJudge.uncache(conversationId); hints.delete(conversationId); },
    rebuildLater: (conversationId) => { semantic.schedule(conversationId); if (opts.compaction) compactLater(conversationId); },
  });
  // An import that a crash cut short is undone before anything reads the store.
  try {
    await resume(recoverImports);
  } catch (cause) {
    await driver.close();
    throw cause;
  }

  return {
    onMessageInbound(input) {
      let args: Record<string, unknown>;
      return on(() => validateConversationId((args = checkObject(input, 'onMessageInbound')).conversationId), async (conversationId) => {
        const message = validateMessage(args.message, 'message', opts.maxMessageBytes);
        const history = args.history === undefined ? undefined : readArray(args.history, 'history');
        if (args.history !== undefined && !history) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `history must be an array of messages (got ${describe(args.history)}).`, { path: 'history' });
        }
        const now = parseNow(args.now);
        const nowIso = new Date(now).toISOString();
        const tok = await tokenizer();
        const available = opts.contextWindow - opts.reserveTokens;
        const text = messageText(message);
        // The question's vector is computed in the model's thread while this one reads tags and words (a broad
        // question then discards it: a few milliseconds of the model's time, none of the request's).
        const embedding = semantic.query(text, undefined, message.private === true);
        const query = await analyzeQuery({ turns: store, tags: tagStore, index, canonicalizer, minTags: opts.minTags, maxTags: opts.maxTags },
          conversationId, text, now, nowIso, async () => (await embedding).vector, message.private === true);
        // Broad questions may use the whole window; temporal ones more memory within the target.
        const wide = query.intent.broad;
        semantic.touch(conversationId);
        const meaning = wide ? { vector: null, notes: [] } : await embedding;
        const notes = [...meaning.notes];
        const state = await summaryStore.state(conversationId);
        const watermark = state?.watermark ?? 0;
        const view = history
          ? await callerHistory(store, tok, conversationId, history, opts.maxMessageBytes)
          : await storedHistory(store, tok, conversationId, wide ? available : opts.targetTokens, opts.protectedRecentTurns, watermark);
        // Compacted turns are sent as summaries (and recalled when relevant), not verbatim.
        if (state) view.history = view.history.filter((i) => i.seq === null || i.seq >= watermark);
        const prefixSeqs = view.prefix.flatMap((p) => (p.seq === null ? [] : [p.seq]));
        const messageItem = itemFor(message, null, tok);
        const pinned = await importance.pinned(conversationId);
        const fixed = view.prefix.reduce((n, i) => n + i.tokens, 0) + messageItem.tokens + TOKENS_PER_REQUEST;
        const historyBudget = (wide ? available : opts.targetTokens) - fixed - Math.min(opts.memoryTokens, Math.floor(opts.targetTokens / 4));
        const over = view.history.reduce((n, i) => n + i.tokens, 0) > historyBudget;
        const recalls = over ? await importance.recallCounts(conversationId, view.history.flatMap((i) => (i.sourceId ? [i.sourceId] : []))) : new Map<string, number>();
        const working = workingView(view.history, {
          budget: historyBudget, protectedRecentTurns: opts.protectedRecentTurns, minConsecutiveToolMessages: opts.minConsecutiveToolMessages,
          largePayloadThreshold: opts.largePayloadThreshold, offloadPreview: opts.offloadPreview, pinned: new Set(pinned),
          importance: (item, index) => index + 8 * (recalls.get(item.sourceId ?? '') ?? 0), focus: stemsOf(text), tokenizer: tok,
        });
        // Only specific questions rank summaries by meaning (broad and temporal ones have their own order).
        const similar = state && meaning.vector && !query.intent.temporal ? await semantic.searchSummaries(conversationId, meaning.vector, 4) : [];
        const plan = state ? await summaryPlan(summaryStore, conversationId, query.intent, similar) : { candidates: [], share: 0 };
        const assembled = await assemble({
          conversationId,
          tokenizer: tok,
          window: opts.contextWindow,
          reserve: opts.reserveTokens,
          memoryTokens: opts.memoryTokens,
          fillTarget: opts.memoryTokensAuto,
          targetTokens: opts.targetTokens,
          protectedRecentTurns: opts.protectedRecentTurns,
          prefix: view.prefix,
          history: working.history,
          historyComplete: view.complete,
          message: messageItem,
          hint: wide || opts.topicsHintAlways ? await hintFor(conversationId, tok) : '',
          placement: opts.recallPlacement,
          wide,
          temporal: query.intent.temporal,
          compacted: state !== null,
          summaries: plan.candidates,
          summaryShare: plan.share,
          recall: async (exclude) => {
            const excluded = new Set([...exclude, ...prefixSeqs]);
            const pins = (await store.byIds(conversationId, pinned)).filter((t) => !excluded.has(t.seq)).map((t): RecallBlock => ({
              unitSeq: t.seq, hits: [t], pair: [], adjacent: [], scores: {}, tags: [], priority: 10, reason: 'pinned by the user',
            }));
            for (const p of pins) excluded.add(p.unitSeq);
            if (query.intent.broad) return { blocks: [...pins, ...await sampleBroad({ turns: store, tags: tagStore, things: thingJudge }, conversationId, excluded, RECALL_HITS * 2)], expired: [] };
            const limit = query.intent.temporal ? RECALL_HITS * 2 : RECALL_HITS;
            const vector = meaning.vector
              ? (await semantic.searchTurns(conversationId, meaning.vector, limit * 3, { exclude: excluded, window: query.intent.window ?? undefined }))
                .map((h) => ({ seq: h.ref, score: h.score }))
              : undefined;
            const found = await recall({ turns: store, tags: tagStore }, {
              conversationId, terms: query.terms, tagWeights: query.tagWeights, speakers: query.speakers, intent: query.intent,
              exclude: excluded, limit, rules, nowMs: now, vector,
            });
            return { ...found, blocks: [...pins, ...found.blocks] };
          },
        });
        if (working.compressed.size > 0) {
          for (const entry of assembled.manifest) {
            const mine = entry.sourceIds.filter((id) => working.compressed.has(id));
            if (mine.length > 0) entry.compressed = Object.fromEntries(mine.map((id) => [id, working.compressed.get(id)!]));
          }
        }
        const used = new Set(assembled.manifest.flatMap((e) => (e.summaryId ? [e.summaryId] : [])));
        const stale = plan.candidates.filter((c) => c.summary.stale && used.has(c.summary.id)).map((c) => c.summary);
        if (stale.length > 0) regenerateLater(conversationId, stale);
        await importance.recalled(conversationId, assembled.manifest.filter((e) => e.kind === 'recall').flatMap((e) => e.sourceIds), now);
        await tagStore.touch(conversationId, query.matchedTags, nowIso);
        const waiting = meaning.vector ? await semantic.unembedded(conversationId, await store.turnCount(conversationId)) : 0;
        if (waiting > 0) notes.push(`${waiting} stored turn(s) not embedded yet (background queue): found by tags and BM25 only until then.`);
        return { ...assembled, matchedTags: query.matchedTags, broad: query.intent.broad, temporal: query.intent.temporal, ...(notes.length > 0 ? { notes } : {}) };
      });
    },

    onTurnComplete(input) {
      let args: Record<string, unknown>;
      return on(() => validateConversationId((args = checkObject(input, 'onTurnComplete')).conversationId), async (conversationId) => {
        const list = readArray(args.messages, 'messages');
        if (!list || list.length === 0) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `messages must be a non-empty array of the turn's messages (got ${describe(args.messages)}).`, { path: 'messages' });
        }
        const messages = list.map((m, i) => validateMessage(m, `messages[${i}]`, opts.maxMessageBytes));
        const hashes = await Promise.all(messages.map(contentHash));
        const tail = (await store.before(conversationId, Number.MAX_SAFE_INTEGER, messages.length)).reverse();
        const overlap = storedOverlap(tail, messages.map((m, i) => ({ id: m.id, contentHash: hashes[i]! })));
        const fresh = await newTurns(store, conversationId, messages, hashes, overlap);
        const tok = await tokenizer();
        const now = new Date();
        const turns: NewTurn[] = fresh.map(({ message, hash }) => {
          const createdMs = message.createdAt ? Date.parse(message.createdAt) : now.getTime();
          const text = messageText(message);
          return {
            message,
            id: message.id ?? `pw_${crypto.randomUUID()}`,
            text,
            contentHash: hash,
            createdAt: new Date(createdMs).toISOString(),
            createdMs,
            tokens: tok.count(text),
          };
        });
        if (turns.length > 0) await store.append(conversationId, turns, countCacheKey(tok), now.toISOString());
        let compaction: CompactionReport | null = null;
        if ((await store.turnCount(conversationId)) > 0) {
          await index.indexNew(conversationId, now.toISOString());
          if (turns.length > 0) semantic.schedule(conversationId);
          // Refreshed here, after the response, so that the next question does not wait for it.
          await hintFor(conversationId, tok);
          warmDateParser();
          if (opts.compaction && turns.length > 0) {
            const due = compactor.due(await compactor.pressure(conversationId));
            // Hard: before returning, inside this operation. Soft: in the background, between later operations.
            if (due === 'hard') compaction = await compactor.compact(conversationId, 'hard', inline, background.signal);
            else if (due === 'soft') compactLater(conversationId);
          }
        }
        await ledger.flush();
        return {
          conversationId,
          stored: turns.length,
          skipped: messages.length - turns.length,
          storedIds: turns.map((t) => t.id),
          totalTurns: await store.turnCount(conversationId),
          compaction,
        };
      });
    },

    conversations() {
      return serial(() => store.conversations());
    },

    turns(id, range) {
      return on(() => validateConversationId(id), async (conversationId) => {
        const { from = 0, limit = 1000 } = optionalObject(range, 'range') as { from?: unknown; limit?: unknown };
        if (!(await store.conversation(conversationId))) {
          throw new PagewiseError('CONVERSATION_NOT_FOUND', MODULE, `No conversation ${describe(conversationId)} is stored. List them with memory.conversations().`);
        }
        if (!Number.isSafeInteger(from) || (from as number) < 0 || !Number.isSafeInteger(limit) || (limit as number) < 1) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `range.from must be an integer ≥ 0 and range.limit an integer ≥ 1 (got ${describe(from)}, ${describe(limit)}).`, { path: 'range' });
        }
        return (await store.range(conversationId, from as number, limit as number)).map(publicTurn);
      });
    },

    tags(id) {
      return on(() => validateConversationId(id), (conversationId) => tagStore.vocabulary(conversationId));
    },

    topics(id, options) {
      return on(() => validateConversationId(id), (conversationId) => {
        const { limit = DEFAULT_TOPICS } = optionalObject(options, 'options') as { limit?: unknown };
        if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_TOPICS) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `options.limit must be an integer from 1 to ${MAX_TOPICS} (got ${describe(limit)}); leave it out for ${DEFAULT_TOPICS}.`, { path: 'options.limit' });
        }
        return mainTopics({ tags: tagStore, things: thingJudge }, conversationId, limit);
      });
    },

    aliases: {
      // Arguments are checked by the canonicalizer, inside the queue: a bad one is a rejected promise. Exclusive: the
      // scope is only known once the canonicalizer has read it, and a global alias changes every conversation.
      add: (alias, tag, scope) => serial(async () => {
        const added = await canonicalizer.add(alias, tag, scope, new Date().toISOString());
        if (added.conversationId === null) hints.clear();
        else hints.delete(added.conversationId);
        return added;
      }),
      remove: (alias, scope) => serial(() => canonicalizer.remove(alias, scope)),
      list: (scope) => serial(() => canonicalizer.list(scope)),
      suggest: (limit, scope) => serial(() => canonicalizer.suggest(limit, scope)),
    },

    embeddingStatus(id) {
      return on(() => validateConversationId(id), async (conversationId) => {
        const status = await semantic.status(conversationId);
        // Asking is a sign of interest: vectors a reload left missing are queued (as a first question would).
        if (status.embedded < status.total) semantic.touch(conversationId);
        return status;
      });
    },

    ...data,

    import(input) {
      const run = data.import(input);
      imports.add(run);
      const done = () => { imports.delete(run); };
      run.then(done, done);
      return run;
    },

    ...hierarchyApi({ serial, keyed, on, index, compactor, embedLater: semantic.schedule, modelSettled: semantic.settled, summaries: summaryStore, importance, ledger, turns: store, tags: tagStore, tokenizer, background, reports }),

    async close() {
      if (closed) return;
      closed = true;
      await background.stop(new PagewiseError('ENGINE_CLOSED', MODULE, 'The memory was closed.'));
      await Promise.allSettled(imports);
      // Every call admitted before (and every slot of an import admitted before) has ended.
      await resume(async () => undefined);
      await ledger.flush().catch(() => undefined);
      await driver.close();
    },
  };
}

const HINT_EVERY = 16;
const DEFAULT_TOPICS = 24;
// Each topic asked for reads up to four tags' sentences with compromise (a first call), so the list is bounded.
const MAX_TOPICS = 200;
