import { inListSize, limitsOf } from '../storage/limits.js';
import { chunks, inChunks, placeholders } from '../store/turn-store.js';
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
    // Segments by tag (what a tag summary folds in next). Roll-ups, the master and tag summaries are found by
    // their kind, tag and place in the hierarchy, so they take no rows here.
    ...(s.kind === 'segment' ? [{ sql: `INSERT OR IGNORE INTO summary_tags (conversation_id, tag, summary_rowid) SELECT ?, value, (SELECT rowid FROM summaries WHERE id = ?) FROM json_each(?)`,
      params: [s.conversationId, s.id, JSON.stringify([...s.tags, ...s.relatedTags])] }] : []),
  ];
}


// The summaries of one kind (?2) and level (?3) not rolled up: those after the newest rolled-up one (a roll-up always
// takes the oldest of its level not rolled up yet).
const UNROLLED = `conversation_id = ?1 AND kind = ?2 AND level = ?3 AND parent_id IS NULL AND first_seq >
  COALESCE((SELECT first_seq FROM summaries WHERE conversation_id = ?1 AND kind = ?2 AND level = ?3 AND parent_id IS NOT NULL
            ORDER BY first_seq DESC LIMIT 1), -1)`;

/** Every SQL statement of the memory hierarchy: the watermark and the summaries of every level. */
export function createSummaryStore(driver: StorageDriver) {
  const limits = limitsOf(driver);
  // Values per IN list beside the conversation id (a roll-up's UPDATE binds its id too).
  const per = inListSize(limits, 2);
  const select = async (where: string, params: SqlValue[]): Promise<SummaryRecord[]> =>
    (await driver.query<SummaryRow>(`SELECT ${COLUMNS} FROM summaries WHERE ${where}`, params)).map(toRecord);

  const master = async (conversationId: string): Promise<SummaryRecord | null> => {
    const rows = await select("conversation_id = ? AND kind = 'master' AND parent_id IS NULL ORDER BY level DESC, first_seq DESC, rowid DESC LIMIT 1", [conversationId]);
    return rows[0] ?? null;
  };

  return {
    /** The first seq not compacted (null before the first compaction) and how many compactions ran. */
    async state(conversationId: string): Promise<{ watermark: number; events: number } | null> {
      const rows = await driver.query<{ watermark: number; events: number }>('SELECT watermark, events FROM compaction_state WHERE conversation_id = ?', [conversationId]);
      return rows[0] ? { watermark: Number(rows[0].watermark), events: Number(rows[0].events) } : null;
    },

    /**
     * Summaries not rolled up yet (segments, roll-ups, the master), oldest first: the compacted past, whole.
     *
     * Read level by level without visiting what was rolled up (every onTurnComplete measures the frontier, and a long
     * conversation has thousands of rolled-up summaries): a roll-up always takes the oldest summaries of its level
     * that are not rolled up, so at each level those not rolled up are the ones after the newest rolled-up one, and
     * only the newest master is not rolled up.
     */
    async frontier(conversationId: string): Promise<SummaryRecord[]> {
      const out: SummaryRecord[] = [];
      for (let level = 1; ; level++) {
        const kind = level === 1 ? 'segment' : 'rollup';
        const rows = await select(UNROLLED, [conversationId, kind, level]);
        out.push(...rows);
        if (rows.length > 0) continue;
        // Levels in use run from 1 up without gaps: stop at the first level with no summary at all.
        const any = await driver.query('SELECT 1 FROM summaries WHERE conversation_id = ? AND kind = ? AND level = ? LIMIT 1', [conversationId, kind, level]);
        if (any.length === 0 && level > 1) break;
      }
      const current = await master(conversationId);
      if (current) out.push(current);
      return out.sort((a, b) => a.firstSeq - b.firstSeq || b.level - a.level);
    },

    /** The oldest `limit` summaries of `level` not rolled up yet (segments at level 1, roll-ups above), oldest first. */
    unrolled(conversationId: string, level: number, limit: number): Promise<SummaryRecord[]> {
      return select(`${UNROLLED} ORDER BY first_seq LIMIT ?4`, [conversationId, level === 1 ? 'segment' : 'rollup', level, limit]);
    },

    /** The master summary not rolled up (the newest one), if any. */
    master,

    /** Whether any of `ids` was rolled up already (by another compaction). */
    async rolledUp(conversationId: string, ids: readonly string[]): Promise<boolean> {
      const rows = await inChunks(ids, (chunk) => driver.query(
        `SELECT 1 FROM summaries WHERE conversation_id = ? AND id IN (${placeholders(chunk.length)}) AND parent_id IS NOT NULL LIMIT 1`, [conversationId, ...chunk]), per);
      return rows.length > 0;
    },

    /**
     * Level-1 summaries, earliest first (the first `limit`), or newest first; with `window` (ISO 8601 bounds, end
     * exclusive) only those whose turns overlap it.
     */
    segments(conversationId: string, limit = -1, order: 'earliest' | 'newest' = 'earliest', window?: { from: string; to: string }): Promise<SummaryRecord[]> {
      const span = window ? ' AND last_at >= ? AND first_at < ?' : '';
      return select(`conversation_id = ? AND kind = 'segment'${span} ORDER BY first_seq ${order === 'newest' ? 'DESC' : ''} LIMIT ?`,
        [conversationId, ...(window ? [window.from, window.to] : []), limit]);
    },

    /** The current tag summaries (not folded into a newer one), earliest first. */
    tagSummaries(conversationId: string): Promise<SummaryRecord[]> {
      return select("conversation_id = ? AND kind = 'tag' AND parent_id IS NULL ORDER BY first_seq", [conversationId]);
    },

    /**
     * The tag summaries of the conversation's most used tags (units carrying the tag), at most `limit`: a broad
     * question's topics. Only their row ids are sorted, then those rows are read.
     */
    async mainTagSummaries(conversationId: string, limit: number): Promise<SummaryRecord[]> {
      const top = await driver.query<{ rowid: number }>(
        `SELECT s.rowid AS rowid FROM summaries s LEFT JOIN tags t ON t.conversation_id = s.conversation_id AND t.tag = s.tag
         WHERE s.conversation_id = ? AND s.tag IS NOT NULL AND s.kind = 'tag' AND s.parent_id IS NULL ORDER BY COALESCE(t.units, 0) DESC, s.first_seq LIMIT ?`, [conversationId, limit]);
      if (top.length === 0) return [];
      const order = new Map(top.map((r, i) => [Number(r.rowid), i]));
      return (await inChunks(top.map((r) => Number(r.rowid)), (chunk) => select(`rowid IN (${placeholders(chunk.length)})`, chunk), per))
        .sort((a, b) => order.get(a.rowid)! - order.get(b.rowid)!);
    },

    /** The current tag summaries of `tags` (one per tag). */
    tagSummariesOf(conversationId: string, tags: readonly string[]): Promise<SummaryRecord[]> {
      return inChunks(tags, (chunk) => select(`conversation_id = ? AND tag IN (${placeholders(chunk.length)}) AND kind = 'tag' AND parent_id IS NULL`, [conversationId, ...chunk]), per);
    },

    /** Row ids of summaries by id. */
    async rowids(conversationId: string, ids: readonly string[]): Promise<Map<string, number>> {
      const rows = await inChunks(ids, (chunk) => driver.query<{ id: string; rowid: number }>(
        `SELECT id, rowid FROM summaries WHERE conversation_id = ? AND id IN (${placeholders(chunk.length)})`, [conversationId, ...chunk]), per);
      return new Map(rows.map((r) => [r.id, Number(r.rowid)]));
    },

    byIds(conversationId: string, ids: readonly string[]): Promise<SummaryRecord[]> {
      return inChunks(ids, (chunk) => select(`conversation_id = ? AND id IN (${placeholders(chunk.length)})`, [conversationId, ...chunk]), per);
    },

    /** By row id (the embeddings table's reference). */
    byRowids(conversationId: string, rowids: readonly number[]): Promise<SummaryRecord[]> {
      return inChunks(rowids, (chunk) => select(`conversation_id = ? AND rowid IN (${placeholders(chunk.length)})`, [conversationId, ...chunk]), per);
    },

    list(conversationId: string, kind?: Summary['kind']): Promise<SummaryRecord[]> {
      return kind ? select('conversation_id = ? AND kind = ? ORDER BY first_seq, level', [conversationId, kind])
        : select('conversation_id = ? ORDER BY first_seq, level', [conversationId]);
    },

    /**
     * Level-1 summaries carrying `tag` (as a tag or a related tag) written after the summary with row id
     * `afterRowid`, earliest first, at most `limit`: what a tag summary has not folded in yet. Segments are written
     * in the order of the turns they cover, so their row ids follow it.
     */
    segmentsTaggedAfter(conversationId: string, tag: string, afterRowid: number, limit: number): Promise<SummaryRecord[]> {
      return select(`rowid IN (SELECT st.summary_rowid FROM summary_tags st JOIN summaries x ON x.rowid = st.summary_rowid
        WHERE st.conversation_id = ? AND st.tag = ? AND st.summary_rowid > ? AND x.kind = 'segment' ORDER BY st.summary_rowid LIMIT ?) ORDER BY rowid`,
      [conversationId, tag, afterRowid, limit]);
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
     * One segment's compaction, atomically: the summary, its index rows and the watermark. (The tag summaries of its
     * tags fold it in afterwards: each knows the last segment it folded.)
     */
    async commitSegment(s: NewSummary, watermark: number, nowIso: string): Promise<void> {
      await driver.batch([
        ...insertSummary(s),
        { sql: `INSERT INTO compaction_state (conversation_id, watermark, events, updated_at) VALUES (?, ?, 0, ?)
                ON CONFLICT (conversation_id) DO UPDATE SET watermark = excluded.watermark, updated_at = excluded.updated_at`, params: [s.conversationId, watermark, nowIso] },
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
        ...chunks(childIds, per).map((chunk) => (
          { sql: `UPDATE summaries SET parent_id = ? WHERE conversation_id = ? AND id IN (${placeholders(chunk.length)})`, params: [s.id, s.conversationId, ...chunk] })),
      ]);
    },

    /**
     * A tag summary: the first of its tag, or the next version of `previousId`, which it folds in (the previous
     * one is kept, rolled up into it, like an earlier master). False, and nothing written, when another compaction
     * wrote the tag's next version first.
     */
    async foldTagSummary(s: NewSummary, previousId: string | null): Promise<boolean> {
      const current = await driver.query<{ id: string }>(
        "SELECT id FROM summaries WHERE conversation_id = ? AND tag = ? AND kind = 'tag' AND parent_id IS NULL", [s.conversationId, s.tag ?? null]);
      if ((current[0]?.id ?? null) !== previousId) return false;
      await driver.batch([
        ...insertSummary(s),
        ...(previousId ? [{ sql: 'UPDATE summaries SET parent_id = ? WHERE conversation_id = ? AND id = ?', params: [s.id, s.conversationId, previousId] }] : []),
      ]);
      return true;
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
        ...(s.kind === 'segment' ? [{ sql: 'INSERT OR IGNORE INTO summary_tags (conversation_id, tag, summary_rowid) SELECT ?, value, ? FROM json_each(?)', params: [s.conversationId, s.rowid, JSON.stringify(all)] }] : []),
      ]);
    },

    async markStale(conversationId: string, ids: readonly string[] | null): Promise<number> {
      if (ids === null) {
        const rows = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM summaries WHERE conversation_id = ?', [conversationId]);
        await driver.batch([{ sql: 'UPDATE summaries SET stale = 1 WHERE conversation_id = ?', params: [conversationId] }]);
        return Number(rows[0]?.n ?? 0);
      }
      const unique = [...new Set(ids)];
      const counts = await inChunks(unique, (chunk) => driver.query<{ n: number }>(
        `SELECT COUNT(*) AS n FROM summaries WHERE conversation_id = ? AND id IN (${placeholders(chunk.length)})`, [conversationId, ...chunk]), per);
      // One transaction, one statement per slice of the list.
      await driver.batch(chunks(unique, per).map((chunk) => ({
        sql: `UPDATE summaries SET stale = 1 WHERE conversation_id = ? AND id IN (${placeholders(chunk.length)})`, params: [conversationId, ...chunk] })));
      return counts.reduce((n, r) => n + Number(r.n ?? 0), 0);
    },

    /**
     * Tokens of the turns from `fromSeq` on, from the count cache (markup included), and how many turns they are;
     * null when some are not cached.
     */
    async turnTokensFrom(conversationId: string, fromSeq: number, encoding: string, perMessage: number): Promise<{ tokens: number; turns: number } | null> {
      const rows = await driver.query<{ n: number; counted: number; tokens: number | null }>(
        `SELECT COUNT(*) AS n, COUNT(c.tokens) AS counted, SUM(c.tokens) AS tokens FROM turns t
         LEFT JOIN turn_tokens c ON c.turn_rowid = t.rowid AND c.encoding = ? WHERE t.conversation_id = ? AND t.seq >= ?`,
        [encoding, conversationId, fromSeq]);
      const r = rows[0]!;
      if (Number(r.n) !== Number(r.counted)) return null;
      return { tokens: Number(r.tokens ?? 0) + perMessage * Number(r.n), turns: Number(r.n) };
    },
  };
}

export type SummaryStore = ReturnType<typeof createSummaryStore>;
