import { assemble } from './assembly/assembler.js';
import { PagewiseError } from './errors.js';
import { callerHistory, itemFor, storedHistory } from './history.js';
import { contentHash, describe, messageText, parseNow, validateConversationId, validateMessage } from './messages.js';
import { type ResolvedOptions, resolveOptions } from './options.js';
import { recallByKeywords } from './retrieval/retriever.js';
import { storedOverlap } from './store/reconcile.js';
import { migrate } from './store/schema.js';
import { type NewTurn, type TurnStore, createTurnStore, publicTurn } from './store/turn-store.js';
import { countCacheKey } from './tokens/chat-format.js';
import { createTokenizer } from './tokens/tokenizer.js';
import type {
  AssembledContext, ChatMessage, ConversationInfo, InboundInput, MemoryOptions, StorageDriver, StoredTurn, Tokenizer,
  TurnInput, TurnReport,
} from './types.js';

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

  return {
    onMessageInbound(input) {
      return serial(async () => {
        const args = checkObject(input, 'onMessageInbound');
        const conversationId = validateConversationId(args.conversationId);
        const message = validateMessage(args.message, 'message', opts.maxMessageBytes);
        if (args.history !== undefined && !Array.isArray(args.history)) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `history must be an array of messages (got ${describe(args.history)}).`, { path: 'history' });
        }
        parseNow(args.now);
        const tok = await tokenizer();
        const available = opts.contextWindow - opts.reserveTokens;
        const view = args.history
          ? await callerHistory(store, tok, conversationId, args.history as unknown[], opts.maxMessageBytes)
          : await storedHistory(store, tok, conversationId, available);
        const prefixSeqs = view.prefix.flatMap((p) => (p.seq === null ? [] : [p.seq]));
        const assembled = await assemble({
          conversationId,
          tokenizer: tok,
          window: opts.contextWindow,
          reserve: opts.reserveTokens,
          memoryTokens: opts.memoryTokens,
          protectedRecentTurns: opts.protectedRecentTurns,
          prefix: view.prefix,
          history: view.history,
          message: itemFor(message, null, tok),
          recall: (exclude) => recallByKeywords(store, {
            conversationId,
            text: messageText(message),
            exclude: new Set([...exclude, ...prefixSeqs]),
            limit: RECALL_HITS,
          }),
        });
        return { ...assembled, matchedTags: [], broad: false, temporal: false };
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

    async close() {
      if (closed) return;
      const pending = queue;
      closed = true;
      await pending;
      await driver.close();
    },
  };
}

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
