import type { Background } from '../common/background.js';
import type { Atomic, Compactor } from '../compaction/compactor.js';
import type { SummaryStore } from '../compaction/summary-store.js';
import type { Memory } from '../contracts/memory.js';
import { checkId, checkObject, optionalObject } from './support.js';
import { PagewiseError } from '../contracts/errors.js';
import type { Ledger } from '../llm/ledger.js';
import { describe, readArray, validateConversationId } from '../common/messages.js';
import type { ImportanceStore } from '../store/importance-store.js';
import type { TurnStore } from '../store/turn-store.js';
import type { TagIndex } from '../tags/tag-index.js';
import type { TagStore } from '../tags/tag-store.js';
import { memoryTools, runTool } from './tools.js';
import { asksPage, cursorOf, pageOf, readPage } from '../common/pages.js';
import type { CompactionReport, Summary, Tokenizer } from '../contracts/types.js';

const MODULE = 'engine';

export interface HierarchyDeps {
  /** An exclusive slot of the engine's scheduler (waits for every earlier call, holds back every later one). */
  serial: Atomic;
  /** A conversation's slots: wait only for earlier calls on that conversation. */
  keyed(conversationId: string): Atomic;
  /** A call on the conversation `read` names (caller input read once, before the call is queued). */
  on<T>(read: () => string, fn: (conversationId: string) => Promise<T>): Promise<T>;
  index: TagIndex;
  compactor: Compactor;
  summaries: SummaryStore;
  importance: ImportanceStore;
  ledger: Ledger;
  turns: TurnStore;
  tags: TagStore;
  tokenizer: () => Promise<Tokenizer>;
  background: Background;
  /** Queues embedding of what a compaction wrote. */
  embedLater(conversationId: string): void;
  /** Resolves when a model load under way has finished. */
  modelSettled(): Promise<void>;
  /** Reports of background compactions, handed out by flush(). */
  reports: CompactionReport[];
}

type HierarchyMethods = Pick<Memory, 'compact' | 'flush' | 'summaries' | 'regenerateSummaries' | 'pin' | 'unpin' | 'pins' | 'tools' | 'callTool' | 'costReport'>;

/** The memory hierarchy's side of the Memory API: compaction by hand, summaries, pins, memory tools, the ledger. */
export function hierarchyApi(d: HierarchyDeps): HierarchyMethods {
  const { serial, keyed, on, index, compactor, summaries, importance, ledger, tokenizer, background, reports } = d;
  const store = d.turns;
  const tagStore = d.tags;
  return {
    compact(conversationId, optionsArg) {
      // The conversation's key step by step: its summaries are written between other calls on it, and calls on
      // other conversations never wait for its summarizer.
      let maxTurns: number | null = null;
      return on(() => validateConversationId(conversationId), async (id) => {
        const max = (optionalObject(optionsArg, 'options') as { maxTurns?: unknown }).maxTurns;
        if (max !== undefined && (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1)) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `options.maxTurns must be a whole number of turns ≥ 1, e.g. 4096 (got ${describe(max)}).`, { path: 'options.maxTurns' });
        }
        maxTurns = max ?? null;
        return id;
      }).then(async (id) => {
        const atomic = keyed(id);
        await atomic(() => index.indexNew(id, new Date().toISOString()));
        const report = await compactor.compact(id, 'manual', atomic, background.signal, maxTurns);
        d.embedLater(id);
        await atomic(() => ledger.flush()).catch(() => undefined);
        return report;
      });
    },

    /** Resolves when background work is done: compaction, regeneration, and every vector they and new turns need. */
    async flush() {
      await d.modelSettled();
      await background.idle();
      return reports.splice(0);
    },

    summaries(id: string, filterArg?: unknown) {
      return on(() => validateConversationId(id), async (conversationId) => {
        const filter = optionalObject(filterArg, 'filter') as { kind?: Summary['kind'] };
        if (filter.kind !== undefined && !['segment', 'rollup', 'master', 'tag'].includes(filter.kind)) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, 'filter.kind must be "segment", "rollup", "master" or "tag".', { path: 'filter.kind' });
        }
        if (!asksPage(filterArg)) return (await summaries.list(conversationId, filter.kind)).map(({ rowid: _r, ...x }) => x);
        // Pages in the order summaries were written (row ids only grow): one written meanwhile comes at the end.
        const { limit, at } = readPage('summaries', conversationId, filter.kind ?? '', filterArg, (x): x is number => Number.isSafeInteger(x));
        const { items, more } = pageOf(await summaries.listAfter(conversationId, at ?? 0, limit + 1, filter.kind), limit);
        return { items: items.map(({ rowid: _r, ...x }) => x), cursor: more ? cursorOf('summaries', conversationId, filter.kind ?? '', items[items.length - 1]!.rowid) : null };
      }) as never;
    },

    regenerateSummaries(id, optionsArg) {
      let options: { ids?: string[]; lazy?: boolean } = {};
      let conversationId = '';
      return on(() => (conversationId = validateConversationId(id)), async () => {
        options = optionalObject(optionsArg, 'options');
        const ids = options.ids === undefined ? undefined : readArray(options.ids, 'options.ids', 'INVALID_ARGUMENT', MODULE);
        if (options.ids !== undefined && (!ids || ids.length > 10_000)) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `options.ids must be a list of at most 10,000 summary ids, see memory.summaries() (got ${describe(options.ids)}).`);
        }
        options.ids = ids as string[] | undefined;
        options.ids?.forEach((id, k) => checkId(id, `options.ids[${k}]`));
        if (options.lazy !== undefined && typeof options.lazy !== 'boolean') {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `options.lazy must be true or false (got ${describe(options.lazy)}).`);
        }
        const marked = await summaries.markStale(conversationId, options.ids ?? null);
        return marked;
      }).then(async (marked) => {
        if (options.lazy) return { regenerated: 0, marked };
        const atomic = keyed(conversationId);
        const targets = await atomic(() => summaries.list(conversationId));
        const chosen = targets.filter((x) => x.stale && (options.ids === undefined || options.ids.includes(x.id)));
        const regenerated = await compactor.regenerate(conversationId, chosen, atomic, background.signal);
        d.embedLater(conversationId);
        await atomic(() => ledger.flush());
        return { regenerated, marked };
      });
    },

    pin(conversation, messageId) {
      return on(() => validateConversationId(conversation), async (conversationId) => {
        const id = checkId(messageId, 'messageId');
        if ((await store.byIds(conversationId, [id])).length === 0) {
          throw new PagewiseError('NOT_FOUND', MODULE, `No message ${describe(id)} is stored in conversation ${describe(conversationId)}; pin ids from report.storedIds or memory.turns().`);
        }
        await importance.pin(conversationId, id, new Date().toISOString());
      });
    },
    unpin: (conversation, messageId) => on(() => validateConversationId(conversation), async (conversationId) => importance.unpin(conversationId, checkId(messageId, 'messageId'))),
    pins: (conversation) => on(() => validateConversationId(conversation), (conversationId) => importance.pinned(conversationId)),

    tools: () => Promise.resolve(memoryTools()),

    callTool(name, args, context) {
      return on(() => validateConversationId(checkObject(context, 'callTool(name, args, context)').conversationId), async (conversationId) => {
        if (typeof name !== 'string') throw new PagewiseError('UNKNOWN_TOOL', MODULE, `The tool name must be a string (got ${describe(name)}).`);
        return runTool({ turns: store, tags: tagStore, summaries, tokenizer: await tokenizer() }, conversationId, name, args);
      });
    },

    costReport(conversationId) {
      const report = async (id?: string) => {
        await ledger.flush();
        return ledger.report(id);
      };
      // All conversations' usage: exclusive, like every call that spans conversations.
      return conversationId === undefined ? serial(() => report()) : on(() => validateConversationId(conversationId), report);
    },
  };
}
