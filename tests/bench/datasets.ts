import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ChatMessage } from '../../src/types.js';
import { type ImportedConversation, type ImportedQuestion, parseLocomo, parseLongMemEval } from '../../src/formats.js';

/** ../shared/data, beside the repository (CI clones it there too). */
export const DATA = resolve(import.meta.dirname, '../../../shared/data');

/** The bench's names for the import formats' types (src/formats.ts). */
export type BenchQuestion = ImportedQuestion;
export type BenchConversation = ImportedConversation;

/** LoCoMo (../shared/data/locomo/*.json), one conversation a file. */
export function loadLocomo(): BenchConversation[] {
  const dir = resolve(DATA, 'locomo');
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((file) => parseLocomo(JSON.parse(readFileSync(resolve(dir, file), 'utf8')), file.replace('.json', '')));
}

/** LongMemEval_S dev (../shared/data/longmemeval): each question with its own haystack. */
export function loadLongMemEval(): BenchConversation[] {
  return parseLongMemEval(JSON.parse(readFileSync(resolve(DATA, 'longmemeval/longmemeval_s_dev60.json'), 'utf8')));
}

/**
 * The adversarial conversation written here (tests/bench/data/adversarial.json): 120 turns in four domains that share
 * their words on purpose, with probes for paraphrase, shared words, broad, "the very beginning" and changed facts.
 * Written after the retrieval rules were, by someone who did not read them; asked the day after its last turn.
 */
export function loadAdversarial(): BenchConversation[] {
  const d = JSON.parse(readFileSync(resolve(import.meta.dirname, 'data/adversarial.json'), 'utf8')) as {
    id: string; turns: ChatMessage[]; questions: (BenchQuestion & { answer: string | null })[];
  };
  const batches: ChatMessage[][] = [];
  for (let i = 0; i < d.turns.length; i += 2) batches.push(d.turns.slice(i, i + 2));
  const now = new Date(Date.parse(d.turns.at(-1)!.createdAt!) + 86_400_000).toISOString();
  return [{ id: d.id, batches, questions: d.questions.map((q) => ({ ...q, now })) }];
}
