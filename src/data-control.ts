import type { Canonicalizer } from './tags/tag-canonicalizer.js';
import type { TagIndex } from './tags/tag-index.js';
import { checkId, checkObject } from './engine-support.js';
import { PagewiseError } from './errors.js';
import { importApi } from './data-import.js';
import { describe, readArray, validateConversationId } from './messages.js';
import { inListSize } from './storage/limits.js';
import { MIGRATIONS } from './store/schema.js';
import { candidates } from './tags/key-phrases.js';
import { chunks, type TurnRecord, type TurnStore } from './store/turn-store.js';
import type { ChatMessage, Statement, StorageDriver, Tokenizer } from './types.js';

const MODULE = 'data';

/** What `forget` removes: a whole conversation, or some of its messages (by id, or every exchange carrying a tag). */
export interface ForgetInput {
  conversationId: string;
  /** Stored message ids (as in `report.storedIds` or `memory.turns()`). */
  messageIds?: string[];
  /** A tag (any spelling its aliases know): every exchange (unit) carrying it. */
  tag?: string;
}

/** What `forget` removed. Derived data of the conversation (tags, summaries, vectors) is rebuilt without it. */
export interface ForgetReport {
  conversationId: string;
  /** Ids of the removed messages. */
  messageIds: string[];
  /** Summaries removed (all of the conversation's: they are rebuilt from what is left when compaction is next due). */
  summaries: number;
  /** The conversation itself is gone (nothing was left of it). */
  conversationRemoved: boolean;
}

/** One stored message in the portable format. */
export interface ExportedTurn {
  id: string;
  role: ChatMessage['role'];
  name?: string;
  content: ChatMessage['content'];
  toolCalls?: ChatMessage['toolCalls'];
  toolCallId?: string;
  createdAt: string;
  private?: true;
}

export interface ExportedConversation {
  id: string;
  createdAt: string;
  updatedAt: string;
  /** Every stored message, in order. */
  turns: ExportedTurn[];
  pins: { messageId: string; pinnedAt: string }[];
  /** The conversation's own manual aliases. */
  aliases: { alias: string; tag: string; createdAt: string }[];
}

/**
 * pagewise's portable format (version 1): every stored original with its ids, roles, names, times and tool calls,
 * pins and manual aliases. Derived data (tags, summaries, vectors, token counts) is left out: it is rebuilt.
 */
export interface ExportData {
  format: 'pagewise';
  version: 1;
  exportedAt: string;
  conversations: ExportedConversation[];
  /** Global manual aliases (with an export of every conversation only). */
  aliases: { alias: string; tag: string; createdAt: string }[];
}

export interface ImportReport {
  /** Conversations with something new stored. */
  conversations: string[];
  /** Messages stored; those already there are skipped. */
  turns: number;
  /** Messages already stored (same id, same content). */
  skipped: number;
}

export interface DataDeps {
  driver: StorageDriver;
  store: TurnStore;
  canonicalizer: Canonicalizer;
  index: TagIndex;
  tokenizer: () => Promise<Tokenizer>;
  serial: <T>(fn: () => Promise<T>) => Promise<T>;
  /** The same queue, also while the memory is closing: the later slots of an import already admitted. */
  resume: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Waits for background work (embedding, compaction) to settle. */
  settle: () => Promise<void>;
  /** Drops every cache of the conversation (turn facts, vector indexes, measured pressure, topics hint). */
  uncache: (conversationId: string) => void;
  /** Schedules what is derived in the background (vectors; compaction when due). */
  rebuildLater: (conversationId: string) => void;
  maxMessageBytes: number;
}

// The trigger that keeps turns append-only (schema migration 1); forget drops and recreates it in its transaction.
const NO_DELETE = MIGRATIONS[0]!.find((sql) => sql.includes('turns_no_delete'))!;
/**
 * Up to this many turns, forget tags the rest of the conversation again whole (at the edge, 2,000 turns took 0.25 s
 * of CPU); past it, only the exchanges that held a forgotten turn (whole, 50,000 turns took 44 s there).
 */
export const RETAG_ALL_TURNS = 4096;
const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path} ${message}`, { path });
}

/** The data-control side of the Memory API: forget, export, import, the database's bytes. */
export function dataApi(d: DataDeps) {
  const { driver, store, serial } = d;
  // Values per IN list: each statement binds the conversation id at most besides (the driver's maxParams).
  const per = inListSize(store.limits, 1);

  const turnRows = (conversationId: string, where = '', params: unknown[] = []) => driver.query<{ rowid: number; seq: number; id: string; text: string; name: string | null }>(
    `SELECT rowid, seq, id, text, name FROM turns WHERE conversation_id = ?${where} ORDER BY seq`, [conversationId, ...params] as never);

  /** For each seq, the unit at or before it (the last unit starting at or before it), as JSON lists of seqs. */
  const unitsAt = async (conversationId: string, seqs: readonly number[]) => {
    const out = new Map<number, { unitSeq: number; endSeq: number; at: number }>();
    for (const part of chunks([...new Set(seqs)], 500)) {
      for (const r of await driver.query<{ at: number; unit_seq: number; end_seq: number }>(
        // CROSS JOIN: from each seq (a few) into the units (many), by their key.
        `SELECT j.value AS at, u.unit_seq, u.end_seq FROM json_each(?2) j CROSS JOIN units u ON u.conversation_id = ?1
           AND u.unit_seq = (SELECT MAX(unit_seq) FROM units WHERE conversation_id = ?1 AND unit_seq <= j.value)`, [conversationId, JSON.stringify(part)])) {
        out.set(Number(r.at), { unitSeq: Number(r.unit_seq), endSeq: Number(r.end_seq), at: Number(r.at) });
      }
    }
    return out;
  };

  /**
   * What a partial forget rewrites of the tag index, computed before its transaction and written in it: the units
   * holding a forgotten turn and the unit before each (a reply whose question is forgotten joins it) are tagged
   * again from what is left of them; the terms of the forgotten turns leave the term counts (a term no kept turn
   * uses is gone); every other unit keeps its tags. (Re-tagging the whole conversation took seconds per 10,000 turns.)
   */
  const retagPlan = async (conversationId: string, rows: ReadonlyArray<{ seq: number }>): Promise<Statement[]> => {
    const forgotten = new Set(rows.map((r) => r.seq));
    const affected = [...(await unitsAt(conversationId, [...forgotten])).values()].filter((u) => u.endSeq >= u.at);
    const before = [...(await unitsAt(conversationId, affected.filter((u) => u.unitSeq > 0).map((u) => u.unitSeq - 1))).values()];
    const units = [...new Map([...affected, ...before].map((u) => [u.unitSeq, { unitSeq: u.unitSeq, endSeq: u.endSeq }])).values()].sort((a, b) => a.unitSeq - b.unitSeq);
    if (units.length === 0) return [];
    const last = (await driver.query<{ end_seq: number }>('SELECT MAX(end_seq) AS end_seq FROM units WHERE conversation_id = ?', [conversationId]))[0];
    const kept: TurnRecord[] = [];
    const gone = new Map<string, number>();
    let goneTurns = 0;
    for (const u of units) {
      for (const t of await store.range(conversationId, u.unitSeq, u.endSeq - u.unitSeq + 1)) {
        if (t.seq > u.endSeq) continue;
        if (!forgotten.has(t.seq)) kept.push(t);
        else if (t.role !== 'system') {
          // Counted when its unit was indexed (every indexed turn but a system one is in a unit).
          goneTurns++;
          for (const term of candidates(t.text).keys()) gone.set(term, (gone.get(term) ?? 0) + 1);
        }
      }
    }
    const seqs = units.map((u) => u.unitSeq);
    const old: { tag: string; n: number }[] = [];
    for (const part of chunks(seqs, 500)) {
      old.push(...(await driver.query<{ tag: string; n: number }>(
        'SELECT tag, COUNT(*) AS n FROM unit_tags WHERE conversation_id = ?1 AND unit_seq IN (SELECT value FROM json_each(?2)) GROUP BY tag', [conversationId, JSON.stringify(part)])));
    }
    const counts = await d.canonicalizer.counts(conversationId);
    const byTag = new Map<string, number>();
    for (const r of old) byTag.set(r.tag, (byTag.get(r.tag) ?? 0) + Number(r.n));
    // Tags only these units carry: they may be the forgotten turns' words.
    const hidden = new Set([...byTag].filter(([t, n]) => (counts.get(t) ?? 0) <= n).map(([t]) => t));
    const index = d.index;
    const fresh = await index.tagTurns(conversationId, kept, {
      turns: Math.max(0, Number(last?.end_seq ?? -1) + 1 - goneTurns),
      termFrequencies: async (ts) => {
        const stored = new Map<string, number>();
        for (const part of chunks(ts, per)) {
          for (const r of await driver.query<{ term: string; turns: number }>(`SELECT term, turns FROM term_df WHERE conversation_id = ? AND term IN (${marks(part.length)})`, [conversationId, ...part])) stored.set(r.term, Number(r.turns));
        }
        return new Map(ts.map((t) => [t, Math.max(0, (stored.get(t) ?? 0) - (gone.get(t) ?? 0))]));
      },
    }, hidden, new Date().toISOString());
    const now = new Date().toISOString();
    const statements: Statement[] = [];
    for (const part of chunks(seqs, 500)) {
      const json = JSON.stringify(part);
      statements.push(
        { sql: 'DELETE FROM unit_tags WHERE conversation_id = ?1 AND unit_seq IN (SELECT value FROM json_each(?2))', params: [conversationId, json] },
        { sql: 'DELETE FROM units WHERE conversation_id = ?1 AND unit_seq IN (SELECT value FROM json_each(?2))', params: [conversationId, json] },
      );
    }
    const touched = new Set(byTag.keys());
    for (const u of fresh) {
      statements.push({ sql: 'INSERT INTO units (conversation_id, unit_seq, end_seq, tagger, tagged_at) VALUES (?, ?, ?, ?, ?)', params: [conversationId, u.unitSeq, u.endSeq, u.tagger, now] });
      const tags = new Map<string, number>(u.relatedTags.map((t) => [t, 1]));
      for (const t of u.tags) tags.set(t, 0);
      for (const [tag, related] of tags) {
        statements.push({ sql: 'INSERT INTO unit_tags (conversation_id, tag, unit_seq, related) VALUES (?, ?, ?, ?)', params: [conversationId, tag, u.unitSeq, related] });
        touched.add(tag);
      }
    }
    for (const tag of touched) {
      statements.push({ sql: `INSERT INTO tags (conversation_id, tag, units, first_seq, last_seq, last_used)
        SELECT ?1, ?2, COUNT(*), MIN(unit_seq), MAX(unit_seq), ?3 FROM unit_tags WHERE conversation_id = ?1 AND tag = ?2
        ON CONFLICT (conversation_id, tag) DO UPDATE SET units = excluded.units, first_seq = excluded.first_seq, last_seq = excluded.last_seq, last_used = excluded.last_used`,
      params: [conversationId, tag, now] });
    }
    statements.push({ sql: 'DELETE FROM tags WHERE conversation_id = ? AND units = 0', params: [conversationId] });
    for (const [term, n] of gone) statements.push({ sql: 'UPDATE term_df SET turns = turns - ? WHERE conversation_id = ? AND term = ?', params: [n, conversationId, term] });
    statements.push({ sql: 'DELETE FROM term_df WHERE conversation_id = ? AND turns <= 0', params: [conversationId] });
    return statements;
  };

  /**
   * Removes the rows and everything derived from them, in one transaction; then purges the index and the free pages.
   * `retag`: the tag index's rewrite (a partial forget); without it, the conversation's tag index goes whole and is
   * rebuilt from what is left.
   */
  const remove = async (conversationId: string, rows: ReadonlyArray<{ rowid: number; seq: number; id: string; text: string; name: string | null }>, whole: boolean, retag?: Statement[]) => {
    const summaries = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM summaries WHERE conversation_id = ?', [conversationId]);
    const statements: Statement[] = [{ sql: 'DROP TRIGGER turns_no_delete' }];
    for (const part of chunks(rows, per)) {
      // A contentless FTS5 table forgets a row only when given the values it indexed.
      for (const r of part) statements.push({ sql: "INSERT INTO turns_fts (turns_fts, rowid, text, name) VALUES ('delete', ?, ?, ?)", params: [r.rowid, r.text, r.name ?? ''] });
      const rowids = part.map((r) => r.rowid);
      statements.push(
        { sql: `DELETE FROM turn_tokens WHERE turn_rowid IN (${marks(part.length)})`, params: rowids },
        { sql: `DELETE FROM turn_recalls WHERE turn_rowid IN (${marks(part.length)})`, params: rowids },
        { sql: `DELETE FROM pins WHERE conversation_id = ? AND turn_id IN (${marks(part.length)})`, params: [conversationId, ...part.map((r) => r.id)] },
        { sql: `DELETE FROM embeddings WHERE conversation_id = ? AND kind = 'turn' AND ref IN (${marks(part.length)})`, params: [conversationId, ...part.map((r) => r.seq)] },
        { sql: `DELETE FROM turns WHERE rowid IN (${marks(part.length)})`, params: rowids },
      );
    }
    statements.push({ sql: NO_DELETE });
    // Derived from the conversation's turns as a whole: removed, and rebuilt from what is left.
    statements.push(
      { sql: 'DELETE FROM summaries_fts WHERE rowid IN (SELECT rowid FROM summaries WHERE conversation_id = ?)', params: [conversationId] },
      { sql: 'DELETE FROM summary_tags WHERE conversation_id = ?', params: [conversationId] },
      { sql: "DELETE FROM embeddings WHERE conversation_id = ? AND kind = 'summary'", params: [conversationId] },
      { sql: 'DELETE FROM summaries WHERE conversation_id = ?', params: [conversationId] },
      { sql: 'DELETE FROM compaction_state WHERE conversation_id = ?', params: [conversationId] },
      ...(retag && !whole ? retag : [
        { sql: 'DELETE FROM unit_tags WHERE conversation_id = ?', params: [conversationId] },
        { sql: 'DELETE FROM units WHERE conversation_id = ?', params: [conversationId] },
        { sql: 'DELETE FROM tags WHERE conversation_id = ?', params: [conversationId] },
        { sql: 'DELETE FROM term_df WHERE conversation_id = ?', params: [conversationId] },
      ]),
      { sql: "DELETE FROM tag_aliases WHERE conversation_id = ? AND source = 'auto'", params: [conversationId] },
    );
    if (whole) {
      statements.push(
        { sql: 'DELETE FROM embeddings WHERE conversation_id = ?', params: [conversationId] },
        { sql: 'DELETE FROM pins WHERE conversation_id = ?', params: [conversationId] },
        { sql: 'DELETE FROM tag_aliases WHERE conversation_id = ?', params: [conversationId] },
        { sql: 'DELETE FROM llm_usage WHERE conversation_id = ?', params: [conversationId] },
        { sql: 'DELETE FROM conversations WHERE id = ?', params: [conversationId] },
      );
    } else {
      statements.push({ sql: 'UPDATE conversations SET updated_at = ? WHERE id = ?', params: [new Date().toISOString(), conversationId] });
    }
    await driver.query('PRAGMA secure_delete = ON');
    await driver.batch(statements);
    d.uncache(conversationId);
    await purge();
    return Number(summaries[0]?.n ?? 0);
  };

  /**
   * No trace left in the file: the full-text indexes merged into one segment each (a deleted row lingers in its old
   * segment until a merge), then VACUUM rewrites the database without its free pages (secure_delete zeroed them too).
   */
  const purge = async () => {
    await driver.batch([
      { sql: "INSERT INTO turns_fts (turns_fts) VALUES ('optimize')" },
      { sql: "INSERT INTO summaries_fts (summaries_fts) VALUES ('optimize')" },
    ]);
    await driver.query('VACUUM');
  };

  const conversationOf = async (value: unknown, path = 'conversationId') => {
    const conversationId = validateConversationId(value, path);
    const info = await store.conversation(conversationId);
    if (!info) throw new PagewiseError('CONVERSATION_NOT_FOUND', MODULE, `No conversation ${describe(conversationId)} is stored. List them with memory.conversations().`);
    return info;
  };

  /** Every stored turn of a conversation, in order, read a page at a time. */
  const allTurns = async (conversationId: string): Promise<TurnRecord[]> => {
    const out: TurnRecord[] = [];
    for (let from = 0; ; ) {
      const page = await store.range(conversationId, from, 1000);
      if (page.length === 0) return out;
      out.push(...page);
      from = page[page.length - 1]!.seq + 1;
    }
  };

  const exportConversation = async (conversationId: string): Promise<ExportedConversation> => {
    const info = (await store.conversation(conversationId))!;
    const turns = (await allTurns(conversationId)).map(exported);
    const pins = await driver.query<{ turn_id: string; pinned_at: string }>('SELECT turn_id, pinned_at FROM pins WHERE conversation_id = ? ORDER BY pinned_at, turn_id', [conversationId]);
    const aliases = await driver.query<{ alias: string; tag: string; created_at: string }>("SELECT alias, tag, created_at FROM tag_aliases WHERE conversation_id = ? AND source = 'manual' ORDER BY alias", [conversationId]);
    return {
      id: conversationId, createdAt: info.createdAt, updatedAt: info.updatedAt, turns,
      pins: pins.map((p) => ({ messageId: p.turn_id, pinnedAt: p.pinned_at })),
      aliases: aliases.map((a) => ({ alias: a.alias, tag: a.tag, createdAt: a.created_at })),
    };
  };

  return {
    forget(input: ForgetInput): Promise<ForgetReport> {
      return (async () => {
        // Vectors and summaries being made from a turn must land (or be refused) before it goes.
        await d.settle();
        return serial(async () => {
          const o = checkObject(input, 'forget');
          const { id: conversationId } = await conversationOf(o.conversationId);
          const list = o.messageIds === undefined ? undefined : readArray(o.messageIds, 'messageIds', 'INVALID_ARGUMENT', MODULE);
          if (o.messageIds !== undefined && (!list || list.length === 0)) {
            invalid('messageIds', `must be a non-empty array of stored message ids, or left out to forget the whole conversation (got ${describe(o.messageIds)}).`);
          }
          const ids = list?.map((id, i) => checkId(id, `messageIds[${i}]`));
          if (o.tag !== undefined && typeof o.tag !== 'string') invalid('tag', `must be a tag's name, as memory.tags() lists them (got ${describe(o.tag)}).`);
          let rows: Awaited<ReturnType<typeof turnRows>>;
          if (ids === undefined && o.tag === undefined) {
            rows = await turnRows(conversationId);
          } else {
            const chosen = new Map<number, Awaited<ReturnType<typeof turnRows>>[number]>();
            if (ids) {
              for (const part of chunks([...new Set(ids)], per)) for (const r of await turnRows(conversationId, ` AND id IN (${marks(part.length)})`, part)) chosen.set(r.rowid, r);
              const found = new Set([...chosen.values()].map((r) => r.id));
              const missing = ids.filter((id) => !found.has(id));
              if (missing.length > 0) {
                throw new PagewiseError('NOT_FOUND', MODULE, `No message ${missing.slice(0, 3).map(describe).join(', ')}${missing.length > 3 ? ` (and ${missing.length - 3} more)` : ''} is stored in conversation ${describe(conversationId)}; nothing was forgotten. Take ids from report.storedIds or memory.turns().`, { path: 'messageIds' });
              }
            }
            if (typeof o.tag === 'string') {
              const [tag] = await d.canonicalizer.canonical(conversationId, [o.tag], new Date().toISOString());
              const units = tag ? await driver.query<{ unit_seq: number; end_seq: number }>(
                'SELECT u.unit_seq, u.end_seq FROM unit_tags t JOIN units u ON u.conversation_id = t.conversation_id AND u.unit_seq = t.unit_seq WHERE t.conversation_id = ? AND t.tag = ? AND t.related = 0',
                [conversationId, tag]) : [];
              if (units.length === 0) {
                throw new PagewiseError('NOT_FOUND', MODULE, `No exchange of conversation ${describe(conversationId)} carries the tag ${describe(o.tag)}; nothing was forgotten. List its tags with memory.tags().`, { path: 'tag' });
              }
              for (const u of units) for (const r of await turnRows(conversationId, ' AND seq BETWEEN ? AND ?', [u.unit_seq, u.end_seq])) chosen.set(r.rowid, r);
            }
            rows = [...chosen.values()].sort((a, b) => a.seq - b.seq);
          }
          const left = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM turns WHERE conversation_id = ?', [conversationId]);
          const whole = rows.length >= Number(left[0]?.n ?? 0);
          // A shorter conversation is tagged again whole (exactly as if the turns had never been stored: the same
          // tags whatever chunks its turns were imported in); a longer one only where the forgotten turns were.
          const retag = whole || Number(left[0]?.n ?? 0) <= RETAG_ALL_TURNS ? undefined : await retagPlan(conversationId, rows);
          const summaries = await remove(conversationId, rows, whole, retag);
          if (!whole) {
            await d.index.indexNew(conversationId, new Date().toISOString());
            d.rebuildLater(conversationId);
          }
          return { conversationId, messageIds: rows.map((r) => r.id), summaries, conversationRemoved: whole };
        });
      })();
    },

    export(conversationId?: string): Promise<ExportData> {
      return serial(async () => {
        const ids = conversationId === undefined
          ? (await store.conversations()).map((c) => c.id).sort()
          : [(await conversationOf(conversationId)).id];
        const conversations: ExportedConversation[] = [];
        for (const id of ids) conversations.push(await exportConversation(id));
        const aliases = conversationId === undefined
          ? (await driver.query<{ alias: string; tag: string; created_at: string }>("SELECT alias, tag, created_at FROM tag_aliases WHERE conversation_id = '' ORDER BY alias"))
            .map((a) => ({ alias: a.alias, tag: a.tag, createdAt: a.created_at }))
          : [];
        return { format: 'pagewise', version: 1, exportedAt: new Date().toISOString(), conversations, aliases };
      });
    },

    ...importApi({ ...d, turnRows, remove }),

    /** The database file's bytes (a consistent copy: taken between operations). */
    exportDatabase(): Promise<Uint8Array> {
      return serial(async () => {
        if (!driver.export) {
          throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `The ${driver.name} storage cannot give its database's bytes; export the conversations with memory.export() instead.`);
        }
        return driver.export();
      });
    },
  };
}

function exported(t: TurnRecord): ExportedTurn {
  return {
    id: t.id, role: t.role, ...(t.name !== null && t.name !== undefined ? { name: t.name } : {}), content: t.content,
    ...(t.toolCalls ? { toolCalls: t.toolCalls } : {}), ...(t.toolCallId ? { toolCallId: t.toolCallId } : {}), createdAt: t.createdAt,
    ...(t.private ? { private: true as const } : {}),
  };
}

export type DataApi = ReturnType<typeof dataApi>;
