import { storedTextTokens } from '../store/stored-tokens.js';
import type { TurnRecord } from '../store/turn-store.js';
import type { SummaryRequest, Tokenizer } from '../contracts/types.js';
import type { CompactorDeps } from './compactor-types.js';
import { type Segment, type TaggedUnit, segment } from './segmenter.js';
import { type SummaryWriter, speaker, turnItem } from './summary-writer.js';

// Units planned per batch: a long backlog (an import) is compacted batch by batch, each with its roll-ups and tags.
const PLAN_UNITS = 2048;

/** A segment ready to summarize: its request, its turns, and its units with the tags a summary of them may carry. */
export interface SegmentRequest {
  request: SummaryRequest;
  turns: TurnRecord[];
  related: string[];
  units: TaggedUnit[];
}

/** The segmenter's side of a pass: which segments come next, and what a summarizer is told of each. */
export function createSegmentPlanner(d: Pick<CompactorDeps, 'turns' | 'tags' | 'settings'>, writer: SummaryWriter) {
  return {
    /** Segments to compact next: from the watermark, before the protected turns, at most PLAN_UNITS units. */
    async planFrom(conversationId: string, watermark: number, boundary: number): Promise<Segment[]> {
      const units = (await d.tags.unitsFrom(conversationId, watermark, PLAN_UNITS)).filter((u) => u.endSeq < boundary);
      const tags = await d.tags.tagsOf(conversationId, units.map((u) => u.unitSeq));
      return segment(units.map((u) => ({ ...u, tags: tags.get(u.unitSeq)?.tags ?? [] })), watermark, d.settings.sumWindow);
    },

    /**
     * The segment's request, and its units with the tags a summary of them may carry: a tag that only units holding a
     * private message carry is one of its words, so the summarizer is not told it and the summary does not carry it.
     */
    async segmentRequest(conversationId: string, seg: Segment, tok: Tokenizer): Promise<SegmentRequest> {
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
        tags, relatedTags: related, instructions: writer.instructions(tags),
        targetTokens: writer.target(tokens),
      };
      if (before && !before.private) request.before = `${speaker(before)}: ${before.text}`;
      if (after && !after.private) request.after = `${speaker(after)}: ${after.text}`;
      const units = seg.units.map((u) => ({ ...u, tags: u.tags.filter((t) => !hidden.has(t)) }));
      return { request, turns: inside, related, units };
    },
  };
}

export type SegmentPlanner = ReturnType<typeof createSegmentPlanner>;
