import { STOPWORDS, WORD, ftsStem } from '../text/fts-words.js';
import { PRIVATE_PLACEHOLDER } from './summary-writer.js';
import { sentences as sentencesOf } from '../text/sentences.js';
import type { Summarizer, SummaryRequest, SummaryResult, Tokenizer } from '../contracts/types.js';
import { pacer } from '../common/pace.js';

/** Bumped whenever the selection changes, so older extractive summaries can be regenerated. */
export const EXTRACTIVE_VERSION = 2;

const MONTHS = 'january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec';
const DAYS = 'monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|yesterday|tomorrow|today|tonight';
// Dates and times: a month (with its day), a weekday, a relative day or week, a year, a time of day.
const DATE = new RegExp(`\\b(?:(?:last|next|this|that) (?:week|month|year|${DAYS})|(?:${MONTHS})\\.?(?: \\d{1,2}(?:st|nd|rd|th)?)?|\\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:${MONTHS})|${DAYS}|(?:19|20)\\d\\d|\\d{1,2}(?::\\d\\d)? ?(?:am|pm)|\\d{1,2}:\\d\\d)\\b`, 'gi');
// Month names that are verbs when written in lower case ("we may go").
const VERBS = new Set(['may', 'march']);
const NUMBER = /\b\d+(?:[.,:/-]\d+)*\b/g;
const DECISION = /\b(?:decid\w*|decision|agreed|will|won't|'ll|going to|gonna|plan\w*|deadline|due|must|need to|todo|to-do|action item|remember|promis\w*|chose|choose|chosen|pick(?:ed)?|set up|fix\w*|book(?:ed)?|schedul\w*|buy|bought|sign(?:ed)? up|enroll\w*|adopt\w*|join(?:ed)?|start(?:ed)?|quit|confirm\w*|cancel\w*|commit\w*|finally)\b/i;
// A capitalised word inside a sentence: a name (or a title, a brand, an acronym).
const PROPER = /(?<=[\p{L}\p{N},;:)'"’]\s+)\p{Lu}[\p{L}'’-]+/gu;
const NOT_NAMES = new Set(`i i'm i've i'd i'll it's that's ok oh wow yeah yes no hey hi thanks thank ${MONTHS} ${DAYS}`.split(/[\s|]+/));
// Words that carry no fact: praise, feelings in passing, chat. A clause made of these (and function words) is left out.
const FILLER = new Set(`really so very totally super pretty quite great amazing awesome cool nice wonderful incredible fantastic
  lovely beautiful glad happy proud sorry sad excited love loved fun good bad best better wow omg oh hey hi hello thanks
  thank yeah yep sure ok okay well honestly actually definitely absolutely literally guess mean sounds sound seems seem
  feel feels felt hear heard hope hoping wish thing things stuff lot lots something anything everything way kind sort bit
  much many always never ever still even though anyway since chat chatted chatting talk talked catch caught agree true
  exactly cheers congrats congratulations aww haha lol hmm ah ooh yay wait`.split(/\s+/));
// A lead-in with no content: "Wow, ", "Hey Mel! ", "Thanks so much, ".
const LEAD_IN = /^(?:(?:wow|oh|hey|hi|hello|yeah|yes|yep|omg|aw+|haha+|lol|hmm+|ooh|ah|sure|ok|okay|well|gosh|whoa|yay|thanks|thank you|congrats|congratulations)(?: so much)?(?: \p{Lu}[\p{L}'’-]+)?(?:[,!.]+\s*|\s*$))+/iu;
// Greetings before a name spoken to, in either case (the names themselves are matched as written).
const GREETING = `(?:(?:${['hey', 'hi', 'hello', 'thanks', 'thank you', 'aw+', 'oh', 'wow', 'yay', 'yes', 'yeah', 'congrats', 'congratulations']
  .map((w) => w.replace(/[a-z]/g, (c) => `[${c}${c.toUpperCase()}]`)).join('|')})(?: so much)?,?\\s+)*`;
const CONTINUES = /^(?:for|to|of|with|and|but|or|about|because|in|on|at|from|as)\b/i;
const PHOTO = /^\[shares (?:a|an) (?:photo|image|picture): (?:(?:a |an )?(?:photo|picture|image) of )?/i;
// Sentences longer than this many words (after their filler is left out) are trimmed (ellipsis).
const MAX_WORDS = 40;
// What an item is worth to a summary that does not carry it yet, and each of the segment's words (by how many sentences use it).
const WEIGHT = { name: 1.5, number: 1.5, date: 1.5, decision: 1.5, speaker: 0.5 };
const WORD_BASE = 0.3;
const WORD_RECURRING = 0.15;
// A sentence adding less than this is left out, whatever room is left ("Bye!", "Yup!"): the summary is shorter instead.
const MIN_GAIN = 1;
// Tokens a sentence costs beyond its text (a space, or a line with its speaker).
const JOIN = 1;
const QUESTION = 0.7;
// Sentences weighed by the greedy cover at most (the rest, estimated to add less per token, are left out unread).
const MAX_CANDIDATES = 400;
const ROLES = new Set(['user', 'assistant', 'tool', 'system', 'summary']);

interface Sentence {
  speaker: string;
  pos: number;
  text: string;
  /** Salient items (`n:Name`, `#:12`, `d:may 7`, `s:Speaker`, `D:pos`) and content words' stems. */
  items: string[];
  stems: string[];
  cost: number;
  gain: number;
}

const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const RELATIVE = /\b(?:yesterday|last night|tomorrow|(?:last|next) (?:week(?:end)?|sunday|monday|tuesday|wednesday|thursday|friday|saturday))\b/gi;
const DAY_MS = 86_400_000;

/** A day as "7 May", with its year where it is not the year of `at` (the summary's time stamp gives that one). */
function day(ms: number, at: number): string {
  const d = new Date(ms);
  const year = d.getUTCFullYear() === new Date(at).getUTCFullYear() ? '' : ` ${d.getUTCFullYear()}`;
  return `${d.getUTCDate()} ${MONTH_NAMES[d.getUTCMonth()]}${year}`;
}

/**
 * Relative days pinned to the day the message was written ("yesterday" → "yesterday (7 May)", "last week" → "last week
 * (before 8 May)"; the year only where it is not the message's): a summary is read long after, where "yesterday" no longer says when.
 */
function pinDates(text: string, writtenAt: string): string {
  const at = Date.parse(writtenAt);
  if (!Number.isFinite(at)) return text;
  return text.replace(RELATIVE, (m) => {
    const w = m.toLowerCase();
    if (w === 'yesterday' || w === 'last night') return `${m} (${day(w === 'yesterday' ? at - DAY_MS : at, at)})`;
    if (w === 'tomorrow') return `${m} (${day(at + DAY_MS, at)})`;
    const [which, unit] = w.split(' ') as [string, string];
    const wd = WEEKDAYS.indexOf(unit);
    if (wd < 0) return `${m} (${which === 'last' ? 'before' : 'after'} ${day(at, at)})`;
    const today = new Date(at).getUTCDay();
    const back = (today - wd + 7) % 7 || 7;
    const ahead = (wd - today + 7) % 7 || 7;
    return `${m} (${day(which === 'last' ? at - back * DAY_MS : at + ahead * DAY_MS, at)})`;
  });
}

/** An item's lines as (speaker, text): roll-ups summarize summaries whose lines already start with `speaker:`. */
function lines(speaker: string, text: string): { speaker: string; text: string }[] {
  if (speaker !== 'summary') return [{ speaker, text }];
  return text.split('\n').flatMap((line) => {
    const m = /^([^:\n]{1,48}): (.+)$/.exec(line.trim());
    return m ? [{ speaker: m[1]!, text: m[2]! }] : line.trim() ? [{ speaker: '', text: line.trim() }] : [];
  });
}

function trim(text: string): string {
  const words = text.split(/\s+/);
  return words.length <= MAX_WORDS ? text : `${words.slice(0, MAX_WORDS).join(' ')} …`;
}

/** The content words of a text, lower-cased: no function words, no filler. */
function contentWords(text: string): string[] {
  return (text.toLowerCase().match(WORD) ?? []).map((w) => w.replace(/['’](s|t|d|ll|re|ve|m)$/u, '')).filter((w) => w.length > 1 && !STOPWORDS.has(w) && !FILLER.has(w));
}

function hasItem(text: string): boolean {
  NUMBER.lastIndex = 0;
  return NUMBER.test(text) || DECISION.test(text) || (text.match(DATE) ?? []).some((m) => !VERBS.has(m))
    || (text.match(PROPER) ?? []).some((m) => !NOT_NAMES.has(m.toLowerCase()));
}

/**
 * A sentence without its filler: a lead-in ("Wow, ", "Hey Mel! "), the name of whom it is said to, and clauses
 * (between commas, semicolons, dashes) that carry no item and no content word.
 */
function compress(text: string, vocative: Vocative | null): string {
  let s = text.replace(PHOTO, '[photo: ');
  // A lead-in and a name spoken to are left out unless what follows goes on from them ("Thanks, Mel, for…" stays).
  const lead = s.replace(LEAD_IN, '');
  const bare = vocative ? lead.replace(vocative.re, '') : lead;
  if (!CONTINUES.test(bare)) s = bare;
  else if (vocative) s = s.replace(vocative.re, (m: string, offset: number) => (offset === 0 ? m : ''));
  const parts = s.split(/(,\s+|;\s+|\s+[–—]\s+|\s+-\s+)/);
  if (parts.length > 1) {
    const kept: string[] = [];
    for (let i = 0; i < parts.length; i += 2) {
      const clause = parts[i]!;
      if ((contentWords(clause).length === 0 && !hasItem(clause)) || vocative?.names.has(clause)) continue;
      if (kept.length > 0) kept.push(parts[i - 1] ?? ' ');
      kept.push(clause);
    }
    // What is left must not start mid-sentence ("Thanks, for…"): then the sentence stays whole.
    if (!CONTINUES.test(kept.join(''))) s = kept.join('');
    // The end of the sentence is kept with what is left.
    const end = /[.!?…]+["'”’)]*$/.exec(text)?.[0] ?? '';
    if (s && end && !s.endsWith(end)) s = s.replace(/[,;:–—-]+$/, '') + end;
  }
  s = s.trim();
  return s ? s[0]!.toUpperCase() + s.slice(1) : s;
}

interface Vocative {
  re: RegExp;
  names: ReadonlySet<string>;
}

/**
 * Who is spoken to ("Hey Mel!", "…, Caroline."), to be left out: the speakers' names and the capitalised words of
 * the text that begin one (a short form), at the start or the end of a sentence or alone between commas.
 */
function vocativeOf(request: SummaryRequest, speakers: ReadonlySet<string>): Vocative | null {
  const names = new Set<string>();
  for (const sp of speakers) for (const w of sp.split(/\s+/)) if (/^\p{Lu}[\p{L}'’-]+$/u.test(w)) names.add(w);
  if (names.size === 0) return null;
  for (const item of request.items) {
    for (const m of item.text.match(/\b\p{Lu}\p{Ll}{2,}\b/gu) ?? []) if (!names.has(m) && [...names].some((n) => n.length > m.length && n.startsWith(m))) names.add(m);
  }
  const alt = [...names].sort().map((n) => n.replace(/[^\p{L}]/gu, (c) => `\\${c}`)).join('|');
  return { re: new RegExp(`^${GREETING}(?:${alt})(?:[,!.?]+\\s*|\\s*$)|,?\\s+(?:${alt})(?=\\s*[.!?]+$)|,\\s+(?:${alt})(?=,)`, 'gu'), names };
}

/** A sentence's salient items. */
function itemsOf(text: string, speaker: string, pos: number): string[] {
  const out = new Set<string>();
  if (speaker) out.add(`s:${speaker}`);
  for (const m of text.match(PROPER) ?? []) {
    const w = m.replace(/['’]s$/u, '');
    if (w.length > 1 && !NOT_NAMES.has(w.toLowerCase())) out.add(w === speaker ? `s:${w}` : `n:${w}`);
  }
  for (const m of text.match(DATE) ?? []) if (!VERBS.has(m)) out.add(`d:${m.toLowerCase()}`);
  for (const m of text.replace(DATE, ' ').match(NUMBER) ?? []) out.add(`#:${m}`);
  if (DECISION.test(text) && !text.endsWith('?')) out.add(`D:${pos}`);
  return [...out];
}

function weight(item: string): number {
  switch (item[0]) {
    case 'n': return WEIGHT.name;
    case '#': return WEIGHT.number;
    case 'd': return WEIGHT.date;
    case 'D': return WEIGHT.decision;
    default: return WEIGHT.speaker;
  }
}

/** Chosen sentences in their original order; consecutive sentences of one speaker share a line. */
function render(chosen: readonly Sentence[]): string {
  const out: string[] = [];
  let last = '\u0000';
  for (const s of [...chosen].sort((a, b) => a.pos - b.pos)) {
    if (s.speaker === last && out.length > 0) out[out.length - 1] += ` ${s.text}`;
    else out.push(s.speaker ? `${s.speaker}: ${s.text}` : s.text);
    last = s.speaker;
  }
  return out.join('\n');
}

/**
 * The offline summarizer: keeps as many of the segment's names, numbers, dates and decisions, its speakers and its
 * words as fit the target length (counted with the model's tokenizer). Sentences are first stripped of their filler
 * (lead-ins, clauses of praise or small talk), then chosen greedily by what they add that the summary does not carry
 * yet, per token; they are written in their original order under their speakers. Deterministic: same input, same summary.
 *
 * @example
 * const memory = await createMemory({ summarizer: 'extractive' }); // the default without an LLM
 */
export function extractiveSummarizer(tokenizer: Tokenizer): Summarizer {
  return {
    name: 'extractive',
    version: EXTRACTIVE_VERSION,
    async summarize(request: SummaryRequest): Promise<SummaryResult> {
      // A long segment takes tens of ms to read and weigh (a sync's compaction runs several in a row): it hands the
      // event loop back as it goes, by the pass's slice (not once per segment: a browser's timers are clamped to 4 ms
      // once nested). The result does not depend on it.
      const pace = pacer();
      const all: Sentence[] = [];
      const speakers = new Set(request.items.flatMap((item) => lines(item.speaker, item.text).map((l) => l.speaker)).filter((sp) => sp && !ROLES.has(sp)));
      const vocative = vocativeOf(request, speakers);
      const add = (speaker: string, raw: string) => {
        const text = trim(compress(raw.trim(), vocative));
        if (text.length < 2) return;
        const pos = all.length;
        const words = contentWords(text);
        const items = itemsOf(text, speaker, pos);
        // Nothing left but function words and filler.
        if (words.length === 0 && items.every((i) => i[0] === 's')) return;
        const stems = [...new Set(words.flatMap((w) => { const s = ftsStem(w); return s ? [s] : []; }))];
        // Estimated for now (a token is about four characters), counted once it is a candidate.
        all.push({ speaker, pos, text, items, stems, cost: Math.ceil(text.length / 4) + JOIN, gain: 0 });
      };
      let fallback: { speaker: string; text: string } | null = null;
      for (const item of request.items) {
        for (const line of lines(item.speaker, item.text)) {
          let text = line.text.replace(/\s+/g, ' ').trim();
          // A turn's relative days are pinned to its date (a summary's lines were pinned when it was written).
          if (item.speaker !== 'summary') text = pinDates(text, item.createdAt);
          if (text) fallback ??= { speaker: line.speaker, text: trim(text) };
          if (text === PRIVATE_PLACEHOLDER) continue;
          // A bracketed part (a shared photo's caption) is a sentence of its own.
          for (const part of text.split(/(\[[^\]\n]{1,400}\])/)) {
            for (const segment of part.startsWith('[') && part.endsWith(']') ? [part] : sentencesOf(part)) {
              add(line.speaker, segment);
              await pace(1);
            }
          }
        }
      }
      // Nothing but filler (or private messages): the first line, cut to the budget below.
      if (all.length === 0 && fallback) all.push({ ...fallback, pos: 0, items: [], stems: [], cost: 0, gain: 0 });
      if (all.length === 0) return { text: '' };
      // How many sentences use each word: the segment's recurring subjects are worth more.
      const df = new Map<string, number>();
      for (const s of all) for (const w of s.stems) df.set(w, (df.get(w) ?? 0) + 1);
      for (const w of request.tags.flatMap((t) => contentWords(t))) {
        const s = ftsStem(w);
        if (s && df.has(s)) df.set(s, df.get(s)! + 1);
      }
      const covered = new Set<string>();
      const gainOf = (s: Sentence): number => {
        let g = 0;
        for (const i of s.items) if (!covered.has(i) && i[0] !== 's') g += weight(i);
        for (const w of s.stems) if (!covered.has(w)) g += WORD_BASE + WORD_RECURRING * Math.log(df.get(w)!);
        // Who said it counts with something said only.
        if (g > 0 && s.speaker && !covered.has(`s:${s.speaker}`)) g += WEIGHT.speaker;
        if (s.text.endsWith('?')) g *= QUESTION;
        return g < MIN_GAIN ? 0 : g;
      };
      // A long segment (a tool's output): the greedy cover weighs the sentences that add the most per estimated token.
      let candidates = all;
      if (all.length > MAX_CANDIDATES) {
        const value = new Map(all.map((s) => [s, gainOf(s) / s.cost]));
        candidates = [...all].sort((a, b) => value.get(b)! - value.get(a)! || a.pos - b.pos).slice(0, MAX_CANDIDATES).sort((a, b) => a.pos - b.pos);
      }
      for (const s of candidates) {
        s.cost = tokenizer.count(s.text) + JOIN;
        await pace(1);
      }
      // Greedy cover: the sentence that adds the most per token, while the estimate fits; a new speaker line costs its name.
      const chosen: Sentence[] = [];
      const left = new Set(candidates);
      let used = 0;
      for (;;) {
        await pace(1);
        let best: Sentence | null = null;
        let bestRatio = 0;
        for (const s of left) {
          const cost = s.cost + (s.speaker ? 2 : 0);
          if (used + cost > request.targetTokens) continue;
          const g = gainOf(s);
          const ratio = g / cost;
          if (g > 0 && (ratio > bestRatio || (ratio === bestRatio && best !== null && s.pos < best.pos))) { best = s; bestRatio = ratio; }
        }
        if (!best) break;
        best.gain = bestRatio;
        chosen.push(best);
        left.delete(best);
        used += best.cost + (best.speaker ? 2 : 0);
        for (const i of best.items) covered.add(i);
        for (const w of best.stems) covered.add(w);
      }
      // The estimate counts a speaker per sentence: shared lines leave room, filled while the exact count fits.
      let text = render(chosen);
      while (chosen.length > 1 && tokenizer.count(text) > request.targetTokens) {
        chosen.splice(chosen.indexOf(chosen.reduce((a, b) => (b.gain < a.gain ? b : a))), 1);
        text = render(chosen);
      }
      const rest = [...left].filter((s) => gainOf(s) > 0).sort((a, b) => gainOf(b) / b.cost - gainOf(a) / a.cost || a.pos - b.pos);
      for (const s of rest.slice(0, 8)) {
        if (tokenizer.count(text) + s.cost > request.targetTokens + 2) continue;
        const next = render([...chosen, s]);
        if (tokenizer.count(next) > request.targetTokens) continue;
        chosen.push(s);
        text = next;
      }
      if (chosen.length === 0) {
        const first = [...candidates].sort((a, b) => gainOf(b) / b.cost - gainOf(a) / a.cost || a.pos - b.pos)[0]!;
        text = render([first]);
      }
      // A single over-long sentence: cut to the budget by words.
      while (tokenizer.count(text) > request.targetTokens && text.includes(' ')) text = `${text.slice(0, Math.floor(text.length * 0.8)).replace(/\s+\S*$/, '')} …`;
      return { text };
    },
  };
}
