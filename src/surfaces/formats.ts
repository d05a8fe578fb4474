// Conversation files pagewise can import (the CLI's `import` and `replay`, the bench): LoCoMo, LongMemEval and
// OpenAI-style JSONL chat logs, each as conversations of message batches with their questions, when the file has any.
// Every file is checked whole before anything is stored: its shape (a typed INVALID_ARGUMENT naming the field and
// what belongs there) and each message (as onTurnComplete would check it).
import { PagewiseError, isPagewiseError } from '../contracts/errors.js';
import type { ExportData } from '../contracts/types-data.js';
import type { ChatMessage } from '../contracts/types.js';
import { describe } from '../common/as-data.js';
import { depthOver } from '../common/depth.js';
import { validateMessage } from '../common/messages.js';

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

/** What an import file holds: pagewise's export (for memory.import()), or conversations to store batch by batch. */
export type ImportFile = { kind: 'pagewise'; data: ExportData } | { kind: 'conversations'; conversations: ImportedConversation[] };

/** The engine's message limits, to refuse a message before anything of the file is stored. */
export interface ImportLimits { maxMessageBytes?: number; maxAttachmentBytes?: number }

const MODULE = 'formats';
/** Deeper than any import format nests (LongMemEval 5 levels, pagewise's export under 10). */
export const MAX_IMPORT_DEPTH = 64;
const SHAPES = 'a LoCoMo conversation { speaker_a, session_1: [{ speaker, dia_id, text }], qa }, a LongMemEval array '
  + '[{ question_id, question, haystack_dates, haystack_sessions: [[{ role, content }]] }], OpenAI-style JSONL lines '
  + '{ "messages": [{ role, content }] }, or pagewise\'s export { format: "pagewise", version: 1, conversations }';
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const LOCOMO_CATEGORIES: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial' };

function bad(path: string, expected: string, got: unknown): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path} must be ${expected} (${got === undefined ? 'it is missing' : `got ${describe(got)}`}).`, { path });
}
const list = (v: unknown, path: string, expected: string): unknown[] => (Array.isArray(v) ? v : bad(path, expected, v));
const record = (v: unknown, path: string, expected: string): Record<string, unknown> =>
  (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : bad(path, expected, v));
const text = (v: unknown, path: string, expected = 'a string'): string => (typeof v === 'string' ? v : bad(path, expected, v));
/** A message checked as onTurnComplete will check it (without limits: the bench's files, stored by the engine). */
const message = (m: ChatMessage, path: string, l: ImportLimits = {}) => validateMessage(m, path, l.maxMessageBytes ?? Number.MAX_SAFE_INTEGER, l.maxAttachmentBytes);

function locomoDate(s: unknown, path: string): number {
  const m = /(\d+):(\d+)\s*(am|pm) on (\d+) (\w+),? (\d{4})/i.exec(text(s, path, 'a LoCoMo date such as "1:56 pm on 8 May, 2023"'));
  if (!m || !MONTHS.includes(m[5]!.toLowerCase())) bad(path, 'a LoCoMo date such as "1:56 pm on 8 May, 2023"', s);
  const hour = (Number(m[1]) % 12) + (m[3]!.toLowerCase() === 'pm' ? 12 : 0);
  return Date.UTC(Number(m[6]), MONTHS.indexOf(m[5]!.toLowerCase()), Number(m[4]), hour, Number(m[2]));
}

function locomoTurns(d: Record<string, unknown>, at: string, limits?: ImportLimits): ChatMessage[] {
  const a = text(d.speaker_a, `${at}speaker_a`, "the user's name");
  const turns: ChatMessage[] = [];
  for (let n = 1; d[`session_${n}`] !== undefined; n++) {
    const path = `${at}session_${n}`;
    const start = locomoDate(d[`session_${n}_date_time`], `${path}_date_time`);
    list(d[`session_${n}`], path, 'an array of turns { speaker, dia_id, text }').forEach((raw, i) => {
      const t = record(raw, `${path}[${i}]`, 'a turn { speaker, dia_id, text }');
      const speaker = text(t.speaker, `${path}[${i}].speaker`);
      const said = text(t.text, `${path}[${i}].text`);
      const caption = t.blip_caption === undefined ? '' : text(t.blip_caption, `${path}[${i}].blip_caption`);
      const content = caption ? `${said} [shares a photo: ${caption}]` : said;
      const id = text(t.dia_id, `${path}[${i}].dia_id`, 'a turn id such as "D1:3"');
      turns.push(message({ id, role: speaker === a ? 'user' : 'assistant', name: speaker, content, createdAt: new Date(start + i * 30_000).toISOString() }, `${path}[${i}]`, limits));
    });
  }
  return turns;
}

function locomoQuestions(value: unknown, at: string): ImportedQuestion[] {
  const qa = value === undefined ? [] : list(value, at, 'an array of questions { question, answer, evidence, category }');
  return qa.map((raw, i) => {
    const path = `${at}[${i}]`;
    const q = record(raw, path, 'a question { question, answer, evidence, category }');
    const evidence = q.evidence === undefined ? [] : list(q.evidence, `${path}.evidence`, 'an array of turn ids such as "D1:3"')
      .map((e, k) => text(e, `${path}.evidence[${k}]`, 'a turn id such as "D1:3"'));
    if (typeof q.category !== 'number') bad(`${path}.category`, 'a number (1 to 5)', q.category);
    return {
      question: text(q.question, `${path}.question`),
      answer: q.category === 5 || q.answer === undefined ? null : String(q.answer),
      evidence: evidence.flatMap((e) => e.split(/[;,\s]+/)).filter((e) => /^D\d+:\d+$/.test(e)),
      category: LOCOMO_CATEGORIES[q.category] ?? String(q.category),
    };
  });
}

/**
 * LoCoMo: speaker_a is the user, speaker_b the assistant; both by name. One batch per user+assistant pair. `at`: where
 * the conversation is in the file (`conversation.` when it is wrapped, its questions beside it).
 */
export function parseLocomo(data: unknown, id: string, limits?: ImportLimits, at = ''): ImportedConversation {
  const d = record(data, at.replace(/\.$/, '') || 'the file', 'a LoCoMo conversation { speaker_a, session_1: [...], qa }');
  const turns = locomoTurns(d, at, limits);
  const batches: ChatMessage[][] = [];
  for (let i = 0; i < turns.length;) {
    const end = turns[i]!.role === 'user' && turns[i + 1]?.role === 'assistant' ? i + 2 : i + 1;
    batches.push(turns.slice(i, end));
    i = end;
  }
  return { id, batches, questions: at === '' ? locomoQuestions(d.qa, 'qa') : [] };
}

function lmeDate(s: unknown, path: string): string {
  const expected = 'a LongMemEval date such as "2023/05/20 (Sat) 02:21"';
  const m = /(\d{4})\/(\d{2})\/(\d{2}) \(\w+\) (\d{2}):(\d{2})/.exec(text(s, path, expected));
  if (!m) bad(path, expected, s);
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:00Z`;
}

/** LongMemEval_S: each question has its own haystack; one batch per session, stamped with the session's date. */
export function parseLongMemEval(data: unknown, limits?: ImportLimits): ImportedConversation[] {
  return list(data, 'the file', 'a LongMemEval array of questions').map((raw, n) => {
    const at = `[${n}]`;
    const q = record(raw, at, 'a question { question_id, question, haystack_dates, haystack_sessions }');
    const questionId = text(q.question_id, `${at}.question_id`);
    const dates = list(q.haystack_dates, `${at}.haystack_dates`, 'an array of dates, one per session');
    const evidence: string[] = [];
    const batches = list(q.haystack_sessions, `${at}.haystack_sessions`, 'an array of sessions, each an array of { role, content }').map((s, k) => {
      const path = `${at}.haystack_sessions[${k}]`;
      const start = Date.parse(lmeDate(dates[k], `${at}.haystack_dates[${k}]`));
      return list(s, path, 'a session: an array of { role, content }').flatMap((rawTurn, i) => {
        const t = record(rawTurn, `${path}[${i}]`, 'a turn { role, content }');
        if (text(t.content, `${path}[${i}].content`).trim().length === 0) return [];
        const id = `s${k}:${i}`;
        if (t.has_answer === true) evidence.push(id);
        return [message({ id, role: t.role as ChatMessage['role'], content: t.content as string, createdAt: new Date(start + i * 30_000).toISOString() }, `${path}[${i}]`, limits)];
      });
    }).filter((b) => b.length > 0);
    const now = lmeDate(q.question_date, `${at}.question_date`);
    return {
      id: questionId,
      batches,
      questions: [{ question: text(q.question, `${at}.question`), answer: questionId.endsWith('_abs') ? null : String(q.answer), evidence, category: text(q.question_type, `${at}.question_type`), now }],
    };
  });
}

/** One OpenAI-style message as pagewise's: OpenAI's fields (`tool_calls`, `tool_call_id`, `name`); `developer` reads as `system`. */
function chatMessage(raw: unknown, path: string, limits?: ImportLimits): ChatMessage {
  const m = record(raw, path, 'a message { role, content }');
  const msg: ChatMessage = { role: (m.role === 'developer' ? 'system' : m.role) as ChatMessage['role'], content: (m.content ?? null) as ChatMessage['content'] };
  if (typeof m.name === 'string') msg.name = m.name;
  if (typeof m.tool_call_id === 'string') msg.toolCallId = m.tool_call_id;
  if (m.tool_calls !== undefined) {
    msg.toolCalls = list(m.tool_calls, `${path}.tool_calls`, 'an array of { id, function: { name, arguments } }').map((c, i) => {
      const call = record(c, `${path}.tool_calls[${i}]`, 'a tool call { id, function: { name, arguments } }');
      const fn = record(call.function, `${path}.tool_calls[${i}].function`, '{ name, arguments }');
      return { id: call.id as string, type: 'function', function: { name: fn.name as string, arguments: fn.arguments as string } };
    });
  }
  if (typeof m.id === 'string') msg.id = m.id;
  if (typeof m.created_at === 'string' || typeof m.createdAt === 'string') msg.createdAt = (m.created_at ?? m.createdAt) as string;
  return message(msg, path, limits);
}

/**
 * OpenAI-style JSONL chat logs: one conversation a line, `{ "messages": [...] }` (the fine-tuning format; an `id` or
 * `conversation_id` field names it, else `<name>-<line>`), stored as one batch.
 */
export function parseChatJsonl(source: string, name: string, limits?: ImportLimits): ImportedConversation[] {
  const out: ImportedConversation[] = [];
  source.split(/\r?\n/).forEach((line, n) => {
    if (line.trim() === '') return;
    const at = `line ${n + 1}`;
    const row = record(parseJson(line, at), at, 'a JSON object { "messages": [{ role, content }] }');
    const messages = list(row.messages, `${at}: messages`, 'an array of messages { role, content }').map((m, i) => chatMessage(m, `${at}: messages[${i}]`, limits));
    const id = typeof row.conversation_id === 'string' ? row.conversation_id : typeof row.id === 'string' ? row.id : `${name}-${n + 1}`;
    out.push({ id, batches: [messages], questions: [] });
  });
  return out;
}

/** JSON that nests no deeper than an import format does (what walks it next may recurse). */
function parseJson(source: string, at: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(source);
  } catch (e) {
    throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${at} is not JSON (${(e as Error).message}): pass ${SHAPES}.`, { cause: e });
  }
  if (depthOver(value, MAX_IMPORT_DEPTH)) {
    throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${at} nests arrays or objects more than ${MAX_IMPORT_DEPTH} levels deep, which no import format does: pass ${SHAPES}.`);
  }
  return value;
}

/** Which format a file's text is in: pagewise's export, LoCoMo (an object with sessions), LongMemEval (an array), JSONL. */
function readFormat(source: string, name: string, limits?: ImportLimits): ImportFile {
  const trimmed = source.trimStart();
  if (trimmed.startsWith('[')) return { kind: 'conversations', conversations: parseLongMemEval(parseJson(source, 'the file'), limits) };
  if (trimmed.startsWith('{')) {
    let whole: unknown;
    try {
      whole = parseJson(source, 'the file');
    } catch (e) {
      // Several lines of JSON: a JSONL file (the error of a single-line one stands).
      if (isPagewiseError(e) && /\n\s*\{/.test(trimmed)) return { kind: 'conversations', conversations: parseChatJsonl(source, name, limits) };
      throw e;
    }
    const d = whole as Record<string, unknown>;
    if (d.format === 'pagewise') return { kind: 'pagewise', data: whole as ExportData };
    if (d.session_1 !== undefined) return { kind: 'conversations', conversations: [parseLocomo(d, name, limits)] };
    if (d.conversation !== undefined) {
      const id = typeof d.sample_id === 'string' ? d.sample_id : name;
      return { kind: 'conversations', conversations: [{ ...parseLocomo(d.conversation, id, limits, 'conversation.'), questions: locomoQuestions(d.qa, 'qa') }] };
    }
    if (d.messages !== undefined) return { kind: 'conversations', conversations: parseChatJsonl(source.replace(/\n/g, ' '), name, limits) };
  }
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `the file is none of the formats pagewise imports: pass ${SHAPES}.`);
}

/**
 * An import file's text, checked whole before anything of it is stored: pagewise's export (for memory.import()), or
 * the conversations of a LoCoMo, LongMemEval or JSONL file, each message checked as onTurnComplete will check it.
 * Errors are PagewiseErrors that name `file` and the field; a conversation the file does not name is named after it.
 *
 * @example
 * const file = readImportFile(readFileSync('chats.jsonl', 'utf8'), 'chats.jsonl', { maxMessageBytes: 65536 });
 * if (file.kind === 'conversations') for (const c of file.conversations) for (const messages of c.batches) await memory.onTurnComplete({ conversationId: c.id, messages });
 */
export function readImportFile(source: string, file: string, limits?: ImportLimits): ImportFile {
  try {
    return readFormat(source, file.replace(/^.*[\\/]/, '').replace(/\.[^.]+$/, ''), limits);
  } catch (e) {
    if (!isPagewiseError(e)) throw e;
    throw new PagewiseError(e.code, MODULE, `${file}: ${e.message.replace(/^\[pagewise\] \[[^\]]*\] /, '')}`, { cause: e, ...(e.path !== undefined ? { path: e.path } : {}) });
  }
}

/** The conversations of a LoCoMo, LongMemEval or JSONL file (pagewise's export goes to memory.import()). */
export function parseConversationFile(source: string, name: string, limits?: ImportLimits): ImportedConversation[] {
  const file = readFormat(source, name, limits);
  if (file.kind === 'pagewise') throw new PagewiseError('INVALID_ARGUMENT', MODULE, "the file is pagewise's export, which memory.import() restores; this reads LoCoMo, LongMemEval and JSONL chat files.");
  return file.conversations;
}
