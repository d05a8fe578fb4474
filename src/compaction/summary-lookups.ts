import { inChunks, placeholders } from '../store/turn-store.js';
import type { SqlValue, StorageDriver, Summary } from '../contracts/types.js';
import { COLUMNS, type SummaryRecord, type SummaryRow, selectSummaries, toRecord } from './summary-rows.js';

/**
 * The summaries as retrieval, assembly and the tools read them: by kind, tag, id or row id, and by BM25. `per`:
 * values per IN list beside the conversation id.
 */
export function createSummaryLookups(driver: StorageDriver, per: number) {
  const select = (where: string, params: SqlValue[]): Promise<SummaryRecord[]> => selectSummaries(driver, where, params);

  return {
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
     * A page of the conversation's summaries (or of one kind) in the order they were written: row ids after
     * `afterRowid`, at most `limit`. Row ids only grow, so a page is stable while the conversation compacts.
     */
    listAfter(conversationId: string, afterRowid: number, limit: number, kind?: Summary['kind']): Promise<SummaryRecord[]> {
      return kind ? select('conversation_id = ? AND kind = ? AND rowid > ? ORDER BY rowid LIMIT ?', [conversationId, kind, afterRowid, limit])
        : select('conversation_id = ? AND rowid > ? ORDER BY rowid LIMIT ?', [conversationId, afterRowid, limit]);
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
  };
}
