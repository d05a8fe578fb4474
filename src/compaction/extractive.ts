import { stemsOf } from '../assembly/passages.js';
import { sentences as sentencesOf } from '../text/sentences.js';
import type { Summarizer, SummaryRequest, SummaryResult, Tokenizer } from '../types.js';

/** Bumped whenever the selection changes, so older extractive summaries can be regenerated. */
export const EXTRACTIVE_VERSION = 1;

const MONTH = /\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\b|\b(mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(yesterday|tomorrow|today|tonight|next week|last week)\b/gi;
const NUMBER = /\b\d[\d,.:/-]*\b/g;
const DECISION = /\b(decid\w*|agree\w*|will|won't|going to|plan\w*|deadline|due|must|need to|should|todo|to-do|action item|remember|promis\w*|chose|choose|pick\w*|set up|fix\w*|book\w*|schedul\w*|buy|bought|sign\w* up|confirm\w*|cancel\w*|finally|because)\b/gi;
const PROPER = /(?<=\S\s+)\p{Lu}[\p{L}'-]+/gu;
// Sentences longer than this many words are trimmed (ellipsis) before they are weighed for the budget.
const MAX_WORDS = 40;

interface Sentence {
  speaker: string;
  item: number;
  pos: number;
  text: string;
  stems: Set<string>;
  score: number;
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

function count(re: RegExp, text: string): number {
  return text.match(re)?.length ?? 0;
}

/**
 * The offline summarizer: picks the sentences that carry names, numbers, dates, decisions and action items and the
 * words the segment keeps coming back to, trims them, and writes them in their original order under their
 * speakers, within the target length (counted with the model's tokenizer). Deterministic: same input, same summary.
 *
 * @example
 * const memory = await createMemory({ summarizer: 'extractive' }); // the default without an LLM
 */
export function extractiveSummarizer(tokenizer: Tokenizer): Summarizer {
  return {
    name: 'extractive',
    version: EXTRACTIVE_VERSION,
    async summarize(request: SummaryRequest): Promise<SummaryResult> {
      const sentences: Sentence[] = [];
      request.items.forEach((item, i) => {
        for (const line of lines(item.speaker, item.text)) {
          for (const segment of sentencesOf(line.text.replace(/\s+/g, ' '))) {
            const text = segment.trim();
            if (text.length < 2) continue;
            sentences.push({ speaker: line.speaker, item: i, pos: sentences.length, text: trim(text), stems: stemsOf(text), score: 0 });
          }
        }
      });
      if (sentences.length === 0) return { text: '' };
      // How many sentences use each word: the segment's recurring subjects.
      const df = new Map<string, number>();
      for (const s of sentences) for (const w of s.stems) df.set(w, (df.get(w) ?? 0) + 1);
      const tagStems = stemsOf(request.tags.join(' '));
      for (const s of sentences) {
        const words = s.text.split(/\s+/).length;
        let central = 0;
        for (const w of s.stems) central += Math.log(df.get(w)!) + (tagStems.has(w) ? 1 : 0);
        s.score = central / Math.sqrt(Math.max(4, words))
          + 1.5 * Math.min(3, count(NUMBER, s.text) + count(MONTH, s.text))
          + 1.2 * Math.min(3, count(PROPER, s.text))
          + 1.0 * Math.min(2, count(DECISION, s.text))
          - (words < 4 ? 2 : 0)
          - (s.text.endsWith('?') ? 0.5 : 0);
      }
      const ranked = [...sentences].sort((a, b) => b.score - a.score || a.pos - b.pos);
      const chosen = new Set<Sentence>();
      let used = 0;
      for (const s of ranked) {
        const cost = tokenizer.count(s.text) + 2;
        if (used + cost > request.targetTokens) continue;
        chosen.add(s);
        used += cost;
      }
      if (chosen.size === 0) chosen.add(ranked[0]!);
      // Original order; consecutive sentences of one speaker share a line.
      const out: string[] = [];
      let last = '\u0000';
      for (const s of sentences) {
        if (!chosen.has(s)) continue;
        if (s.speaker === last && out.length > 0) out[out.length - 1] += ` ${s.text}`;
        else out.push(s.speaker ? `${s.speaker}: ${s.text}` : s.text);
        last = s.speaker;
      }
      let text = out.join('\n');
      // A single over-long sentence: cut to the budget by words.
      while (tokenizer.count(text) > request.targetTokens && text.includes(' ')) text = `${text.slice(0, Math.floor(text.length * 0.8)).replace(/\s+\S*$/, '')} …`;
      return { text };
    },
  };
}
