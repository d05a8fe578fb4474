import { EXTRACTIVE_VERSION, extractiveSummarizer } from '../compaction/extractive.js';
import { llmSummarizer } from '../compaction/llm-summarizer.js';
import { PagewiseError } from '../contracts/errors.js';
import { checkIdentifier, describe, readRecord } from '../common/messages.js';
import { anthropic } from '../llm/anthropic.js';
import type { Ledger } from '../llm/ledger.js';
import { openaiCompatible } from '../llm/openai-compatible.js';
import type { ResolvedOptions } from './options.js';
import type { TurnStore } from '../store/turn-store.js';
import type { ChatMessage, LlmProvider, MaybePromise, SqlValue, Statement, StorageDriver, Summarizer, Tokenizer } from '../contracts/types.js';

const MODULE = 'engine';

/**
 * A method's object argument, as a plain copy of its own properties (read once: a getter or Proxy trap that throws
 * is INVALID_ARGUMENT here, and cannot answer differently later).
 */
export function checkObject(value: unknown, method: string): Record<string, unknown> {
  const record = readRecord(value, method, 'INVALID_ARGUMENT', MODULE);
  if (!record) throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${method} takes one object argument (got ${describe(value)}).`);
  return record;
}

export function checkId(value: unknown, what: string): string {
  return checkIdentifier(value, 'INVALID_ARGUMENT', what, 256, MODULE);
}

/** An optional options object of a method: undefined → {}, anything but a plain object → INVALID_ARGUMENT. */
export function optionalObject(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined) return {};
  const record = readRecord(value, what, 'INVALID_ARGUMENT', MODULE);
  if (!record) throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${what} must be an object or left out (got ${describe(value)}).`, { path: what });
  return record;
}

export async function openStorage(options: ResolvedOptions): Promise<StorageDriver> {
  if (options.storage === undefined) {
    const { sqliteWasm } = await import('../storage/sqlite-wasm.js');
    return sqliteWasm()();
  }
  const driver: unknown = typeof options.storage === 'function' ? await options.storage() : options.storage;
  const d = driver as Partial<StorageDriver> | null;
  if (typeof d !== 'object' || d === null || typeof d.query !== 'function' || typeof d.batch !== 'function' || typeof d.close !== 'function') {
    throw new PagewiseError('INVALID_OPTIONS', 'options', `\`storage\` returned ${describe(driver)}, not a StorageDriver ({ name, query, batch, close }), e.g. storage: sqliteWasm({ vfs: 'opfs-sahpool' }).`, { path: 'storage' });
  }
  return d as StorageDriver;
}

/** The configured LLM, wrapped so every call lands in the usage ledger. */
export function makeLlm(options: ResolvedOptions, ledger: Ledger): LlmProvider | undefined {
  const o = options.llm;
  if (o === undefined) return undefined;
  if ('complete' in o) return ledger.track(o);
  return ledger.track(o.provider === 'anthropic' ? anthropic(o) : openaiCompatible(o), o.pricing);
}

export function makeSummarizer(options: ResolvedOptions, llm: LlmProvider | undefined, tokenizer: () => Promise<Tokenizer>): { summarizer: Summarizer; fallback: Summarizer } {
  let extractive: Summarizer | undefined;
  const fallback: Summarizer = {
    name: 'extractive',
    version: EXTRACTIVE_VERSION,
    summarize: async (request) => (extractive ??= extractiveSummarizer(await tokenizer())).summarize(request),
  };
  const s = options.summarizer;
  const summarizer = s === 'extractive' ? fallback : s === 'llm' ? llmSummarizer(llm!) : s;
  return { summarizer, fallback };
}

/**
 * Of the messages after the stored overlap, those not stored yet. A caller id seen before is skipped when the
 * content is the same and refused (ID_CONFLICT) when it differs, wherever it sits in the list: stored turns are
 * never rewritten.
 */
export async function newTurns(store: TurnStore, conversationId: string, all: ChatMessage[], hashes: string[], from: number): Promise<{ message: ChatMessage; hash: string }[]> {
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

/**
 * The driver as the engine uses it: while a batch answered with a promise is under way, every later statement
 * (query or batch) waits for it, in order. Calls of different conversations interleave at awaits; a driver whose
 * transaction spans awaits (BEGIN, awaited statements, COMMIT on one connection) must not get another call's
 * statements inside it. The bundled drivers answer synchronously and pass straight through.
 */
export function gateBatches(driver: StorageDriver): StorageDriver {
  let tail: Promise<void> | null = null;
  const hold = (p: Promise<unknown>): void => {
    const t = p.then(() => undefined, () => undefined);
    tail = t;
    void t.then(() => { if (tail === t) tail = null; });
  };
  const call = <T>(fn: () => MaybePromise<T>, isBatch: boolean): MaybePromise<T> => {
    if (tail !== null) {
      const p = tail.then(fn);
      hold(p);
      return p;
    }
    const result = fn();
    if (isBatch && result instanceof Promise) hold(result);
    return result;
  };
  // Everything else a driver says of itself (name, limits, roundsLargeIntegers, …) is read through to it.
  const gated: StorageDriver = Object.create(driver);
  Object.assign(gated, {
    query: (sql: string, params?: readonly SqlValue[]) => call(() => driver.query(sql, params), false),
    batch: (statements: readonly Statement[]) => call(() => driver.batch(statements), true),
    close: () => driver.close(),
  });
  if (driver.export) gated.export = () => call(() => driver.export!(), false);
  return gated;
}
