import { stemmer } from 'stemmer';

// Function words that carry no topic; kept short on purpose: BM25's IDF already discounts common words.
export const STOPWORDS = new Set(`a an and are as at be been but by can could did do does doing for from had has have he her
hers him his how i if in into is it its just me my of on or our ours she so than that the their them then there these
they this those to too us was we were what when where which who whom why will with would you your yours am any all
about after again also before being both each few further here more most no nor not now off once only other out over
own same should some such through under until up very while yes hi hello hey ok okay please thanks thank tell said say
says know think like get got really did didn doesn don isn wasn weren ll ve re let lets`.split(/\s+/));

export const WORD = /[\p{L}\p{N}][\p{L}\p{N}'’_-]*/gu;

/** The words of a text worth searching for: lower-cased, without function words, deduplicated, in order. */
export function queryTerms(text: string, max = 32): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const raw of text.toLowerCase().match(WORD) ?? []) {
    const word = raw.replace(/['’](s|t|d|ll|re|ve|m)$/u, '').replace(/['’_-]+$/u, '');
    if (word.length < 2 || STOPWORDS.has(word) || seen.has(word)) continue;
    seen.add(word);
    out.push(word);
    if (out.length >= max) break;
  }
  return out;
}

/**
 * The most UTF-8 bytes of a MATCH expression. It is one bound string, so the driver's string limit is what applies
 * (2 MB at the edge, and never under MINIMUM_LIMITS' 64 KB), and a question's or a tool call's text is not bounded
 * by it (maxMessageBytes may be raised, a tool's query is the model's): 32 terms of 128 bytes.
 */
export const MAX_MATCH_BYTES = 4096;

/**
 * An FTS5 MATCH expression that ORs the terms; each is quoted so user text can never be read as FTS5 syntax
 * (`NEAR`, `*`, `:` and quotes are data here). Terms that would take it past MAX_MATCH_BYTES are left out (a "word"
 * that long is a blob, not something asked for by name).
 */
export function ftsMatch(terms: readonly string[]): string | null {
  const quoted: string[] = [];
  let bytes = 0;
  for (const t of terms) {
    const q = `"${t.replace(/"/g, '""')}"`;
    const size = utf8.encode(q).length + (quoted.length > 0 ? 4 : 0);
    if (bytes + size > MAX_MATCH_BYTES) continue;
    quoted.push(q);
    bytes += size;
  }
  return quoted.length > 0 ? quoted.join(' OR ') : null;
}

/**
 * The token the full-text index stores for a word (SQLite's `porter unicode61 remove_diacritics 2`), or null when
 * the index splits it into several. Latin diacritics are folded, then the word is Porter-stemmed with the `stemmer`
 * package (the same 1980 algorithm; SQLite stems tokens of 3 to 64 bytes, whatever their script).
 */
export function ftsStem(word: string): string | null {
  let stem = stems.get(word);
  if (stem === undefined) {
    stem = stemUncached(word);
    if (stems.size >= 50_000) stems.clear();
    stems.set(word, stem);
  }
  return stem;
}

// Stems of words seen recently: questions and recalled passages repeat the conversation's vocabulary.
const stems = new Map<string, string | null>();
const utf8 = new TextEncoder();

function stemUncached(word: string): string | null {
  let w = word.toLowerCase();
  if (!/^[\p{L}\p{N}]+$/u.test(w)) return null;
  if (/[\u00C0-\u024F\u1E00-\u1EFF]/.test(w)) w = w.normalize('NFD').replace(/\p{M}/gu, '').normalize('NFC');
  const bytes = /^[\x00-\x7f]*$/.test(w) ? w.length : utf8.encode(w).length;
  return bytes >= 3 && bytes <= 64 ? stemmer(w) : w;
}

/** The index tokens of a text (stems, as the full-text index stores them). */
export function stemsOf(text: string): Set<string> {
  const out = new Set<string>();
  for (const w of text.toLowerCase().match(WORD) ?? []) {
    const s = ftsStem(w);
    if (s) out.add(s);
  }
  return out;
}
