import { STOPWORDS, WORD } from '../text/fts-words.js';
import { singular } from './canonicalize.js';

// Frequent English words that name no topic. BM25 discounts them by IDF; a tag cannot, so they never become tags.
const GENERIC = new Set(`user assistant system tool because able actually ago ahead almost along already always amazing another anyone anything anyway
around asked away awesome back bad basically beautiful best better big bit came cause certainly change chat come comes
coming completely cool course day days definitely different doing done down during easy else enough especially even
ever every everyone everything exactly example excited fact far feel feeling feels felt find fine first folks found
fun gave give given gives giving glad go goes going gone good gotta great guess guys happen happened happy hard help
helped helpful helps hope hoping idea important interesting keep kind kinds last least less little lot lots love
loved made make makes making many matter may maybe mean means might mind more much must need needed needs never new
next nice nothing often old one ones others part pretty probably put quite rather ready real reason right said saw
see seem seemed seems seen sense several share shared sharing since sometimes something soon sorry sounds special
start started still stuff super sure take taken takes taking talk talked talking things thing thought three time
times today told took totally true try trying two type understand use used useful uses using usually want wanted
wants way ways week well went whatever whole wonderful work worked working works world wow yeah year years yet
yesterday together though although however therefore thus else instead perhaps within without across among whether
etc via per vs yours also i'm i've you're it's that's there's don't can't won't didn't isn't`.split(/\s+/));

const TITLES = new Set(['mrs', 'mr', 'miss', 'sir', 'madam', 'dr', 'prof']);

/** `s` as a literal inside a RegExp. */
export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A tag candidate found in a text. */
export interface Candidate {
  /** Canonical form (singular words joined by `-`). */
  term: string;
  count: number;
  /** Capitalised inside a sentence: a name (`Caroline`, `Postgres`). */
  name: boolean;
  /** Two adjacent content words (`support-group`, `materialized-view`). */
  phrase: boolean;
}

/** Whether a lower-cased word can be (part of) a tag. */
export function contentWord(word: string): boolean {
  // Numbers, ordinals and times of day (`18th`, `5pm`, `1990s`) and titles (`mrs`) name no topic: a date or a time is
  // found by the date parser and BM25, not by a tag.
  return word.length >= 3 && !STOPWORDS.has(word) && !GENERIC.has(word) && !TITLES.has(word) && !/^\d+(st|nd|rd|th|s|am|pm)?$/.test(word);
}

/** A word lower-cased, without a clitic (`'s`, `'ll`, `n't`'s `'t`) or trailing apostrophes, hyphens and underscores. */
function lowerWord(raw: string): string {
  return raw.toLowerCase().replace(/['’](s|t|d|ll|re|ve|m)$/u, '').replace(/['’_-]+$/u, '');
}

/** A lower-cased word in its singular form, each part of a hyphenated word (`support-groups` → `support-group`). */
function singularWord(lower: string): string {
  return lower.includes('-') ? lower.split('-').map(singular).join('-') : singular(lower);
}

/** A word as candidates() spells its term (`Groups'` → `group`); '' where it has no letter or digit. */
export function termOf(raw: string): string {
  const word = raw.match(WORD)?.[0];
  return word ? singularWord(lowerWord(word)) : '';
}

/**
 * Key words and phrases of a text: content words (singular), adjacent pairs of them, and capitalised words inside
 * a sentence (names). Deterministic; no language model.
 */
export function candidates(text: string): Map<string, Candidate> {
  const out = new Map<string, Candidate>();
  const add = (term: string, name: boolean, phrase: boolean) => {
    const c = out.get(term);
    if (c) { c.count++; c.name ||= name; } else out.set(term, { term, count: 1, name, phrase });
  };
  for (const chunk of text.split(/[.!?;:,()[\]{}"“”\n]+/u)) {
    let prev: string | null = null;
    let first = true;
    for (const raw of chunk.match(WORD) ?? []) {
      const lower = lowerWord(raw);
      const isName = !first && /^\p{Lu}/u.test(raw) && lower !== 'i' && lower.length >= 2;
      first = false;
      if (!contentWord(lower) && !(isName && !STOPWORDS.has(lower) && !TITLES.has(lower))) { prev = null; continue; }
      const term = singularWord(lower);
      add(term, isName, false);
      if (prev !== null) add(`${prev}-${term}`, false, true);
      prev = term;
    }
  }
  return out;
}
