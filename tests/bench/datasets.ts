import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ChatMessage } from '../../src/contracts/types.js';
import { type ImportedConversation, type ImportedQuestion, parseLocomo, parseLongMemEval } from '../../src/surfaces/formats.js';

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

const REALTALK_CATEGORIES: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain' };

/** REALTALK's `30.12.2023, 00:32:20`. */
function realtalkDate(s: string): number {
  const m = /(\d{2})\.(\d{2})\.(\d{4}), (\d{2}):(\d{2}):(\d{2})/.exec(s);
  if (!m) throw new Error(`unparsed REALTALK date ${s}`);
  return Date.UTC(Number(m[3]), Number(m[2]) - 1, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
}

/**
 * REALTALK (../shared/data/realtalk/*.json): real messaging chats between two people over three weeks. The first
 * speaker is the user, the other the assistant, both by name; one batch per user run and the reply run after it;
 * photos as their caption. Evidence ids are cleaned (`D20:17.`) and those naming no message dropped; a question left
 * with none is not asked. Asked the day after the last message.
 */
export function loadRealtalk(): BenchConversation[] {
  const dir = resolve(DATA, 'realtalk');
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((file) => {
    const d = JSON.parse(readFileSync(resolve(dir, file), 'utf8')) as Record<string, unknown>;
    const first = (d.name as { speaker_1: string }).speaker_1;
    const turns: ChatMessage[] = [];
    for (const [key, value] of Object.entries(d)) {
      if (!/^session_\d+$/.test(key) || !Array.isArray(value)) continue;
      for (const m of value as { clean_text: string; speaker: string; date_time: string; dia_id: string; img_file?: string[] }[]) {
        turns.push({ id: m.dia_id, role: m.speaker === first ? 'user' : 'assistant', name: m.speaker, content: m.clean_text || (m.img_file?.length ? '[shares a photo]' : '…'), createdAt: new Date(realtalkDate(m.date_time)).toISOString() });
      }
    }
    turns.sort((a, b) => Date.parse(a.createdAt!) - Date.parse(b.createdAt!));
    const batches: ChatMessage[][] = [];
    for (let i = 0; i < turns.length;) {
      let end = i;
      while (end < turns.length && turns[end]!.role === turns[i]!.role) end++;
      if (turns[i]!.role === 'user') while (end < turns.length && turns[end]!.role === 'assistant') end++;
      batches.push(turns.slice(i, end));
      i = end;
    }
    const known = new Set(turns.map((t) => t.id));
    const now = new Date(Date.parse(turns.at(-1)!.createdAt!) + 86_400_000).toISOString();
    const questions = (d.qa as { question: string; answer?: unknown; evidence?: string[]; category: number }[]).map((q) => ({
      question: q.question,
      answer: q.answer === undefined ? null : String(q.answer),
      evidence: [...new Set((q.evidence ?? []).map((e) => e.trim().replace(/\.$/, '')).filter((e) => known.has(e)))],
      category: REALTALK_CATEGORIES[q.category] ?? String(q.category),
      now,
    })).filter((q) => q.evidence.length > 0);
    return { id: file.replace('.json', ''), batches, questions };
  });
}
