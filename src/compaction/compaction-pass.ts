import type { CompactionReport, Tokenizer } from '../contracts/types.js';
import type { Atomic, CompactionSettings } from './compactor-types.js';
import { type Pace, pacer } from '../common/pace.js';
import type { Pressure } from './pressure.js';
import type { RollUp } from './roll-up.js';
import type { SegmentPlanner, SegmentRequest } from './segment-plan.js';
import { type Segment, pool } from './segmenter.js';
import type { NewSummary, SummaryStore } from './summary-store.js';
import { type SummaryWriter, type Written, newId } from './summary-writer.js';
import type { CommittedSegment, TagLayer } from './tag-layer.js';

// A hard compaction runs inside onTurnComplete: it stops (between segments) after this many turns or milliseconds;
// the rest is left to the next calls and the background.
export const HARD_TURNS = 512;
export const HARD_MS = 400;

/** The parts a pass runs on, built once per compactor. */
export interface PassParts {
  summaries: SummaryStore;
  settings: CompactionSettings;
  planner: SegmentPlanner;
  writer: SummaryWriter;
  rollUp: RollUp;
  tagLayer: TagLayer;
}

/** One pass's inputs: what triggered it, how it reaches storage, and where the conversation stood when it began. */
export interface PassInput {
  conversationId: string;
  trigger: CompactionReport['trigger'];
  atomic: Atomic;
  signal: AbortSignal;
  tok: Tokenizer;
  before: Pressure;
  /** Turns this pass compacts at most (between segments); null: no bound but `hard`'s. */
  maxTurns: number | null;
  /** When the pass was asked for (`performance.now()`), for HARD_MS. */
  started: number;
}

/** A segment summarized and not committed yet. */
interface Summarized extends SegmentRequest {
  seg: Segment;
  result: Written;
}

/**
 * One compaction pass, from the watermark towards the protected recent turns, batch by batch: its report, the cover
 * tags it met, and whether it stopped before the protected turns are its state.
 */
export class CompactionPass {
  readonly report: CompactionReport;
  /** The cover tags of every batch, in the order first met. */
  readonly cover: Set<string>;
  private readonly parts: PassParts;
  private readonly input: PassInput;
  private readonly boundary: number;
  // Stopped before the protected turns: at its bound, or where another pass got first (which goes on from there).
  private stopped: boolean;
  private readonly pace: Pace;

  constructor(parts: PassParts, input: PassInput) {
    this.parts = parts;
    this.input = input;
    const { before } = input;
    this.boundary = before.turnCount - parts.settings.protectedRecentTurns;
    this.report = {
      conversationId: input.conversationId, trigger: input.trigger, segmentsCompacted: 0, turnsCompacted: 0, tokensBefore: before.tokens, tokensAfter: before.tokens,
      tokensFreed: 0, tagsCovered: [], summariesMade: 0, fallbacks: 0, watermark: before.watermark, durationMs: 0,
    };
    this.stopped = false;
    this.pace = pacer();
    this.cover = new Set<string>();
  }

  /** Runs the pass to the protected turns or its bound; a failure or an abort ends it with `stoppedBy`. */
  async run(): Promise<void> {
    const { conversationId, atomic, signal } = this.input;
    const report = this.report;
    try {
      for (;;) {
        const plan = await atomic(() => this.parts.planner.planFrom(conversationId, report.watermark, this.boundary));
        if (plan.length === 0) break;
        const { committed, stop } = await this.batch(plan);
        if (committed.length > 0) await this.tagLayer(committed);
        if (stop || signal.aborted || committed.length === 0) break;
      }
      if (report.segmentsCompacted > 0) await atomic(() => this.parts.summaries.countEvent(conversationId, new Date().toISOString()));
      // Stopped early: is anything left before the protected turns?
      if (this.stopped && (await atomic(() => this.parts.planner.planFrom(conversationId, report.watermark, this.boundary))).length > 0) report.more = true;
    } catch (error) {
      report.stoppedBy = signal.aborted ? `aborted: ${String(signal.reason instanceof Error ? signal.reason.message : signal.reason)}` : (error as Error).message;
    }
  }

  /** At its bound: `maxTurns`, or for `hard` HARD_TURNS or HARD_MS. */
  private bounded(): boolean {
    const { maxTurns, trigger, started } = this.input;
    const { turnsCompacted } = this.report;
    return (maxTurns !== null && turnsCompacted >= maxTurns)
      || (trigger === 'hard' && (turnsCompacted >= HARD_TURNS || performance.now() - started >= HARD_MS));
  }

  /** One batch: a few segments at a time (summarized concurrently, committed in order), so a bounded pass stops between them. */
  private async batch(plan: readonly Segment[]): Promise<{ committed: CommittedSegment[]; stop: boolean }> {
    const { conversationId, atomic, signal, tok } = this.input;
    const step = this.parts.settings.maxConcurrentSummaries;
    const committed: CommittedSegment[] = [];
    let stop = false;
    for (let i = 0; i < plan.length && !stop; i += step) {
      const sliceFrom = this.report.turnsCompacted;
      if (!(await this.slice(plan.slice(i, i + step), committed))) stop = this.stopped = true;
      // Rolled up as the pass goes, so the frontier (read by every onTurnComplete meanwhile) stays short.
      if (committed.length > 0) this.report.summariesMade += await this.parts.rollUp(conversationId, atomic, signal, tok);
      if (this.bounded()) stop = this.stopped = true;
      else await this.pace(this.report.turnsCompacted - sliceFrom);
    }
    return { committed, stop };
  }

  /** Summarizes a slice's segments concurrently and commits them in order: false where another pass got first. */
  private async slice(segments: readonly Segment[], committed: CommittedSegment[]): Promise<boolean> {
    const { conversationId, atomic, signal, tok } = this.input;
    const { planner, writer } = this.parts;
    const report = this.report;
    const jobs = pool(segments, this.parts.settings.maxConcurrentSummaries, async (seg): Promise<Summarized> => {
      const { request, turns, related, units } = await atomic(() => planner.segmentRequest(conversationId, seg, tok));
      return { seg, request, turns, related, units, result: await writer.summarize(request, signal) };
    });
    for (const job of jobs) {
      const done = await job;
      if (signal.aborted) throw signal.reason;
      const summary = await atomic(() => this.commit(done));
      if (!summary) return false;
      committed.push({ units: done.units, tags: summary.tags, related: summary.relatedTags });
      report.segmentsCompacted++;
      report.turnsCompacted += done.turns.length;
      report.summariesMade++;
      if (done.result.fellBack) report.fallbacks++;
      report.watermark = done.seg.lastSeq + 1;
    }
    return true;
  }

  /** Commits a segment's summary and moves the watermark past it; null when another compaction got here first. */
  private async commit({ seg, request, turns, related, result }: Summarized): Promise<NewSummary | null> {
    const { conversationId, tok, before } = this.input;
    const { summaries, writer } = this.parts;
    const state = await summaries.state(conversationId);
    // Another compaction got here first: its summary stands.
    if (Math.max(before.prefixEnd, state?.watermark ?? 0) !== seg.firstSeq) return null;
    // The conversation moved to another branch meanwhile: these positions hold other turns now.
    if ((await summaries.turnIds(conversationId, seg.firstSeq, seg.lastSeq)).join('\u0000') !== turns.filter((t) => t.role !== 'system').map((t) => t.id).join('\u0000')) return null;
    const x: NewSummary = {
      id: newId(), conversationId, kind: 'segment', level: 1, firstSeq: seg.firstSeq, lastSeq: seg.lastSeq,
      from: turns[0]?.createdAt ?? new Date().toISOString(), to: turns[turns.length - 1]?.createdAt ?? new Date().toISOString(),
      sourceIds: turns.map((t) => t.id), text: result.text,
      tags: await writer.grow(conversationId, request.tags, result.tags), relatedTags: await writer.grow(conversationId, related, result.related),
      tokens: tok.count(result.text), madeBy: result.madeBy, promptVersion: result.version, createdAt: new Date().toISOString(),
    };
    await summaries.commitSegment(x, seg.lastSeq + 1, new Date().toISOString());
    return x;
  }

  /** After each batch the tag summaries of its tags fold it in (a hard pass writes the new cover tags' only). */
  private async tagLayer(committed: readonly CommittedSegment[]): Promise<void> {
    const { conversationId, trigger, atomic, signal, tok } = this.input;
    const layer = await this.parts.tagLayer(conversationId, committed, trigger !== 'hard', atomic, signal, tok, trigger === 'hard' ? undefined : this.pace);
    for (const t of layer.cover) this.cover.add(t);
    this.report.summariesMade += layer.made;
  }
}
