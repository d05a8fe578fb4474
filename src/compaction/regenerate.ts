import type { SummaryItem } from '../contracts/types.js';
import type { Atomic, CompactorDeps } from './compactor-types.js';
import type { SummaryRecord } from './summary-store.js';
import { type SummaryWriter, summaryItem, turnItem } from './summary-writer.js';

/** Rebuilds summaries from their sources with the current summarizer, in place (ids stay). */
export function createRegenerator(d: Pick<CompactorDeps, 'turns' | 'tags' | 'summaries' | 'tokenizer' | 'settings'>, writer: SummaryWriter) {
  /** What `x` was made from, as the summarizer sees it: its turns (a segment) or its sources in order. */
  const sourcesOf = async (conversationId: string, x: SummaryRecord, atomic: Atomic): Promise<SummaryItem[]> => (x.kind === 'segment'
    ? (await atomic(() => d.turns.range(conversationId, x.firstSeq, x.lastSeq - x.firstSeq + 1))).filter((t) => t.role !== 'system')
      .map(turnItem)
    : (await atomic(() => d.summaries.byIds(conversationId, x.sourceIds))).sort((a, b) => a.firstSeq - b.firstSeq)
      .map(summaryItem));

  /**
   * Rewrites each target in its own step of `atomic`, its new text written in one transaction (recall reads the old
   * one until then). `keepOnFallback` (a rebuild after an upgrade): when the summarizer fails and its fallback
   * answers, the old summary is kept and the rest left for later, instead of replacing it with the fallback's text.
   */
  return async (conversationId: string, targets: readonly SummaryRecord[], atomic: Atomic, signal: AbortSignal, keepOnFallback = false): Promise<number> => {
    const tok = await d.tokenizer();
    let done = 0;
    for (const x of targets) {
      if (signal.aborted) break;
      const items = await sourcesOf(conversationId, x, atomic);
      const hidden = await atomic(() => d.tags.privateTags(conversationId));
      const tags = x.tags.filter((t) => !hidden.has(t));
      const result = await writer.summarize({
        conversationId, kind: x.kind, level: x.level, ...(x.tag ? { tag: x.tag } : {}), items, tags, relatedTags: x.relatedTags.filter((t) => !hidden.has(t)),
        instructions: writer.instructions(tags), targetTokens: x.kind === 'segment' ? writer.target(tok.count(items.map((i) => i.text).join('\n'))) : d.settings.summaryTokens,
      }, signal);
      if (keepOnFallback && result.fellBack) break;
      await atomic(async () => d.summaries.rewrite(x, result.text, tok.count(result.text), result.madeBy, result.version,
        await writer.grow(conversationId, x.tags, result.tags), await writer.grow(conversationId, x.relatedTags, result.related)));
      done++;
    }
    return done;
  };
}

export type Regenerator = ReturnType<typeof createRegenerator>;
