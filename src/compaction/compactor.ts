import { PagewiseError } from '../errors.js';
import { prefixLength, storedTextTokens } from '../history.js';
import type { TurnRecord, TurnStore } from '../store/turn-store.js';
import type { Canonicalizer } from '../tags/tag-canonicalizer.js';
import type { TagRules } from '../tags/tag-rules.js';
import type { TagStore } from '../tags/tag-store.js';
import { TOKENS_PER_MESSAGE, countCacheKey } from '../tokens/chat-format.js';
import type { CompactionReport, Summarizer, SummaryItem, SummaryRequest, Tokenizer } from '../types.js';
import { type Segment, pool, segment, setCover } from './segmenter.js';
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

function speaker(t: TurnRecord): string {
  return t.name ?? t.role;
}

function newId(): string {
  return `sum_${crypto.randomUUID()}`;
}

/** The monitor, segmenter and compactor of seed 000, with seed 004's levels on the same summaries. */
export function createCompactor(d: CompactorDeps) {
  const s = d.settings;

  const pressure = async (conversationId: string): Promise<Pressure> => {
    const tok = await d.tokenizer();
    const head = await d.turns.range(conversationId, 0, 16);
    const prefixEnd = prefixLength(head);
    const state = await d.summaries.state(conversationId);
    const watermark = Math.max(prefixEnd, state?.watermark ?? 0);
    const turnCount = await d.turns.turnCount(conversationId);
    const key = countCacheKey(tok);
    let active = key === null ? null : await d.summaries.turnTokensFrom(conversationId, watermark, key, TOKENS_PER_MESSAGE);
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

  const segmentRequest = async (conversationId: string, seg: Segment, tok: Tokenizer): Promise<{ request: SummaryRequest; turns: TurnRecord[]; related: string[] }> => {
    const turns = await d.turns.range(conversationId, Math.max(0, seg.firstSeq - 1), seg.lastSeq - seg.firstSeq + 3);
    const inside = turns.filter((t) => t.seq >= seg.firstSeq && t.seq <= seg.lastSeq && t.role !== 'system');
    const before = turns.find((t) => t.seq === seg.firstSeq - 1);
    const after = turns.find((t) => t.seq === seg.lastSeq + 1);
    const tagRows = await d.tags.tagsOf(conversationId, seg.units.map((u) => u.unitSeq));
    const related = [...new Set([...tagRows.values()].flatMap((r) => r.related))].filter((t) => !seg.tags.includes(t));
    const counts = await storedTextTokens(d.turns, tok, inside);
    const request: SummaryRequest = {
      conversationId, kind: 'segment', level: 1,
      items: inside.map((t) => ({ id: t.id, speaker: speaker(t), text: t.text, createdAt: t.createdAt })),
      tags: seg.tags, relatedTags: related, instructions: instructions(seg.tags),
      targetTokens: target([...counts.values()].reduce((a, b) => a + b, 0)),
    };
    if (before) request.before = `${speaker(before)}: ${before.text}`;
    if (after) request.after = `${speaker(after)}: ${after.text}`;
    return { request, turns: inside, related };
  };

  /** Rolls up the frontier: `nSumSum` summaries of a level become one of the next; at `maxSumLevel` the master absorbs them. */
  const rollUp = async (conversationId: string, atomic: Atomic, signal: AbortSignal, tok: Tokenizer): Promise<number> => {
    let made = 0;
    for (let level = 1; level < s.maxSumLevel; level++) {
      for (;;) {
        if (signal.aborted) return made;
        const frontier = await atomic(() => d.summaries.frontier(conversationId));
        const atLevel = frontier.filter((x) => x.level === level && x.kind !== 'master');
        if (atLevel.length < s.nSumSum) break;
        const group = atLevel.slice(0, s.nSumSum);
        const master = level + 1 === s.maxSumLevel;
        const previous = master ? frontier.find((x) => x.kind === 'master') : undefined;
        const parts = previous ? [previous, ...group] : group;
        const tags = [...new Set(parts.flatMap((x) => x.tags))];
        const related = [...new Set(parts.flatMap((x) => x.relatedTags))].filter((t) => !tags.includes(t));
        const result = await summarize({
          conversationId, kind: master ? 'master' : 'rollup', level: level + 1,
          items: parts.map((x): SummaryItem => ({ id: x.id, speaker: 'summary', text: x.text, createdAt: x.createdAt })),
          tags, relatedTags: related, instructions: instructions(tags), targetTokens: s.summaryTokens,
        }, signal);
        await atomic(async () => {
          const summary: NewSummary = {
            id: newId(), conversationId, kind: master ? 'master' : 'rollup', level: level + 1,
            firstSeq: parts[0]!.firstSeq, lastSeq: parts[parts.length - 1]!.lastSeq, from: parts[0]!.from, to: parts[parts.length - 1]!.to, sourceIds: parts.map((x) => x.id),
            text: result.text, tags: await grow(conversationId, tags, result.tags), relatedTags: await grow(conversationId, related, result.related),
            tokens: tok.count(result.text), madeBy: result.madeBy, promptVersion: result.version, createdAt: new Date().toISOString(),
          };
          await d.summaries.commitRollup(summary, parts.map((x) => x.id));
        });
        made++;
      }
    }
    return made;
  };

  /** Seed 000's layer 2: the set cover of the compacted units' tags, each cover tag's stale summary rebuilt. */
  const tagLayer = async (conversationId: string, watermark: number, atomic: Atomic, signal: AbortSignal, tok: Tokenizer): Promise<{ cover: string[]; made: number }> => {
    const unitTags = await atomic(() => d.tags.primaryTagsBefore(conversationId, watermark));
    const cover = setCover(unitTags);
    const existing = new Map((await atomic(() => d.summaries.tagSummaries(conversationId))).map((x) => [x.tag!, x]));
    const stale = cover.filter((t) => !existing.has(t) || existing.get(t)!.stale);
    const jobs = pool(stale, s.maxConcurrentSummaries, async (tag) => {
      const segments = await atomic(() => d.summaries.segmentsTagged(conversationId, [tag]));
      if (segments.length === 0) return null;
      const related = [...new Set(segments.flatMap((x) => x.relatedTags))];
      const result = await summarize({
        conversationId, kind: 'tag', level: 2, tag,
        items: segments.map((x) => ({ id: x.id, speaker: 'summary', text: x.text, createdAt: x.createdAt })),
        tags: [tag], relatedTags: related, instructions: instructions([tag]), targetTokens: s.summaryTokens,
      }, signal);
      return { tag, segments, related, result };
    });
    let made = 0;
    for (const job of jobs) {
      const done = await job;
      if (!done || signal.aborted) continue;
      const { tag, segments, related, result } = done;
      await atomic(async () => d.summaries.replaceTagSummary({
        id: newId(), conversationId, kind: 'tag', level: 2, tag,
        firstSeq: segments[0]!.firstSeq, lastSeq: segments[segments.length - 1]!.lastSeq, from: segments[0]!.from, to: segments[segments.length - 1]!.to, sourceIds: segments.map((x) => x.id),
        text: result.text, tags: await grow(conversationId, [tag], result.tags), relatedTags: await grow(conversationId, related, result.related),
        tokens: tok.count(result.text), madeBy: result.madeBy, promptVersion: result.version, createdAt: new Date().toISOString(),
      }));
      made++;
    }
    return { cover, made };
  };

  return {
    pressure,
    due,

    /**
     * Compacts everything between the watermark and the protected recent turns in one pass (greedy batch): segments
     * are summarized concurrently (at most `maxConcurrentSummaries`) and committed in order, one transaction each,
     * so an abort or failure leaves the last committed state. Then the frontier rolls up and stale tag summaries
     * are rebuilt. Returns null when there was nothing to compact.
     */
    async compact(conversationId: string, trigger: CompactionReport['trigger'], atomic: Atomic, signal: AbortSignal): Promise<CompactionReport | null> {
      const started = performance.now();
      const tok = await d.tokenizer();
      const before = await atomic(() => pressure(conversationId));
      const boundary = before.turnCount - s.protectedRecentTurns;
      const plan = await atomic(async () => {
        const units = (await d.tags.unitsFrom(conversationId, before.watermark)).filter((u) => u.endSeq < boundary);
        const tags = await d.tags.tagsOf(conversationId, units.map((u) => u.unitSeq));
        return segment(units.map((u) => ({ ...u, tags: tags.get(u.unitSeq)?.tags ?? [] })), before.watermark, s.sumWindow);
      });
      if (plan.length === 0) return null;
      const report: CompactionReport = {
        conversationId, trigger, segmentsCompacted: 0, turnsCompacted: 0, tokensBefore: before.tokens, tokensAfter: before.tokens,
        tokensFreed: 0, tagsCovered: [], summariesMade: 0, fallbacks: 0, watermark: before.watermark, durationMs: 0,
      };
      try {
        const jobs = pool(plan, s.maxConcurrentSummaries, async (seg) => {
          const { request, turns, related } = await atomic(() => segmentRequest(conversationId, seg, tok));
          return { seg, turns, related, result: await summarize(request, signal) };
        });
        for (const job of jobs) {
          const { seg, turns, related, result } = await job;
          if (signal.aborted) throw signal.reason;
          const committed = await atomic(async () => {
            const state = await d.summaries.state(conversationId);
            // Another compaction got here first: its summary stands.
            if (Math.max(before.prefixEnd, state?.watermark ?? 0) !== seg.firstSeq) return false;
            await d.summaries.commitSegment({
              id: newId(), conversationId, kind: 'segment', level: 1, firstSeq: seg.firstSeq, lastSeq: seg.lastSeq,
              from: turns[0]?.createdAt ?? new Date().toISOString(), to: turns[turns.length - 1]?.createdAt ?? new Date().toISOString(),
              sourceIds: turns.map((t) => t.id), text: result.text,
              tags: await grow(conversationId, seg.tags, result.tags), relatedTags: await grow(conversationId, related, result.related),
              tokens: tok.count(result.text), madeBy: result.madeBy, promptVersion: result.version, createdAt: new Date().toISOString(),
            }, seg.lastSeq + 1, new Date().toISOString());
            return true;
          });
          if (!committed) break;
          report.segmentsCompacted++;
          report.turnsCompacted += turns.length;
          report.summariesMade++;
          if (result.fellBack) report.fallbacks++;
          report.watermark = seg.lastSeq + 1;
        }
        if (report.segmentsCompacted > 0) {
          report.summariesMade += await rollUp(conversationId, atomic, signal, tok);
          const layer = await tagLayer(conversationId, report.watermark, atomic, signal, tok);
          report.tagsCovered = layer.cover;
          report.summariesMade += layer.made;
          await atomic(() => d.summaries.countEvent(conversationId, new Date().toISOString()));
        }
      } catch (error) {
        report.stoppedBy = signal.aborted ? `aborted: ${String(signal.reason instanceof Error ? signal.reason.message : signal.reason)}` : (error as Error).message;
      }
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
            .map((t) => ({ id: t.id, speaker: speaker(t), text: t.text, createdAt: t.createdAt }))
          : (await atomic(() => d.summaries.byIds(conversationId, x.sourceIds))).sort((a, b) => a.firstSeq - b.firstSeq)
            .map((y) => ({ id: y.id, speaker: 'summary', text: y.text, createdAt: y.createdAt }));
        const result = await summarize({
          conversationId, kind: x.kind, level: x.level, ...(x.tag ? { tag: x.tag } : {}), items, tags: x.tags, relatedTags: x.relatedTags,
          instructions: instructions(x.tags), targetTokens: x.kind === 'segment' ? target(tok.count(items.map((i) => i.text).join('\n'))) : s.summaryTokens,
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
