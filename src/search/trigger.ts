// The keyword trigger (seed 004): whether a message asks for something current or outside what the conversation knows.
// A question about the conversation itself never searches (the veto, checked first). Then only information requests
// fire — a question, a request (find, look up, check, tell me…) or a search-box query ("bitcoin price") — never a
// statement ("I'm taking a class today!") nor a question about I, we or you ("am I currently…"): time and topic words,
// "what is…" about a subject memory does not know, and names (products, places, organisations) memory has never seen.
// Memory answers first: what the conversation already talked about is not searched for.
import { STOPWORDS, queryTerms } from '../text/fts-words.js';
import { type NlpTerm, tagger as loadNlp } from '../tags/things.js';

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

export type { NlpTerm };
type Nlp = (text: string) => { docs: NlpTerm[][] };

/** compromise's sentences of `text`, hyphenated pieces joined into one term with all their tags (`GPT-4o-mini`). */
export async function nlpSentences(text: string): Promise<NlpTerm[][]> {
  // compromise's tagger, loaded on first use (src/tags/things.ts: importing it unpacks its lexicon, ~0.1–0.3 s).
  const nlp = await loadNlp();
  tagger = nlp;
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
// Clauses: what each one does (seed 004: the keyword trigger is for information requests)
// ---------------------------------------------------------------------------------------------

/**
 * How a clause speaks: it asks (a question mark, a question word, an auxiliary before its subject), requests
 * information (find, look up, check, tell me…), is a search-box query (a noun phrase led by a topic word: "current
 * price of bitcoin"), or tells (a statement: "I'm taking a cooking class today!", "the weather was cold").
 */
type Mood = 'question' | 'request' | 'query' | 'statement';

interface Clause {
  terms: NlpTerm[];
  /** The index of its first term after the leading interjections and politeness ("hey", "so", "please"). */
  start: number;
  /** Its words from `start` on, as written. */
  body: string;
  mood: Mood;
  /** Its subject is the user or the one asked (I, we, you, "your day"): it is about their lives, not the world. */
  personal: boolean;
  /** The speaker's or the listener's own story: I, we, you, or my, our, your anywhere in it ("my trip to Miami"). */
  own: boolean;
}

// Words that open a clause without being what it does.
const OPENERS = new Set(['hey', 'hi', 'hello', 'ok', 'okay', 'so', 'and', 'but', 'also', 'well', 'oh', 'ah', 'um', 'uh', 'hmm', 'btw', 'yo', 'alright', 'please', 'pls', 'plz', 'just', 'then']);
// A request for information, opening the clause ("check it out" invites, it does not ask).
const REQUEST = new RegExp(`^(?:(?:can|could|would|will)\\s+(?:you|u)\\s+(?:please\\s+)?|i\\s+(?:want|need|would\\s+like|'d\\s+like)\\s+you\\s+to\\s+|help\\s+me\\s+)?(?:${[
  'find', 'search', 'look\\s+(?:up|for|into)', 'lookup', 'check(?!\\s+(?:\\w+\\s+)?out\\b)', 'tell\\s+me', 'show\\s+me', 'give\\s+me',
  'get\\s+me', 'google', 'list', 'fetch', 'pull\\s+up', 'send\\s+me', 'email', 'research', 'browse', 'compare',
].join('|')})\\b|^(?:i\\s+(?:want|need|would\\s+like|'d\\s+like)\\s+to\\s+know|i\\s+wonder|i'm\\s+wondering|i\\s+was\\s+wondering|(?:do|does)\\s+(?:you|anyone|anybody)\\s+know|any\\s+idea)\\b`, 'i');
// A question without its question mark: a question word (not "what a day"), when/where/why/how with an auxiliary or
// "how much", "any news"; or an auxiliary before its subject ("is the bridge open"; not "was great", "have a nice day").
const QUESTION_START = new RegExp(`^(?:(?:nowadays|these\\s+days|today|right\\s+now|currently|lately),?\\s+)?(?:${[
  "(?:what|which|who|whose|whom)\\b(?!\\s+an?\\b)", "(?:what|who|where|when|how)(?:'s|s)\\b",
  '(?:when|where|why|how)\\s+(?:much|many|long|far|often|old|big|tall|fast|is|are|was|were|do|does|did|can|could|will|would|should|has|have)\\b',
  'any\\s+(?:news|updates?|word|idea|info|information|new|recent|change|changes)\\b',
].join('|')})`, 'i');
const AUX_START = /^(?:is|isn't|are|aren't|was|were|does|do|did|can|could|will|would|should|has|have)\s+(\S+)/i;
const SUBJECT_START = /^(?:the|there|it|this|that|these|those|he|she|they|any|anyone|anything|\p{Lu}.*)$/u;
const isQuestionStart = (body: string) => QUESTION_START.test(body) || SUBJECT_START.test(AUX_START.exec(body)?.[1] ?? '');
// A clause led by a topic word, as typed into a search box ("latest news on…", "weather in Tokyo", "today's rates").
const QUERY_START = /^(?:(?:today|tonight|this\s+(?:week|month|year))'s|latest|newest|current|recent|news|headlines?|prices?|costs?|stocks?|exchange\s+rates?|weather|forecast|scores?|(?:game|match|race|election|vote|final|tournament)\s+results?|release\s+notes|releases|updates|changelogs?)\b/i;
// The user or the one asked as a subject; "you" asked to find or know something asks about the world.
const PERSONAL = /\b(?:i|i'm|im|i've|ive|i'd|i'll|we|we're|we've|we'd|we'll|you|you're|youre|you've|you'd|you'll|ya|y'all|yall)\b|\bu\b/i;
const YOU_ASKED = new RegExp(`\\b(?:you|u)\\s+(?:(?:can|could|would|will)\\s+)?(?:please\\s+)?(?:${[
  'find', 'search', 'look\\s+(?:up|for|into)', 'check(?!\\s+(?:\\w+\\s+)?out\\b)', '(?:tell|show|give|get|send)\\s+me', 'google', 'list',
  'fetch', 'pull\\s+up', 'email', 'research', 'browse', 'compare',
  '(?:know|hear|heard|see|seen|saw|catch|caught|read|notice|noticed)\\s+(?:about\\s+|of\\s+)?(?:the|that|what|if|whether|who|when|where|how)',
].join('|')})\\b|\\b(?:to|for|with|about|at|than|thank|from|like|of)\\s+(?:you|u)\\b`, 'gi');
// The rest of a clause after one of these is another clause ("…the hotel that I liked"): its subject is not the question's.
const SUBORDINATE = /\s(?:where|that|which|who|whom|whose|because|since|while|when|if|whether|until|before|after)\s/i;
// A question whose subject is the user's own ("how was my day", "is my…"), or about the listener's ("your team").
const OWN_SUBJECT = /^(?:\S+\s+){1,2}(?:my|our)\b/i;
const YOUR = /\b(?:your|ur|yours)\b/i;
const OWN = /\b(?:my|our|your|ur|mine|ours|yours)\b/i;
// What a query may not hold: a finite verb of a statement ("the weather was cold").
const STATEMENT_VERB = ['Copula', 'Auxiliary', 'Modal', 'PastTense'];

/** The clauses of `text`: compromise's sentences cut at , ; : and dashes, each with its mood. */
async function clausesOf(text: string): Promise<Clause[]> {
  const out: Clause[] = [];
  for (const sentence of await nlpSentences(text)) {
    let terms: NlpTerm[] = [];
    for (const t of sentence) {
      terms.push(t);
      if (/[,;:()]|\s[-–—]\s|[.!?]/.test(t.post)) { out.push(clause(terms)); terms = []; }
    }
    if (terms.length > 0) out.push(clause(terms));
  }
  return out;
}

function clause(terms: NlpTerm[]): Clause {
  let start = 0;
  while (start < terms.length - 1 && OPENERS.has(terms[start]!.text.toLowerCase()) && !/[.!?]/.test(terms[start]!.post)) start++;
  const body = terms.slice(start).map((t, i) => `${i > 0 ? t.pre.trim() : ''}${t.text}${t.post.trim()}`).join(' ');
  const request = REQUEST.exec(body);
  let mood: Mood = 'statement';
  if (request) mood = 'request';
  else if (/\?/.test(terms.at(-1)!.post) || (!/[.!]/.test(terms.at(-1)!.post) && isQuestionStart(body))) mood = 'question';
  else if ((QUERY_START.test(body) && isQuery(terms.slice(start))) || isNounQuery(terms.slice(start), body)) mood = 'query';
  // Whose clause: what follows a request's opening ("can you tell me…", "I want to know…"), before any subordinate clause.
  const rest = body.slice(request?.[0].length ?? 0).replace(YOU_ASKED, ' ');
  const main = rest.split(SUBORDINATE)[0]!;
  const personal = PERSONAL.test(main) || YOUR.test(main) || (mood === 'question' && OWN_SUBJECT.test(body));
  return { terms, start, body, mood, personal, own: personal || OWN.test(rest) || PERSONAL.test(rest) };
}

/**
 * A noun phrase led by its topic word, then nothing or a preposition ("weather in Tokyo", not "weather sucks"): no
 * statement's verb (is, was, can, went; "today's" as "today is"), no personal subject.
 */
function isQuery(terms: NlpTerm[]): boolean {
  if (terms.some((t) => hasAny(t, STATEMENT_VERB) || PERSONAL.test(t.text) || (/'s$/i.test(t.text) && !t.tags.has('Possessive')))) return false;
  let i = 1;
  while (i < terms.length && (TRIGGER_WORDS.has(terms[i]!.text.toLowerCase()) || (!terms[i]!.tags.has('Verb') && hasAny(terms[i]!, ['Noun', 'Adjective', 'Value', 'Acronym', 'Date'])))) i++;
  // A verb before a preposition is a plural noun compromise took for one ("spam reports for…", "delays at…").
  return i >= terms.length || !terms[i]!.tags.has('Verb') || !!terms[i + 1]?.tags.has('Preposition');
}

// A topic word that ends a search-box query ("bitcoin price", "Lisbon weather", "iPhone 16 release date").
const QUERY_TOPIC = /\b(?:news|headlines?|prices?|costs?|stocks?|exchange\s+rates?|weather|forecast|scores?|results|release\s+(?:notes|date)|releases|updates|changelogs?)\b/i;

/** Nouns, names and numbers only, a topic word among them, no adjective of its own ("Lisbon weather", not "great news"). */
function isNounQuery(terms: NlpTerm[], body: string): boolean {
  return terms.length >= 2 && QUERY_TOPIC.test(body) && terms.every((t) => TRIGGER_WORDS.has(t.text.toLowerCase())
    || (hasAny(t, ['Noun', 'Value', 'Acronym', 'Date']) && !hasAny(t, ['Verb', 'Adjective', 'Pronoun', 'Determiner', ...PERSON_TAGS])));
}

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

// An information request; its subject is what follows. "what is…" and "who is…" open their clause.
const ASK = /\b(what is|what's|whats|what are|who is|who's|whos|who are|who was|tell me about|look up|search (?:the web|the internet|online|for)|find out(?: about)?)\b/i;
const ASK_ANYWHERE = /^(?:tell|look|search|find)/i;
// "google" as a verb: opening a sentence or asked for ("Is Google down?" names the company).
const GOOGLE = /(?:^|[.!?]\s+|\b(?:please|can you|could you|would you|just)\s+)(google)\b/i;
// The user's or the one asked's own words: "what is my…", "what are you majoring in"; `us` in any case but `US`.
const SELF = /\b(?:my|our|me|we|mine|ours|myself|ourselves|i|i'm|i've|i'd|i'll|we're|we've|you|your|yours|yourself|you're|you've|u|ur)\b/i;
const self = (s: string) => SELF.test(s) || /\b(?:us|Us)\b/.test(s);
const POSSESSIVE_BEFORE = /\b(?:my|our|your)\s+(?:\S+\s+){0,2}$/i;
// A subject that points at what is in front of the user or was just talked about, not at the world.
const DEICTIC = /^\s*(?:this|that|it|these|those|his|her|their|its|here|there|wrong|up|going on|happening|the matter|the problem|the issue|the error|the difference)\b/i;
// Languages: a word about wording ("into Spanish"), not a name to look up (compromise tags most as #Demonym).
const LANGUAGE = /^(?:english|spanish|french|german|italian|portuguese|dutch|chinese|japanese|korean|russian|arabic|hindi|latin|greek|turkish|polish|swedish|norwegian|danish|finnish|hebrew|mandarin|cantonese)$/;
// Chat and common acronyms that are not names.
const COMMON_ACRONYMS = new Set(['ok', 'okay', 'lol', 'omg', 'tbh', 'imo', 'imho', 'btw', 'fyi', 'asap', 'ai', 'am', 'pm', 'tv', 'pc', 'id', 'faq', 'diy', 'eta', 'tldr', 'afaik', 'idk', 'thx', 'pls', 'us']);
// Words before a place in the user's own story ("I'm from California", "my trip to Miami").
const PLACE_BEFORE = /^(?:from|in|to|at|near|around|visit|visiting|visited)$/i;
const PLACE_TAGS = ['Place', 'Country', 'City', 'Region'];

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

/** The time or topic words of a clause not owned by a possessive ("my current job", "your latest post"); years from now on. */
function keywordsOf(body: string): string[] {
  const found: string[] = [];
  for (const m of body.matchAll(KEYWORDS)) if (!POSSESSIVE_BEFORE.test(body.slice(0, m.index))) found.push(m[0].toLowerCase());
  const year = new Date().getUTCFullYear();
  for (const m of body.matchAll(/(?<![\p{N}.,-])(20\d\d)(?![\p{N}]|[.,-]\d)/gu)) {
    if (Number(m[1]) >= year && !POSSESSIVE_BEFORE.test(body.slice(0, m.index))) found.push(m[1]!);
  }
  return found;
}

/**
 * A time or topic word in a question or request about the world (not about I, we or you), or leading a search-box query;
 * else why the first one found did not fire. The app's own `extra` keywords fire anywhere.
 */
function timeKeyword(s: string, clauses: readonly Clause[], extra: readonly string[]): TriggerResult | null {
  let why: TriggerResult | null = null;
  for (const c of clauses) {
    const found = keywordsOf(c.body);
    if (found.length === 0) continue;
    if ((c.mood === 'question' || c.mood === 'request') && !c.personal) return { by: 'keyword', detail: `keyword "${found[0]}"`, vetoed: false };
    if (c.mood === 'query') return { by: 'keyword', detail: `keyword "${found[0]}"`, vetoed: false };
    why ??= { by: 'none', vetoed: false, detail: c.mood === 'statement' ? `keyword "${found[0]}" in a statement, not a question or request` : `keyword "${found[0]}" in a ${c.mood} about the user or the one asked` };
  }
  for (const k of extra) {
    const m = phraseRegExp(k).exec(s);
    if (m) return { by: 'keyword', detail: `keyword "${m[0].toLowerCase()}"`, vetoed: false };
  }
  return why;
}

/** Letters-bearing words of a name, lower-cased, as the full-text index splits them ("Node.js 24" → node, js). */
function nameWords(name: string): string[] {
  return (name.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => /\p{L}/u.test(w) && (w.length > 1 || /\p{N}/u.test(w)));
}

/** An information request whose subject is not personal and holds a content word memory does not know. */
async function askedAbout(s: string, clauses: readonly Clause[], lookup: TriggerLookup): Promise<TriggerResult | null> {
  let subject: string | null = null;
  let asked = '';
  for (const c of clauses) {
    const m = ASK.exec(c.body);
    if (m && (c.mood === 'question' || c.mood === 'request') && (m.index === 0 || ASK_ANYWHERE.test(m[1]!))) { subject = c.body.slice(m.index + m[0].length); asked = m[1]!.toLowerCase(); break; }
  }
  const g = subject === null ? GOOGLE.exec(s) : null;
  if (g) { subject = s.slice(g.index + g[0].length).split(/[.!?](?:\s|$)/)[0]!; asked = 'google'; }
  if (subject === null) return null;
  subject = subject.replace(/[.!?]+$/, '').replace(/\b(?:for (?:me|us)|please)\b/gi, ' ');
  if (self(subject) || DEICTIC.test(subject)) return null;
  const words = queryTerms(subject).filter((w) => /\p{L}/u.test(w) && !TRIGGER_WORDS.has(w));
  if (words.length === 0) return null;
  const known = await lookup.known(words);
  if (words.every((w) => known.has(w))) return { by: 'none', detail: `memory already knows what "${asked}" asks about`, vetoed: false };
  return { by: 'keyword', detail: `keyword "${asked}", about words memory does not know`, vetoed: false };
}

// compromise itself, once nlpSentences has loaded it: whether a capitalized word opening a sentence is a name.
let tagger: Nlp | undefined;
const NAME_TAGS = ['Organization', 'Place', 'Country', 'City', 'Region', 'SportsTeam', 'ProperNoun'];

/** A word opening a sentence is a name only if compromise's lexicon knows it lower-case as one ("google", "miami"). */
function lexiconName(lower: string): boolean {
  const term = tagger?.(lower).docs[0]?.[0];
  return !!term && hasAny(term, NAME_TAGS.slice(0, -1)) && !hasAny(term, ['Verb', 'Adjective', 'Adverb', 'Preposition', 'Actor']);
}

function isNameTerm(t: NlpTerm, first: boolean): boolean {
  const text = t.text.replace(/['’]s$/u, '');
  const lower = text.toLowerCase();
  if (!/\p{L}/u.test(text) || hasAny(t, PERSON_TAGS) || hasAny(t, ['Date', 'Pronoun', 'QuestionWord', 'Expression', 'Honorific', 'Demonym'])) return false;
  if (STOPWORDS.has(lower) || LANGUAGE.test(lower) || TRIGGER_WORDS.has(lower) || COMMON_ACRONYMS.has(lower) || RELATION.test(lower)) return false;
  if (/\p{Ll}\p{Lu}/u.test(text) || (/\p{L}/u.test(text) && /\p{N}/u.test(text) && (/\p{Lu}/u.test(text) || /-\p{N}/u.test(text)))) return true;
  if (/^\p{Lu}[\p{L}]*\.[\p{L}]{1,4}$/u.test(text)) return true;
  if (/^\p{Lu}{2,}$/u.test(text)) return true;
  if (!/^\p{Lu}/u.test(text)) return false;
  const place = hasAny(t, NAME_TAGS.slice(0, -1)) || t.tags.has('Currency');
  if (first) return (place || t.tags.has('ProperNoun')) && lexiconName(lower);
  return !t.tags.has('Verb') || t.tags.has('ProperNoun') || place;
}

/**
 * Names in the questions and requests of the message that are not people's: runs of name terms, with a version number
 * after them; not a place in the speaker's own story ("my trip to Miami", "I'm from California").
 */
function namesIn(clauses: readonly Clause[], speakers: readonly string[]): string[] {
  const people = new Set(speakers.flatMap((n) => nameWords(n)));
  const names: string[] = [];
  for (const c of clauses) {
    if (c.mood !== 'question' && c.mood !== 'request') continue;
    let run: NlpTerm[] = [];
    // The word before the run ("to Miami"), or before the list it continues ("to Paris or Rome").
    let before = '';
    let storyPlace = -2;
    const flush = (i: number) => {
      if (run.length > 0 && c.own && PLACE_BEFORE.test(before) && run.some((t) => hasAny(t, PLACE_TAGS))) storyPlace = i;
      else if (run.length > 0) names.push(run.map((t) => t.text.replace(/['’]s$/u, '')).join(' '));
      run = [];
    };
    c.terms.forEach((t, i) => {
      const prev = c.terms[i - 1];
      const first = i === 0 || /["“(]/.test(t.pre) || /[:;"”(]/.test(prev?.post ?? '');
      const personal = (prev && RELATION.test(prev.text)) || nameWords(t.text).some((w) => people.has(w));
      if (!personal && i >= c.start && isNameTerm(t, first)) {
        if (run.length === 0) before = storyPlace === i - 1 && /^(?:and|or|&)$/i.test(prev?.text ?? '') ? 'in' : prev?.text ?? '';
        run.push(t);
      }
      else if (run.length > 0 && /^\d+(?:\.\d+)*$/.test(t.text)) { run.push(t); flush(i + 1); }
      else flush(i);
      if (/[()]/.test(t.post)) flush(i + 1);
    });
    flush(c.terms.length);
  }
  return names;
}

/** The first name none of whose words memory knows. */
async function unknownName(clauses: readonly Clause[], lookup: TriggerLookup): Promise<string | null> {
  const names = namesIn(clauses, await lookup.speakers());
  if (names.length === 0) return null;
  const words = [...new Set(names.flatMap(nameWords))];
  const known = words.length > 0 ? await lookup.known(words) : new Set<string>();
  return names.find((n) => { const w = nameWords(n); return w.length > 0 && !w.some((x) => known.has(x)); }) ?? null;
}

/**
 * Whether a message should be searched by its words (seed 004's keyword trigger: information requests about current or
 * external facts). Not when it asks about this conversation. Only questions and requests fire (and a search-box query
 * led by a topic word), never one about I, we or you ("am I currently…", "what are you doing today"): time and topic
 * words (and `extraKeywords`, whole words or phrases, any case, anywhere); "what is", "who is", "tell me about", "look
 * up"… about a subject that is not the user's own and not known to memory; a name that is not a person's (an
 * organisation, place, product, project) none of whose words memory knows.
 */
export async function keywordTrigger(text: string, lookup: TriggerLookup, extraKeywords: readonly string[]): Promise<TriggerResult> {
  const s = analyzedText(text);
  const veto = VETO.exec(s);
  if (veto) return { by: 'none', detail: `the question is about this conversation ("${veto[0].toLowerCase()}")`, vetoed: true };
  const clauses = await clausesOf(s);
  const keyword = timeKeyword(s, clauses, extraKeywords);
  if (keyword?.by === 'keyword') return keyword;
  const asked = await askedAbout(s, clauses, lookup);
  if (asked?.by === 'keyword') return asked;
  const name = await unknownName(clauses, lookup);
  if (name) return { by: 'name', detail: `a name memory does not know: "${name}"`, vetoed: false };
  return asked ?? keyword ?? { by: 'none', detail: 'no trigger word', vetoed: false };
}
