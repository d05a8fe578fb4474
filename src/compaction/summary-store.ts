import { placeholders } from '../store/turn-store.js';
import type { SqlValue, Statement, StorageDriver, Summary } from '../types.js';

interface SummaryRow {
  [key: string]: SqlValue;
  rowid: number;
  id: string;
  conversation_id: string;
  kind: string;
  level: number;
  tag: string | null;
  first_seq: number;
  last_seq: number;
  first_at: string;
  last_at: string;
  source_ids: string;
  text: string;
  tags: string;
  related: string;
  tokens: number;
  made_by: string;
  prompt_version: number;
  created_at: string;
  parent_id: string | null;
  stale: number;
}

/** A stored summary with its row id (the FTS index keys on it). */
export interface SummaryRecord extends Summary {
  rowid: number;
}

const COLUMNS = 'rowid, id, conversation_id, kind, level, tag, first_seq, last_seq, first_at, last_at, source_ids, text, tags, related, tokens, made_by, prompt_version, created_at, parent_id, stale';

function toRecord(r: SummaryRow): SummaryRecord {
  const s: SummaryRecord = {
    rowid: Number(r.rowid), id: r.id, conversationId: r.conversation_id, kind: r.kind as Summary['kind'], level: Number(r.level),
    firstSeq: Number(r.first_seq), lastSeq: Number(r.last_seq), from: r.first_at, to: r.last_at, sourceIds: JSON.parse(r.source_ids) as string[], text: r.text,
    tags: JSON.parse(r.tags) as string[], relatedTags: JSON.parse(r.related) as string[], tokens: Number(r.tokens), madeBy: r.made_by,
    promptVersion: Number(r.prompt_version), createdAt: r.created_at, stale: Number(r.stale) === 1,
  };
  if (r.tag !== null) s.tag = r.tag;
  if (r.parent_id !== null) s.parentId = r.parent_id;
  return s;
}

/** A summary before it is stored. */
export type NewSummary = Omit<Summary, 'stale' | 'parentId'>;

/** Statements that insert a summary with its tag rows and FTS row (the row id is chosen by the caller's query). */
function insertSummary(s: NewSummary): Statement[] {
  return [
    {
      sql: `INSERT INTO summaries (id, conversation_id, kind, level, tag, first_seq, last_seq, first_at, last_at, source_ids, text, tags, related, tokens, made_by, prompt_version, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      params: [s.id, s.conversationId, s.kind, s.level, s.tag ?? null, s.firstSeq, s.lastSeq, s.from, s.to, JSON.stringify(s.sourceIds), s.text,
        JSON.stringify(s.tags), JSON.stringify(s.relatedTags), s.tokens, s.madeBy, s.promptVersion, s.createdAt],
    },
    { sql: 'INSERT INTO summaries_fts (rowid, text, tags) SELECT rowid, text, ? FROM summaries WHERE id = ?', params: [[...s.tags, ...s.relatedTags].join(' '), s.id] },
    { sql: `INSERT OR IGNORE INTO summary_tags (conversation_id, tag, summary_rowid) SELECT ?, value, (SELECT rowid FROM summaries WHERE id = ?) FROM json_each(?)`,
      params: [s.conversationId, s.id, JSON.stringify([...s.tags, ...s.relatedTags])] },
  ];
}

function removeSummary(id: string): Statement[] {
  return [
    { sql: 'DELETE FROM summaries_fts WHERE rowid = (SELECT rowid FROM summaries WHERE id = ?)', params: [id] },
    { sql: 'DELETE FROM summary_tags WHERE summary_rowid = (SELECT rowid FROM summaries WHERE id = ?)', params: [id] },
    { sql: "DELETE FROM embeddings WHERE conversation_id = (SELECT conversation_id FROM summaries WHERE id = ?) AND kind = 'summary' AND ref = (SELECT rowid FROM summaries WHERE id = ?)", params: [id, id] },
    { sql: 'DELETE FROM summaries WHERE id = ?', params: [id] },
  ];
}

/** Every SQL statement of the memory hierarchy: the watermark and the summaries of every level. */
export function createSummaryStore(driver: StorageDriver) {
  const select = async (where: string, params: SqlValue[]): Promise<SummaryRecord[]> =>
    (await driver.query<SummaryRow>(`SELECT ${COLUMNS} FROM summaries WHERE ${where}`, params)).map(toRecord);

  return {
    /** The first seq not compacted (null before the first compaction) and how many compactions ran. */
    async state(conversationId: string): Promise<{ watermark: number; events: number } | null> {
      const rows = await driver.query<{ watermark: number; events: number }>('SELECT watermark, events FROM compaction_state WHERE conversation_id = ?', [conversationId]);
      return rows[0] ? { watermark: Number(rows[0].watermark), events: Number(rows[0].events) } : null;
    },

    /** Summaries not rolled up yet (segments, roll-ups, the master), oldest first: the compacted past, whole. */
    frontier(conversationId: string): Promise<SummaryRecord[]> {
      return select("conversation_id = ? AND kind IN ('segment', 'rollup', 'master') AND parent_id IS NULL ORDER BY first_seq, level DESC", [conversationId]);
    },

    /** Level-1 summaries, earliest first. */
    segments(conversationId: string): Promise<SummaryRecord[]> {
      return select("conversation_id = ? AND kind = 'segment' ORDER BY first_seq", [conversationId]);
    },

    tagSummaries(conversationId: string): Promise<SummaryRecord[]> {
      return select("conversation_id = ? AND kind = 'tag' ORDER BY first_seq", [conversationId]);
    },

    byIds(conversationId: string, ids: readonly string[]): Promise<SummaryRecord[]> {
      if (ids.length === 0) return Promise.resolve([]);
      return select(`conversation_id = ? AND id IN (${placeholders(ids.length)})`, [conversationId, ...ids]);
    },

    /** By row id (the embeddings table's reference). */
    byRowids(conversationId: string, rowids: readonly number[]): Promise<SummaryRecord[]> {
      if (rowids.length === 0) return Promise.resolve([]);
      return select(`conversation_id = ? AND rowid IN (${placeholders(rowids.length)})`, [conversationId, ...rowids]);
    },

    list(conversationId: string, kind?: Summary['kind']): Promise<SummaryRecord[]> {
      return kind ? select('conversation_id = ? AND kind = ? ORDER BY first_seq, level', [conversationId, kind])
        : select('conversation_id = ? ORDER BY first_seq, level', [conversationId]);
    },

    /** Level-1 summaries carrying any of `tags`, earliest first. */
    async segmentsTagged(conversationId: string, tags: readonly string[]): Promise<SummaryRecord[]> {
      if (tags.length === 0) return [];
      return select(`conversation_id = ? AND kind = 'segment' AND rowid IN
        (SELECT summary_rowid FROM summary_tags WHERE conversation_id = ? AND tag IN (${placeholders(tags.length)})) ORDER BY first_seq`,
      [conversationId, conversationId, ...tags]);
    },

    /** BM25 over summary text and tags; higher `score` is better. */
    async search(conversationId: string, match: string, kinds: readonly Summary['kind'][], limit: number): Promise<{ summary: SummaryRecord; score: number }[]> {
      const rows = await driver.query<SummaryRow & { score: number }>(
        `SELECT ${COLUMNS.split(', ').map((c) => `s.${c}`).join(', ')}, -f.rank AS score FROM summaries_fts f JOIN summaries s ON s.rowid = f.rowid
         WHERE summaries_fts MATCH ? AND s.conversation_id = ? AND s.kind IN (${placeholders(kinds.length)}) ORDER BY f.rank LIMIT ?`,
        [match, conversationId, ...kinds, limit]);
      return rows.map((r) => ({ summary: toRecord(r), score: Number(r.score) }));
    },

    /**
     * One segment's compaction, atomically: the summary, its index rows, the watermark, and the tag summaries it
     * makes stale.
     */
    async commitSegment(s: NewSummary, watermark: number, nowIso: string): Promise<void> {
      const tags = [...s.tags, ...s.relatedTags];
      await driver.batch([
        ...insertSummary(s),
        { sql: `INSERT INTO compaction_state (conversation_id, watermark, events, updated_at) VALUES (?, ?, 0, ?)
                ON CONFLICT (conversation_id) DO UPDATE SET watermark = excluded.watermark, updated_at = excluded.updated_at`, params: [s.conversationId, watermark, nowIso] },
        { sql: `UPDATE summaries SET stale = 1 WHERE conversation_id = ? AND kind = 'tag' AND tag IN (SELECT value FROM json_each(?))`, params: [s.conversationId, JSON.stringify(tags)] },
      ]);
    },

    /** Counts a finished compaction. */
    async countEvent(conversationId: string, nowIso: string): Promise<void> {
      await driver.batch([{ sql: 'UPDATE compaction_state SET events = events + 1, updated_at = ? WHERE conversation_id = ?', params: [nowIso, conversationId] }]);
    },

    /** A roll-up (or the master) and the summaries it rolls up, atomically. */
    async commitRollup(s: NewSummary, childIds: readonly string[]): Promise<void> {
      await driver.batch([
        ...insertSummary(s),
        { sql: `UPDATE summaries SET parent_id = ? WHERE conversation_id = ? AND id IN (${placeholders(childIds.length)})`, params: [s.id, s.conversationId, ...childIds] },
      ]);
    },

    /** A tag summary, replacing the tag's previous one. */
    async replaceTagSummary(s: NewSummary): Promise<void> {
      const old = await driver.query<{ id: string }>("SELECT id FROM summaries WHERE conversation_id = ? AND kind = 'tag' AND tag = ?", [s.conversationId, s.tag ?? null]);
      await driver.batch([...old.flatMap((o) => removeSummary(o.id)), ...insertSummary(s)]);
    },

    /** Rewrites a summary's text in place (regeneration): its tags only grow. */
    async rewrite(s: SummaryRecord, text: string, tokens: number, madeBy: string, version: number, tags: string[], related: string[]): Promise<void> {
      const all = [...tags, ...related];
      await driver.batch([
        { sql: 'DELETE FROM summaries_fts WHERE rowid = ?', params: [s.rowid] },
        // The text changed: its vector is re-embedded by the background queue.
        { sql: "DELETE FROM embeddings WHERE conversation_id = ? AND kind = 'summary' AND ref = ?", params: [s.conversationId, s.rowid] },
        { sql: 'UPDATE summaries SET text = ?, tokens = ?, made_by = ?, prompt_version = ?, tags = ?, related = ?, stale = 0 WHERE rowid = ?',
          params: [text, tokens, madeBy, version, JSON.stringify(tags), JSON.stringify(related), s.rowid] },
        { sql: 'INSERT INTO summaries_fts (rowid, text, tags) VALUES (?, ?, ?)', params: [s.rowid, text, all.join(' ')] },
        { sql: 'INSERT OR IGNORE INTO summary_tags (conversation_id, tag, summary_rowid) SELECT ?, value, ? FROM json_each(?)', params: [s.conversationId, s.rowid, JSON.stringify(all)] },
      ]);
    },

    async markStale(conversationId: string, ids: readonly string[] | null): Promise<number> {
      const rows = await driver.query<{ n: number }>(ids === null ? 'SELECT COUNT(*) AS n FROM summaries WHERE conversation_id = ?'
        : `SELECT COUNT(*) AS n FROM summaries WHERE conversation_id = ? AND id IN (${placeholders(ids.length)})`, [conversationId, ...(ids ?? [])]);
      await driver.batch([{ sql: ids === null ? 'UPDATE summaries SET stale = 1 WHERE conversation_id = ?'
        : `UPDATE summaries SET stale = 1 WHERE conversation_id = ? AND id IN (${placeholders(ids.length)})`, params: [conversationId, ...(ids ?? [])] }]);
      return Number(rows[0]?.n ?? 0);
    },

    /** Tokens of the turns from `fromSeq` on, from the count cache (markup included); null when some are not cached. */
    async turnTokensFrom(conversationId: string, fromSeq: number, encoding: string, perMessage: number): Promise<number | null> {
      const rows = await driver.query<{ n: number; counted: number; tokens: number | null }>(
        `SELECT COUNT(*) AS n, COUNT(c.tokens) AS counted, SUM(c.tokens) AS tokens FROM turns t
         LEFT JOIN turn_tokens c ON c.turn_rowid = t.rowid AND c.encoding = ? WHERE t.conversation_id = ? AND t.seq >= ?`,
        [encoding, conversationId, fromSeq]);
      const r = rows[0]!;
      if (Number(r.n) !== Number(r.counted)) return null;
      return Number(r.tokens ?? 0) + perMessage * Number(r.n);
    },
  };
}

export type SummaryStore = ReturnType<typeof createSummaryStore>;
