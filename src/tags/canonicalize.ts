import { distance } from 'fastest-levenshtein';
import pluralize from 'pluralize';

// pluralize folds these wrongly (data → datum, kubernetes → kubernete): they are names or mass nouns.
const KEEP = new Set(['data', 'media', 'news', 'series', 'species', 'kubernetes', 'postgres', 'redis', 'aws', 'ios',
  'macos', 'windows', 'jenkins', 'sales', 'analytics', 'lens', 'canvas', 'alias', 'atlas', 'corpus', 'chaos', 'gas',
  'bus', 'plus', 'status', 'focus', 'virus', 'campus', 'bonus', 'census', 'thesis', 'genesis', 'yes', 'us', 'this']);

/** One word in its singular form: plural folding with the exceptions above, words in -ics, -ss and short ones kept. */
export function singular(word: string): string {
  if (word.length <= 3 || KEEP.has(word) || /(ics|ss|us|is|ous)$/.test(word) || /\d/.test(word)) return word;
  return pluralize.singular(word);
}

/**
 * A tag's canonical spelling: lower case, words joined by `-`, each word singular (`Materialized Views` →
 * `materialized-view`). Returns '' for text with no letters or digits.
 */
export function slug(raw: string): string {
  return raw
    .normalize('NFKD').replace(/\p{M}+/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .map(singular)
    .join('-')
    .slice(0, 64);
}

/**
 * Whether two canonical tags are spellings of one another closely enough to merge without asking: the same once
 * hyphens are dropped (`data-base`, `database`), or one edit apart in a long word (`kubernets`, `kubernetes`).
 */
export function isAutoAlias(a: string, b: string): boolean {
  if (a === b) return false;
  if (a.replace(/-/g, '') === b.replace(/-/g, '')) return true;
  return Math.min(a.length, b.length) >= 7 && a[0] === b[0] && distance(a, b) === 1 && !/\d/.test(a + b);
}

/**
 * Whether two tags may name the same thing, for `aliases.suggest()`: auto aliases, edit distance ≤ 2 on words of
 * 6+ letters, or one a prefix of the other (`postgres`, `postgresql`).
 */
export function isAliasCandidate(a: string, b: string): boolean {
  if (a === b) return false;
  if (isAutoAlias(a, b)) return true;
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  if (short.length >= 4 && long.startsWith(short) && long.length - short.length <= 3 && !long.slice(short.length).includes('-')) return true;
  return short.length >= 6 && distance(a, b) <= 2 && a[0] === b[0];
}
