import type { Tokenizer } from '../contracts/types.js';
import type { Atomic, CompactorDeps } from './compactor-types.js';
import type { Pace } from '../common/pace.js';
import { ROLLUP_TAGS } from './roll-up.js';
import { type TaggedUnit, pool, prominent, setCover } from './segmenter.js';
import type { SummaryRecord } from './summary-store.js';
import { type SummaryWriter, type Written, newId, summaryItem } from './summary-writer.js';

// Segments a tag summary folds in at once (with its previous text).
export const FOLD_SEGMENTS = 32;

/** A segment committed by this pass: its units with their primary tags, and the summary's tags. */
export interface CommittedSegment {
  units: readonly TaggedUnit[];
  tags: readonly string[];
  related: readonly string[];
}

/** A tag summary's next version, summarized and not written yet. */
interface Fold {
  tag: string;
  previous: SummaryRecord | null;
  segments: SummaryRecord[];
  related: string[];
  result: Written;
}

/**
 * The cover of this pass's units: the tags with a tag summary that its units carry (sorted), then those the set cover
 * adds for units that carry none of them.
 */
function coverOf(committed: readonly CommittedSegment[], existing: ReadonlyMap<string, SummaryRecord>): { cover: string[]; added: string[] } {
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
  return { cover: [...[...used].sort(), ...added], added };
}

/**
 * Seed 000's layer 2, kept up to date incrementally: the compacted units of this pass that carry no tag of the
 * cover so far are covered greedily (set cover), and the tag summary of every cover tag on this pass's segments
 * folds in its new segments (a new version from the previous one and at most FOLD_SEGMENTS segments, oldest
 * first; the previous one is kept, rolled up into it): the work is that of the pass, not of the whole conversation. A tag summary left behind (a bounded pass, or more
 * than FOLD_SEGMENTS new segments) catches up in the next pass whose segments carry its tag.
 */
export function createTagLayer(d: Pick<CompactorDeps, 'summaries' | 'canonicalizer' | 'settings'>, writer: SummaryWriter) {
  const s = d.settings;

  /** Summarizes the next version of `tag`'s summary: null when it has no new segment (or the pass was aborted). */
  const fold = async (conversationId: string, tag: string, previous: SummaryRecord | null, atomic: Atomic, signal: AbortSignal): Promise<Fold | null> => {
    const segments = await atomic(async () => {
      // The last segment it folded in is the last of its sources.
      const lastId = previous?.sourceIds[previous.sourceIds.length - 1];
      const last = lastId === undefined ? 0 : (await d.summaries.rowids(conversationId, [lastId])).get(lastId) ?? 0;
      return d.summaries.segmentsTaggedAfter(conversationId, tag, last, FOLD_SEGMENTS);
    });
    if (segments.length === 0 || signal.aborted) return null;
    const parts = previous ? [previous, ...segments] : segments;
    const related = prominent(parts.map((x) => x.relatedTags), await atomic(() => d.canonicalizer.counts(conversationId)), ROLLUP_TAGS).filter((t) => t !== tag);
    const result = await writer.summarize({
      conversationId, kind: 'tag', level: 2, tag,
      items: parts.map(summaryItem),
      tags: [tag], relatedTags: related, instructions: writer.instructions([tag]), targetTokens: s.summaryTokens,
    }, signal);
    return { tag, previous, segments, related, result };
  };

  /** Writes a folded version: false when another compaction wrote the tag's next version first. */
  const write = (conversationId: string, { tag, previous, segments, related, result }: Fold, atomic: Atomic, tok: Tokenizer): Promise<boolean> => {
    const first = previous ?? segments[0]!;
    const last = segments[segments.length - 1]!;
    // Tags only grow, and the summarizer's additions are kept up to ROLLUP_TAGS.
    const base = previous ? previous.tags.slice(0, ROLLUP_TAGS) : [tag];
    // Its sources: the previous version and the new segments (a bounded list, however long the tag's history).
    return atomic(async () => d.summaries.foldTagSummary({
      id: newId(), conversationId, kind: 'tag', level: 2, tag,
      firstSeq: first.firstSeq, lastSeq: last.lastSeq, from: first.from, to: last.to,
      sourceIds: [...(previous ? [previous.id] : []), ...segments.map((x) => x.id)],
      text: result.text, tags: await writer.grow(conversationId, base, result.tags), relatedTags: await writer.grow(conversationId, related, result.related),
      tokens: tok.count(result.text), madeBy: result.madeBy, promptVersion: result.version, createdAt: new Date().toISOString(),
    }, previous?.id ?? null));
  };

  return async (conversationId: string, committed: readonly CommittedSegment[], foldExisting: boolean, atomic: Atomic, signal: AbortSignal, tok: Tokenizer, pace?: Pace): Promise<{ cover: string[]; made: number }> => {
    const touched = [...new Set(committed.flatMap((c) => [...c.tags, ...c.related]))];
    const existing = new Map((await atomic(() => d.summaries.tagSummariesOf(conversationId, touched))).map((x) => [x.tag!, x]));
    const { cover, added } = coverOf(committed, existing);
    // A bounded pass (hard) writes the new cover tags' summaries only: the others fold these segments in when their
    // tag next comes up in a pass.
    const targets = [...new Set([...(foldExisting ? touched.filter((t) => existing.has(t)) : []), ...added])];
    const jobs = pool(targets, s.maxConcurrentSummaries, (tag) => fold(conversationId, tag, existing.get(tag) ?? null, atomic, signal));
    let made = 0;
    for (const job of jobs) {
      const done = await job;
      if (!done || signal.aborted) continue;
      if (await write(conversationId, done, atomic, tok)) made++;
      // A tag summary folds in up to FOLD_SEGMENTS segments: counted as that many turns' work.
      await pace?.(done.segments.length);
    }
    return { cover, made };
  };
}

export type TagLayer = ReturnType<typeof createTagLayer>;
