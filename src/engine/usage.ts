// memory.stats()'s usage and health figures, counted in one place: every Memory method the engine returns is wrapped
// here — its duration, its error code, an OpenTelemetry span (engine/telemetry.ts) — and what the hooks and compaction
// return becomes counters persisted per conversation (engine/usage-record.ts). Latency, call and error counts are kept
// in memory only. The caller's input is the engine's to read (once): the conversation a call was about is taken from
// its result where it says, else from the input's plain data after the call.
import type { Memory } from '../contracts/memory.js';
import { ALIAS_METHODS, MEMORY_METHODS } from '../contracts/memory-methods.js';
import { isPagewiseError } from '../contracts/errors.js';
import type { MemoryStats } from '../contracts/types.js';
import { validateConversationId } from '../common/messages.js';
import { optionalObject } from './support.js';
import { type CallSpan, createTelemetry } from './telemetry.js';
import { CallFigures, countersOf } from './usage-figures.js';
import { type UsageDeps, conversationOf, createRecorder } from './usage-record.js';
import type { AssembledContext, CompactionReport, TurnReport } from '../contracts/types.js';
import { createUsageStore } from './usage-store.js';

export type { UsageDeps } from './usage-record.js';

// Calls whose results are recorded: close() waits until each one under way has ended or handed its recording over.
const RECORDED = new Set(['onMessageInbound', 'onTurnComplete', 'compact', 'regenerateSummaries']);

type Method = (...args: unknown[]) => Promise<unknown>;
type SearchStatsOnly = { stats(): Promise<Pick<MemoryStats, 'search'>> };

const NO_SPAN: CallSpan = { set: () => undefined, end: async () => undefined };

export function createUsage(d: UsageDeps) {
  const counters = createUsageStore(d.driver, d.store);
  const figures = new CallFigures();
  const telemetry = createTelemetry(d.telemetry);
  const recorder = createRecorder(d, counters, telemetry);
  // Recorded calls under way, and close() waiting for them to end.
  let active = 0;
  let quiet: (() => void) | null = null;

  /** The conversation a call was about: its result's, when it names one, else what its input names. */
  const aboutOf = (method: string, args: readonly unknown[], value: unknown, code: string | undefined): string | null =>
    code === undefined && (method === 'onMessageInbound' || method === 'onTurnComplete')
      ? (value as AssembledContext | TurnReport).conversationId
      : conversationOf(method, args);

  function wrap(method: string, fn: Method): Method {
    return async (...args) => {
      const ready = recorder.began(method);
      const span = telemetry ? telemetry.start(method) : null;
      const recorded = RECORDED.has(method);
      if (recorded) active++;
      const started = performance.now();
      let value: unknown;
      let code: string | undefined;
      try {
        if (ready) await ready;
        value = await fn(...args);
      } catch (error) {
        code = isPagewiseError(error) ? error.code : 'INTERNAL';
        throw error;
      } finally {
        const ms = performance.now() - started;
        const conversationId = aboutOf(method, args, value, code);
        figures.ended(method, ms, conversationId, code);
        telemetry?.duration(method, ms, code);
        // A failed call records nothing but its code; a returned one hands its recording over before `active` drops.
        let recording: Promise<void> | null = null;
        try {
          if (code === undefined && recorded) recording = recorder.record(method, args, value, span ?? NO_SPAN);
        } catch {
          // A figure that cannot be read is not counted; the call's answer stands.
        }
        if (recorded && --active === 0 && quiet) {
          quiet();
          quiet = null;
        }
        // Awaited only when there is something to wait for: calls resolve in the order the engine ended them.
        if (recording) await recording.catch(() => undefined);
        if (span) await span.end(code, conversationId);
      }
      return value;
    };
  }

  async function stats(inner: SearchStatsOnly, options: unknown): Promise<MemoryStats> {
    // The inner call refuses a closed memory first.
    const { search } = await inner.stats();
    const raw = optionalObject(options, 'options').conversationId;
    const conversationId = raw === undefined ? null : validateConversationId(raw, 'options.conversationId');
    await recorder.drain();
    return {
      conversationId, since: figures.since,
      usage: countersOf(await counters.read(conversationId)),
      latencyMs: figures.latencyMs(), calls: figures.callCounts(), errors: figures.errorCounts(conversationId),
      queues: { calls: d.queue.depth(), background: d.background.depth() },
      bytes: await counters.bytes(conversationId), embeddings: await counters.embeddings(conversationId),
      rebuilds: d.rebuildStatus ? await d.rebuildStatus() : [],
      search,
    };
  }

  return {
    /** The memory with every method counted (and `stats` answering with the figures). */
    wrap<M extends Pick<Memory, 'aliases' | 'close'> & SearchStatsOnly>(memory: M): Omit<M, 'stats'> & Pick<Memory, 'stats'> {
      const out: Record<string, unknown> = { ...memory };
      for (const name of [...MEMORY_METHODS, 'sync']) {
        const fn = (memory as unknown as Record<string, Method | undefined>)[name];
        if (typeof fn === 'function') out[name] = wrap(name, fn.bind(memory));
      }
      out.stats = wrap('stats', (options) => stats(memory, options));
      const aliases: Record<string, unknown> = { ...memory.aliases };
      for (const name of ALIAS_METHODS) aliases[name] = wrap(`aliases.${name}`, (memory.aliases[name] as Method).bind(memory.aliases));
      out.aliases = aliases;
      out.close = wrap('close', () => memory.close());
      return out as unknown as Omit<M, 'stats'> & Pick<Memory, 'stats'>;
    },

    /** Counts a background compaction's report when its job ends (engine/parts.ts createBackgroundJobs). */
    compacted: async (report: CompactionReport): Promise<void> => { await recorder.compacted(report); },

    /** Forgets what is kept of the conversation's path (the engine moved or removed its turns). */
    uncache(conversationId: string): void {
      counters.uncache(conversationId);
      recorder.uncache(conversationId);
    },

    /**
     * Writes every call's recording, then nothing more (close(): after the last call admitted and the background jobs
     * have ended, before the driver closes).
     */
    async settle(): Promise<void> {
      if (active > 0) await new Promise<void>((resolve) => { quiet = resolve; });
      await recorder.drain();
      recorder.close();
    },
  };
}

export type Usage = ReturnType<typeof createUsage>;
