import { assemble } from './assembly/assembler.js';
import { PagewiseError } from './errors.js';
import { callerHistory, itemFor, storedHistory } from './history.js';
import { contentHash, describe, messageText, parseNow, validateConversationId, validateMessage } from './messages.js';
import { type ResolvedOptions, resolveOptions } from './options.js';
import { topicsHint } from './assembly/topics-hint.js';
import { openaiCompatible } from './llm/openai-compatible.js';
import { sampleBroad } from './retrieval/broad.js';
import { warmDateParser } from './retrieval/intent.js';
import { analyzeQuery } from './retrieval/query.js';
import { recall } from './retrieval/retriever.js';
import { keywordTagger } from './tags/keyword-tagger.js';
import { llmTagger } from './tags/llm-tagger.js';
import { type AliasSuggestion, createCanonicalizer } from './tags/tag-canonicalizer.js';
import { createTagIndex } from './tags/tag-index.js';
import { createTagRules } from './tags/tag-rules.js';
import { type TagAlias, type TagStat, createTagStore } from './tags/tag-store.js';
import { storedOverlap } from './store/reconcile.js';
import { migrate } from './store/schema.js';
import { type NewTurn, type TurnStore, createTurnStore, publicTurn } from './store/turn-store.js';
import { countCacheKey } from './tokens/chat-format.js';
import { createTokenizer } from './tokens/tokenizer.js';
import type {
  AssembledContext, ChatMessage, ConversationInfo, InboundInput, LlmProvider, MemoryOptions, StorageDriver, StoredTurn,
  Tagger, Tokenizer, TurnInput, TurnReport,
} from './types.js';

/** Tag aliases: `db` is read as `database` everywhere, in every conversation. */
export interface AliasApi {
  /** Records an alias and rewrites stored tags spelled that way. Both are canonicalized first. */
  add(alias: string, tag: string): Promise<TagAlias>;
  remove(alias: string): Promise<boolean>;
  list(): Promise<TagAlias[]>;
  /** Pairs of stored tags that look like spellings of one thing (edit distance, prefixes, hyphens). */
  suggest(limit?: number): Promise<AliasSuggestion[]>;
}

/** The engine: the two hooks around an LLM call, plus inspection. Same methods in-process and over a worker. */
export interface Memory {
  /** Before the LLM request: retrieve and assemble a context that fits the budget, and say what is in it and why. */
  onMessageInbound(input: InboundInput): Promise<AssembledContext>;
  /** After the response: store what is new (verbatim, once) and index it. */
  onTurnComplete(input: TurnInput): Promise<TurnReport>;
  /** Stored conversations, most recently updated first. */
  conversations(): Promise<ConversationInfo[]>;
  /** Stored turns of a conversation in order, from `from` (seq, default 0), at most `limit` (default 1000). */
  turns(conversationId: string, range?: { from?: number; limit?: number }): Promise<StoredTurn[]>;
  /** Tags of a conversation with their statistics (units carrying each, first and last turn, last used), most used first. */
  tags(conversationId: string): Promise<TagStat[]>;
  /** Manual and detected tag aliases. */
  readonly aliases: AliasApi;
  /** Finishes pending work and releases the storage. Later calls fail with ENGINE_CLOSED. */
  close(): Promise<void>;
}

const MODULE = 'engine';
const RECALL_HITS = 16;

function checkObject(value: unknown, method: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${method} takes one object argument (got ${describe(value)}).`);
  }
  return value as Record<string, unknown>;
}

async function openStorage(options: ResolvedOptions): Promise<StorageDriver> {
  if (options.storage === undefined) {
    const { sqliteWasm } = await import('./storage/sqlite-wasm.js');
    return sqliteWasm()();
  }
  return typeof options.storage === 'function' ? options.storage() : options.storage;
}

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
  const driver = await openStorage(opts);
  try {
    await migrate(driver);
  } catch (cause) {
    await driver.close();
    throw cause;
  }
  const store = createTurnStore(driver);
  const tagStore = createTagStore(driver);
  const canonicalizer = createCanonicalizer(tagStore);
  const llm: LlmProvider | undefined = opts.llm === undefined ? undefined
    : 'complete' in opts.llm ? opts.llm : openaiCompatible(opts.llm);
  const keyword = keywordTagger({ tagKeywords: opts.tagKeywords });
  const taggers: Tagger[] = opts.tagger === 'keyword' ? [keyword]
    : opts.tagger === 'llm' ? [llmTagger(llm!), keyword]
    : [opts.tagger, ...(llm ? [llmTagger(llm)] : []), keyword];
  const index = createTagIndex({ turns: store, tags: tagStore, canonicalizer, taggers, minTags: opts.minTags, maxTags: opts.maxTags });
  const rules = createTagRules(opts.tagRules);
  // The hint changes only every HINT_EVERY units, so the stable head of the prompt stays cacheable.
  const hints = new Map<string, { key: number; text: string }>();
  let tokenizerPromise: Promise<Tokenizer> | undefined;
  const tokenizer = () => (tokenizerPromise ??= createTokenizer({ tokenizer: opts.tokenizer, encoding: opts.encoding, margin: opts.margin }));
  let closed = false;
  // One operation at a time: SQLite is single-threaded and a batch must not interleave with another's reads.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    if (closed) return Promise.reject(new PagewiseError('ENGINE_CLOSED', MODULE, 'This memory is closed; create a new one with createMemory() (or connect()).'));
    const run = queue.then(fn, fn);
    queue = run.catch(() => undefined);
    return run;
  };

  const hintFor = async (conversationId: string, tok: Tokenizer): Promise<string> => {
    if (opts.topicsHintTokens === 0) return '';
    const key = Math.floor((await tagStore.unitCount(conversationId)) / HINT_EVERY);
    const cached = hints.get(conversationId);
    if (cached && cached.key === key) return cached.text;
    const text = await topicsHint(tagStore, conversationId, opts.topicsHintTokens, tok);
    hints.set(conversationId, { key, text });
    return text;
  };

  return {
    onMessageInbound(input) {
      return serial(async () => {
        const args = checkObject(input, 'onMessageInbound');
        const conversationId = validateConversationId(args.conversationId);
        const message = validateMessage(args.message, 'message', opts.maxMessageBytes);
        if (args.history !== undefined && !Array.isArray(args.history)) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `history must be an array of messages (got ${describe(args.history)}).`, { path: 'history' });
        }
        const now = parseNow(args.now);
        const nowIso = new Date(now).toISOString();
        const tok = await tokenizer();
        const available = opts.contextWindow - opts.reserveTokens;
        const text = messageText(message);
        const query = await analyzeQuery({ turns: store, tags: tagStore, index, canonicalizer, minTags: opts.minTags, maxTags: opts.maxTags },
          conversationId, text, now, nowIso);
        // Broad questions may use the whole window; temporal ones more memory within the target.
        const wide = query.intent.broad;
        const view = args.history
          ? await callerHistory(store, tok, conversationId, args.history as unknown[], opts.maxMessageBytes)
          : await storedHistory(store, tok, conversationId, wide ? available : opts.targetTokens, opts.protectedRecentTurns);
        const prefixSeqs = view.prefix.flatMap((p) => (p.seq === null ? [] : [p.seq]));
        const assembled = await assemble({
          conversationId,
          tokenizer: tok,
          window: opts.contextWindow,
          reserve: opts.reserveTokens,
          memoryTokens: opts.memoryTokens,
          targetTokens: opts.targetTokens,
          protectedRecentTurns: opts.protectedRecentTurns,
          prefix: view.prefix,
          history: view.history,
          historyComplete: view.complete,
          message: itemFor(message, null, tok),
          hint: await hintFor(conversationId, tok),
          placement: opts.recallPlacement,
          wide,
          temporal: query.intent.temporal,
          recall: async (exclude) => {
            const excluded = new Set([...exclude, ...prefixSeqs]);
            if (query.intent.broad) return { blocks: await sampleBroad({ turns: store, tags: tagStore }, conversationId, excluded, RECALL_HITS * 2), expired: [] };
            return recall({ turns: store, tags: tagStore }, {
              conversationId, terms: query.terms, tagWeights: query.tagWeights, speakers: query.speakers, intent: query.intent,
              exclude: excluded, limit: query.intent.temporal ? RECALL_HITS * 2 : RECALL_HITS, rules, nowMs: now,
            });
          },
        });
        await tagStore.touch(conversationId, query.matchedTags, nowIso);
        return { ...assembled, matchedTags: query.matchedTags, broad: query.intent.broad, temporal: query.intent.temporal };
      });
    },

    onTurnComplete(input) {
      return serial(async () => {
        const args = checkObject(input, 'onTurnComplete');
        const conversationId = validateConversationId(args.conversationId);
        if (!Array.isArray(args.messages) || args.messages.length === 0) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `messages must be a non-empty array of the turn's messages (got ${describe(args.messages)}).`, { path: 'messages' });
        }
        const messages = args.messages.map((m, i) => validateMessage(m, `messages[${i}]`, opts.maxMessageBytes));
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
        if ((await store.turnCount(conversationId)) > 0) {
          await index.indexNew(conversationId, now.toISOString());
          // Refreshed here, after the response, so that the next question does not wait for it.
          await hintFor(conversationId, tok);
          warmDateParser();
        }
        return {
          conversationId,
          stored: turns.length,
          skipped: messages.length - turns.length,
          storedIds: turns.map((t) => t.id),
          totalTurns: await store.turnCount(conversationId),
          compaction: null,
        };
      });
    },

    conversations() {
      return serial(() => store.conversations());
    },

    turns(conversationId, range = {}) {
      return serial(async () => {
        validateConversationId(conversationId);
        if (!(await store.conversation(conversationId))) {
          throw new PagewiseError('CONVERSATION_NOT_FOUND', MODULE, `No conversation "${conversationId}" is stored. List them with memory.conversations().`);
        }
        const from = range.from ?? 0;
        const limit = range.limit ?? 1000;
        if (!Number.isInteger(from) || from < 0 || !Number.isInteger(limit) || limit < 1) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, 'range.from must be an integer ≥ 0 and range.limit an integer ≥ 1.');
        }
        return (await store.range(conversationId, from, limit)).map(publicTurn);
      });
    },

    tags(conversationId) {
      return serial(async () => {
        validateConversationId(conversationId);
        return tagStore.vocabulary(conversationId);
      });
    },

    aliases: {
      add: (alias, tag) => serial(() => {
        if (typeof alias !== 'string' || typeof tag !== 'string' || !alias.trim() || !tag.trim()) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, 'aliases.add(alias, tag) takes two non-empty strings, e.g. aliases.add("db", "database").');
        }
        hints.clear();
        return canonicalizer.add(alias, tag, new Date().toISOString());
      }),
      remove: (alias) => serial(() => canonicalizer.remove(String(alias))),
      list: () => serial(() => canonicalizer.list()),
      suggest: (limit) => serial(() => canonicalizer.suggest(limit)),
    },

    async close() {
      if (closed) return;
      const pending = queue;
      closed = true;
      await pending;
      await driver.close();
    },
  };
}

const HINT_EVERY = 16;

/**
 * Of the messages after the stored overlap, those not stored yet. A caller id seen before is skipped when the
 * content is the same and refused (ID_CONFLICT) when it differs, wherever it sits in the list: stored turns are
 * never rewritten.
 */
async function newTurns(store: TurnStore, conversationId: string, all: ChatMessage[], hashes: string[], from: number): Promise<{ message: ChatMessage; hash: string }[]> {
  const ids = all.flatMap((m) => (m.id ? [m.id] : []));
  const known = new Map((await store.byIds(conversationId, ids)).map((t) => [t.id, t.contentHash]));
  const out: { message: ChatMessage; hash: string }[] = [];
  all.forEach((message, i) => {
    const hash = hashes[i]!;
    if (message.id !== undefined) {
      const seen = known.get(message.id);
      if (seen !== undefined && seen !== hash) {
        throw new PagewiseError('ID_CONFLICT', MODULE,
          `Message id "${message.id}" is already stored with different content. Stored turns are append-only: send an edit as a new message with a new id.`,
          { path: `messages[${i}].id` });
      }
      if (seen !== undefined || i < from) return;
      known.set(message.id, hash);
    } else if (i < from) {
      return;
    }
    out.push({ message, hash });
  });
  return out;
}
