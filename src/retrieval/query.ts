import type { TurnStore } from '../store/turn-store.js';
import type { Canonicalizer } from '../tags/tag-canonicalizer.js';
import type { TagIndex } from '../tags/tag-index.js';
import type { TagStore } from '../tags/tag-store.js';
import { escapeRegExp } from '../tags/key-phrases.js';
import { ftsStem, queryTerms } from '../text/fts-words.js';
import { type QueryIntent, detectIntent } from './intent.js';
import { BACKGROUND_SHARE } from './broad.js';

/** An inbound message, read for retrieval. */
export interface QueryAnalysis {
  /** BM25 words: speaker names taken out (they are a signal of their own), very common words dropped. */
  terms: string[];
  /** Canonical stored tags the message matched → IDF weight (related tags at half). */
  tagWeights: Map<string, number>;
  matchedTags: string[];
  speakers: string[];
  intent: QueryIntent;
  /** Tagger failures that fell back (for the manifest). */
  failures: string[];
}

export interface QueryContext {
  turns: TurnStore;
  tags: TagStore;
  index: TagIndex;
  canonicalizer: Canonicalizer;
  minTags: number;
  maxTags: number;
}

// A word on more than this share of the stored turns ranks little and costs a scan of every posting: with a rarer
// word in the question, it is left out of the full-text query.
const COMMON = 0.2;

// The full-text query ranks every stored turn that holds any of its words, so its cost grows with their postings:
// past this many in all, the most common of the remaining words are left out too (at 30,000 turns BM25 took a third
// of a question's time; conversations under a few thousand turns never reach it).
export const MAX_POSTINGS = 4000;

/** Tags, speakers, words and intent of a question, against what the conversation has stored. */
export async function analyzeQuery(c: QueryContext, conversationId: string, text: string, nowMs: number, nowIso: string,
  embedding?: () => Promise<Float32Array | null>, privateText = false): Promise<QueryAnalysis> {
  const counts = await c.canonicalizer.counts(conversationId);
  // The most used tags, for the tagger's prompt (read in that order from the statistics' index).
  const vocabulary = (await c.tags.vocabulary(conversationId, 150)).map((t) => t.tag);
  const { result, failures } = await c.index.runChain({
    text, kind: 'query', conversationId, vocabulary, stored: counts, minTags: c.minTags, maxTags: c.maxTags,
    ...(embedding ? { embedding } : {}),
  }, privateText);
  const intent = detectIntent(text, nowMs);
  // A span of time the conversation holds no turn in ("this weekend", ahead of every stored turn) points at nothing to
  // recall: the question is not temporal for retrieval, and gets no extra budget for it.
  if (intent.window && (await c.turns.inWindow(conversationId, intent.window.fromMs, intent.window.toMs, 1)).length === 0) {
    intent.window = null;
    intent.temporal = intent.position !== null;
  }
  if (result.broad) intent.broad = true;
  if (result.temporal) intent.temporal = true;

  const units = Math.max(1, await c.tags.unitCount(conversationId));
  const idf = (n: number) => Math.log(1 + units / Math.max(1, n));
  const tagWeights = new Map<string, number>();
  for (const tag of await c.canonicalizer.canonical(conversationId, result.tags, nowIso)) {
    const n = counts.get(tag);
    if (n !== undefined) tagWeights.set(tag, idf(n));
  }
  for (const tag of await c.canonicalizer.canonical(conversationId, result.relatedTags, nowIso)) {
    const n = counts.get(tag);
    if (n !== undefined && !tagWeights.has(tag)) tagWeights.set(tag, 0.5 * idf(n));
  }
  // Tags on most units say little and are slow to match: keep them only when nothing rarer matched.
  const rare = [...tagWeights].filter(([t]) => (counts.get(t) ?? 0) / units <= BACKGROUND_SHARE);
  const weights = rare.length > 0 ? new Map(rare) : tagWeights;

  const lower = text.toLowerCase();
  const speakers = (await c.turns.speakers(conversationId)).filter((s) => new RegExp(`(?<![\\p{L}])${escapeRegExp(s.toLowerCase())}(?![\\p{L}])`, 'u').test(lower));
  const named = new Set(speakers.map((s) => s.toLowerCase()));
  let terms = queryTerms(text).filter((t) => !named.has(t));
  const indexed = await c.turns.indexedTurns();
  if (indexed >= 200 && terms.length > 1) {
    const stems = new Map(terms.map((t) => [t, ftsStem(t)]));
    const docs = await c.turns.tokenDocs([...stems.values()].filter((s): s is string => s !== null));
    const docsOf = (t: string): number => docs.get(stems.get(t) ?? '') ?? 0;
    const kept = terms.filter((t) => docsOf(t) / indexed <= COMMON);
    if (kept.length > 0) terms = kept;
    // The rarest words first, while their postings fit the budget (the rarest always).
    let postings = 0;
    const within = new Set<string>();
    for (const t of [...terms].sort((a, b) => docsOf(a) - docsOf(b))) {
      if (within.size > 0 && postings + docsOf(t) > MAX_POSTINGS) break;
      within.add(t);
      postings += docsOf(t);
    }
    terms = terms.filter((t) => within.has(t));
  }
  if (terms.length === 0 && speakers.length > 0) terms = speakers.map((s) => s.toLowerCase());
  return { terms, tagWeights: weights, matchedTags: [...weights.keys()], speakers, intent, failures };
}
