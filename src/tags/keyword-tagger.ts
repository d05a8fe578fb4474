import type { TagRequest, TagResult, Tagger } from '../contracts/types.js';
import { slug } from './canonicalize.js';
import { type Candidate, candidates, escapeRegExp } from './key-phrases.js';

/**
 * Bumped whenever what the keyword tagger makes of a text changes (its ranking, its words): conversations tagged by
 * another version have their tag index rebuilt in the background (engine/rebuild-tags.ts).
 */
export const KEYWORD_TAGGER_VERSION = 1;

export interface KeywordTaggerOptions {
  /** Tags defined by their words: `{ database: ['db', 'sql', 'postgres'] }`. */
  tagKeywords?: Record<string, string[]>;
}

/**
 * The offline tagger: configured keyword tags, then the unit's own key words and phrases, rare words in this
 * conversation first (TF·IDF over its turns), names and known tags favoured, phrases only once they recur.
 * For a query it returns every candidate: the engine keeps those that are stored tags.
 *
 * @example
 * const tagger = keywordTagger({ tagKeywords: { caching: ['cache', 'materialized view', 'memoize'] } });
 */
export function keywordTagger(options: KeywordTaggerOptions = {}): Tagger {
  const rules = Object.entries(options.tagKeywords ?? {}).map(([tag, words]) => ({
    tag,
    pattern: new RegExp(`(?<![\\p{L}\\p{N}])(?:${words.map((w) => escapeRegExp(w.toLowerCase())).join('|')})(?![\\p{L}\\p{N}])`, 'u'),
  }));
  return {
    name: 'keyword',
    version: KEYWORD_TAGGER_VERSION,
    async tag(request: TagRequest): Promise<TagResult> {
      const lower = request.text.toLowerCase();
      const configured = rules.filter((r) => r.pattern.test(lower)).map((r) => r.tag);
      const found = candidates(request.text);
      if (request.kind === 'query') return { tags: [...configured, ...found.keys()], relatedTags: [] };
      const known = new Set(request.vocabulary);
      const turns = (request.stats?.turns ?? 0) + 1;
      const df = request.stats ? await request.stats.termFrequencies([...found.keys()]) : new Map<string, number>();
      const score = (c: Candidate): number => {
        const seen = df.get(c.term) ?? 0;
        if (c.phrase && seen === 0 && !known.has(c.term)) return 0;
        // A word in more than a quarter of a long conversation's turns is its background, not a topic.
        if (turns >= 40 && seen / turns > 0.25 && !known.has(c.term)) return 0;
        const idf = Math.log(1 + turns / (1 + seen));
        return Math.sqrt(c.count) * idf * (c.name ? 1.5 : 1) * (c.phrase ? 1.2 : 1) * (known.has(c.term) ? 1.3 : 1);
      };
      const ranked = [...found.values()].map((c) => ({ c, s: score(c) })).filter((x) => x.s > 0)
        .sort((a, b) => b.s - a.s || a.c.term.localeCompare(b.c.term));
      // Words and phrases are ranked apart so a phrase never pushes out the word it is built on.
      const phrases = ranked.filter((x) => x.c.phrase).map((x) => x.c.term).slice(0, Math.floor(request.maxTags / 3));
      const words = ranked.filter((x) => !x.c.phrase).map((x) => x.c.term).slice(0, request.maxTags - phrases.length);
      const tags = [...new Set([...configured.map(slug), ...words, ...phrases])].slice(0, Math.max(request.maxTags, configured.length));
      return { tags, relatedTags: [] };
    },
  };
}
