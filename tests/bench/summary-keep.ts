// npx tsx tests/bench/summary-keep.ts — what a segment summary keeps of its turns (issue 25, part 5).
// Options: --only=conv-26,conv-30  --show=N (print N summaries with their items, for reading)  --misses (the items most
//          often left out)
//
// Each LoCoMo conversation (../shared/data/locomo) is ingested into createMemory({ contextWindow: 3000, embedder: false })
// batch by batch (onTurnComplete, then flush: compaction happens as it does in a chat). For every segment summary,
// its source turns' salient items are listed and looked for in the summary's text:
//   names      capitalised words not at the start of a sentence, and the speakers' names
//   numbers    digits (42, 3.5, 2022, 10:30)
//   dates      month and weekday names, years, yesterday/today/last week…, times of day
//   decisions  sentences that decide, plan, commit or report a choice (decided/will/going to/plan/chose/bought/booked…):
//              kept when at least half of their content words (stemmed, no function words) are in the summary
// The keep share of a summary is items kept / items in its sources, per kind and over all kinds (summaries with no
// item of a kind are left out of that kind's mean). Also the summary's tokens against the target the compactor set
// (SummaryRequest.targetTokens, recorded by a pass-through summarizer around the extractive one, with the same
// tokenizer). Deterministic: no embeddings, no clock in the text, same input, same figures.
import { createMemory, extractiveSummarizer } from '../../src/index.js';
import { EXTRACTIVE_VERSION } from '../../src/compaction/extractive.js';
import { queryTerms } from '../../src/text/fts-words.js';
import { ftsStem } from '../../src/text/fts-words.js';
import { sentences } from '../../src/text/sentences.js';
import { createTokenizer } from '../../src/tokens/tokenizer.js';
import type { Summarizer, SummaryRequest } from '../../src/contracts/types.js';
import { loadLocomo } from './datasets.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const only = args.has('only') ? new Set(args.get('only')!.split(',')) : null;
const show = Number(args.get('show') ?? 0);
// --misses: the names, numbers and dates most often left out, for reading.
const misses = args.has('misses') ? new Map<string, number>() : null;

const MONTHS = 'january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec';
const DAYS = 'monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|yesterday|today|tomorrow|tonight';
const DATE = new RegExp(`\\b(?:(?:last|next|this) (?:week|month|year|${DAYS})|(?:${MONTHS})\\.?(?: \\d{1,2}(?:st|nd|rd|th)?)?|\\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:${MONTHS})|${DAYS}|(?:19|20)\\d\\d|\\d{1,2}(?::\\d\\d)? ?(?:am|pm)|\\d{1,2}:\\d\\d)\\b`, 'gi');
const NUMBER = /\b\d+(?:[.,:]\d+)*\b/g;
const DECISION = /\b(?:decid\w*|decision|will|'ll|won't|going to|gonna|plan\w*|chose|choose|chosen|pick(?:ed)?|bought|buy(?:ing)?|book(?:ed)?|sign(?:ed)? up|enroll\w*|join(?:ed)?|adopt\w*|start(?:ed)?|quit|moved?|promis\w*|agree\w*|commit\w*|schedul\w*)\b/i;
// Capitalised words that are no names: pronouns, sentence openers that follow a comma, greetings, days and months
// (counted as dates).
const NOT_NAMES = new Set(`I I'm I've I'd I'll It's That's OK Oh Wow Yeah Yes No Hey Hi Thanks Thank Mom Dad ${MONTHS} ${DAYS}`.split(/[\s|]+/).map((w) => w.toLowerCase()));
const NAME = /(?<=[\p{L}\p{N},;:)'"’]\s+)\p{Lu}[\p{L}'’-]+/gu;

type Kind = 'names' | 'numbers' | 'dates' | 'decisions';
const KINDS: Kind[] = ['names', 'numbers', 'dates', 'decisions'];

function contentStems(text: string): Set<string> {
  return new Set(queryTerms(text, 1000).flatMap((w) => { const s = ftsStem(w); return s ? [s] : []; }));
}

/** A source's items of each kind: names and numbers as written, dates lower-cased, decisions as their content stems. */
function itemsOf(turns: { speaker: string; text: string }[]): { names: Set<string>; numbers: Set<string>; dates: Set<string>; decisions: Set<string>[] } {
  const names = new Set<string>();
  const numbers = new Set<string>();
  const dates = new Set<string>();
  const decisions: Set<string>[] = [];
  const speakers = [...new Set(turns.map((t) => t.speaker))];
  for (const t of turns) {
    if (t.speaker) names.add(t.speaker);
    for (const m of t.text.match(NAME) ?? []) {
      const w = m.replace(/['’]s$/u, '');
      // A speaker's short form ("Mel" for Melanie) names that speaker.
      if (w.length > 1 && !NOT_NAMES.has(w.toLowerCase())) names.add(speakers.find((sp) => sp.length > w.length && sp.startsWith(w)) ?? w);
    }
    // "may" and "march" in lower case are verbs.
    for (const m of t.text.match(DATE) ?? []) if (m !== 'may' && m !== 'march') dates.add(m.toLowerCase());
    const dated = t.text.replace(DATE, ' ');
    for (const m of dated.match(NUMBER) ?? []) numbers.add(m);
    for (const s of sentences(t.text.replace(/\s+/g, ' '))) {
      if (!DECISION.test(s)) continue;
      const stems = contentStems(s);
      if (stems.size >= 2) decisions.push(stems);
    }
  }
  return { names, numbers, dates, decisions };
}

function keeps(summary: string, source: ReturnType<typeof itemsOf>): Record<Kind, [number, number]> {
  const lower = summary.toLowerCase();
  const words = new Set(summary.match(/[\p{L}\p{N}'’-]+/gu) ?? []);
  const has = (w: string) => words.has(w) || words.has(`${w}'s`) || words.has(`${w}’s`);
  const stems = contentStems(summary);
  const decisionsKept = source.decisions.filter((d) => [...d].filter((s) => stems.has(s)).length * 2 >= d.size).length;
  if (misses) {
    for (const n of source.names) if (!has(n)) misses.set(`name ${n}`, (misses.get(`name ${n}`) ?? 0) + 1);
    for (const d of source.dates) if (!lower.includes(d)) misses.set(`date ${d}`, (misses.get(`date ${d}`) ?? 0) + 1);
  }
  return {
    names: [[...source.names].filter(has).length, source.names.size],
    numbers: [[...source.numbers].filter((n) => new RegExp(`(?<![\\d.,:])${n.replace(/[.]/g, '\\.')}(?![\\d])`).test(summary)).length, source.numbers.size],
    dates: [[...source.dates].filter((d) => lower.includes(d)).length, source.dates.size],
    decisions: [decisionsKept, source.decisions.length],
  };
}

const tokenizer = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
const extractive = extractiveSummarizer(tokenizer);
// The compactor's request per segment (its source ids), to read the target and time the summarizer.
// Every summary written (segments, roll-ups, the master, tag summaries): its tokens and target, per kind.
const byKind = new Map<string, { n: number; tokens: number; target: number; ms: number }>();
const requests = new Map<string, { target: number; ms: number }>();
const recorder: Summarizer = {
  name: 'extractive',
  version: EXTRACTIVE_VERSION,
  async summarize(request: SummaryRequest) {
    const t = performance.now();
    const r = await extractive.summarize(request);
    const k = byKind.get(request.kind) ?? { n: 0, tokens: 0, target: 0, ms: 0 };
    k.n++;
    k.ms += performance.now() - t;
    k.tokens += tokenizer.count(r.text);
    k.target += request.targetTokens;
    byKind.set(request.kind, k);
    if (request.kind === 'segment') requests.set(`${request.conversationId}|${request.items.map((i) => i.id).join(',')}`, { target: request.targetTokens, ms: performance.now() - t });
    return r;
  },
};

const sums: Record<Kind | 'overall', { share: number; n: number; kept: number; total: number }> = Object.fromEntries(
  [...KINDS, 'overall'].map((k) => [k, { share: 0, n: 0, kept: 0, total: 0 }])) as never;
let summaries = 0;
let over = 0;
let tokens = 0;
let targets = 0;
const times: number[] = [];
// Compaction passes' durations (each summarizes its segments, rolls up, folds tag summaries).
const passes: number[] = [];
let shown = 0;
const conversations = loadLocomo().filter((c) => !only || only.has(c.id));
for (const conv of conversations) {
  const memory = await createMemory({ contextWindow: 3000, embedder: false, summarizer: recorder });
  for (const batch of conv.batches) {
    const report = await memory.onTurnComplete({ conversationId: conv.id, messages: batch });
    for (const r of [...(report.compaction ? [report.compaction] : []), ...await memory.flush()]) passes.push(r.durationMs);
  }
  const turns = new Map((await memory.turns(conv.id)).map((t) => [t.id, t]));
  for (const s of await memory.summaries(conv.id, { kind: 'segment' })) {
    const source = s.sourceIds.map((id) => turns.get(id)!).filter((t) => !t.private).map((t) => ({ speaker: t.name ?? t.role, text: t.text }));
    const items = itemsOf(source);
    const k = keeps(s.text, items);
    let kept = 0;
    let total = 0;
    for (const kind of KINDS) {
      const [a, b] = k[kind];
      kept += a;
      total += b;
      if (b === 0) continue;
      sums[kind].share += a / b;
      sums[kind].n++;
      sums[kind].kept += a;
      sums[kind].total += b;
    }
    if (total > 0) {
      sums.overall.share += kept / total;
      sums.overall.n++;
      sums.overall.kept += kept;
      sums.overall.total += total;
    }
    const req = requests.get(`${conv.id}|${s.sourceIds.join(',')}`);
    summaries++;
    tokens += s.tokens;
    if (req) {
      targets += req.target;
      times.push(req.ms);
      if (s.tokens > req.target) over++;
    }
    if (shown < show) {
      shown++;
      console.log(`\n— ${s.id.slice(0, 12)} ${conv.id} turns ${s.firstSeq}–${s.lastSeq} · ${s.tokens}/${req?.target} tokens · ${KINDS.map((x) => `${x} ${k[x][0]}/${k[x][1]}`).join(' · ')}`);
      console.log(`  names ${[...items.names].join(', ')} | numbers ${[...items.numbers].join(', ')} | dates ${[...items.dates].join(', ')}`);
      console.log(s.text.split('\n').map((l) => `  ${l}`).join('\n'));
    }
  }
  await memory.close();
}

times.sort((a, b) => a - b);
const pct = (p: number) => (times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))] ?? 0).toFixed(2);
console.log(`\nSegment summaries' keep share · LoCoMo ${conversations.length} conversations · contextWindow 3000 · embeddings off · extractive v${EXTRACTIVE_VERSION}`);
console.log(`${summaries} segment summaries; tokens mean ${(tokens / summaries).toFixed(1)} vs target mean ${(targets / Math.max(1, times.length)).toFixed(1)}; over target ${over}; summarize p50 ${pct(50)} ms, p95 ${pct(95)} ms, max ${pct(100)} ms`);
console.log(`tokens per summary written, mean vs target: ${[...byKind].sort().map(([k, x]) => `${k} ${(x.tokens / x.n).toFixed(1)}/${(x.target / x.n).toFixed(1)} (n=${x.n})`).join(' · ')}`);
passes.sort((a, b) => a - b);
console.log(`compaction passes ${passes.length}: p50 ${passes[Math.floor(passes.length / 2)]} ms, p95 ${passes[Math.floor(passes.length * 0.95)]} ms, max ${passes.at(-1)} ms`);
console.log(`summarize time per kind, mean: ${[...byKind].sort().map(([k, x]) => `${k} ${(x.ms / x.n).toFixed(2)} ms`).join(' · ')}`);
console.log('kind        mean share  pooled (kept/total)   summaries with items');
for (const kind of [...KINDS, 'overall'] as const) {
  const x = sums[kind];
  console.log(`${kind.padEnd(11)} ${(x.share / Math.max(1, x.n)).toFixed(3).padStart(10)}  ${(x.kept / Math.max(1, x.total)).toFixed(3)} (${x.kept}/${x.total})`.padEnd(42) + `${x.n}`);
}
if (misses) console.log(`most often left out: ${[...misses].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 30).map(([k, n]) => `${k} ${n}`).join(' · ')}`);
