// Which tagger made each conversation's tag index, and the tag index replaced whole by one rebuilt beside it
// (engine/rebuild-tags.ts): after a tagger's version changes, recall reads the old tags until the new index is
// complete, then the new one takes their place in one transaction.
import { IN_LIST_MAX, jsonLists, type JsonItem } from '../storage/limits.js';
import { chunks } from '../store/in-lists.js';
import type { Statement, StorageDriver, StorageLimits, Tagger } from '../contracts/types.js';
import type { UnitTags } from './tag-units.js';

/**
 * What a tagger's tags are recorded as made by: its name (an LLM tagger's names its model) and version. Null for a
 * tagger that declares no version: its tags are never rebuilt, and nothing is recorded for them.
 */
export function signatureOf(tagger: Tagger | undefined): string | null {
  return tagger?.version === undefined ? null : `${tagger.name}@${tagger.version}`;
}

/** The statement that records `signature` for a conversation that has none (its tags are being made now). */
export function firstSignature(conversationId: string, signature: string): Statement {
  return { sql: 'INSERT OR IGNORE INTO tag_signatures (conversation_id, signature) VALUES (?, ?)', params: [conversationId, signature] };
}

/** Where a conversation's turns stand up to `end`: changed by a forget or a move to another branch, not by appends. */
export interface Fingerprint {
  turns: number;
  maxRowid: number;
  /** The row at position `end`. */
  head: number | null;
}

/** A tag index made beside the stored one, whole: it replaces the stored one. */
export interface StagedIndex {
  units: readonly UnitTags[];
  /** In how many turns each term occurs. */
  terms: ReadonlyMap<string, number>;
  /** Automatic aliases learned while it was made: alias → tag. */
  aliases: ReadonlyMap<string, string>;
}

export function createTagSignatures(driver: StorageDriver, limits: Readonly<StorageLimits>) {
  const lists = (values: readonly JsonItem[]): string[] => chunks(values, IN_LIST_MAX).flatMap((part) => jsonLists(part, limits));
  return {
    /** Records `signature` for every conversation that has none: they count as made by the tagger configured now. */
    async recordUnsigned(signature: string): Promise<void> {
      await driver.batch([{ sql: 'INSERT OR IGNORE INTO tag_signatures (conversation_id, signature) SELECT id, ? FROM conversations', params: [signature] }]);
    },

    /** The most recently updated conversation whose tags another tagger or version made, if any. */
    async unsignedBy(signature: string): Promise<string | null> {
      const rows = await driver.query<{ id: string }>(
        `SELECT c.id AS id FROM conversations c JOIN tag_signatures s ON s.conversation_id = c.id
         WHERE s.signature <> ? ORDER BY c.updated_at DESC, c.id LIMIT 1`, [signature]);
      return rows[0]?.id ?? null;
    },

    /** Conversations in all, and those whose tags `signature` made (one with no record counts as made by it). */
    async signedBy(signature: string): Promise<{ total: number; done: number }> {
      const rows = await driver.query<{ total: number; old: number }>(
        `SELECT (SELECT COUNT(*) FROM conversations) AS total,
          (SELECT COUNT(*) FROM tag_signatures s JOIN conversations c ON c.id = s.conversation_id WHERE s.signature <> ?) AS old`, [signature]);
      const total = Number(rows[0]?.total ?? 0);
      return { total, done: total - Number(rows[0]?.old ?? 0) };
    },

    async fingerprint(conversationId: string, end: number): Promise<Fingerprint> {
      const rows = await driver.query<{ n: number; top: number; head: number | null }>(
        `SELECT COUNT(*) AS n, COALESCE(MAX(rowid), 0) AS top, (SELECT rowid FROM turns WHERE conversation_id = ?1 AND seq = ?2) AS head
         FROM turns WHERE conversation_id = ?1 AND seq BETWEEN 0 AND ?2`, [conversationId, end]);
      const r = rows[0];
      return { turns: Number(r?.n ?? 0), maxRowid: Number(r?.top ?? 0), head: r?.head === null || r?.head === undefined ? null : Number(r.head) };
    },

    /**
     * Replaces the conversation's tag index — units, their tags, the tags' statistics, the term counts, the learned
     * aliases — with `index`, and records `signature` as its maker: one transaction, each list one JSON parameter.
     */
    async replaceIndex(conversationId: string, index: StagedIndex, signature: string, nowIso: string): Promise<void> {
      const each = (sql: string, values: readonly JsonItem[], before: unknown[] = [conversationId]): Statement[] =>
        lists(values).map((json) => ({ sql, params: [...before, json] as never }));
      const statements: Statement[] = [
        { sql: 'DELETE FROM unit_tags WHERE conversation_id = ?', params: [conversationId] },
        { sql: 'DELETE FROM units WHERE conversation_id = ?', params: [conversationId] },
        { sql: 'DELETE FROM tags WHERE conversation_id = ?', params: [conversationId] },
        { sql: 'DELETE FROM term_df WHERE conversation_id = ?', params: [conversationId] },
        { sql: "DELETE FROM tag_aliases WHERE conversation_id = ? AND source = 'auto'", params: [conversationId] },
        ...each('INSERT INTO units (conversation_id, unit_seq, end_seq, tagger, tagged_at) SELECT ?1, value ->> 0, value ->> 1, value ->> 2, ?2 FROM json_each(?3)',
          index.units.map((u) => [u.unitSeq, u.endSeq, u.tagger]), [conversationId, nowIso]),
        // A tag is primary where the unit names it both ways (as the tag index stores a unit).
        ...each('INSERT OR REPLACE INTO unit_tags (conversation_id, tag, unit_seq, related) SELECT ?1, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?2)',
          index.units.flatMap((u) => [...u.relatedTags.filter((t) => !u.tags.includes(t)).map((t) => [t, u.unitSeq, 1]), ...u.tags.map((t) => [t, u.unitSeq, 0])])),
        { sql: `INSERT INTO tags (conversation_id, tag, units, first_seq, last_seq, last_used)
          SELECT ?1, tag, COUNT(*), MIN(unit_seq), MAX(unit_seq), ?2 FROM unit_tags WHERE conversation_id = ?1 GROUP BY tag`, params: [conversationId, nowIso] },
        ...each('INSERT INTO term_df (conversation_id, term, turns) SELECT ?1, value ->> 0, value ->> 1 FROM json_each(?2)', [...index.terms]),
        // A manual alias of the same spelling stands.
        ...each("INSERT OR IGNORE INTO tag_aliases (conversation_id, alias, tag, source, created_at) SELECT ?1, value ->> 0, value ->> 1, 'auto', ?2 FROM json_each(?3)",
          [...index.aliases], [conversationId, nowIso]),
        { sql: `INSERT INTO tag_signatures (conversation_id, signature) VALUES (?, ?)
          ON CONFLICT (conversation_id) DO UPDATE SET signature = excluded.signature`, params: [conversationId, signature] },
      ];
      await driver.batch(statements);
    },
  };
}
