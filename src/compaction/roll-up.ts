import type { SummaryRequest, Tokenizer } from '../contracts/types.js';
import type { Atomic, CompactorDeps } from './compactor-types.js';
import { prominent } from './segmenter.js';
import type { NewSummary, SummaryRecord } from './summary-store.js';
import { type SummaryWriter, newId, summaryItem } from './summary-writer.js';

// Tags a roll-up, the master or a tag summary inherits at most (the most frequent among its parts), so that the
// master's list does not grow with the conversation.
export const ROLLUP_TAGS = 24;

/** Rolls up the frontier: `nSumSum` summaries of a level become one of the next; at `maxSumLevel` the master absorbs them. */
export function createRollUp(d: Pick<CompactorDeps, 'summaries' | 'canonicalizer' | 'tags' | 'settings'>, writer: SummaryWriter) {
  const s = d.settings;

  /** The roll-up (or master) request of `parts`, with the tags it may carry. */
  const request = async (conversationId: string, parts: readonly SummaryRecord[], level: number, master: boolean, atomic: Atomic): Promise<SummaryRequest> => {
    // The tags of the parts most used in the conversation (the previous master's are the most used so far).
    const usage = await atomic(() => d.canonicalizer.counts(conversationId));
    // Summaries written before private messages' tags were withheld may carry them.
    const hidden = await atomic(() => d.tags.privateTags(conversationId));
    const tags = prominent(parts.map((x) => x.tags), usage, ROLLUP_TAGS).filter((t) => !hidden.has(t));
    const related = prominent(parts.map((x) => x.relatedTags), usage, ROLLUP_TAGS).filter((t) => !tags.includes(t) && !hidden.has(t));
    return {
      conversationId, kind: master ? 'master' : 'rollup', level: level + 1,
      items: parts.map(summaryItem),
      tags, relatedTags: related, instructions: writer.instructions(tags), targetTokens: s.summaryTokens,
    };
  };

  /** Rolls up the oldest group of `level`: `none` when it is not full, `lost` when another compaction rolled it up meanwhile. */
  const rollUpGroup = async (conversationId: string, level: number, atomic: Atomic, signal: AbortSignal, tok: Tokenizer): Promise<'none' | 'made' | 'lost'> => {
    const master = level + 1 === s.maxSumLevel;
    // The oldest group of the level (not the whole frontier: during a pass it holds every segment not rolled up yet).
    const { group, previous } = await atomic(async () => ({
      group: await d.summaries.unrolled(conversationId, level, s.nSumSum),
      previous: master ? await d.summaries.master(conversationId) : null,
    }));
    if (group.length < s.nSumSum) return 'none';
    const parts = previous ? [previous, ...group] : group;
    const req = await request(conversationId, parts, level, master, atomic);
    const result = await writer.summarize(req, signal);
    const committed = await atomic(async () => {
      const summary: NewSummary = {
        id: newId(), conversationId, kind: master ? 'master' : 'rollup', level: level + 1,
        firstSeq: parts[0]!.firstSeq, lastSeq: parts[parts.length - 1]!.lastSeq, from: parts[0]!.from, to: parts[parts.length - 1]!.to, sourceIds: parts.map((x) => x.id),
        text: result.text, tags: await writer.grow(conversationId, req.tags, result.tags), relatedTags: await writer.grow(conversationId, req.relatedTags, result.related),
        tokens: tok.count(result.text), madeBy: result.madeBy, promptVersion: result.version, createdAt: new Date().toISOString(),
      };
      // Another compaction rolled these up meanwhile: its roll-up stands.
      if (await d.summaries.rolledUp(conversationId, summary.sourceIds)) return false;
      await d.summaries.commitRollup(summary, parts.map((x) => x.id));
      return true;
    });
    return committed ? 'made' : 'lost';
  };

  return async (conversationId: string, atomic: Atomic, signal: AbortSignal, tok: Tokenizer): Promise<number> => {
    let made = 0;
    for (let level = 1; level < s.maxSumLevel; level++) {
      for (;;) {
        if (signal.aborted) return made;
        const outcome = await rollUpGroup(conversationId, level, atomic, signal, tok);
        if (outcome === 'none') break;
        if (outcome === 'made') made++;
      }
    }
    return made;
  };
}

export type RollUp = ReturnType<typeof createRollUp>;
