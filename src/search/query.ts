// The query a search sends: built from the new message alone, its politeness and filler dropped, and anonymized —
// emails, phones, street addresses, ids, URLs with a path, names of the people the conversation knows, the caller's
// `names`, and every word of the conversation's private turns taken out. What was taken out is counted by kind in the
// manifest, never shown. Tokens a search engine needs whole ("Node.js", "C++", "GPT-5", "3.12", "O'Brien") stay whole;
// search operators (`site:`, a leading `-`, quotes) become plain words.
import { PagewiseError } from '../contracts/errors.js';
import type { SearchAnonymizeOptions, SearchRemoved } from '../contracts/types-search.js';
import { describe } from '../common/as-data.js';
import { STOPWORDS } from '../text/fts-words.js';
import { QUESTION_WORDS, RELATION, TRIGGER_WORDS, analyzedText, nlpSentences } from './trigger.js';

/** What the trigger and the anonymizer may ask of memory about one conversation. */
export interface MemoryLookup {
  /** Which of these words occur in the conversation's stored (non-private) turns — stemmed full-text match, so give lower-case words. */
  known(words: readonly string[]): Promise<Set<string>>;
  /** Which of these words occur in the conversation's PRIVATE turns (stemmed full-text match). */
  privateWords(words: readonly string[]): Promise<Set<string>>;
  /** The conversation's speakers' names (turn `name` fields), as written. */
  speakers(): Promise<string[]>;
  /** Texts of (at most `limit`) stored non-private turns holding the word: how the conversation used a name before. */
  mentions(word: string, limit: number): Promise<string[]>;
  /**
   * Whether two or more characters in a row of `run` (a run of a script written without spaces: Chinese, Japanese,
   * Thai…) occur in the conversation's private turns, where the full-text index cannot find a word inside a run.
   */
  privateOverlap(run: string): Promise<boolean>;
}

// Scripts written without spaces between words: a private name sits inside a longer run.
// Hangul is spaced, but particles join the name before them (김민준에게) in one index token.
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;
// Capitalized words of a query checked against how the conversation used them before, at most; characters around
// each mention read (compromise's time grows with the text: a pasted file would cost seconds), and in all.
const NAME_CHECKS = 6;
const MENTION_WINDOW = 200;
const MENTIONS_READ = 4_000;

/** The `anonymize` option with its defaults: which kinds are taken out, the caller's own names, the words kept. */
export interface ResolvedAnonymize {
  emails: boolean;
  phones: boolean;
  addresses: boolean;
  ids: boolean;
  people: boolean;
  names: string[];
  allow: string[];
}

type Kind = keyof SearchRemoved;

/** The most words and characters of a query. */
export const MAX_QUERY_WORDS = 16;
export const MAX_QUERY_CHARS = 200;
// A "word" longer than this is data (a blob, a key), not something a search engine is asked for.
const MAX_TOKEN_CHARS = 64;

// ---------------------------------------------------------------------------------------------
// The option
// ---------------------------------------------------------------------------------------------

const FLAGS = ['emails', 'phones', 'addresses', 'ids', 'people'] as const;
const ANONYMIZE_KEYS = [...FLAGS, 'names', 'allow'];

function bad(path: string, message: string): never {
  throw new PagewiseError('INVALID_OPTIONS', 'search', `\`${path}\` ${message}`, { path });
}

function wordList(value: unknown, path: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > 1_000) bad(path, `must be an array of at most 1,000 words or names, e.g. ['Ada Lovelace'] (got ${describe(value)}).`);
  return value.map((w: unknown, i) => {
    if (typeof w !== 'string' || w.trim() === '' || w.length > 100 || /[\p{Cc}\p{Zl}\p{Zp}]/u.test(w)) {
      bad(`${path}[${i}]`, 'must be a non-empty word or name of at most 100 characters on one line.');
    }
    return w.trim();
  });
}

/** The `search.anonymize` option checked: `true` or absent (every kind), `false` (none), or SearchAnonymizeOptions. */
export function resolveAnonymize(option: unknown): ResolvedAnonymize {
  const all = (on: boolean): ResolvedAnonymize => ({ emails: on, phones: on, addresses: on, ids: on, people: on, names: [], allow: [] });
  if (option === undefined || option === true) return all(true);
  if (option === false) return all(false);
  if (typeof option !== 'object' || option === null || Array.isArray(option)) {
    bad('search.anonymize', `must be true, false or { emails?, phones?, addresses?, ids?, people?, names?, allow? } (got ${describe(option)}).`);
  }
  const o = option as SearchAnonymizeOptions & Record<string, unknown>;
  for (const key of Object.keys(o)) if (!ANONYMIZE_KEYS.includes(key)) bad(`search.anonymize.${key}`, `is not an anonymize option (known: ${ANONYMIZE_KEYS.join(', ')}).`);
  const out = all(true);
  for (const flag of FLAGS) {
    const v = o[flag];
    if (v !== undefined && typeof v !== 'boolean') bad(`search.anonymize.${flag}`, `must be true or false (leave it out to keep the default, true; got ${describe(v)}).`);
    out[flag] = v !== false;
  }
  out.names = wordList(o.names, 'search.anonymize.names');
  out.allow = wordList(o.allow, 'search.anonymize.allow');
  return out;
}

// ---------------------------------------------------------------------------------------------
// Patterns: URLs, emails, ids, phones, addresses
// ---------------------------------------------------------------------------------------------

type Remover = (s: string, count: (kind: Kind) => void, keep: (match: string) => boolean) => string;
/** What becomes of a match: taken out as a kind, replaced (counted when `kind` is given), or left (null). */
type Verdict = Kind | { kind?: Kind; with: string } | null;

/** Replaces each match by `decide`'s verdict (a space for a kind) and counts it; a match `keep` allows stays. */
function pass(re: RegExp, decide: (m: string, groups: (string | undefined)[]) => Verdict): Remover {
  return (s, count, keep) => s.replace(re, (m: string, ...rest: unknown[]) => {
    const groups = rest.slice(0, rest.findIndex((x) => typeof x === 'number')) as (string | undefined)[];
    const verdict = keep(m) ? null : decide(m, groups);
    if (verdict === null) return m;
    const { kind, with: replacement } = typeof verdict === 'string' ? { kind: verdict, with: '' } : verdict;
    if (kind) count(kind);
    return ` ${replacement} `;
  });
}

// File extensions that look like top-level domains in "Node.js/Deno".
const CODE_EXT = new Set(['js', 'ts', 'py', 'rb', 'rs', 'md', 'sh', 'go', 'mjs', 'cjs', 'jsx', 'tsx', 'json', 'txt', 'net']);
const TRAILING = /[.,;:!?)\]}'"»]+$/u;

/** A URL with a path or query goes whole; one without keeps its host ("https://github.com" → github.com). */
function url(m: string): Verdict {
  const whole = m.replace(TRAILING, '');
  const rest = whole.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const at = rest.search(/[/?#]/);
  const host = at < 0 ? rest : rest.slice(0, at);
  const path = at < 0 ? '' : rest.slice(at).replace(/^\/+$/, '');
  if (/@/.test(host) || path !== '') return 'url';
  return { with: `${host}${m.slice(whole.length)}` };
}

const digits = (m: string) => m.replace(/\D/g, '').length;
const isDate = (m: string) => /^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$/.test(m);

function phone(m: string): Verdict {
  const n = digits(m);
  if (n < 7 || n > 15) return null;
  if (/^\s*(?:\+|00|\()/.test(m)) return 'phone';
  if (isDate(m.trim())) return null;
  const groups = m.trim().split(/[\s.()-]+/).filter(Boolean);
  if (groups.every((g) => /^(?:19|20)\d\d$/.test(g))) return null;
  if (/^\d{1,3}(?:\.\d{1,3}){3}$/.test(m.trim())) return 'id';
  if (!/[\s-]/.test(m.trim()) && groups.length <= 2) return null;
  if (groups.slice(1).some((g) => g.length < 2)) return null;
  return 'phone';
}

/** A key or token: a known prefix, or a long run mixing letters and digits the way random strings do. */
function isKey(m: string): boolean {
  if (/^(?:sk|pk|rk)[-_]|^gh[pousr]_|^github_pat_|^xox[abprs]-|^(?:AKIA|ASIA)[A-Z0-9]{12,}|^AIza|^glpat-|^hf_|^npm_|^shpat_/.test(m)) return /\d/.test(m) || m.length >= 20;
  return m.split(/[-_]/).some((seg) => {
    if (seg.length < 10 || !/\p{L}/u.test(seg) || !/\p{N}/u.test(seg)) return false;
    const transitions = seg.match(/\p{L}(?=\p{N})|\p{N}(?=\p{L})/gu)?.length ?? 0;
    return transitions >= 3 || seg.length >= 16;
  });
}

const STREET = 'Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Square|Sq|Terrace|Way|Close|Crescent|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Trail|Row|Alley|Plaza|Gardens|Mews|Walk';
const LOWER_STREET = 'street|st|avenue|ave|road|rd|boulevard|blvd|lane|drive';
const NUMBER = String.raw`\d{1,5}[A-Za-z]?(?:[-/]\d{1,5})?`;
const CAP = String.raw`\p{Lu}[\p{L}'.-]*(?![\p{L}\p{N}])`;
// Either case of a word's first letter, for the patterns that cannot be case-insensitive (their names are capitalized).
const either = (words: string) => words.split('|').map((w) => `[${w[0]!.toUpperCase()}${w[0]}]${w.slice(1)}`).join('|');
const NOT_PARTICLE = String.raw`(?!(?:the|a|an|on|in|of|to|at|for|and|or|my|our|by|with|from|is|was)\b)`;
// The tail of an address: unit, ", City", state, ZIP or postcode (UK, or digits), "10115 Berlin".
const POSTCODE = String.raw`(?:\d{5}(?:-\d{4})?|[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}|\d{4}(?:\s?[A-Z]{2})?)`;
const UNIT = String.raw`(?:\s+(?:N|S|E|W|NE|NW|SE|SW)\b)?(?:,?\s*(?:${either('apt|apartment|suite|ste|unit|flat|floor|fl')})\.?\s*#?\s*[\p{L}\p{N}-]+)?`;
const CITY = String.raw`(?:,\s*${CAP}(?:\s+${CAP}){0,2}|\s+${CAP}(?=\s*,?\s*${POSTCODE}\b))?(?:,?\s*[A-Z]{2}(?=\s*,?\s*\d{5}\b))?`;
const TAIL = String.raw`${UNIT}${CITY}(?:,?\s*${POSTCODE}(?![\p{L}\p{N}]))?`;
const ADDRESS = [
  new RegExp(String.raw`(?<![\p{L}\p{N}])${NUMBER},?\s+(?:(?:${CAP}|\d+(?:st|nd|rd|th))\s+){1,4}(?:${STREET})\b\.?${TAIL}`, 'gu'),
  new RegExp(String.raw`(?<![\p{L}\p{N}])${NUMBER},?\s+(?:${NOT_PARTICLE}[\p{L}][\p{L}'.-]*\s+){1,3}(?:${either(LOWER_STREET)})\b\.?${UNIT}(?:,?\s*${POSTCODE}(?![\p{L}\p{N}]))?`, 'gu'),
  new RegExp(String.raw`(?<![\p{L}\p{N}])${NUMBER}(?:\s?(?:bis|ter))?,?\s+(?:${either('rue|avenue|av\\.|boulevard|bd|chemin|allée|impasse|quai|place|calle|via|avenida|rua|carrer')})(?:\s+(?:(?:de|du|des|la|le|l'|del|della|di|da|do|dos|das|von|van)\s+)*${CAP}){1,3}${TAIL}`, 'gu'),
  new RegExp(String.raw`(?<![\p{L}\p{N}])(?:\p{Lu}[\p{L}-]*(?:straße|strasse|str\.|weg|platz|gasse|allee|ring|damm|ufer|laan|straat|gracht)|(?:Rue|Calle|Via|Viale|Avenida|Rua|Piazza|Carrer)(?:\s+(?:(?:de|du|des|la|le|del|della|di|da|do|dos|das)\s+)*${CAP}){1,3})\s+\d{1,5}[a-zA-Z]?\b${TAIL}`, 'gu'),
  /\bP\.?\s?O\.?\s?Box\s+\d+/giu,
];

/** "order number 884213", "PIN is 4821", "password: hunter2": the word stays, the value goes. */
function idAfterWord(_m: string, [word, between, value]: (string | undefined)[]): Verdict {
  if (/^(?:19|20)\d\d$/.test(value!) || STOPWORDS.has(value!.toLowerCase())) return null;
  const secret = /^(?:pin|passcode|password|pwd)$/i.test(word!) && /is|was|:|=/.test(between!);
  return /\d/.test(value!) || secret ? { kind: 'id', with: word! } : null;
}

const ID_WORDS = 'order|account|acct|invoice|ticket|reference|ref|booking|confirmation|tracking|policy|membership|member|customer|case|claim|routing|passport|licen[cs]e|pin|passcode|password|pwd|sort code|social security';

/** The pattern passes in order, each with the option that turns it on (URLs: always). */
const PASSES: [keyof ResolvedAnonymize | null, Remover][] = [
  [null, pass(/(?:\b[a-z][a-z0-9+.-]{1,15}:\/\/|\bwww\.)[^\s<>"'`]+/giu, url)],
  ['emails', pass(/(?:mailto:)?[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.\p{L}{2,}/gu, () => 'email')],
  [null, pass(/(?<![\p{L}\p{N}@./-])(?:[\p{L}\p{N}-]+\.)+([a-z]{2,12})(?::\d+)?[/?#][^\s<>"'`]*/giu, (m, [tld]) => (CODE_EXT.has(tld!.toLowerCase()) ? null : url(m)))],
  ['ids', pass(/\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b/giu, () => 'id')],
  ['ids', pass(/\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b/gu, (m) => (digits(m) >= 8 ? 'id' : null))],
  ['ids', pass(/(?<![\p{N}.,-])(?:\d{4}(?:[ -]?\d{4}){2,3}(?:[ -]?\d{1,3})?|\d{4}[ -]?\d{6}[ -]?\d{5})(?![\p{N}]|[.,-]\d)/gu, () => 'id')],
  ['ids', pass(/(?<![\p{N}-])\d{3}-\d{2}-\d{4}(?![\p{N}-])|\b[A-CEGHJ-PR-TW-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b/gu, () => 'id')],
  ['ids', pass(new RegExp(String.raw`\b(${ID_WORDS})(\s*(?:number|no\.?|num|nr|#|id|code)?\s*(?:is|was|:|#|=)?\s*)([\p{L}\p{N}][\p{L}\p{N}-]{2,})`, 'giu'), idAfterWord)],
  ['phones', pass(/(?<![\p{L}\p{N}.,:/-])(?:\+\s?\d{1,3}|00\d{1,3}|\(\+?\d{1,4}\)|\d{1,6})(?:(?:\s?[.-]{1,2}\s?|\s)\(?\d{1,8}\)?){1,6}(?![\p{L}\p{N}]|[.,:/-]\d)/gu, phone)],
  ['phones', pass(/(?<![\p{L}\p{N}])\+\d{7,15}(?![\p{N}]|[.,]\d)/gu, () => 'phone')],
  ['addresses', (s, count, keep) => ADDRESS.reduce((t, re) => pass(re, () => 'address')(t, count, keep), s)],
  ['ids', pass(/(?<![\p{N}.,])\d(?:[ -]?\d){11,}(?![\p{N}]|[.,]\d)|(?<![\p{L}\p{N}.,])\d{6,}(?![\p{N}]|[.,]\d)/gu, () => 'id')],
  ['ids', pass(/(?<![\p{L}\p{N}])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}(?![\p{L}\p{N}])/giu, () => 'id')],
  ['ids', pass(/(?<![\p{L}\p{N}_-])[\p{L}\p{N}_-]{10,}(?![\p{L}\p{N}_-])/gu, (m) => (isKey(m) ? 'id' : null))],
];

// ---------------------------------------------------------------------------------------------
// Words: tokens, filler, people, names, private words
// ---------------------------------------------------------------------------------------------

interface Token { text: string; lower: string; out: boolean }

/** A chunk of text between spaces without the punctuation around it ("Node.js." → "Node.js"; "C++" stays). */
function tokens(s: string): Token[] {
  const out: Token[] = [];
  for (const chunk of s.split(' ')) {
    const text = chunk.replace(/^[([{"'“‘«¿¡<]+/u, '').replace(/[.,;:!?…)\]}"'”’»>]+$/u, '');
    const q = /^(what|who|how|where|when|why|which)(?:'s|s)$/i.exec(text);
    const parts = q ? [q[1]!, 'is'] : /^(what|who|how|where|when|why|which)'re$/i.test(text) ? [text.slice(0, -3), 'are'] : [text];
    for (const p of parts) if (p) out.push({ text: p, lower: p.toLowerCase(), out: false });
  }
  return out;
}

const bare = (t: Token) => t.lower.replace(/'s$/u, '');

const FILLER_PHRASES = `can you tell me|could you tell me|would you tell me|can u tell me|can you please tell me|tell me about|tell me|let me know|
i was wondering|i am wondering|i'm wondering|i wonder|i'd like to know|i would like to know|i want to know|i need to know|i'm curious|
i am curious|do you know|do you happen to know|any idea|any ideas|quick question|real quick|by any chance|if you can|if you could|
if possible|for me|for us|help me find|help me|can you|could you|would you|will you|can u|could u|please look up|look up|
search the web for|search the web|search online for|search online|search the internet for|search the internet|search for|
find out about|find out|google for|please google|thank you|thanks in advance|do you think|i think|i mean|you know`.split(/\|\s*/).map((p) => p.trim().split(' '));
const FILLER_WORDS = new Set(`hey hi hello yo hiya ok okay please pls plz thanks thank thx kindly just actually basically um uh uhm hmm
btw lol a an the i me my mine myself we us our ours ourselves you your yours yourself u ya he him his she her hers they
them their theirs i'm i've i'd i'll we're we've you're you've he's she's they're`.split(/\s+/));
const LEADING = new Set(['so', 'well', 'and', 'but', 'if', 'whether', 'about', 'that', 'also', 'oh']);

/** Marks every occurrence of each phrase (words, lower-case) out, and counts it under `kind` when given. */
function dropPhrases(ts: Token[], phrases: readonly string[][], count?: () => void): void {
  for (let i = 0; i < ts.length; i++) {
    for (const p of phrases) {
      if (p.length === 0 || i + p.length > ts.length) continue;
      if (!p.every((w, j) => !ts[i + j]!.out && (bare(ts[i + j]!) === w || ts[i + j]!.lower === w))) continue;
      for (let j = 0; j < p.length; j++) ts[i + j]!.out = true;
      count?.();
      break;
    }
  }
}

/** Words of names as phrases: the whole name first, then each of its words (but function words). */
function namePhrases(names: readonly string[]): string[][] {
  const whole = names.map((n) => n.toLowerCase().split(/\s+/).filter(Boolean)).filter((p) => p.length > 0);
  const parts = whole.filter((p) => p.length > 1).flat().filter((w) => w.length > 1 && !STOPWORDS.has(w)).map((w) => [w]);
  return [...whole.sort((a, b) => b.length - a.length), ...parts];
}

const capitalized = (t: string) => /^\p{Lu}/u.test(t);

/**
 * People's names in the text by compromise: `maybe` ones are taken out when memory knows them (a public figure it does
 * not know stays); `sure` ones whatever it knows (one of the user's people: "my sister Leila", "my friend Priya
 * Sharma"). A capitalized name compromise does not know counts beside one it knows ("Priya Sharma").
 */
async function peopleIn(s: string): Promise<{ maybe: Set<string>; sure: Set<string> }> {
  const maybe = new Set<string>();
  const sure = new Set<string>();
  for (const sentence of await nlpSentences(s)) {
    const person = sentence.map((t) => {
      const named = ['FirstName', 'LastName', 'MaleName', 'FemaleName'].some((x) => t.tags.has(x));
      return (named && !['Verb', 'Adjective', 'Modal', 'Plural'].some((x) => t.tags.has(x))) || (t.tags.has('Person') && capitalized(t.text) && !t.tags.has('Honorific'));
    });
    sentence.forEach((t, i) => {
      const word = t.text.toLowerCase().replace(/'s$/u, '');
      if (!/\p{L}/u.test(word) || STOPWORDS.has(word)) return;
      const prev = sentence[i - 1];
      const cap = capitalized(t.text) && !t.tags.has('Organization') && !t.tags.has('Place');
      const afterRelation = !!prev && (RELATION.test(prev.text) || (sure.has(prev.text.toLowerCase().replace(/'s$/u, '')) && capitalized(prev.text)));
      if (cap && afterRelation && !t.tags.has('Date')) sure.add(word);
      else if (person[i] || (cap && t.tags.has('ProperNoun') && (person[i - 1] || person[i + 1]))) maybe.add(word);
    });
  }
  return { maybe, sure };
}

/**
 * Capitalized words the conversation has used before as a person's name ("my colleague Bartholomew Quigley", then
 * "the latest book by Quigley"): each is looked up in the stored turns that hold it, read as there.
 */
async function knownPeople(open: Token[], lookup: MemoryLookup, count: () => void): Promise<void> {
  const names = [...new Set(open.filter((t) => capitalized(t.text) && !plain(bare(t)) && /\p{L}/u.test(bare(t))).map(bare))];
  const known = names.length > 0 ? await lookup.known(names) : new Set<string>();
  let read = 0;
  for (const name of [...known].slice(0, NAME_CHECKS)) {
    let person = false;
    for (const text of await lookup.mentions(name, 5)) {
      if (read >= MENTIONS_READ) break;
      const around = mentionOf(text, name);
      read += around.length;
      const p = await peopleIn(around);
      if (p.sure.has(name) || p.maybe.has(name)) { person = true; break; }
    }
    if (person) for (const t of open) if (!t.out && bare(t) === name) { t.out = true; count(); }
  }
}

/** The sentence-sized window of `text` around its first mention of `name` (or its start, for a stemmed match). */
function mentionOf(text: string, name: string): string {
  const at = text.toLowerCase().indexOf(name);
  const from = Math.max(0, at - MENTION_WINDOW);
  const window = text.slice(from, (at < 0 ? 0 : at) + name.length + MENTION_WINDOW);
  // Whole words only: a cut word could read as another name.
  return window.replace(from > 0 ? /^\S*\s/u : /^/u, '').replace(/\s\S*$/u, '');
}

/** Word parts of a token the full-text index sees ("Node.js" → node, js), lower-case; single characters say nothing. */
const partsOf = (text: string) => (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length > 1);
const parts = (t: Token) => partsOf(t.lower);
const plain = (w: string) => STOPWORDS.has(w) || TRIGGER_WORDS.has(w) || QUESTION_WORDS.has(w) || FILLER_WORDS.has(w);

/** Operators search engines read in a word ("site:", "intitle:"): the word keeps what follows. */
const OPERATOR = /^(?:site|intitle|allintitle|inurl|allinurl|intext|allintext|filetype|ext|related|cache|link|inanchor|define|before|after|source|info|location|loc|map|mailto)$/i;

/** A token as plain words: quotes, operators and brackets gone; an apostrophe kept only inside a word. */
function neutralized(text: string): string[] {
  let t = text.replace(/["“”„«»‹›`´*|{}[\]<>^~\\()]/gu, ' ').replace(/(?<!\p{L})'|'(?!\p{L})/gu, ' ');
  t = t.replace(/(?<=\p{L}):(?=\S)/gu, ': ');
  return t.split(' ').flatMap((w) => {
    const word = w.replace(/^[-+!=]+/u, '').replace(/[-:,;.!?=]+$/u, '');
    if (!word || !/[\p{L}\p{N}]/u.test(word) || word.length > MAX_TOKEN_CHARS || (w.endsWith(':') && OPERATOR.test(w.slice(0, -1)))) return [];
    return [/^(?:OR|AND|NOT)$/.test(word) ? word.toLowerCase() : word];
  });
}

/** The query's words, at most MAX_QUERY_WORDS and MAX_QUERY_CHARS: function words go first when it is too long. */
function shaped(words: string[]): string {
  let out = words.filter((w, i) => i === 0 || w.toLowerCase() !== words[i - 1]!.toLowerCase());
  while (out.length > 0 && LEADING.has(out[0]!.toLowerCase())) out.shift();
  while (out.length > 1 && STOPWORDS.has(out.at(-1)!.toLowerCase()) && !QUESTION_WORDS.has(out.at(-1)!.toLowerCase())) out.pop();
  if (out.length > MAX_QUERY_WORDS) {
    const keep = (w: string, i: number) => (i === 0 && QUESTION_WORDS.has(w.toLowerCase())) || !STOPWORDS.has(w.toLowerCase()) || /^(?:not|no|vs)$/i.test(w);
    out = out.filter(keep).slice(0, MAX_QUERY_WORDS);
  }
  while (out.join(' ').length > MAX_QUERY_CHARS) out.pop();
  return out.join(' ');
}

/** A long message's questions (its sentences ending in "?", the last ones first), when it asks any: what is searched. */
function focus(s: string): string {
  if (s.split(' ').length <= MAX_QUERY_WORDS) return s;
  const questions = (s.match(/[^?!]*?(?:[.!](?=\s)|\?|$)/g) ?? []).map((x) => x.trim()).filter((x) => x.endsWith('?'));
  const picked: string[] = [];
  for (let i = questions.length - 1, words = 0; i >= 0 && words < MAX_QUERY_WORDS; i--) {
    picked.unshift(questions[i]!);
    words += questions[i]!.split(' ').length;
  }
  return picked.length > 0 ? picked.join(' ') : s;
}

/**
 * The search query for a message: the new message alone, filler out, anonymized by `anonymize` (private turns' words
 * always). `query` is '' when nothing but function and trigger words is left. `removed` counts what was taken out by
 * kind, never the words.
 */
export async function buildQuery(text: string, lookup: MemoryLookup, anonymize: ResolvedAnonymize): Promise<{ query: string; removed: SearchRemoved }> {
  const removed: SearchRemoved = {};
  const count = (kind: Kind) => { removed[kind] = (removed[kind] ?? 0) + 1; };
  const allow = new Set(anonymize.allow.flatMap((a) => [a.toLowerCase(), ...a.toLowerCase().split(/\s+/)]));
  const allowed = (m: string) => allow.has(m.trim().toLowerCase());
  let s = analyzedText(text);
  for (const [flag, remover] of PASSES) if (flag === null || anonymize[flag] === true) s = remover(s, count, allowed);
  s = focus(s.replace(/\s+/g, ' ').trim());
  const ts = tokens(s);
  const keep = (t: Token) => !t.out && !allowed(t.lower) && !allowed(bare(t));
  const open = () => ts.filter(keep);
  if (anonymize.names.length > 0) dropPhrases(open(), namePhrases(anonymize.names), () => count('name'));
  if (anonymize.people) {
    const [speakers, people] = await Promise.all([lookup.speakers(), peopleIn(s)]);
    dropPhrases(open(), namePhrases(speakers), () => count('person'));
    const known = people.maybe.size > 0 ? await lookup.known([...people.maybe]) : new Set<string>();
    for (const t of open()) if (people.sure.has(bare(t)) || (people.maybe.has(bare(t)) && known.has(bare(t)))) { t.out = true; count('person'); }
    await knownPeople(open(), lookup, () => count('person'));
  }
  dropPhrases(ts, FILLER_PHRASES);
  for (const t of ts) if (FILLER_WORDS.has(t.lower)) t.out = true;
  const left = ts.filter((t) => !t.out);
  const asked = [...new Set(left.flatMap(parts).filter((w) => !plain(w)))];
  const secret = asked.length > 0 ? await lookup.privateWords(asked) : new Set<string>();
  for (const t of left) if (parts(t).some((w) => secret.has(w))) { t.out = true; count('private'); }
  for (const t of left) if (!t.out && UNSPACED.test(t.text) && await lookup.privateOverlap(t.text)) { t.out = true; count('private'); }
  const words = ts.filter((t) => !t.out).flatMap((t) => neutralized(t.text));
  const year = new Date().getUTCFullYear();
  const meaningful = words.some((w) => partsOf(w).some((p) => !plain(p) && !(/^20\d\d$/.test(p) && Number(p) >= year)));
  return { query: meaningful ? shaped(words) : '', removed };
}
