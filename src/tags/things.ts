import { termOf } from './key-phrases.js';

/** A term of compromise's document: its text and part-of-speech tags (`Noun`, `ProperNoun`, `Gerund`, …). */
interface Term { text: string; post: string; tags: Set<string> }
/** The same term with what stands before it. */
export interface NlpTerm extends Term { pre: string }
type Nlp = (text: string) => { docs: NlpTerm[][] };

// compromise's tagger (`compromise/two`: part-of-speech tags, names, places, organisations; pure JS, its lexicon in
// the bundle, nothing fetched). Loaded on the first unit tagged: importing it unpacks the lexicon (~0.1–0.3 s), which a
// memory that never tags (a query-only Worker isolate, a CLI command) should not pay.
// The web search's trigger reads messages with it too.
let loading: Promise<Nlp> | undefined;
export function tagger(): Promise<Nlp> {
  loading ??= import('compromise/two').then((m) => m.default as unknown as Nlp);
  return loading;
}

/** What a text talks about, as candidate terms (key-phrases.ts's spelling): words and adjacent pairs. */
export interface Things {
  /** Nouns and names (people, places, organisations, objects), and activities (`hiking` in "went hiking"). */
  words: Set<string>;
  /** Noun phrases of two words: a noun, adjective or participle before a noun (`support-group`, `materialized-view`). */
  pairs: Set<string>;
}

// Words compromise reads as nouns that are not things: contractions typed without the apostrophe (`hes`, `theyre`,
// `thats`, `doesnt`), indefinite pronouns (`someone`, `everything`) and chat shorthand (`idk`, `lol`).
const PRONOUN = /^(?:(?:he|she|that|there|what|who|here|where)s|(?:they|you|we)(?:re|ve|ll|d)|i(?:m|ve)|(?:some|any|every|no)(?:one|body|thing|where)|(?:do|does|did|ca|wo|is|are|was|were|could|should|would|have|has|had|ai|must|need)nt|anyways?|idk|lol|lmao|omg|tbh|imo|btw|ikr|smh|ngl)$/i;
const isNoun = (t: Term) => t.tags.has('Noun') && !t.tags.has('Pronoun') && !t.tags.has('Date') && !t.tags.has('Value') && !t.tags.has('Expression') && !PRONOUN.test(t.text);
const isModifier = (t: Term) => isNoun(t) || t.tags.has('Adjective') || (t.tags.has('Gerund') && !t.tags.has('Auxiliary')) || (t.tags.has('PastTense') && !t.tags.has('Copula') && !t.tags.has('Auxiliary'));
// A verb that takes an activity as its object: `love painting`, `went hiking`, `enjoy reading` (not `is planning`).
const takesActivity = (t: Term | undefined) => !!t && t.tags.has('Verb') && !t.tags.has('Auxiliary') && !t.tags.has('Copula') && !t.tags.has('Modal') && !t.tags.has('Gerund');
// What may follow an activity: not its own object (`taking a class`, `making dinner`: the thing is the object).
const objectNext = (t: Term | undefined) => !!t && (t.tags.has('Determiner') || t.tags.has('Noun') || t.tags.has('Possessive') || t.tags.has('Adjective'));

/** Compromise's terms in order, hyphenated words joined (`well-known`), as candidates() reads them. */
function joined(sentence: Term[]): Term[] {
  const out: Term[] = [];
  let pending: Term | null = null;
  for (const t of sentence) {
    const cur: Term = pending ? { text: `${pending.text}-${t.text}`, post: t.post, tags: t.tags } : t;
    if (t.post === '-') { pending = cur; continue; }
    pending = null;
    if (cur.text) out.push(cur);
  }
  if (pending) out.push(pending);
  return out;
}

/**
 * The things `text` talks about, by compromise's part-of-speech tags in context: nouns and names, activities (a gerund
 * after a verb or a preposition, without an object of its own: "went hiking", "love painting and drawing", "after
 * swimming"), and two-word noun phrases. Wording — verbs
 * (`appreciate`, `agree`), interjections and replies (`noted`, `lol`), pronouns, dates — is left out.
 */
export async function things(text: string): Promise<Things> {
  const nlp = await tagger();
  const words = new Set<string>();
  const pairs = new Set<string>();
  for (const sentence of text.split(/\n+/).flatMap((line) => (line.trim() ? nlp(line).docs : []))) {
    const terms = joined(sentence);
    let activity = false;
    terms.forEach((t, i) => {
      const prev = terms[i - 1];
      const term = termOf(t.text);
      if (!term) { activity = false; return; }
      let thing = isNoun(t);
      if (!thing && t.tags.has('Gerund') && !objectNext(terms[i + 1])) {
        // `painting and drawing`: an activity's sibling is one too.
        const sibling = activity && prev?.tags.has('Conjunction');
        // `went hiking`, `love painting`, `after swimming`; not `is planning`, `thanks for asking`.
        const thanks = prev?.text.toLowerCase() === 'for' && /^(thank|you$)/i.test(terms[i - 2]?.text ?? '');
        thing = takesActivity(prev) || sibling || (!!prev && prev.tags.has('Preposition') && !thanks);
        activity = thing;
      } else if (!t.tags.has('Conjunction')) activity = false;
      if (thing) words.add(term);
      if (thing && isNoun(t) && prev && isModifier(prev) && !/[^\s'’]/u.test(prev.post)) {
        const before = termOf(prev.text);
        if (before) pairs.add(`${before}-${term}`);
      }
    });
  }
  return { words, pairs };
}
