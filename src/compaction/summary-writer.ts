import { PagewiseError } from '../contracts/errors.js';
import type { TurnRecord } from '../store/turn-store.js';
import type { Summary, SummaryItem, SummaryRequest } from '../contracts/types.js';
import type { CompactorDeps } from './compactor-types.js';

const MIN_SUMMARY = 32;

/** What a summarizer is given in place of a private message's text. */
export const PRIVATE_PLACEHOLDER = '(a private message, left out of summaries)';

/** What a summarizer wrote, and who wrote it (`fellBack`: the fallback, because the summarizer failed). */
export interface Written {
  text: string;
  tags: string[];
  related: string[];
  madeBy: string;
  version: number;
  fellBack: boolean;
}

export function speaker(t: TurnRecord): string {
  return t.name ?? t.role;
}

export function newId(): string {
  return `sum_${crypto.randomUUID()}`;
}

/** A turn as a summarizer sees it. A private one goes to no summarizer and into no summary: its place is marked. */
export function turnItem(t: TurnRecord): SummaryItem {
  return { id: t.id, speaker: speaker(t), text: t.private ? PRIVATE_PLACEHOLDER : t.text, createdAt: t.createdAt };
}

/** A summary as a summarizer sees it (a part of a roll-up, the master or a tag summary). */
export function summaryItem(x: Summary): SummaryItem {
  return { id: x.id, speaker: 'summary', text: x.text, createdAt: x.createdAt };
}

/** What every level of compaction shares: the summarizer with its fallback, the tags' instructions, the length. */
export function createSummaryWriter(d: Pick<CompactorDeps, 'summarizer' | 'fallback' | 'canonicalizer' | 'rules' | 'settings'>) {
  const s = d.settings;
  return {
    instructions: (tags: readonly string[]): string[] =>
      [...new Set(tags.map((t) => d.rules.ruleFor(t).summaryPrompt).filter((p): p is string => p !== null))],

    /** Summarizes with the configured summarizer, falling back to the extractive one when it fails (not on abort). */
    async summarize(request: SummaryRequest, signal: AbortSignal): Promise<Written> {
      try {
        const r = await d.summarizer.summarize({ ...request, signal });
        if (r.text.trim() === '') throw new PagewiseError('LLM_ERROR', 'compactor', 'The summarizer returned an empty summary.');
        return { text: r.text.trim(), tags: r.tags ?? [], related: r.relatedTags ?? [], madeBy: d.summarizer.name, version: d.summarizer.version, fellBack: false };
      } catch (error) {
        if (signal.aborted || d.summarizer === d.fallback) throw error;
        const r = await d.fallback.summarize({ ...request, signal });
        return { text: r.text, tags: [], related: [], madeBy: `${d.fallback.name} (${d.summarizer.name} failed)`, version: d.fallback.version, fellBack: true };
      }
    },

    /** Tags only grow: the summarizer's are canonicalized and added after the originals. */
    async grow(conversationId: string, base: readonly string[], extra: readonly string[]): Promise<string[]> {
      if (extra.length === 0) return [...base];
      const canonical = await d.canonicalizer.canonical(conversationId, extra, new Date().toISOString());
      return [...base, ...canonical.filter((t) => !base.includes(t))];
    },

    /** A segment summary's length: a share of its source's tokens, within bounds. */
    target: (sourceTokens: number): number => Math.max(MIN_SUMMARY, Math.min(s.summaryTokens, Math.round(sourceTokens * s.summaryRatio))),
  };
}

export type SummaryWriter = ReturnType<typeof createSummaryWriter>;
