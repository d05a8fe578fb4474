// Conversation files pagewise can import (the CLI's `import` and `replay`, the bench): LoCoMo, LongMemEval and
// OpenAI-style JSONL chat logs, each as conversations of message batches with their questions, when the file has any.
import type { ChatMessage } from '../contracts/types.js';

/** A question of a benchmark file, with the ids of the turns that answer it. */
export interface ImportedQuestion {
  question: string;
  answer: string | null;
  /** Caller ids of the evidence turns. */
  evidence: string[];
  category: string;
  now?: string;
  /** Broad questions: the conversation's parts (each a list of turn ids); scored by the share of parts recalled. */
  groups?: string[][];
}

/** One conversation: calls to onTurnComplete in order (a session, or a pair), and its questions. */
export interface ImportedConversation {
  id: string;
  batches: ChatMessage[][];
  questions: ImportedQuestion[];
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
export function parseLocomo(data: unknown, id: string): ImportedConversation {
  const d = data as Record<string, unknown>;
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
    return { id, batches, questions };
}

function lmeDate(s: string): string {
  const m = /(\d{4})\/(\d{2})\/(\d{2}) \(\w+\) (\d{2}):(\d{2})/.exec(s);
  if (!m) throw new Error(`unparsed LongMemEval date ${s}`);
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:00Z`;
}

/** LongMemEval_S: each question has its own haystack; one batch per session, stamped with the session's date. */
export function parseLongMemEval(data: unknown): ImportedConversation[] {
  const rows = data as {
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
 * OpenAI-style JSONL chat logs: one conversation a line, `{ "messages": [...] }` (the fine-tuning format; an `id` or
 * `conversation_id` field names it, else `<name>-<line>`), stored as one batch. Messages take OpenAI's fields
 * (`tool_calls`, `tool_call_id`, `name`); `developer` reads as `system`.
 */
export function parseChatJsonl(text: string, name: string): ImportedConversation[] {
  const out: ImportedConversation[] = [];
  text.split(/\r?\n/).forEach((line, n) => {
    if (line.trim() === '') return;
    let row: { id?: unknown; conversation_id?: unknown; messages?: unknown };
    try {
      row = JSON.parse(line) as typeof row;
    } catch (e) {
      throw new Error(`line ${n + 1}: not JSON (${(e as Error).message})`);
    }
    if (!Array.isArray(row.messages)) throw new Error(`line ${n + 1}: no "messages" array`);
    const id = typeof row.conversation_id === 'string' ? row.conversation_id : typeof row.id === 'string' ? row.id : `${name}-${n + 1}`;
    const messages = (row.messages as Record<string, unknown>[]).map((m) => {
      const msg: ChatMessage = { role: (m.role === 'developer' ? 'system' : m.role) as ChatMessage['role'], content: (m.content ?? null) as ChatMessage['content'] };
      if (typeof m.name === 'string') msg.name = m.name;
      if (typeof m.tool_call_id === 'string') msg.toolCallId = m.tool_call_id;
      if (Array.isArray(m.tool_calls)) msg.toolCalls = (m.tool_calls as { id: string; function: { name: string; arguments: string } }[]).map((c) => ({ id: c.id, type: 'function', function: { name: c.function?.name, arguments: c.function?.arguments } }));
      if (typeof m.id === 'string') msg.id = m.id;
      if (typeof m.created_at === 'string' || typeof m.createdAt === 'string') msg.createdAt = (m.created_at ?? m.createdAt) as string;
      return msg;
    });
    out.push({ id, batches: [messages], questions: [] });
  });
  return out;
}

/** Which format a file's text is in: LoCoMo (an object with sessions), LongMemEval (an array of haystacks), JSONL. */
export function parseConversationFile(text: string, name: string): ImportedConversation[] {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('[')) return parseLongMemEval(JSON.parse(text));
  if (trimmed.startsWith('{')) {
    let whole: unknown;
    try { whole = JSON.parse(text); } catch { return parseChatJsonl(text, name); }
    const d = whole as Record<string, unknown>;
    if (Array.isArray(d.session_1)) return [parseLocomo(d, name)];
    if (d.conversation && typeof d.conversation === 'object' && Array.isArray((d.conversation as Record<string, unknown>).session_1)) {
      return [parseLocomo({ ...(d.conversation as object), qa: d.qa ?? [] }, typeof d.sample_id === 'string' ? d.sample_id : name)];
    }
    if (Array.isArray(d.messages)) return parseChatJsonl(text.replace(/\n/g, ' '), name);
  }
  throw new Error('not a LoCoMo, LongMemEval or JSONL chat file');
}
