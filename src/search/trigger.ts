// The keyword trigger (seed 004): whether a message asks for something current or outside what the conversation knows.
// A question about the conversation itself never searches (the veto, checked first); then time and topic words, an
// information request about a subject memory does not know, and names (products, places, organisations) memory has
// never seen. Memory answers first: what the conversation already talked about is not searched for.
import { STOPWORDS, queryTerms } from '../text/fts-words.js';

/** What the trigger asks of memory (query.ts's MemoryLookup has this shape, and more). */
interface TriggerLookup {
  known(words: readonly string[]): Promise<Set<string>>;
  speakers(): Promise<string[]>;
}

export interface TriggerResult {
  by: 'keyword' | 'name' | 'none';
  /** In words for the manifest: what fired, or why nothing did. */
  detail: string;
  /** The message is about this conversation or the user's own past: no search, whatever else (an LLM) would say. */
  vetoed: boolean;
}

// ---------------------------------------------------------------------------------------------
// Shared with query.ts: the text looked at, compromise, the trigger's own words
// ---------------------------------------------------------------------------------------------

/** The characters of a message looked at: a long one (a pasted document and a question) is read from its end. */
const MAX_ANALYZED = 1_200;

/**
 * The message as the trigger and the query builder read it: compatibility forms folded (full-width digits, ligatures),
 * format characters (zero-width, bidi) gone, control and lone surrogate characters and line breaks as spaces, curly
 * apostrophes and hyphen-like dashes plain, at most MAX_ANALYZED characters from its end, starting at a whole word.
 */
export function analyzedText(text: string): string {
  let s = text.length > MAX_ANALYZED * 4 ? text.slice(-MAX_ANALYZED * 4) : text;
  s = s.replace(/\p{Cs}/gu, ' ').normalize('NFKC').replace(/\p{Cf}/gu, '').replace(/[\p{Cc}\p{Co}\p{Zl}\p{Zp}\s]+/gu, ' ')
    .replace(/[’‘`´]/g, "'").replace(/[\u2010-\u2013\u2212]/g, '-').trim();
  if (s.length <= MAX_ANALYZED) return s;
  s = s.slice(-MAX_ANALYZED);
  const space = s.indexOf(' ');
  return space < 0 ? '' : s.slice(space + 1);
}

/** A term of compromise's document (`compromise/two`): its text, what stands around it, its tags. */
export interface NlpTerm { text: string; pre: string; post: string; tags: Set<string> }
type Nlp = (text: string) => { docs: NlpTerm[][] };

// compromise's tagger, loaded on first use (importing it unpacks its lexicon, ~0.1–0.3 s) like src/tags/things.ts.
let loading: Promise<Nlp> | undefined;

/** compromise's sentences of `text`, hyphenated pieces joined into one term with all their tags (`GPT-4o-mini`). */
export async function nlpSentences(text: string): Promise<NlpTerm[][]> {
  loading ??= import('compromise/two').then((m) => m.default as unknown as Nlp);
  const nlp = await loading;
  return (text.trim() ? nlp(text).docs : []).map((sentence) => {
    const out: NlpTerm[] = [];
    let pending: NlpTerm | null = null;
    for (const t of sentence) {
      const cur: NlpTerm = pending ? { text: `${pending.text}-${t.text}`, pre: pending.pre, post: t.post, tags: new Set([...pending.tags, ...t.tags]) } : { ...t, tags: new Set(t.tags) };
      if (t.post === '-' && t.text) { pending = cur; continue; }
      pending = null;
      if (cur.text) out.push(cur);
    }
    if (pending) out.push(pending);
    return out;
  });
}

/** Words of the trigger's own vocabulary: they say a question is current, not what it is about. */
export const TRIGGER_WORDS = new Set(`latest newest current currently recent recently today tonight now nowadays week month
year as of up date right news headline headlines price prices cost costs stock stocks exchange rate rates weather forecast
score scores result results version versions release releases released update updates changelog new`.split(/\s+/));

/** Words that ask a question or make it polite: kept or dropped by the query builder, never what a question is about. */
export const QUESTION_WORDS = new Set(['what', 'whats', 'who', 'whos', 'how', 'when', 'where', 'which', 'why', 'whose']);

/** Compromise's tags for people's names. */
const PERSON_TAGS = ['Person', 'FirstName', 'LastName', 'MaleName', 'FemaleName'];
const hasAny = (t: NlpTerm, tags: readonly string[]) => tags.some((x) => t.tags.has(x));

/** Words that introduce one of the user's people: "my sister Leila", "my friend Priya". */
export const RELATION = /^(?:friend|friends|sister|brother|sis|bro|mom|mum|mother|dad|father|parent|parents|wife|husband|son|daughter|kid|child|baby|boss|colleague|coworker|co-worker|partner|girlfriend|boyfriend|fiancee?|neighbou?r|cousin|aunt|uncle|grandma|grandpa|grandmother|grandfather|niece|nephew|roommate|flatmate|therapist|doctor|teacher|ex|mr|mrs|ms|miss|dr|prof)\.?$/i;

// ---------------------------------------------------------------------------------------------
// The trigger
// ---------------------------------------------------------------------------------------------

// A question about this conversation or the user's own past (`did you hear …` asks about the world: not a veto).
const VETO = new RegExp(`\\b(?:${[
  'we (?:talked|discussed|decided|agreed|spoke|chatted|covered|went over|were talking|were discussing|said)',
  'what did (?:we|i|you)', 'did i', 'did you(?! (?:hear|see|know|catch|read|notice|watch)\\b)',
  'you (?:said|told me|mentioned|suggested|recommended|promised)', 'i (?:told|asked|showed|gave|sent) you', 'remind me',
  'earlier(?! (?:version|release|model|edition|generation|update|iteration)s?\\b)', 'last time (?:we|i|you)',
  'previously', 'in (?:this|our) (?:conversation|chat|thread|discussion)', 'do you remember', 'remember when',
  'as (?:i|we) (?:said|discussed|mentioned)',
].join('|')})\\b`, 'i');

// Time and topic words. `results` only about games, races and elections; `version` only when one is asked for.
const KEYWORDS = new RegExp(`\\b(?:${[
  'latest', 'newest', 'current', 'currently', 'recent', 'recently', 'today', 'tonight', 'right now', 'as of', 'up[ -]to[ -]date',
  'nowadays', 'this (?:week|month|year)', 'news', 'headlines?', 'prices?', 'costs?', 'stocks?', 'exchange rates?', 'weather',
  'forecast', 'scores?', 'results?(?= (?:of|for|from) .*\\b(?:game|match|race|election|vote|final|league|cup|tournament|championship|grand prix|primary)s?\\b)',
  '(?:game|match|race|election|vote|final|tournament) results?', '(?:which|what|stable|lts|new|next) versions?',
  'releases', 'released', 'release (?:date|notes|of)', 'updates', 'update (?:on|about)', 'changelogs?',
].join('|')})\\b`, 'gi');

// An information request; its subject is what follows.
const ASK = /\b(what is|what's|whats|what are|who is|who's|whos|who are|who was|tell me about|look up|search (?:the web|the internet|online|for)|find out(?: about)?)\b/i;
// "google" as a verb: opening a sentence or asked for ("Is Google down?" names the company).
const GOOGLE = /(?:^|[.!?]\s+|\b(?:please|can you|could you|would you|just)\s+)(google)\b/i;
// First-person words; `us` in any case but `US` (the country).
const FIRST_PERSON = /\b(?:my|our|me|we|mine|ours|myself|ourselves|i|i'm|i've|i'd|i'll|we're|we've)\b/i;
const firstPerson = (s: string) => FIRST_PERSON.test(s) || /\b(?:us|Us)\b/.test(s);
const POSSESSIVE_BEFORE = /\b(?:my|our)\s+(?:\S+\s+){0,2}$/i;
// A subject that points at what is in front of the user, not at the world.
const DEICTIC = /^\s*(?:this|that|it|these|those|here|there|wrong|up|going on|happening|the matter|the problem|the issue|the error|the difference)\b/i;
// Languages: a word about wording ("into Spanish"), not a name to look up (compromise tags most as #Demonym).
const LANGUAGE = /^(?:english|spanish|french|german|italian|portuguese|dutch|chinese|japanese|korean|russian|arabic|hindi|latin|greek|turkish|polish|swedish|norwegian|danish|finnish|hebrew|mandarin|cantonese)$/;
// Chat and common acronyms that are not names.
const COMMON_ACRONYMS = new Set(['ok', 'okay', 'lol', 'omg', 'tbh', 'imo', 'imho', 'btw', 'fyi', 'asap', 'ai', 'am', 'pm', 'tv', 'pc', 'id', 'faq', 'diy', 'eta', 'tldr', 'afaik', 'idk', 'thx', 'pls', 'us']);

// The extra keywords' expressions, compiled once (the option holds up to 500).
const PHRASES = new Map<string, RegExp>();

/** A whole word or phrase (letters and digits not touching either side, any spaces between words), any case. */
function phraseRegExp(phrase: string): RegExp {
  let re = PHRASES.get(phrase);
  if (!re) {
    const body = phrase.trim().split(/\s+/).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('\\s+');
    re = new RegExp(`(?<![\\p{L}\\p{N}])${body}(?![\\p{L}\\p{N}])`, 'iu');
    if (PHRASES.size >= 2_000) PHRASES.clear();
    PHRASES.set(phrase, re);
  }
  return re;
}

/** The first keyword not owned by a first-person possessive ("my current job", "our latest release"). */
function timeKeyword(s: string, extra: readonly string[]): string | null {
  for (const m of s.matchAll(KEYWORDS)) {
    if (!POSSESSIVE_BEFORE.test(s.slice(0, m.index))) return m[0].toLowerCase();
  }
  const year = new Date().getUTCFullYear();
  for (const m of s.matchAll(/(?<![\p{N}.,-])(20\d\d)(?![\p{N}]|[.,-]\d)/gu)) {
    if (Number(m[1]) >= year && !POSSESSIVE_BEFORE.test(s.slice(0, m.index))) return m[1]!;
  }
  for (const k of extra) {
    const m = phraseRegExp(k).exec(s);
    if (m) return m[0].toLowerCase();
  }
  return null;
}

/** Letters-bearing words of a name, lower-cased, as the full-text index splits them ("Node.js 24" → node, js). */
function nameWords(name: string): string[] {
  return (name.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => /\p{L}/u.test(w) && (w.length > 1 || /\p{N}/u.test(w)));
}

/** An information request whose subject is not personal and holds a content word memory does not know. */
async function askedAbout(s: string, lookup: TriggerLookup): Promise<TriggerResult | null> {
  const m = ASK.exec(s) ?? GOOGLE.exec(s);
  if (!m) return null;
  const asked = m[1]!.toLowerCase();
  const subject = s.slice(m.index + m[0].length).split(/[.!?](?:\s|$)/)[0]!.replace(/\b(?:for (?:me|us)|please)\b/gi, ' ');
  if (firstPerson(subject) || DEICTIC.test(subject)) return null;
  const words = queryTerms(subject).filter((w) => /\p{L}/u.test(w) && !TRIGGER_WORDS.has(w));
  if (words.length === 0) return null;
  const known = await lookup.known(words);
  if (words.every((w) => known.has(w))) return { by: 'none', detail: `memory already knows what "${asked}" asks about`, vetoed: false };
  return { by: 'keyword', detail: `keyword "${asked}", about words memory does not know`, vetoed: false };
}

function isNameTerm(t: NlpTerm, first: boolean): boolean {
  const text = t.text.replace(/['’]s$/u, '');
  const lower = text.toLowerCase();
  if (!/\p{L}/u.test(text) || hasAny(t, PERSON_TAGS) || hasAny(t, ['Date', 'Pronoun', 'QuestionWord', 'Expression', 'Honorific', 'Demonym'])) return false;
  if (STOPWORDS.has(lower) || LANGUAGE.test(lower) || TRIGGER_WORDS.has(lower) || COMMON_ACRONYMS.has(lower) || RELATION.test(lower)) return false;
  if (/\p{Ll}\p{Lu}/u.test(text) || (/\p{L}/u.test(text) && /\p{N}/u.test(text) && (/\p{Lu}/u.test(text) || /-\p{N}/u.test(text)))) return true;
  if (/^\p{Lu}[\p{L}]*\.[\p{L}]{1,4}$/u.test(text)) return true;
  if (/^\p{Lu}{2,}$/u.test(text)) return true;
  const place = hasAny(t, ['Organization', 'Place', 'Country', 'City', 'SportsTeam', 'Currency']);
  if (!/^\p{Lu}/u.test(text)) return place;
  if (first) return place || t.tags.has('ProperNoun');
  return !t.tags.has('Verb') || t.tags.has('ProperNoun') || place;
}

/** Names in the message that are not people's: runs of name terms, with a version number after them. */
async function namesIn(s: string, speakers: readonly string[]): Promise<string[]> {
  const people = new Set(speakers.flatMap((n) => nameWords(n)));
  const names: string[] = [];
  for (const sentence of await nlpSentences(s)) {
    let run: string[] = [];
    const flush = () => { if (run.length > 0) names.push(run.join(' ')); run = []; };
    sentence.forEach((t, i) => {
      const prev = sentence[i - 1];
      const personal = (prev && RELATION.test(prev.text)) || nameWords(t.text).some((w) => people.has(w));
      if (!personal && isNameTerm(t, i === 0)) run.push(t.text.replace(/['’]s$/u, ''));
      else if (run.length > 0 && /^\d+(?:\.\d+)*$/.test(t.text)) { run.push(t.text); flush(); }
      else flush();
      if (/[,;:()]/.test(t.post)) flush();
    });
    flush();
  }
  return names;
}

/** The first name none of whose words memory knows. */
async function unknownName(s: string, lookup: TriggerLookup): Promise<string | null> {
  const names = await namesIn(s, await lookup.speakers());
  if (names.length === 0) return null;
  const words = [...new Set(names.flatMap(nameWords))];
  const known = words.length > 0 ? await lookup.known(words) : new Set<string>();
  return names.find((n) => { const w = nameWords(n); return w.length > 0 && !w.some((x) => known.has(x)); }) ?? null;
}

/**
 * Whether a message should be searched by its words (seed 004's keyword trigger): not when it asks about this
 * conversation; yes for time and topic words (and `extraKeywords`, whole words or phrases, any case); yes for "what
 * is", "who is", "tell me about", "look up"… about a subject that is not the user's own and not known to memory; yes
 * for a name that is not a person's (an organisation, place, product, project) none of whose words memory knows.
 */
export async function keywordTrigger(text: string, lookup: TriggerLookup, extraKeywords: readonly string[]): Promise<TriggerResult> {
  const s = analyzedText(text);
  const veto = VETO.exec(s);
  if (veto) return { by: 'none', detail: `the question is about this conversation ("${veto[0].toLowerCase()}")`, vetoed: true };
  const keyword = timeKeyword(s, extraKeywords);
  if (keyword) return { by: 'keyword', detail: `keyword "${keyword}"`, vetoed: false };
  const asked = await askedAbout(s, lookup);
  if (asked?.by === 'keyword') return asked;
  const name = await unknownName(s, lookup);
  if (name) return { by: 'name', detail: `a name memory does not know: "${name}"`, vetoed: false };
  return asked ?? { by: 'none', detail: 'no trigger word', vetoed: false };
}
