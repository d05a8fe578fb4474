// The learned ranking: every candidate turn described by the same features (each channel's score and rank, its
// neighbours', role, length, position, speaker, time, question-word coverage), one linear scorer over them, and a
// softmax that turns scores into each turn's share of the probability that it is what the question asks about.
// The weights are data (ranking-weights.json): `npm run bench -- --only=ranking --write` trains them on the dev sets
// (tests/bench/train-ranking.ts), tests/bench/retrain.ts on your own labelled conversations.
import { PagewiseError } from '../contracts/errors.js';
export type { RankingWeights } from '../contracts/types-options.js';
import shipped from './ranking-weights.json' with { type: 'json' };

/** The features, in the order a row holds them. */
export const FEATURES = [
  // Reciprocal rank fusion's two terms (k = 60): equal weights on these alone rank as the textbook hybrid does.
  'bm25Rrf', 'vecRrf',
  // Scores: BM25 relative to the question's best; cosine (its gap to the question's best would add nothing: the
  // softmax over one question's candidates ignores what all of them share).
  'bm25', 'cos',
  // Tag overlap of the turn's unit, relative to the best.
  'tag',
  // The turns either side: their best BM25 and cosine, their question-word coverage.
  'nbBm25', 'nbCos', 'nbCoverage',
  // The turn itself: the user's, its length (log characters), a question, how recent (0 first, 1 last).
  'user', 'length', 'question', 'recency',
  // The question's own pointers: a speaker it names, the span of time it names, "at the start" / "lately".
  'speaker', 'inWindow', 'early', 'late',
  // The share of the question's words the turn holds; both channels agreeing.
  'coverage', 'both',
  // What the question asks for, met by the turn: a time ("when…?") and a date or time word; a count ("how many…?")
  // and a number; what the assistant said ("you suggested…") and an assistant turn.
  'whenDate', 'howMany', 'assistantAsked',
  // A later candidate says as much (as many of the question's words, a cosine as high): the value may have changed.
  'superseded',
] as const;

/** What the question asks for, by its words: a time, a count, something the assistant said. */
export interface Asks { when: boolean; count: boolean; assistant: boolean }

export function asksOf(question: string): Asks {
  const q = question.toLowerCase();
  return {
    when: /\b(when|what (year|month|day|date|time)|which (year|month|day|date)|how long (ago|before|after)|how long has|since when)\b/.test(q),
    count: /\bhow (many|much|often)\b|\bnumber of\b/.test(q),
    assistant: /\byou(?:'ve| have)? (said|told|mentioned|recommended|suggested|gave|provided|listed|shared|explained|wrote|described)\b|\byour (suggestion|recommendation|answer|advice|list|reply|response|explanation)s?\b|\b(did|do) you (say|tell|recommend|suggest|mention)\b/.test(q),
  };
}

/** A date or time word: a month, a weekday, a year, "yesterday", "last week", "ago", a clock time. */
export const DATE_WORDS = /\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|june?|july?|aug(ust)?|sep(t(ember)?)?|oct(ober)?|nov(ember)?|dec(ember)?|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|yesterday|today|tonight|tomorrow|last (week|month|year|night)|next (week|month|year)|ago|(19|20)\d\d|\d{1,2}(:\d\d)? ?(am|pm))\b/i;

export type Feature = (typeof FEATURES)[number];

/** Each feature's column in a row. */
export const COLUMN: ReadonlyMap<Feature, number> = new Map(FEATURES.map((f, i) => [f, i]));

const MODULE = 'ranking';

/** Checks a weights object (a retrained file, say) and returns it as a dense vector in FEATURES order. */
export function readWeights(value: unknown, path = 'ranking.weights'): Float64Array {
  const bad = (message: string): never => {
    throw new PagewiseError('INVALID_OPTIONS', MODULE, `${path} ${message} Retrain with tests/bench/retrain.ts (it writes this file), or leave it out for the shipped weights.`, { path });
  };
  if (typeof value !== 'object' || value === null) return bad('must be a ranking weights object ({ format: "pagewise-ranking/1", weights: { feature: number } }).');
  const v = value as Record<string, unknown>;
  if (v.format !== 'pagewise-ranking/1') return bad(`has format ${JSON.stringify(v.format)}; this version reads "pagewise-ranking/1".`);
  const w = v.weights;
  if (typeof w !== 'object' || w === null || Array.isArray(w)) return bad('has no weights object.');
  const out = new Float64Array(FEATURES.length);
  for (const [name, x] of Object.entries(w)) {
    const i = COLUMN.get(name as Feature);
    if (i === undefined) return bad(`names a feature this version does not compute: ${JSON.stringify(name)} (known: ${FEATURES.join(', ')}).`);
    if (typeof x !== 'number' || !Number.isFinite(x) || Math.abs(x) > 1e6) return bad(`gives ${name} a weight that is not a finite number within ±1e6.`);
    out[i] = x;
  }
  return out;
}

/** The weights trained on the dev sets, shipped with the library. */
export const SHIPPED_WEIGHTS: Float64Array = readWeights(shipped);

/**
 * Each candidate's probability under the softmax of its linear score: shares of one, comparable across candidates of
 * one question (what packing divides by tokens). Deterministic: the same rows give the same numbers.
 */
export function probabilities(rows: readonly Float64Array[], weights: Float64Array): Float64Array {
  const scores = new Float64Array(rows.length);
  let max = -Infinity;
  rows.forEach((r, i) => {
    let s = 0;
    for (let j = 0; j < weights.length; j++) s += weights[j]! * r[j]!;
    scores[i] = s;
    if (s > max) max = s;
  });
  let sum = 0;
  for (let i = 0; i < scores.length; i++) { scores[i] = Math.exp(scores[i]! - max); sum += scores[i]!; }
  for (let i = 0; i < scores.length; i++) scores[i] = scores[i]! / sum;
  return scores;
}
