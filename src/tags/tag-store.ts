import { IN_LIST_MAX, inListSize, jsonLists, limitsOf, type JsonItem } from '../storage/limits.js';
import type { Statement, StorageDriver, StorageLimits } from '../contracts/types.js';
import { chunks } from '../store/in-lists.js';
import { createAliasStore, type TagAlias } from './tag-aliases.js';
import { createTagStats, type TagStat } from './tag-stats.js';
import { createTagSignatures } from './tag-signatures.js';
import { createUnitReader, createUnitWriter } from './tag-units.js';

export type { AliasRewrite, TagAlias } from './tag-aliases.js';
export type { TagStat } from './tag-stats.js';
export type { UnitTags } from './tag-units.js';

/**
 * What many manual alias states change at once (canonicalizer.applyStates), as rows: each scope's alias rows, the
 * removal records, the stored tags that move and the tag statistics recounted. Scopes: a conversation id, null for
 * the global aliases.
 */
export interface AliasChanges {
  aliases: {
    conversationId: string | null;
    /** Rows that read as the first tag read as the second, in this order (one that leads to another's after it). */
    retagged: [from: string, to: string][];
    deleted: string[];
    /** Manual aliases written whole. */
    written: [alias: string, tag: string, createdAt: string][];
    /** Whether self-aliases go (an add ran there). */
    loops: boolean;
  }[];
  /** Removal records of manual aliases: set with their time, or dropped (null). */
  removals: { conversationId: string | null; alias: string; at: string | null }[];
  /**
   * Stored tags rewritten: in a conversation, the units spelled as each of `from` move to `tag`; a unit that already
   * carries `tag` keeps its own row, then the first of `from` that carries it gives its row.
   */
  moves: { conversationId: string; tag: string; from: string[] }[];
  /** Tags whose statistics are recounted, with the time they were last used at. */
  restat: { conversationId: string; tag: string; at: string }[];
  /** Conversations whose stored tags were rewritten (their tags with no unit left are dropped). */
  rewritten: string[];
}

const scopeOf = (conversationId: string | null): string => conversationId ?? '';
const PAIRS = 'SELECT value ->> 0, value ->> 1 FROM json_each(?)';

// Recounts each listed tag (as RESTAT does one), with the time it was last used at.
const RESTAT_MANY = `INSERT INTO tags (conversation_id, tag, units, first_seq, last_seq, last_used)
  SELECT j.value ->> 0, j.value ->> 1, COUNT(u.unit_seq), MIN(u.unit_seq), MAX(u.unit_seq), j.value ->> 2
  FROM json_each(?) j LEFT JOIN unit_tags u ON u.conversation_id = j.value ->> 0 AND u.tag = j.value ->> 1 WHERE true GROUP BY j.key
  ON CONFLICT (conversation_id, tag) DO UPDATE SET units = excluded.units, first_seq = excluded.first_seq,
  last_seq = excluded.last_seq, last_used = excluded.last_used`;

/** The statements and reads of many aliases at once: every list one JSON parameter of at most IN_LIST_MAX items. */
function createAliasBulk(driver: StorageDriver, limits: Readonly<StorageLimits>) {
  const lists = (values: readonly JsonItem[]): string[] => chunks(values, IN_LIST_MAX).flatMap((part) => jsonLists(part, limits));
  const each = (sql: string, values: readonly JsonItem[]): Statement[] => lists(values).map((json) => ({ sql, params: [json] }));

  /** The units that move, in the order they take precedence, with the statements that move them. */
  async function moveStatements(moves: AliasChanges['moves']): Promise<Statement[]> {
    const from = moves.flatMap((m) => m.from.map((f): [string, string] => [m.conversationId, f]));
    const rows = new Map<string, [number, number][]>();
    for (const json of lists(from)) {
      const got = await driver.query<{ c: string; tag: string; seq: number; related: number }>(
        'SELECT u.conversation_id AS c, u.tag AS tag, u.unit_seq AS seq, u.related AS related FROM json_each(?) j JOIN unit_tags u ON u.conversation_id = j.value ->> 0 AND u.tag = j.value ->> 1', [json]);
      for (const r of got) {
        const key = `${r.c}\u0000${r.tag}`;
        const list = rows.get(key);
        if (list) list.push([Number(r.seq), Number(r.related)]);
        else rows.set(key, [[Number(r.seq), Number(r.related)]]);
      }
    }
    const insert: [string, string, number, number][] = [];
    for (const m of moves) {
      const taken = new Set<number>();
      for (const f of m.from) {
        for (const [seq, related] of rows.get(`${m.conversationId}\u0000${f}`) ?? []) {
          if (taken.has(seq)) continue;
          taken.add(seq);
          insert.push([m.conversationId, m.tag, seq, related]);
        }
      }
    }
    return [
      ...each(`DELETE FROM unit_tags WHERE (conversation_id, tag) IN (${PAIRS})`, from),
      ...each("INSERT OR IGNORE INTO unit_tags (conversation_id, tag, unit_seq, related) SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?)", insert),
    ];
  }

  return {
    /** The own aliases (manual and learned) of each of `conversations`. */
    async ownAliasesOf(conversations: readonly string[]): Promise<TagAlias[]> {
      const out: TagAlias[] = [];
      for (const json of lists(conversations)) {
        const rows = await driver.query<{ conversation_id: string; alias: string; tag: string; source: string; created_at: string }>(
          "SELECT conversation_id, alias, tag, source, created_at FROM tag_aliases WHERE conversation_id IN (SELECT value FROM json_each(?)) AND conversation_id <> ''", [json]);
        for (const r of rows) out.push({ alias: r.alias, tag: r.tag, source: r.source as TagAlias['source'], createdAt: r.created_at, conversationId: r.conversation_id });
      }
      return out;
    },

    /** Of `tags`, the conversations with stored tags spelled as each (as conversationsWithTag, for many at once). */
    async tagHolders(tags: readonly string[]): Promise<Map<string, Set<string>>> {
      const out = new Map<string, Set<string>>();
      for (const json of lists(tags)) {
        const rows = await driver.query<{ conversation_id: string; tag: string }>('SELECT DISTINCT conversation_id, tag FROM unit_tags WHERE tag IN (SELECT value FROM json_each(?))', [json]);
        for (const r of rows) {
          const set = out.get(r.tag);
          if (set) set.add(r.conversation_id);
          else out.set(r.tag, new Set([r.conversation_id]));
        }
      }
      return out;
    },

    /** Writes `changes` after `also`, in one transaction. */
    async writeAliasChanges(changes: AliasChanges, also: readonly Statement[] = []): Promise<void> {
      const a = changes.aliases;
      const removals = (at: boolean) => changes.removals.filter((r) => (r.at !== null) === at);
      const statements: Statement[] = [
        ...also,
        // In order, each list against the rows as the one before left them (see AliasChanges).
        ...a.flatMap((s) => lists(s.retagged).map((json) => ({
          sql: `UPDATE tag_aliases SET tag = (SELECT j.value ->> 1 FROM json_each(?2) j WHERE j.value ->> 0 = tag_aliases.tag)
                WHERE conversation_id = ?1 AND tag IN (SELECT value ->> 0 FROM json_each(?2))`, params: [scopeOf(s.conversationId), json],
        }))),
        ...each(`DELETE FROM tag_aliases WHERE (conversation_id, alias) IN (${PAIRS})`, a.flatMap((s) => s.deleted.map((alias) => [scopeOf(s.conversationId), alias]))),
        ...each("INSERT OR REPLACE INTO tag_aliases (conversation_id, alias, tag, source, created_at) SELECT value ->> 0, value ->> 1, value ->> 2, 'manual', value ->> 3 FROM json_each(?)",
          a.flatMap((s) => s.written.map((w) => [scopeOf(s.conversationId), ...w]))),
        ...each('DELETE FROM tag_aliases WHERE alias = tag AND conversation_id IN (SELECT value FROM json_each(?))', a.filter((s) => s.loops).map((s) => scopeOf(s.conversationId))),
        ...each(`DELETE FROM sync_alias_removals WHERE (conversation_id, alias) IN (${PAIRS})`, removals(false).map((r) => [scopeOf(r.conversationId), r.alias])),
        ...each('INSERT OR REPLACE INTO sync_alias_removals (conversation_id, alias, removed_at) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)',
          removals(true).map((r) => [scopeOf(r.conversationId), r.alias, r.at!])),
        ...await moveStatements(changes.moves),
        ...each(RESTAT_MANY, changes.restat.map((r) => [r.conversationId, r.tag, r.at])),
        ...each('DELETE FROM tags WHERE units = 0 AND conversation_id IN (SELECT value FROM json_each(?))', changes.rewritten),
      ];
      if (statements.length > 0) await driver.batch(statements);
    },
  };
}

/** The tag statistics a page at a time, by tag (the table's key: a page never shifts as counts change). */
function createTagPages(driver: StorageDriver) {
  return {
    /** Tags of a conversation after `afterTag` ('' : from the first) in their order as strings, at most `limit`. */
    async vocabularyAfter(conversationId: string, afterTag: string, limit: number): Promise<TagStat[]> {
      const rows = await driver.query<{ tag: string; units: number; first_seq: number; last_seq: number; last_used: string }>(
        'SELECT tag, units, first_seq, last_seq, last_used FROM tags WHERE conversation_id = ? AND tag > ? ORDER BY tag LIMIT ?', [conversationId, afterTag, limit]);
      return rows.map((r) => ({ tag: r.tag, units: Number(r.units), firstSeq: Number(r.first_seq), lastSeq: Number(r.last_seq), lastUsed: r.last_used }));
    },
  };
}

/**
 * Every SQL statement of the turn tag index, aliases and term statistics: the units as the tagger writes them and
 * as the other layers read them, the statistics, and the aliases, each built on its own.
 */
export function createTagStore(driver: StorageDriver) {
  const limits = limitsOf(driver);
  // Values per IN list beside the conversation id (touch binds the time too).
  const per = inListSize(limits, 2);
  return {
    ...createUnitWriter(driver, limits),
    ...createTagStats(driver, limits, per),
    ...createUnitReader(driver, limits),
    ...createAliasStore(driver),
    ...createAliasBulk(driver, limits),
    ...createTagPages(driver),
    ...createTagSignatures(driver, limits),
  };
}

export type TagStore = ReturnType<typeof createTagStore>;
