import * as chrono from 'chrono-node';

/** A span of time a question refers to, in epoch ms (end exclusive). */
export interface TimeWindow {
  fromMs: number;
  toMs: number;
  /** The words that named it ("last week", "in June"). */
  text: string;
}

/** What kind of question a message is, found by deterministic patterns and a date parser. */
export interface QueryIntent {
  /** Asks about everything ("what did we discuss?", "summarize everything"). */
  broad: boolean;
  /** Refers to a position in time: a span of time or the beginning/end of the conversation. */
  temporal: boolean;
  /** `earliest` for "at the beginning", "early on"; `latest` for "most recently". */
  position: 'earliest' | 'latest' | null;
  window: TimeWindow | null;
}

const BROAD = [
  /\bwhat (else )?(did|have|were) (we|you and i|you|i) (been )?(discuss|discussed|talk(ed|ing)? about|cover(ed)?|go(ne)? over|chat(ted)? about)\b(\s+(so far|until now|up to now|till now|to date|today|in (this|our|the) (conversation|chat|session|thread)))?(?!\s+(about\s+)?\w)/,
  /\b(summar(y|ize|ise|izing|ising)|recap|overview|rundown)\b.{0,40}\b(everything|all of (it|this)|so far|(our|the|this|whole|entire) (conversation|discussion|chat|session)|we('ve| have)? (discussed|covered|talked))/,
  /\b(everything|all (the )?(topics|things)) (that )?we('ve| have)? (discussed|talked about|covered|gone over)\b/,
  /\bcatch me up\b/,
  /\bwhat (topics|subjects) (have|did) we\b/,
  /^\s*(recap|summary|summarize|summarise)\s*[.!?]?\s*$/,
];

const EARLIEST = new RegExp([
  /\b(at|in|from|to) the (very )?(beginning|start|outset)\b|\bearly on\b|\bthe very first\b|\binitially\b|\boriginally\b|\bearlier on\b/.source,
  /\bfirst (thing|things|topic|question|message)s? (we|you|i) (discussed|talked|said|asked|mentioned|covered)\b|\bwhen we (first )?(started|began)\b/.source,
  // "How did our conversation begin?", "your first suggestion", "my first question".
  /\bhow did (we|it( all)?|this|(our|the|this) (conversation|chat|discussion)) (begin|start|get started|kick off)\b/.source,
  /\b(your|my|our) (very )?first (suggestion|advice|answer|reply|recommendation|idea|tip|question|message|request)\b/.source,
].join('|'));
/**
 * The words that name a position in the conversation ("how did our conversation begin?"), not its subject: a tag made
 * only of them says nothing about what the question is after.
 */
const POSITION_WORD = /^(begin|began|begun|beginning|start|started|starting|outset|first|early|earlier|initial|initially|original|originally|conversation|conversations|chat|chats|discussion|discussions|latest|recent|recently|last|lately|just|now)$/;

/** Whether a tag (a slug, words joined by '-') is only words that name a position in the conversation. */
export function namesPositionOnly(tag: string): boolean {
  return tag.split('-').every((w) => POSITION_WORD.test(w));
}

const LATEST = /\b(most recently|the last thing|latest|just now|a (moment|minute) ago|earlier today)\b/;

const DAY = 86_400_000;
// Timestamps are stored in UTC while "yesterday" is the user's local day: windows get half a day of slack each side.
const SLACK = DAY / 2;

function windowOf(result: chrono.ParsedResult): TimeWindow | null {
  const text = result.text.trim();
  if (/^(now|today|tonight|this (morning|afternoon|evening))$/i.test(text)) return null;
  // "may", "march", "sat", "second" in lower case are words, not dates.
  if (/^[a-z]+$/.test(text) && text !== 'yesterday') return null;
  const start = result.start.date().getTime();
  if (result.end) return { fromMs: start - SLACK, toMs: result.end.date().getTime() + SLACK, text };
  const known = (c: chrono.Component) => result.start.isCertain(c);
  let from: number;
  let to: number;
  if (/\bweek\b/i.test(text)) {
    from = start - 3.5 * DAY; to = start + 3.5 * DAY;
  } else if (known('day')) {
    const d = result.start.date();
    from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()); to = from + DAY;
  } else if (known('month')) {
    const d = result.start.date();
    from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1); to = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  } else if (/\bmonth\b/i.test(text)) {
    from = start - 15 * DAY; to = start + 15 * DAY;
  } else if (/\byear\b/i.test(text) || known('year')) {
    from = start - 183 * DAY; to = start + 183 * DAY;
  } else {
    from = start; to = start + DAY;
  }
  return { fromMs: from - SLACK, toMs: to + SLACK, text };
}

const MONTHS = 'jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(t|tember)?|oct(ober)?|nov(ember)?|dec(ember)?';
const DAYS = '(mon|tues?|wed(nes)?|thu(rs?)?|fri|sat(ur)?|sun)(day)?';
const RELATIVE = 'now|today|tonight|tomorrow|yesterday|ago|noon|midnight|morning|afternoon|evening|night|weekend|'
  + '(second|minute|hour|day|week|fortnight|month|quarter|year|decade)s?';
// Everything chrono-node can read as a date or time names a month, a weekday, a relative word or a date-like
// number; a question with none of them skips the parser (2 ms a call).
const MAY_NAME_TIME = new RegExp(`\\b(${MONTHS}|${DAYS}|${RELATIVE})\\b|\\d{4}|\\d{1,2}\\s*[/.:\\-]\\s*\\d|\\d(st|nd|rd|th)\\b|\\d\\s*(am|pm|a\\.m|p\\.m)\\b`, 'i');

let warmed = false;

/**
 * Runs the date parser on every kind of date, three times. V8 compiles a regular expression to machine code on its
 * second use, and chrono-node's are large: the second parse of a process takes ~200 ms. The engine calls this after
 * storing its first turn, when the user is reading a reply, so that no question pays for it.
 */
export function warmDateParser(): void {
  if (warmed) return;
  warmed = true;
  for (let i = 0; i < 3; i++) chrono.parse('On June 3 2024, last week, 2 days ago at 5pm EST, item 1001 on 3/4 (Monday the 5th)', new Date(), { forwardDate: false });
}

/** Whether a text may name a date or time at all (a cheap test before the date parser). */
export function mayNameTime(text: string): boolean {
  return MAY_NAME_TIME.test(text);
}

/**
 * Broad and temporal detection. Relative dates ("two days ago", "last week", "in June") are resolved against
 * `nowMs` with chrono-node, looking back in time.
 */
export function detectIntent(text: string, nowMs: number): QueryIntent {
  const lower = text.toLowerCase();
  const broad = BROAD.some((p) => p.test(lower));
  const position = EARLIEST.test(lower) ? 'earliest' : LATEST.test(lower) ? 'latest' : null;
  let window: TimeWindow | null = null;
  for (const result of mayNameTime(text) ? chrono.parse(text, new Date(nowMs), { forwardDate: false }) : []) {
    window = windowOf(result);
    if (window) break;
  }
  return { broad, temporal: position !== null || window !== null, position, window };
}
