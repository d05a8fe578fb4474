import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ChatMessage } from '../../src/types.js';

/** ../shared/data, beside the repository (CI clones it there too). */
export const DATA = resolve(import.meta.dirname, '../../../shared/data');

export interface BenchQuestion {
  question: string;
  answer: string | null;
  /** Caller ids of the evidence turns. */
  evidence: string[];
  category: string;
  now?: string;
  /** Broad questions: the conversation's parts (each a list of turn ids); scored by the share of parts recalled. */
  groups?: string[][];
}

/** One conversation replayed as turns (caller ids are the dataset's turn ids) with its questions. */
export interface BenchConversation {
  id: string;
  /** Calls to onTurnComplete, in order (a session, or a pair). */
  batches: ChatMessage[][];
  questions: BenchQuestion[];
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const LOCOMO_CATEGORIES: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial' };

function locomoDate(s: string): number {
  const m = /(\d+):(\d+)\s*(am|pm) on (\d+) (\w+),? (\d{4})/i.exec(s);
  if (!m) throw new Error(`unparsed LoCoMo date ${s}`);
  const hour = (Number(m[1]) % 12) + (m[3]!.toLowerCase() === 'pm' ? 12 : 0);
  return Date.UTC(Number(m[6]), MONTHS.indexOf(m[5]!.toLowerCase()), Number(m[4]), hour, Number(m[2]));
}

/** LoCoMo: speaker_a is the user, speaker_b the assistant; both by name. One batch per user+assistant pair. */
export function loadLocomo(): BenchConversation[] {
  const dir = resolve(DATA, 'locomo');
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((file) => {
    const d = JSON.parse(readFileSync(resolve(dir, file), 'utf8')) as Record<string, unknown>;
    const a = d.speaker_a as string;
    const turns: ChatMessage[] = [];
    for (let n = 1; Array.isArray(d[`session_${n}`]); n++) {
      const start = locomoDate(d[`session_${n}_date_time`] as string);
      (d[`session_${n}`] as { speaker: string; dia_id: string; text: string; blip_caption?: string }[]).forEach((t, i) => {
        const text = t.blip_caption ? `${t.text} [shares a photo: ${t.blip_caption}]` : t.text;
        turns.push({ id: t.dia_id, role: t.speaker === a ? 'user' : 'assistant', name: t.speaker, content: text, createdAt: new Date(start + i * 30_000).toISOString() });
      });
    }
    const batches: ChatMessage[][] = [];
    for (let i = 0; i < turns.length;) {
      const end = turns[i]!.role === 'user' && turns[i + 1]?.role === 'assistant' ? i + 2 : i + 1;
      batches.push(turns.slice(i, end));
      i = end;
    }
    const questions = (d.qa as { question: string; answer?: unknown; evidence: string[]; category: number }[]).map((q) => ({
      question: q.question,
      answer: q.category === 5 || q.answer === undefined ? null : String(q.answer),
      evidence: q.evidence.flatMap((e) => e.split(/[;,\s]+/)).filter((e) => /^D\d+:\d+$/.test(e)),
      category: LOCOMO_CATEGORIES[q.category] ?? String(q.category),
    }));
    return { id: file.replace('.json', ''), batches, questions };
  });
}

function lmeDate(s: string): string {
  const m = /(\d{4})\/(\d{2})\/(\d{2}) \(\w+\) (\d{2}):(\d{2})/.exec(s);
  if (!m) throw new Error(`unparsed LongMemEval date ${s}`);
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:00Z`;
}

/** LongMemEval_S: each question has its own haystack; one batch per session, stamped with the session's date. */
export function loadLongMemEval(): BenchConversation[] {
  const rows = JSON.parse(readFileSync(resolve(DATA, 'longmemeval/longmemeval_s_dev60.json'), 'utf8')) as {
    question_id: string; question_type: string; question: string; answer: unknown; question_date: string;
    haystack_dates: string[]; haystack_sessions: { role: 'user' | 'assistant'; content: string; has_answer?: boolean }[][];
  }[];
  return rows.map((q) => {
    const evidence: string[] = [];
    const batches = q.haystack_sessions.map((session, s) => {
      const start = Date.parse(lmeDate(q.haystack_dates[s]!));
      return session.filter((t) => t.content.trim().length > 0).map((t, i) => {
        const id = `s${s}:${i}`;
        if (t.has_answer) evidence.push(id);
        return { id, role: t.role, content: t.content, createdAt: new Date(start + i * 30_000).toISOString() } as ChatMessage;
      });
    }).filter((b) => b.length > 0);
    const abstain = q.question_id.endsWith('_abs');
    return {
      id: q.question_id,
      batches,
      questions: [{ question: q.question, answer: abstain ? null : String(q.answer), evidence, category: q.question_type, now: lmeDate(q.question_date) }],
    };
  });
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
