import type { SqlValue, Statement, StorageDriver, Summary } from '../contracts/types.js';

export interface SummaryRow {
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

export const COLUMNS = 'rowid, id, conversation_id, kind, level, tag, first_seq, last_seq, first_at, last_at, source_ids, text, tags, related, tokens, made_by, prompt_version, created_at, parent_id, stale';

export function toRecord(r: SummaryRow): SummaryRecord {
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
export function insertSummary(s: NewSummary): Statement[] {
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

/** The summaries matching `where` (a WHERE clause, with its ORDER BY and LIMIT), as records. */
export async function selectSummaries(driver: StorageDriver, where: string, params: SqlValue[]): Promise<SummaryRecord[]> {
  return (await driver.query<SummaryRow>(`SELECT ${COLUMNS} FROM summaries WHERE ${where}`, params)).map(toRecord);
}
