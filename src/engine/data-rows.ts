// The stored rows data control reads and removes: a conversation's turn rows, a stored conversation by its id, and
// the removal of turns with everything derived from them (forget, and an import undone).
import type { DataDeps, TurnRow } from './data-types.js';
import { PagewiseError } from '../contracts/errors.js';
import { describe, validateConversationId } from '../common/messages.js';
import { inListSize } from '../storage/limits.js';
import { MIGRATIONS } from '../store/schema.js';
import { ATTACHMENT_SWEEP, attachmentRefRemoval } from '../store/attachment-store.js';
import { chunks, type TurnStore } from '../store/turn-store.js';
import type { ConversationInfo, MaybePromise, Statement, StorageDriver } from '../contracts/types.js';

const MODULE = 'data';

// The trigger that keeps turns append-only (schema migration 1); forget drops and recreates it in its transaction.
const NO_DELETE = MIGRATIONS[0]!.find((sql) => sql.includes('turns_no_delete'))!;

export const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** Values per IN list: each statement binds the conversation id at most besides (the driver's maxParams). */
export const inListOf = (store: TurnStore): number => inListSize(store.limits, 1);

/** Rows of a conversation (`where` appended to its condition), in order. */
export function turnRows(driver: StorageDriver, conversationId: string, where = '', params: unknown[] = []): MaybePromise<TurnRow[]> {
  return driver.query<TurnRow>(`SELECT rowid, seq, id, text, name FROM turns WHERE conversation_id = ?${where} ORDER BY seq`, [conversationId, ...params] as never);
}

/** The stored conversation `value` names, or CONVERSATION_NOT_FOUND. */
export async function storedConversation(store: TurnStore, value: unknown, path = 'conversationId'): Promise<ConversationInfo> {
  const conversationId = validateConversationId(value, path);
  const info = await store.conversation(conversationId);
  if (!info) throw new PagewiseError('CONVERSATION_NOT_FOUND', MODULE, `No conversation ${describe(conversationId)} is stored. List them with memory.conversations().`);
  return info;
}

/**
 * Removes the rows and everything derived from them, in one transaction; then purges the index and the free pages.
 * `retag`: the tag index's rewrite (a partial forget); without it, the conversation's tag index goes whole and is
 * rebuilt from what is left. Resolves with the number of summaries removed.
 */
export type Remove = ((conversationId: string, rows: readonly TurnRow[], whole: boolean, retag?: Statement[], extra?: Statement[], purgeLater?: boolean, touch?: boolean) => Promise<number>) & {
  /** The purge a removal with `purgeLater` left to its caller (once after many: sync's tombstones of many conversations). */
  purge(): Promise<void>;
};

/** Keeps the highest row id a turn ever had (NEXT_ROWID never gives a removed one again: sync cursors read by it). */
const KEEP_FLOOR: Statement = {
  sql: `INSERT INTO pagewise_meta (key, value) VALUES ('turns:floor', (SELECT COALESCE(MAX(rowid), 0) FROM turns))
        ON CONFLICT (key) DO UPDATE SET value = MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))`,
};

export function createRemoval(d: Pick<DataDeps, 'driver' | 'store' | 'uncache'>): Remove {
  const { driver } = d;
  const per = inListOf(d.store);

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

  // `touch`: the conversation counts as updated now (retention's removals leave its time as it was: a conversation
  // trimmed for its age is not a recent one).
  const remove = async (conversationId: string, rows: readonly TurnRow[], whole: boolean, retag?: Statement[], extra: Statement[] = [], purgeLater = false, touch = true): Promise<number> => {
    const summaries = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM summaries WHERE conversation_id = ?', [conversationId]);
    // `extra`: what the caller writes in the same transaction (forget's tombstones, a sync's cursor).
    const statements: Statement[] = [KEEP_FLOOR, ...extra, { sql: 'DROP TRIGGER turns_no_delete' }];
    for (const part of chunks(rows, per)) {
      // A contentless FTS5 table forgets a row only when given the values it indexed.
      for (const r of part) statements.push({ sql: "INSERT INTO turns_fts (turns_fts, rowid, text, name) VALUES ('delete', ?, ?, ?)", params: [r.rowid, r.text, r.name ?? ''] });
      const rowids = part.map((r) => r.rowid);
      statements.push(
        { sql: `DELETE FROM turn_tokens WHERE turn_rowid IN (${marks(part.length)})`, params: rowids },
        { sql: `DELETE FROM turn_recalls WHERE turn_rowid IN (${marks(part.length)})`, params: rowids },
        { sql: `DELETE FROM pins WHERE conversation_id = ? AND turn_id IN (${marks(part.length)})`, params: [conversationId, ...part.map((r) => r.id)] },
        { sql: `DELETE FROM embeddings WHERE conversation_id = ? AND kind = 'turn' AND ref IN (${marks(part.length)})`, params: [conversationId, ...part.map((r) => r.seq)] },
        // Sync's receipts may name a removed row: its id and hash (never text) say it was here. A forgotten one (a
        // tombstone in this transaction covers it) also by turn, so a copy of it that comes back is refused; one let
        // go otherwise (a resync's sweep, an import undone) was forgotten by nobody.
        {
          sql: `INSERT OR IGNORE INTO sync_removed (rowid, content_hash, conversation_id, turn_id, ord)
                SELECT rowid, content_hash, IIF(forgot, conversation_id, NULL), IIF(forgot, id, NULL), IIF(forgot, origin_ord, NULL) FROM (
                  SELECT t.rowid AS rowid, t.content_hash, t.conversation_id, t.id, t.origin_ord, EXISTS (SELECT 1 FROM sync_tombstones s
                    WHERE s.conversation_id = t.conversation_id AND s.origin_ord > t.origin_ord AND (s.turn_id = '' OR (s.turn_id = t.id AND s.content_hash = t.content_hash))) AS forgot
                  FROM turns t WHERE t.private = 0 AND t.rowid IN (${marks(part.length)}))`,
          params: rowids,
        },
        { sql: `DELETE FROM turns WHERE rowid IN (${marks(part.length)})`, params: rowids },
        attachmentRefRemoval(rowids),
      );
    }
    // An attachment no kept turn (of any conversation) refers to goes with them, its bytes with it.
    statements.push({ sql: NO_DELETE }, ...derivedRemoval(conversationId, whole, retag, touch), ...ATTACHMENT_SWEEP);
    await driver.query('PRAGMA secure_delete = ON');
    await driver.batch(statements);
    d.uncache(conversationId);
    if (!purgeLater) await purge();
    return Number(summaries[0]?.n ?? 0);
  };
  return Object.assign(remove, { purge });
}

/** What is derived from the conversation's turns as a whole: removed, and rebuilt from what is left. */
export function derivedRemoval(conversationId: string, whole: boolean, retag: Statement[] | undefined, touch = true): Statement[] {
  const statements: Statement[] = [
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
      // The index is made again by the tagger configured now.
      { sql: 'DELETE FROM tag_signatures WHERE conversation_id = ?', params: [conversationId] },
    ]),
    { sql: "DELETE FROM tag_aliases WHERE conversation_id = ? AND source = 'auto'", params: [conversationId] },
  ];
  if (whole) {
    statements.push(
      { sql: 'DELETE FROM embeddings WHERE conversation_id = ?', params: [conversationId] },
      { sql: 'DELETE FROM pins WHERE conversation_id = ?', params: [conversationId] },
      { sql: 'DELETE FROM sync_unpins WHERE conversation_id = ?', params: [conversationId] },
      { sql: 'DELETE FROM sync_alias_removals WHERE conversation_id = ?', params: [conversationId] },
      { sql: 'DELETE FROM tag_aliases WHERE conversation_id = ?', params: [conversationId] },
      { sql: 'DELETE FROM llm_usage WHERE conversation_id = ?', params: [conversationId] },
      { sql: 'DELETE FROM usage_counters WHERE conversation_id = ?', params: [conversationId] },
      // Its own retention policy goes with it (a conversation of the same id later starts with the option's).
      { sql: 'DELETE FROM retention_policies WHERE conversation_id = ?', params: [conversationId] },
      { sql: 'DELETE FROM conversations WHERE id = ?', params: [conversationId] },
    );
  } else if (touch) {
    statements.push({ sql: 'UPDATE conversations SET updated_at = ? WHERE id = ?', params: [new Date().toISOString(), conversationId] });
  }
  return statements;
}
