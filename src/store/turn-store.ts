import type { ChatMessage, ConversationInfo, Role, SqlValue, Statement, StorageDriver, StorageLimits, StoredTurn } from '../contracts/types.js';
import { CACHED_CONVERSATIONS, Lru } from '../common/cache.js';
import { inListSize, limitsOf } from '../storage/limits.js';
import { chunks, inChunks, placeholders } from './in-lists.js';
import { attachmentRefStatement, pieceSize, putAttachmentStatements, type NewAttachment } from './attachment-store.js';
import { NEXT_ORD, NEXT_ROWID, nextOrdParams } from './order.js';
import type { Place } from './tree.js';

/** A turn on the conversation's first branch. */
const FIRST_BRANCH: Place = { branch: '', forkAfter: null, forkBranch: null, forkOrd: null };

/** Where append writes: the branch (default: the first), the first seq (default: after the path), statements to run first in its transaction. */
export interface AppendAt {
  place?: Place;
  base?: number;
  before?: Statement[];
}

export { NEXT_ORD, NEXT_ROWID } from './order.js';
export { turnRowBytes, turnRowError } from './turn-rows.js';
import { turnRowError } from './turn-rows.js';
import { turnWords } from './turn-words.js';

// The IN-list helpers lived here first: other stores import them from this module.
export { IN_CHUNK, chunks, inChunks, placeholders } from './in-lists.js';

/** A stored turn with its row id (internal: the FTS index and derived tables key on it). */
export interface TurnRecord extends StoredTurn {
  rowid: number;
  createdMs: number;
}

/** A validated message ready to append, with what the engine derived from it. */
export interface NewTurn {
  /** As stored: attachments by id (`storedContent`). */
  message: ChatMessage;
  /** Attachments whose bytes came with the message (stored once: a repeat is ignored). */
  attachments?: readonly NewAttachment[];
  /** Every attachment id the message refers to. */
  refs?: readonly string[];
  id: string;
  text: string;
  contentHash: string;
  createdAt: string;
  createdMs: number;
  tokens: number;
  /** Its branch when not the append's (an import writes several branches at once). */
  place?: Place;
}

/** A turn's row as SQLite gives it. */
export interface TurnRow {
  [key: string]: SqlValue;
  rowid: number;
  conversation_id: string;
  seq: number;
  id: string;
  role: string;
  name: string | null;
  content: string;
  tool_calls: string | null;
  tool_call_id: string | null;
  created_at: string;
  created_ms: number;
  content_hash: string;
  text: string;
  private: number;
}

const TURN_COLUMNS = 'rowid, conversation_id, seq, id, role, name, content, tool_calls, tool_call_id, created_at, created_ms, content_hash, text, private';

function toRecord(r: TurnRow): TurnRecord {
  const turn: TurnRecord = {
    rowid: Number(r.rowid),
    id: r.id,
    conversationId: r.conversation_id,
    seq: Number(r.seq),
    role: r.role as Role,
    content: JSON.parse(r.content) as StoredTurn['content'],
    createdAt: r.created_at,
    createdMs: Number(r.created_ms),
    text: r.text,
    contentHash: r.content_hash,
  };
  if (r.name !== null) turn.name = r.name;
  if (r.tool_calls !== null) turn.toolCalls = JSON.parse(r.tool_calls) as StoredTurn['toolCalls'];
  if (r.tool_call_id !== null) turn.toolCallId = r.tool_call_id;
  if (Number(r.private) === 1) turn.private = true;
  return turn;
}

/** A stored turn as the public API shows it (no internal row ids). */
export function publicTurn(t: TurnRecord): StoredTurn {
  const { rowid: _rowid, createdMs: _ms, ...rest } = t;
  return rest;
}

/** The message a stored turn was, to send to the model again. */
export function turnMessage(t: StoredTurn): ChatMessage {
  const m: ChatMessage = { id: t.id, role: t.role, content: t.content, createdAt: t.createdAt };
  if (t.name !== undefined) m.name = t.name;
  if (t.toolCalls !== undefined) m.toolCalls = t.toolCalls;
  if (t.toolCallId !== undefined) m.toolCallId = t.toolCallId;
  return m;
}

type ConversationRow = { id: string; created_at: string; updated_at: string; turns: number };

function conversationInfo(r: ConversationRow): ConversationInfo {
  return { id: r.id, turns: Number(r.turns), createdAt: r.created_at, updatedAt: r.updated_at };
}

/**
 * Turn count and speaker names of the most recently used conversations, kept current by append: every question
 * needs them. Seqs run from 0 in append order, so MAX(seq) + 1 (one index seek) bounds them — after a forget it can
 * be more than the turns stored (forget leaves gaps), so what callers are told is COUNT(*) instead; the speakers are
 * read once per conversation (a scan), only when asked for. Conversations without turns are not kept (unknown ids
 * cost nothing), and the cache is bounded.
 */
function createConversationFacts(driver: StorageDriver) {
  const facts = new Lru<string, { turns: number; speakers: Set<string> | null }>(CACHED_CONVERSATIONS);
  return {
    async of(conversationId: string) {
      let f = facts.get(conversationId);
      if (!f) {
        const count = await driver.query<{ n: number }>('SELECT COALESCE(MAX(seq), -1) + 1 AS n FROM turns WHERE conversation_id = ? AND seq >= 0', [conversationId]);
        f = { turns: Number(count[0]?.n ?? 0), speakers: null };
        if (f.turns > 0) facts.set(conversationId, f);
      }
      return f;
    },

    forget(conversationId: string): void {
      facts.delete(conversationId);
    },

    /** Keeps a conversation's facts current after append wrote `turns` from seq `base`. */
    appended(conversationId: string, base: number, turns: readonly NewTurn[]): void {
      const speakers = facts.get(conversationId)?.speakers ?? null;
      for (const t of turns) if (t.message.name !== undefined) speakers?.add(t.message.name);
      facts.set(conversationId, { turns: base + turns.length, speakers });
    },
  };
}

type ConversationFacts = ReturnType<typeof createConversationFacts>;

/** Conversations: their rows, turn counts and speakers. */
function createConversations(driver: StorageDriver, facts: ConversationFacts) {
  // What callers are told is the turns stored (a forget leaves gaps in seq, so not MAX(seq) + 1).
  return {
    async conversation(id: string): Promise<ConversationInfo | null> {
      const rows = await driver.query<ConversationRow>(
        `SELECT c.id, c.created_at, c.updated_at, (SELECT COUNT(*) FROM turns t WHERE t.conversation_id = c.id AND t.seq >= 0) AS turns
         FROM conversations c WHERE c.id = ?`, [id]);
      const r = rows[0];
      return r ? conversationInfo(r) : null;
    },

    async conversations(): Promise<ConversationInfo[]> {
      const rows = await driver.query<ConversationRow>(
        `SELECT c.id, c.created_at, c.updated_at, (SELECT COUNT(*) FROM turns t WHERE t.conversation_id = c.id AND t.seq >= 0) AS turns
         FROM conversations c ORDER BY c.updated_at DESC, c.id`);
      return rows.map(conversationInfo);
    },

    async turnCount(conversationId: string): Promise<number> {
      return (await facts.of(conversationId)).turns;
    },

    /** Speaker names of a conversation (as stored), for query parsing. */
    async speakers(conversationId: string): Promise<string[]> {
      const f = await facts.of(conversationId);
      if (f.turns === 0) return [];
      if (f.speakers === null) {
        const names = await driver.query<{ name: string }>('SELECT DISTINCT name FROM turns WHERE conversation_id = ? AND seq >= 0 AND name IS NOT NULL', [conversationId]);
        f.speakers = new Set(names.map((r) => r.name));
      }
      return [...f.speakers];
    },

    /** Drops what is cached of a conversation (its turns were removed or added outside append()). */
    uncache(conversationId: string): void {
      facts.forget(conversationId);
    },
  };
}

/** Turns read back as records, by position, by key or by time; `per` values per IN list at most. */
function createTurnReads(driver: StorageDriver, per: number) {
  const selectTurns = async (where: string, params: SqlValue[]): Promise<TurnRecord[]> =>
    (await driver.query<TurnRow>(`SELECT ${TURN_COLUMNS} FROM turns WHERE ${where}`, params)).map(toRecord);
  return {
    /** Turns in order of `seq`, from `fromSeq` (inclusive), at most `limit`. */
    range(conversationId: string, fromSeq: number, limit: number): Promise<TurnRecord[]> {
      return selectTurns('conversation_id = ? AND seq >= ? ORDER BY seq LIMIT ?', [conversationId, fromSeq, limit]);
    },

    /** The newest turns older than `beforeSeq`, newest first. */
    before(conversationId: string, beforeSeq: number, limit: number): Promise<TurnRecord[]> {
      return selectTurns('conversation_id = ? AND seq >= 0 AND seq < ? ORDER BY seq DESC LIMIT ?', [conversationId, beforeSeq, limit]);
    },

    async bySeqs(conversationId: string, seqs: readonly number[]): Promise<TurnRecord[]> {
      const rows = await inChunks(seqs, (chunk) => selectTurns(`conversation_id = ? AND seq IN (${placeholders(chunk.length)}) ORDER BY seq`, [conversationId, ...chunk]), per);
      return seqs.length > per ? rows.sort((a, b) => a.seq - b.seq) : rows;
    },

    byIds(conversationId: string, ids: readonly string[]): Promise<TurnRecord[]> {
      return inChunks(ids, (chunk) => selectTurns(`conversation_id = ? AND id IN (${placeholders(chunk.length)})`, [conversationId, ...chunk]), per);
    },

    async byHashes(conversationId: string, hashes: readonly string[]): Promise<TurnRecord[]> {
      const rows = await inChunks(hashes, (chunk) => selectTurns(`conversation_id = ? AND seq >= 0 AND content_hash IN (${placeholders(chunk.length)}) ORDER BY seq`, [conversationId, ...chunk]), per);
      return hashes.length > per ? rows.sort((a, b) => a.seq - b.seq) : rows;
    },

    /** Seqs of turns written in `[fromMs, toMs)`, earliest first. */
    async inWindow(conversationId: string, fromMs: number, toMs: number, limit: number): Promise<number[]> {
      const rows = await driver.query<{ seq: number }>(
        'SELECT seq FROM turns WHERE conversation_id = ? AND created_ms >= ? AND created_ms < ? AND seq >= 0 ORDER BY created_ms, seq LIMIT ?',
        [conversationId, fromMs, toMs, limit]);
      return rows.map((r) => Number(r.seq));
    },
  };
}

/** What is derived from turns and kept beside them: the full-text index and the cached token counts. */
function createTurnIndex(driver: StorageDriver, per: number) {
  return {
    /** BM25 over turn text and speaker names; higher `score` is better. (`+t.seq`: the index on seq must not drive the plan, or MATCH runs once per turn.) */
    async search(conversationId: string, match: string, limit: number): Promise<{ seq: number; score: number }[]> {
      const rows = await driver.query<{ seq: number; score: number }>(
        `SELECT t.seq AS seq, -bm25(turns_fts, 1.0, 0.5) AS score
         FROM turns_fts JOIN turns t ON t.rowid = turns_fts.rowid
         WHERE turns_fts MATCH ? AND t.conversation_id = ? AND +t.seq >= 0
         ORDER BY bm25(turns_fts, 1.0, 0.5) LIMIT ?`, [match, conversationId, limit]);
      return rows.map((r) => ({ seq: Number(r.seq), score: Number(r.score) }));
    },

    /** BM25 over the turns off the current branch (branches the conversation left), best first. */
    async searchOther(conversationId: string, match: string, limit: number): Promise<TurnRecord[]> {
      const rows = await driver.query<TurnRow>(
        `SELECT ${TURN_COLUMNS.split(', ').map((c) => `t.${c}`).join(', ')} FROM turns_fts JOIN turns t ON t.rowid = turns_fts.rowid
         WHERE turns_fts MATCH ? AND t.conversation_id = ? AND +t.seq < 0 ORDER BY bm25(turns_fts, 1.0, 0.5) LIMIT ?`, [match, conversationId, limit]);
      return rows.map(toRecord);
    },

    /** How many turns (of every conversation) hold each index token; absent: none. */
    async tokenDocs(tokens: readonly string[]): Promise<Map<string, number>> {
      const out = new Map<string, number>();
      // One lookup per token: fts5vocab seeks on `term = ?` but scans the whole vocabulary for an IN list.
      for (const token of new Set(tokens)) {
        const rows = await driver.query<{ doc: number }>('SELECT doc FROM turns_fts_vocab WHERE term = ?', [token]);
        if (rows[0]) out.set(token, Number(rows[0].doc));
      }
      return out;
    },

    /** Turns stored in all conversations (turns are never deleted, so the last row id counts them). */
    async indexedTurns(): Promise<number> {
      const rows = await driver.query<{ n: number | null }>('SELECT MAX(rowid) AS n FROM turns');
      return Number(rows[0]?.n ?? 0);
    },

    /** Cached token counts for `rowids` in `encoding`. */
    async tokenCounts(rowids: number[], encoding: string): Promise<Map<number, number>> {
      const out = new Map<number, number>();
      for (const chunk of chunks(rowids, per)) {
        const rows = await driver.query<{ turn_rowid: number; tokens: number }>(
          `SELECT turn_rowid, tokens FROM turn_tokens WHERE encoding = ? AND turn_rowid IN (${placeholders(chunk.length)})`, [encoding, ...chunk]);
        for (const r of rows) out.set(Number(r.turn_rowid), Number(r.tokens));
      }
      return out;
    },

    async saveTokenCounts(counts: Map<number, number>, encoding: string): Promise<void> {
      await driver.batch([...counts].map(([rowid, tokens]) => ({
        sql: 'INSERT OR REPLACE INTO turn_tokens (turn_rowid, encoding, tokens) VALUES (?, ?, ?)',
        params: [rowid, encoding, tokens],
      })));
    },
  };
}

/** Appending turns: one transaction per append, each row checked against the driver's limits; keeps `facts` current. */
function createTurnWriter(driver: StorageDriver, limits: StorageLimits, facts: ConversationFacts) {
  const nextSeq = async (conversationId: string): Promise<number> => {
    const rows = await driver.query<{ next: number }>('SELECT COALESCE(MAX(seq), -1) + 1 AS next FROM turns WHERE conversation_id = ? AND seq >= 0', [conversationId]);
    return Number(rows[0]?.next ?? 0);
  };

  /** Throws MESSAGE_TOO_LARGE, before anything is written, when a turn's row would be over the row limit. */
  function appendStatements(conversationId: string, base: number, turns: readonly NewTurn[], countKey: string | null, nowIso: string, place: Place = FIRST_BRANCH): Statement[] {
    for (const t of turns) {
      const error = turnRowError(limits, driver.name, conversationId, t.id, t.message, t.text);
      if (error) throw error;
    }
    return appendRows(conversationId, base, turns, countKey, nowIso, pieceSize(limits), place);
  }

  return {
    /**
     * Appends turns at the end of the conversation in one transaction: the conversation row, the turns, their FTS
     * entries and token counts move together or not at all.
     */
    async append(conversationId: string, turns: NewTurn[], countKey: string | null, nowIso: string, at: AppendAt = {}): Promise<void> {
      const base = at.base ?? await nextSeq(conversationId);
      try {
        await driver.batch([...(at.before ?? []), ...appendStatements(conversationId, base, turns, countKey, nowIso, at.place)]);
      } catch (error) {
        // A driver may fail after its commit (or half-way, without a transaction): what is stored is unknown, so
        // the cached count and speakers are dropped and read again next time.
        facts.forget(conversationId);
        throw error;
      }
      facts.appended(conversationId, base, turns);
    },

    /** The seq the next appended turn gets. */
    nextSeq,

    /** The statements that append `turns` from seq `base`, for a caller's own transaction (import). */
    appendStatements,
  };
}

/** Every SQL statement pagewise runs on canonical turns, over any StorageDriver. */
export function createTurnStore(driver: StorageDriver) {
  const limits = limitsOf(driver);
  // Values per IN list beside the one other parameter (conversation id, or encoding) each lookup binds.
  const per = inListSize(limits, 1);
  const facts = createConversationFacts(driver);
  return {
    ...createConversations(driver, facts),
    ...createTurnReads(driver, per),
    ...createTurnIndex(driver, per),
    ...turnWords(driver),
    ...createTurnWriter(driver, limits, facts),

    /** The limits the statements are sized to (the driver's, see limitsOf). */
    limits,
  };
}

/** A fork's branch or order key: as given, else read from the turn it follows (an import knows only its id). */
const FORK_OF = (column: string) => `COALESCE(?, (SELECT ${column} FROM turns WHERE conversation_id = ? AND id = ?))`;

function appendRows(conversationId: string, base: number, turns: readonly NewTurn[], countKey: string | null, nowIso: string, piece: number, place: Place): Statement[] {
  const statements: Statement[] = [
    { sql: 'INSERT OR IGNORE INTO conversations (id, created_at, updated_at) VALUES (?, ?, ?)', params: [conversationId, nowIso, nowIso] },
    { sql: 'UPDATE conversations SET updated_at = ? WHERE id = ?', params: [nowIso, conversationId] },
  ];
  const nowMs = Date.parse(nowIso);
  turns.forEach((t, i) => {
    const m = t.message;
    const seq = base + i;
    const at = t.place ?? place;
    if (t.attachments && t.attachments.length > 0) statements.push(...putAttachmentStatements(piece, t.attachments, nowIso));
    statements.push({
        // Written here: origin '' (this replica), its order key the conversation's clock (sync, schema 9).
        sql: `INSERT INTO turns (rowid, conversation_id, seq, id, role, name, content, tool_calls, tool_call_id, created_at, created_ms, stored_at, content_hash, text, private, branch, fork_after, fork_branch, fork_ord, origin_ord)
              VALUES (${NEXT_ROWID}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${FORK_OF('branch')}, ${FORK_OF('origin_ord')}, ${NEXT_ORD})`,
        params: [conversationId, seq, t.id, m.role, m.name ?? null, JSON.stringify(m.content ?? null),
          m.toolCalls ? JSON.stringify(m.toolCalls) : null, m.toolCallId ?? null, t.createdAt, t.createdMs, nowIso, t.contentHash, t.text, m.private ? 1 : 0,
          at.branch, at.forkAfter, at.forkBranch, conversationId, at.forkAfter, at.forkOrd, conversationId, at.forkAfter, ...nextOrdParams(nowMs, conversationId)],
    }, {
      sql: `INSERT INTO turns_fts (rowid, text, name) VALUES ((SELECT rowid FROM turns WHERE conversation_id = ? AND seq = ?), ?, ?)`,
      params: [conversationId, seq, t.text, m.name ?? ''],
    });
    for (const id of t.refs ?? []) statements.push(attachmentRefStatement(conversationId, t.id, id));
    if (countKey !== null) {
      statements.push({
        sql: `INSERT INTO turn_tokens (turn_rowid, encoding, tokens) VALUES ((SELECT rowid FROM turns WHERE conversation_id = ? AND seq = ?), ?, ?)`,
        params: [conversationId, seq, countKey, t.tokens],
      });
    }
  });
  return statements;
}

export type TurnStore = ReturnType<typeof createTurnStore>;
