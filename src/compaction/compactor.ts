import type { CompactionReport } from '../contracts/types.js';
import { CompactionPass, type PassParts } from './compaction-pass.js';
import type { Atomic, CompactorDeps } from './compactor-types.js';
import { createPressureGauge } from './pressure.js';
import { createRegenerator } from './regenerate.js';
import { createRollUp } from './roll-up.js';
import { createSegmentPlanner } from './segment-plan.js';
import { createSummaryWriter } from './summary-writer.js';
import { createTagLayer } from './tag-layer.js';

export type { Atomic, CompactionSettings } from './compactor-types.js';
export { HARD_TURNS } from './compaction-pass.js';
export { ROLLUP_TAGS } from './roll-up.js';
export { PRIVATE_PLACEHOLDER } from './summary-writer.js';
export { FOLD_SEGMENTS } from './tag-layer.js';

/**
 * The monitor, segmenter and compactor of seed 000, with seed 004's levels on the same summaries: the pressure gauge
 * (monitor), the segment planner, the roll-ups, the tag layer and the regenerator, each built from its own
 * dependencies, sharing one summary writer (the summarizer with its fallback).
 */
export function createCompactor(d: CompactorDeps) {
  const gauge = createPressureGauge(d);
  const writer = createSummaryWriter(d);
  const parts: PassParts = {
    summaries: d.summaries, settings: d.settings, writer,
    planner: createSegmentPlanner(d, writer), rollUp: createRollUp(d, writer), tagLayer: createTagLayer(d, writer),
  };

  // The conversation's recent changes of positions (forget, a sync that moves turns, a move to another branch), each
  // with the first position it changed: a pass begun before one that reaches the positions it reads stops at its next
  // storage slot instead of writing for positions that hold other turns. (A regenerated reply moves only the tail.)
  const changes = new Map<string, { n: number; from: number }[]>();
  const count = (conversationId: string) => changes.get(conversationId)?.at(-1)?.n ?? 0;
  const lowestSince = (conversationId: string, since: number): number => {
    const list = changes.get(conversationId) ?? [];
    if (list.length > 0 && list[0]!.n > since + 1) return 0;
    return Math.min(Infinity, ...list.filter((c) => c.n > since).map((c) => c.from));
  };

  return {
    /**
     * Drops what is cached of a conversation: its turns were removed, or moved from position `from` on (forget, sync,
     * another branch; left out: anywhere). `null`: nothing moved.
     */
    uncache(conversationId: string, from: number | null = 0): void {
      gauge.uncache(conversationId);
      if (from === null) return;
      const list = changes.get(conversationId) ?? [];
      list.push({ n: count(conversationId) + 1, from });
      changes.set(conversationId, list.slice(-32));
    },
    pressure: gauge.pressure,
    due: gauge.due,

    /**
     * Compacts from the watermark towards the protected recent turns, in batches of at most PLAN_UNITS units:
     * segments are summarized concurrently (at most `maxConcurrentSummaries`) and committed in order, one
     * transaction each, so an abort or failure leaves the last committed state; the frontier rolls up as they are
     * committed, and after each batch the tag summaries of its tags fold it in. Every pass goes on to the protected
     * turns, but `hard`, which runs inside onTurnComplete, stops (between segments) after HARD_TURNS turns or
     * HARD_MS: the next calls, or the background, go on from there (assembly never sends more than the budget,
     * whatever the active history). A `soft` pass queued while another ran does nothing if that one took the
     * conversation under the thresholds. `maxTurns` bounds any pass the same way (between segments): where the host
     * limits CPU per event (a Durable Object's alarm), a long backlog is compacted a slice per event. A pass that
     * stopped at its bound with turns still to compact says so (`more`). Returns null when there was nothing to compact.
     */
    async compact(conversationId: string, trigger: CompactionReport['trigger'], atomic: Atomic, signal: AbortSignal, maxTurns: number | null = null): Promise<CompactionReport | null> {
      const started = performance.now();
      const since = count(conversationId);
      // What the pass reads: the positions before the protected recent turns (and the one after its last segment).
      let reach = -Infinity;
      const guarded: Atomic = (fn) => atomic(() => {
        if (lowestSince(conversationId, since) <= reach) throw new Error('the conversation\'s turns changed under the pass (forget, sync, another branch): it goes on in the next one');
        return fn();
      });
      const tok = await d.tokenizer();
      const before = await guarded(() => gauge.pressure(conversationId));
      reach = before.turnCount - d.settings.protectedRecentTurns + 1;
      // Queued while another pass ran: that pass may have done what was due.
      if (trigger === 'soft' && gauge.due(before) === null) return null;
      const pass = new CompactionPass(parts, { conversationId, trigger, atomic: guarded, signal, tok, before, maxTurns, started });
      await pass.run();
      const { report } = pass;
      if (report.segmentsCompacted === 0 && !report.stoppedBy) return null;
      report.tagsCovered = [...pass.cover];
      const after = await atomic(() => gauge.pressure(conversationId)).catch(() => before);
      report.tokensAfter = after.tokens;
      report.tokensFreed = Math.max(0, before.tokens - after.tokens);
      report.durationMs = Math.round(performance.now() - started);
      return report.segmentsCompacted > 0 || report.stoppedBy ? report : null;
    },

    /** Rebuilds summaries from their sources with the current summarizer, in place (ids stay). */
    regenerate: createRegenerator(d, writer),
  };
}

export type Compactor = ReturnType<typeof createCompactor>;
