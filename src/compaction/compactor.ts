import { PagewiseError } from '../errors.js';
import { prefixLength, storedTextTokens } from '../history.js';
import { CACHED_CONVERSATIONS, Lru } from '../cache.js';
import type { TurnRecord, TurnStore } from '../store/turn-store.js';
import type { Canonicalizer } from '../tags/tag-canonicalizer.js';
import type { TagRules } from '../tags/tag-rules.js';
import type { TagStore } from '../tags/tag-store.js';
import { TOKENS_PER_MESSAGE, countCacheKey } from '../tokens/chat-format.js';
import type { CompactionReport, Summarizer, SummaryItem, SummaryRequest, Tokenizer } from '../types.js';
import { type Segment, type TaggedUnit, pool, prominent, segment, setCover } from './segmenter.js';
import type { NewSummary, SummaryRecord, SummaryStore } from './summary-store.js';

export interface CompactionSettings {
  contextWindow: number;
  softThreshold: number;
  hardThreshold: number;
  protectedRecentTurns: number;
  /** Turns per level-1 summary at most (seed 004's `sum_window`). */
  sumWindow: number;
  /** Compact also once this many turns are past the protected ones, whatever their tokens (null: tokens only). */
  nSum: number | null;
  /** Summaries of one level rolled into one of the next (seed 004's `n_sum_sum`). */
  nSumSum: number;
  /** The master summary's level (seed 004's `max_sum_lvl`). */
  maxSumLevel: number;
  maxConcurrentSummaries: number;
  /** Summary length as a share of the source's tokens. */
  summaryRatio: number;
  /** Tokens per summary at most. */
  summaryTokens: number;
}

export interface CompactorDeps {
  turns: TurnStore;
  tags: TagStore;
  summaries: SummaryStore;
  canonicalizer: Canonicalizer;
  rules: TagRules;
  tokenizer: () => Promise<Tokenizer>;
  summarizer: Summarizer;
  /** Used when `summarizer` fails on a segment (the LLM is down): never fails. */
  fallback: Summarizer;
  settings: CompactionSettings;
}

/** Runs a storage phase without interleaving with other engine operations. */
export type Atomic = <T>(fn: () => Promise<T>) => Promise<T>;

/** Where a conversation stands: tokens of its active history and what bounds it. */
export interface Pressure {
  tokens: number;
  prefixEnd: number;
  watermark: number;
  turnCount: number;
}

const MIN_SUMMARY = 32;
// Units planned per batch: a long backlog (an import) is compacted batch by batch, each with its roll-ups and tags.
const PLAN_UNITS = 2048;
// A hard compaction runs inside onTurnComplete: it stops (between segments) after this many turns or milliseconds;
// the rest is left to the next calls and the background.
export const HARD_TURNS = 512;
export const HARD_MS = 400;
// Every pass hands the event loop back between its slices (a macrotask, not a microtask) after this many turns or
// milliseconds: in a Durable Object the clock stands still during synchronous work, so the count is what bounds it
// there, and another object's request (or this one's next call) runs between slices instead of waiting for the pass.
export const YIELD_TURNS = 256;
export const YIELD_MS = 50;

/** One turn of the event loop: Node's setImmediate (no 1 ms timer floor), else a zero timer (workerd, browsers). */
const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => {
  const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
  if (typeof immediate === 'function') immediate(resolve);
  else setTimeout(resolve, 0);
});

/** A pass's pace: `pace(work)` counts work done (turns, or their equivalent) and yields once YIELD_TURNS or YIELD_MS have passed. */
type Pace = (work: number) => Promise<void>;

function pacer(): Pace {
  let work = 0;
  let since = performance.now();
  return async (n) => {
    work += n;
    if (work < YIELD_TURNS && performance.now() - since < YIELD_MS) return;
    await yieldToEventLoop();
    work = 0;
    since = performance.now();
  };
}

// Segments a tag summary folds in at once (with its previous text).
export const FOLD_SEGMENTS = 32;
// Tags a roll-up, the master or a tag summary inherits at most (the most frequent among its parts), so that the
// master's list does not grow with the conversation.
export const ROLLUP_TAGS = 24;

/** A segment committed by this pass: its units with their primary tags, and the summary's tags. */
interface CommittedSegment {
  units: readonly TaggedUnit[];
  tags: readonly string[];
  related: readonly string[];
}

function speaker(t: TurnRecord): string {
  return t.name ?? t.role;
}

function newId(): string {
  return `sum_${crypto.randomUUID()}`;
}

/** What a summarizer is given in place of a private message's text. */
export const PRIVATE_PLACEHOLDER = '(a private message, left out of summaries)';

/** A turn as a summarizer sees it. A private one goes to no summarizer and into no summary: its place is marked. */
function turnItem(t: TurnRecord): SummaryItem {
  return { id: t.id, speaker: speaker(t), text: t.private ? PRIVATE_PLACEHOLDER : t.text, createdAt: t.createdAt };
}

/** The monitor, segmenter and compactor of seed 000, with seed 004's levels on the same summaries. */
export function createCompactor(d: CompactorDeps) {
  const s = d.settings;
  // The active history's turn tokens as last measured: from the watermark to `end` (exclusive), per conversation.
  const measured = new Lru<string, { watermark: number; end: number; tokens: number }>(CACHED_CONVERSATIONS);

  const pressure = async (conversationId: string): Promise<Pressure> => {
    const tok = await d.tokenizer();
    const head = await d.turns.range(conversationId, 0, 16);
    const prefixEnd = prefixLength(head);
    const state = await d.summaries.state(conversationId);
    const watermark = Math.max(prefixEnd, state?.watermark ?? 0);
    const turnCount = await d.turns.turnCount(conversationId);
    const key = countCacheKey(tok);
    let active: number | null = null;
    if (key !== null) {
      // Turns are only appended and their counts never change: the sum is carried forward from the last measure,
      // adding the turns stored since (a full recount only when the watermark moved).
      const last = measured.get(conversationId);
      const more = last && last.watermark === watermark ? await d.summaries.turnTokensFrom(conversationId, last.end, key, TOKENS_PER_MESSAGE) : null;
      const all = more && last ? { tokens: last.tokens + more.tokens, turns: last.end - watermark + more.turns }
        : await d.summaries.turnTokensFrom(conversationId, watermark, key, TOKENS_PER_MESSAGE);
      if (all) {
        active = all.tokens;
        measured.set(conversationId, { watermark, end: watermark + all.turns, tokens: all.tokens });
      }
    }
    if (active === null) {
      const rest = await d.turns.range(conversationId, watermark, 1_000_000);
      const counts = await storedTextTokens(d.turns, tok, rest);
      active = rest.reduce((n, t) => n + counts.get(t.rowid)! + TOKENS_PER_MESSAGE, 0);
    }
    const prefix = [...(await storedTextTokens(d.turns, tok, head.slice(0, prefixEnd))).values()].reduce((n, c) => n + c + TOKENS_PER_MESSAGE, 0);
    const frontier = (await d.summaries.frontier(conversationId)).reduce((n, x) => n + x.tokens, 0);
    return { tokens: prefix + frontier + active, prefixEnd, watermark, turnCount };
  };

  /** The threshold crossed, if any. */
  const due = (p: Pressure): 'hard' | 'soft' | null => {
    if (p.tokens > s.hardThreshold * s.contextWindow) return 'hard';
    if (p.tokens > s.softThreshold * s.contextWindow) return 'soft';
    if (s.nSum !== null && p.turnCount - p.watermark - s.protectedRecentTurns >= s.nSum) return 'soft';
    return null;
  };

  const instructions = (tags: readonly string[]): string[] =>
    [...new Set(tags.map((t) => d.rules.ruleFor(t).summaryPrompt).filter((p): p is string => p !== null))];

  /** Summarizes with the configured summarizer, falling back to the extractive one when it fails (not on abort). */
  const summarize = async (request: SummaryRequest, signal: AbortSignal): Promise<{ text: string; tags: string[]; related: string[]; madeBy: string; version: number; fellBack: boolean }> => {
    try {
      const r = await d.summarizer.summarize({ ...request, signal });
      if (r.text.trim() === '') throw new PagewiseError('LLM_ERROR', 'compactor', 'The summarizer returned an empty summary.');
      return { text: r.text.trim(), tags: r.tags ?? [], related: r.relatedTags ?? [], madeBy: d.summarizer.name, version: d.summarizer.version, fellBack: false };
    } catch (error) {
      if (signal.aborted || d.summarizer === d.fallback) throw error;
      const r = await d.fallback.summarize({ ...request, signal });
      return { text: r.text, tags: [], related: [], madeBy: `${d.fallback.name} (${d.summarizer.name} failed)`, version: d.fallback.version, fellBack: true };
    }
  };

  /** Tags only grow: the summarizer's are canonicalized and added after the originals. */
  const grow = async (conversationId: string, base: readonly string[], extra: readonly string[]): Promise<string[]> => {
    if (extra.length === 0) return [...base];
    const canonical = await d.canonicalizer.canonical(conversationId, extra, new Date().toISOString());
    return [...base, ...canonical.filter((t) => !base.includes(t))];
  };

  const target = (sourceTokens: number): number => Math.max(MIN_SUMMARY, Math.min(s.summaryTokens, Math.round(sourceTokens * s.summaryRatio)));

  /**
   * The segment's request, and its units with the tags a summary of them may carry: a tag that only units holding a
   * private message carry is one of its words, so the summarizer is not told it and the summary does not carry it.
   */
  const segmentRequest = async (conversationId: string, seg: Segment, tok: Tokenizer): Promise<{ request: SummaryRequest; turns: TurnRecord[]; related: string[]; units: TaggedUnit[] }> => {
    const turns = await d.turns.range(conversationId, Math.max(0, seg.firstSeq - 1), seg.lastSeq - seg.firstSeq + 3);
    const inside = turns.filter((t) => t.seq >= seg.firstSeq && t.seq <= seg.lastSeq && t.role !== 'system');
    const before = turns.find((t) => t.seq === seg.firstSeq - 1);
    const after = turns.find((t) => t.seq === seg.lastSeq + 1);
    const hidden = await d.tags.privateTags(conversationId);
    const tags = seg.tags.filter((t) => !hidden.has(t));
    const tagRows = await d.tags.tagsOf(conversationId, seg.units.map((u) => u.unitSeq));
    const related = [...new Set([...tagRows.values()].flatMap((r) => r.related))].filter((t) => !seg.tags.includes(t) && !hidden.has(t));
    const counts = await storedTextTokens(d.turns, tok, inside);
    const tokens = [...counts.values()].reduce((a, b) => a + b, 0);
    const request: SummaryRequest = {
      conversationId, kind: 'segment', level: 1,
      items: inside.map(turnItem),
      tags, relatedTags: related, instructions: instructions(tags),
      targetTokens: target(tokens),
    };
    if (before && !before.private) request.before = `${speaker(before)}: ${before.text}`;
    if (after && !after.private) request.after = `${speaker(after)}: ${after.text}`;
    const units = seg.units.map((u) => ({ ...u, tags: u.tags.filter((t) => !hidden.has(t)) }));
    return { request, turns: inside, related, units };
  };

  /** Rolls up the frontier: `nSumSum` summaries of a level become one of the next; at `maxSumLevel` the master absorbs them. */
  const rollUp = async (conversationId: string, atomic: Atomic, signal: AbortSignal, tok: Tokenizer): Promise<number> => {
    let made = 0;
    for (let level = 1; level < s.maxSumLevel; level++) {
      for (;;) {
        if (signal.aborted) return made;
        const master = level + 1 === s.maxSumLevel;
        // The oldest group of the level (not the whole frontier: during a pass it holds every segment not rolled up yet).
        const { group, previous } = await atomic(async () => ({
          group: await d.summaries.unrolled(conversationId, level, s.nSumSum),
          previous: master ? await d.summaries.master(conversationId) : null,
        }));
        if (group.length < s.nSumSum) break;
        const parts = previous ? [previous, ...group] : group;
        // The tags of the parts most used in the conversation (the previous master's are the most used so far).
        const usage = await atomic(() => d.canonicalizer.counts(conversationId));
        // Summaries written before private messages' tags were withheld may carry them.
        const hidden = await atomic(() => d.tags.privateTags(conversationId));
        const tags = prominent(parts.map((x) => x.tags), usage, ROLLUP_TAGS).filter((t) => !hidden.has(t));
        const related = prominent(parts.map((x) => x.relatedTags), usage, ROLLUP_TAGS).filter((t) => !tags.includes(t) && !hidden.has(t));
        const result = await summarize({
          conversationId, kind: master ? 'master' : 'rollup', level: level + 1,
          items: parts.map((x): SummaryItem => ({ id: x.id, speaker: 'summary', text: x.text, createdAt: x.createdAt })),
          tags, relatedTags: related, instructions: instructions(tags), targetTokens: s.summaryTokens,
        }, signal);
        const committed = await atomic(async () => {
          const summary: NewSummary = {
            id: newId(), conversationId, kind: master ? 'master' : 'rollup', level: level + 1,
            firstSeq: parts[0]!.firstSeq, lastSeq: parts[parts.length - 1]!.lastSeq, from: parts[0]!.from, to: parts[parts.length - 1]!.to, sourceIds: parts.map((x) => x.id),
            text: result.text, tags: await grow(conversationId, tags, result.tags), relatedTags: await grow(conversationId, related, result.related),
            tokens: tok.count(result.text), madeBy: result.madeBy, promptVersion: result.version, createdAt: new Date().toISOString(),
          };
          // Another compaction rolled these up meanwhile: its roll-up stands.
          if (await d.summaries.rolledUp(conversationId, summary.sourceIds)) return false;
          await d.summaries.commitRollup(summary, parts.map((x) => x.id));
          return true;
        });
        if (committed) made++;
      }
    }
    return made;
  };

  /**
   * Seed 000's layer 2, kept up to date incrementally: the compacted units of this pass that carry no tag of the
   * cover so far are covered greedily (set cover), and the tag summary of every cover tag on this pass's segments
   * folds in its new segments (a new version from the previous one and at most FOLD_SEGMENTS segments, oldest
   * first; the previous one is kept, rolled up into it): the work is that of the pass, not of the whole conversation. A tag summary left behind (a bounded pass, or more
   * than FOLD_SEGMENTS new segments) catches up in the next pass whose segments carry its tag.
   */
  const tagLayer = async (conversationId: string, committed: readonly CommittedSegment[], foldExisting: boolean, atomic: Atomic, signal: AbortSignal, tok: Tokenizer, pace?: Pace): Promise<{ cover: string[]; made: number }> => {
    const touched = [...new Set(committed.flatMap((c) => [...c.tags, ...c.related]))];
    const existing = new Map((await atomic(() => d.summaries.tagSummariesOf(conversationId, touched))).map((x) => [x.tag!, x]));
    const unitTags = new Map<number, readonly string[]>();
    const used = new Set<string>();
    for (const c of committed) {
      for (const u of c.units) {
        const old = u.tags.find((t) => existing.has(t));
        if (old !== undefined) used.add(old);
        else unitTags.set(u.unitSeq, u.tags);
      }
    }
    const added = setCover(unitTags);
    const cover = [...[...used].sort(), ...added];
    // A bounded pass (hard) writes the new cover tags' summaries only: the others fold these segments in when their
    // tag next comes up in a pass.
    const targets = [...new Set([...(foldExisting ? touched.filter((t) => existing.has(t)) : []), ...added])];
    const jobs = pool(targets, s.maxConcurrentSummaries, async (tag) => {
      const previous = existing.get(tag) ?? null;
      const segments = await atomic(async () => {
        // The last segment it folded in is the last of its sources.
        const lastId = previous?.sourceIds[previous.sourceIds.length - 1];
        const last = lastId === undefined ? 0 : (await d.summaries.rowids(conversationId, [lastId])).get(lastId) ?? 0;
        return d.summaries.segmentsTaggedAfter(conversationId, tag, last, FOLD_SEGMENTS);
      });
      if (segments.length === 0 || signal.aborted) return null;
      const parts = previous ? [previous, ...segments] : segments;
      const related = prominent(parts.map((x) => x.relatedTags), await atomic(() => d.canonicalizer.counts(conversationId)), ROLLUP_TAGS).filter((t) => t !== tag);
      const result = await summarize({
        conversationId, kind: 'tag', level: 2, tag,
        items: parts.map((x) => ({ id: x.id, speaker: 'summary', text: x.text, createdAt: x.createdAt })),
        tags: [tag], relatedTags: related, instructions: instructions([tag]), targetTokens: s.summaryTokens,
      }, signal);
      return { tag, previous, segments, related, result };
    });
    let made = 0;
    for (const job of jobs) {
      const done = await job;
      if (!done || signal.aborted) continue;
      const { tag, previous, segments, related, result } = done;
      const first = previous ?? segments[0]!;
      const last = segments[segments.length - 1]!;
      // Tags only grow, and the summarizer's additions are kept up to ROLLUP_TAGS.
      const base = previous ? previous.tags.slice(0, ROLLUP_TAGS) : [tag];
      // Its sources: the previous version and the new segments (a bounded list, however long the tag's history).
      const written = await atomic(async () => d.summaries.foldTagSummary({
        id: newId(), conversationId, kind: 'tag', level: 2, tag,
        firstSeq: first.firstSeq, lastSeq: last.lastSeq, from: first.from, to: last.to,
        sourceIds: [...(previous ? [previous.id] : []), ...segments.map((x) => x.id)],
        text: result.text, tags: await grow(conversationId, base, result.tags), relatedTags: await grow(conversationId, related, result.related),
        tokens: tok.count(result.text), madeBy: result.madeBy, promptVersion: result.version, createdAt: new Date().toISOString(),
      }, previous?.id ?? null));
      if (written) made++;
      // A tag summary folds in up to FOLD_SEGMENTS segments: counted as that many turns' work.
      await pace?.(segments.length);
    }
    return { cover, made };
  };

  /** Segments to compact next: from the watermark, before the protected turns, at most PLAN_UNITS units. */
  const planFrom = async (conversationId: string, watermark: number, boundary: number): Promise<Segment[]> => {
    const units = (await d.tags.unitsFrom(conversationId, watermark, PLAN_UNITS)).filter((u) => u.endSeq < boundary);
    const tags = await d.tags.tagsOf(conversationId, units.map((u) => u.unitSeq));
    return segment(units.map((u) => ({ ...u, tags: tags.get(u.unitSeq)?.tags ?? [] })), watermark, s.sumWindow);
  };

  return {
    /** Drops what is cached of a conversation (its turns were removed: forget). */
    uncache(conversationId: string): void {
      measured.delete(conversationId);
    },
    pressure,
    due,

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
      const tok = await d.tokenizer();
      const before = await atomic(() => pressure(conversationId));
      // Queued while another pass ran: that pass may have done what was due.
      if (trigger === 'soft' && due(before) === null) return null;
      const boundary = before.turnCount - s.protectedRecentTurns;
      const report: CompactionReport = {
        conversationId, trigger, segmentsCompacted: 0, turnsCompacted: 0, tokensBefore: before.tokens, tokensAfter: before.tokens,
        tokensFreed: 0, tagsCovered: [], summariesMade: 0, fallbacks: 0, watermark: before.watermark, durationMs: 0,
      };
      const bounded = (): boolean => (maxTurns !== null && report.turnsCompacted >= maxTurns)
        || (trigger === 'hard' && (report.turnsCompacted >= HARD_TURNS || performance.now() - started >= HARD_MS));
      // Stopped before the protected turns: at its bound, or where another pass got first (which goes on from there).
      let stopped = false;
      const pace = pacer();
      const cover = new Set<string>();
      try {
        for (;;) {
          const plan = await atomic(() => planFrom(conversationId, report.watermark, boundary));
          if (plan.length === 0) break;
          const committed: CommittedSegment[] = [];
          let stop = false;
          // A few segments at a time (summarized concurrently, committed in order), so a bounded pass stops between them.
          for (let i = 0; i < plan.length && !stop; i += s.maxConcurrentSummaries) {
            const slice = plan.slice(i, i + s.maxConcurrentSummaries);
            const sliceFrom = report.turnsCompacted;
            const jobs = pool(slice, s.maxConcurrentSummaries, async (seg) => {
              const { request, turns, related, units } = await atomic(() => segmentRequest(conversationId, seg, tok));
              return { seg, request, turns, related, units, result: await summarize(request, signal) };
            });
            for (const job of jobs) {
              const { seg, request, turns, related, units, result } = await job;
              if (signal.aborted) throw signal.reason;
              const summary = await atomic(async () => {
                const state = await d.summaries.state(conversationId);
                // Another compaction got here first: its summary stands.
                if (Math.max(before.prefixEnd, state?.watermark ?? 0) !== seg.firstSeq) return null;
                const x: NewSummary = {
                  id: newId(), conversationId, kind: 'segment', level: 1, firstSeq: seg.firstSeq, lastSeq: seg.lastSeq,
                  from: turns[0]?.createdAt ?? new Date().toISOString(), to: turns[turns.length - 1]?.createdAt ?? new Date().toISOString(),
                  sourceIds: turns.map((t) => t.id), text: result.text,
                  tags: await grow(conversationId, request.tags, result.tags), relatedTags: await grow(conversationId, related, result.related),
                  tokens: tok.count(result.text), madeBy: result.madeBy, promptVersion: result.version, createdAt: new Date().toISOString(),
                };
                await d.summaries.commitSegment(x, seg.lastSeq + 1, new Date().toISOString());
                return x;
              });
              if (!summary) { stop = stopped = true; break; }
              committed.push({ units, tags: summary.tags, related: summary.relatedTags });
              report.segmentsCompacted++;
              report.turnsCompacted += turns.length;
              report.summariesMade++;
              if (result.fellBack) report.fallbacks++;
              report.watermark = seg.lastSeq + 1;
            }
            // Rolled up as the pass goes, so the frontier (read by every onTurnComplete meanwhile) stays short.
            if (committed.length > 0) report.summariesMade += await rollUp(conversationId, atomic, signal, tok);
            if (bounded()) stop = stopped = true;
            else await pace(report.turnsCompacted - sliceFrom);
          }
          if (committed.length > 0) {
            const layer = await tagLayer(conversationId, committed, trigger !== 'hard', atomic, signal, tok, trigger === 'hard' ? undefined : pace);
            for (const t of layer.cover) cover.add(t);
            report.summariesMade += layer.made;
          }
          if (stop || signal.aborted || committed.length === 0) break;
        }
        if (report.segmentsCompacted > 0) await atomic(() => d.summaries.countEvent(conversationId, new Date().toISOString()));
        // Stopped early: is anything left before the protected turns?
        if (stopped && (await atomic(() => planFrom(conversationId, report.watermark, boundary))).length > 0) report.more = true;
      } catch (error) {
        report.stoppedBy = signal.aborted ? `aborted: ${String(signal.reason instanceof Error ? signal.reason.message : signal.reason)}` : (error as Error).message;
      }
      if (report.segmentsCompacted === 0 && !report.stoppedBy) return null;
      report.tagsCovered = [...cover];
      const after = await atomic(() => pressure(conversationId)).catch(() => before);
      report.tokensAfter = after.tokens;
      report.tokensFreed = Math.max(0, before.tokens - after.tokens);
      report.durationMs = Math.round(performance.now() - started);
      return report.segmentsCompacted > 0 || report.stoppedBy ? report : null;
    },

    /** Rebuilds summaries from their sources with the current summarizer, in place (ids stay). */
    async regenerate(conversationId: string, targets: readonly SummaryRecord[], atomic: Atomic, signal: AbortSignal): Promise<number> {
      const tok = await d.tokenizer();
      let done = 0;
      for (const x of targets) {
        if (signal.aborted) break;
        const items: SummaryItem[] = x.kind === 'segment'
          ? (await atomic(() => d.turns.range(conversationId, x.firstSeq, x.lastSeq - x.firstSeq + 1))).filter((t) => t.role !== 'system')
            .map(turnItem)
          : (await atomic(() => d.summaries.byIds(conversationId, x.sourceIds))).sort((a, b) => a.firstSeq - b.firstSeq)
            .map((y) => ({ id: y.id, speaker: 'summary', text: y.text, createdAt: y.createdAt }));
        const hidden = await atomic(() => d.tags.privateTags(conversationId));
        const tags = x.tags.filter((t) => !hidden.has(t));
        const result = await summarize({
          conversationId, kind: x.kind, level: x.level, ...(x.tag ? { tag: x.tag } : {}), items, tags, relatedTags: x.relatedTags.filter((t) => !hidden.has(t)),
          instructions: instructions(tags), targetTokens: x.kind === 'segment' ? target(tok.count(items.map((i) => i.text).join('\n'))) : s.summaryTokens,
        }, signal);
        await atomic(async () => d.summaries.rewrite(x, result.text, tok.count(result.text), result.madeBy, result.version,
          await grow(conversationId, x.tags, result.tags), await grow(conversationId, x.relatedTags, result.related)));
        done++;
      }
      return done;
    },
  };
}

export type Compactor = ReturnType<typeof createCompactor>;
