import { CACHED_CONVERSATIONS, Lru } from '../cache.js';
import { inJsonLists, inListSize, jsonLists, limitsOf } from '../storage/limits.js';
import { chunks, inChunks, placeholders } from '../store/turn-store.js';
import type { SqlValue, Statement, StorageDriver } from '../types.js';

/** A tagged unit: a user turn (`unitSeq`) and the replies that follow it, up to `endSeq`. */
export interface UnitTags {
  unitSeq: number;
  endSeq: number;
  tags: string[];
  relatedTags: string[];
  tagger: string;
}

/** A tag's statistics in one conversation. */
export interface TagStat {
  tag: string;
  /** Units carrying it (as a tag or a related tag). */
  units: number;
  firstSeq: number;
  lastSeq: number;
  lastUsed: string;
}

/**
 * A manual or learned alias: `alias` is read as `tag`, in every conversation (`conversationId: null`, manual
 * aliases only) or in one conversation. Learned (`'auto'`) aliases always belong to the conversation they were
 * learned from.
 */
export interface TagAlias {
  alias: string;
  tag: string;
  source: 'manual' | 'auto';
  createdAt: string;
  /** The conversation the alias applies to; null: every conversation. */
  conversationId: string | null;
}

/** A rewrite of one conversation's stored tags spelled as a new alias, to the spelling it reads as there. */
export interface AliasRewrite {
  conversationId: string;
  tag: string;
}

// The scope column: '' is global (conversation ids are never empty), otherwise the conversation id.
const GLOBAL = '';
const scopeOf = (conversationId: string | null): string => conversationId ?? GLOBAL;

type AliasRow = { conversation_id: string; alias: string; tag: string; source: string; created_at: string };
const aliasOf = (r: AliasRow): TagAlias => ({
  alias: r.alias, tag: r.tag, source: r.source as TagAlias['source'], createdAt: r.created_at,
  conversationId: r.conversation_id === GLOBAL ? null : r.conversation_id,
});

// Statistics of a tag recomputed from its rows: exact, and cheap with the (conversation, tag, unit) key.
const RESTAT = `INSERT INTO tags (conversation_id, tag, units, first_seq, last_seq, last_used)
  SELECT ?1, ?2, COUNT(*), MIN(unit_seq), MAX(unit_seq), ?3 FROM unit_tags WHERE conversation_id = ?1 AND tag = ?2
  ON CONFLICT (conversation_id, tag) DO UPDATE SET units = excluded.units, first_seq = excluded.first_seq,
  last_seq = excluded.last_seq, last_used = excluded.last_used`;

// A tag gained by one unit: one more unit, first and last seq widened.
const GAIN = `INSERT INTO tags (conversation_id, tag, units, first_seq, last_seq, last_used) VALUES (?1, ?2, 1, ?3, ?3, ?4)
  ON CONFLICT (conversation_id, tag) DO UPDATE SET units = units + 1, first_seq = MIN(first_seq, excluded.first_seq),
  last_seq = MAX(last_seq, excluded.last_seq), last_used = excluded.last_used`;

/** Every SQL statement of the turn tag index, aliases and term statistics. */
export function createTagStore(driver: StorageDriver) {
  const limits = limitsOf(driver);
  // Values per IN list beside the conversation id (touch binds the time too).
  const per = inListSize(limits, 2);
  // Units per conversation, read once and kept current by saveUnits() (the engine is the only writer); for the most
  // recently used conversations only.
  const unitCounts = new Lru<string, number>(CACHED_CONVERSATIONS);
  return {
    /** Drops what is cached of a conversation (its units were removed: forget). */
    uncache(conversationId: string): void {
      unitCounts.delete(conversationId);
    },

    async lastUnit(conversationId: string): Promise<{ unitSeq: number; endSeq: number } | null> {
      const rows = await driver.query<{ unit_seq: number; end_seq: number }>(
        'SELECT unit_seq, end_seq FROM units WHERE conversation_id = ? ORDER BY unit_seq DESC LIMIT 1', [conversationId]);
      const r = rows[0];
      return r ? { unitSeq: Number(r.unit_seq), endSeq: Number(r.end_seq) } : null;
    },

    async unitCount(conversationId: string): Promise<number> {
      let n = unitCounts.get(conversationId);
      if (n === undefined) {
        const rows = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM units WHERE conversation_id = ?', [conversationId]);
        n = Number(rows[0]?.n ?? 0);
        unitCounts.set(conversationId, n);
      }
      return n;
    },

    /**
     * Stores (or replaces) the tags of units, counts the terms of newly tagged turns, and brings the statistics of
     * every tag gained or lost up to date — one transaction. A gained tag's statistics move by one unit; a lost one's
     * (a unit re-tagged once its replies arrived) are recounted. Returns the tags whose statistics changed.
     */
    async saveUnits(conversationId: string, units: readonly UnitTags[], terms: ReadonlyMap<string, number>, nowIso: string): Promise<string[]> {
      if (units.length === 0) return [];
      const seqs = units.map((u) => u.unitSeq);
      const known = new Set((await inJsonLists(seqs, limits, (json) => driver.query<{ unit_seq: number }>(
        'SELECT unit_seq FROM units WHERE conversation_id = ? AND unit_seq IN (SELECT value FROM json_each(?))', [conversationId, json])))
        .map((r) => Number(r.unit_seq)));
      const before = new Map<number, Map<string, number>>();
      for (const r of await inJsonLists(seqs, limits, (json) => driver.query<{ unit_seq: number; tag: string; related: number }>(
        `SELECT unit_seq, tag, related FROM unit_tags INDEXED BY unit_tags_by_unit
         WHERE conversation_id = ? AND unit_seq IN (SELECT value FROM json_each(?))`, [conversationId, json]))) {
        const m = before.get(Number(r.unit_seq)) ?? new Map<string, number>();
        m.set(r.tag, Number(r.related));
        before.set(Number(r.unit_seq), m);
      }
      const lost = new Set<string>();
      const changed = new Set<string>();
      const statements: Statement[] = [];
      for (const u of units) {
        statements.push({ sql: 'INSERT OR REPLACE INTO units (conversation_id, unit_seq, end_seq, tagger, tagged_at) VALUES (?, ?, ?, ?, ?)',
          params: [conversationId, u.unitSeq, u.endSeq, u.tagger, nowIso] });
        const after = new Map<string, number>(u.relatedTags.map((t) => [t, 1]));
        for (const t of u.tags) after.set(t, 0);
        const old = before.get(u.unitSeq) ?? new Map<string, number>();
        for (const [tag] of old) {
          if (after.has(tag)) continue;
          statements.push({ sql: 'DELETE FROM unit_tags WHERE conversation_id = ? AND tag = ? AND unit_seq = ?', params: [conversationId, tag, u.unitSeq] });
          lost.add(tag);
        }
        for (const [tag, related] of after) {
          if (old.get(tag) === related) continue;
          statements.push({ sql: 'INSERT OR REPLACE INTO unit_tags (conversation_id, tag, unit_seq, related) VALUES (?, ?, ?, ?)',
            params: [conversationId, tag, u.unitSeq, related] });
          if (!old.has(tag)) {
            statements.push({ sql: GAIN, params: [conversationId, tag, u.unitSeq, nowIso] });
            changed.add(tag);
          }
        }
      }
      for (const tag of lost) statements.push({ sql: RESTAT, params: [conversationId, tag, nowIso] });
      if (lost.size > 0) statements.push({ sql: 'DELETE FROM tags WHERE conversation_id = ? AND units = 0', params: [conversationId] });
      for (const [term, n] of terms) {
        statements.push({ sql: `INSERT INTO term_df (conversation_id, term, turns) VALUES (?, ?, ?)
          ON CONFLICT (conversation_id, term) DO UPDATE SET turns = turns + excluded.turns`, params: [conversationId, term, n] });
      }
      await driver.batch(statements);
      const count = unitCounts.get(conversationId);
      if (count !== undefined) unitCounts.set(conversationId, count + units.filter((u) => !known.has(u.unitSeq)).length);
      return [...changed, ...[...lost].filter((t) => !changed.has(t))];
    },

    /** Units carrying each of `tags` (a tag no unit carries is absent). */
    async tagUnits(conversationId: string, tags: readonly string[]): Promise<Map<string, number>> {
      const rows = await inChunks(tags, (chunk) => driver.query<{ tag: string; units: number }>(
        `SELECT tag, units FROM tags WHERE conversation_id = ? AND tag IN (${placeholders(chunk.length)})`, [conversationId, ...chunk]), per);
      return new Map(rows.map((r) => [r.tag, Number(r.units)]));
    },

    /** In how many turns of the conversation each term occurs (absent: never). */
    async termFrequencies(conversationId: string, terms: readonly string[]): Promise<Map<string, number>> {
      const rows = await inChunks(terms, (chunk) => driver.query<{ term: string; turns: number }>(
        `SELECT term, turns FROM term_df WHERE conversation_id = ? AND term IN (${placeholders(chunk.length)})`, [conversationId, ...chunk]), per);
      return new Map(rows.map((r) => [r.term, Number(r.turns)]));
    },

    /** All tags of a conversation, most used first. */
    async vocabulary(conversationId: string, limit = 100_000): Promise<TagStat[]> {
      const rows = await driver.query<{ tag: string; units: number; first_seq: number; last_seq: number; last_used: string }>(
        'SELECT tag, units, first_seq, last_seq, last_used FROM tags WHERE conversation_id = ? ORDER BY units DESC, tag LIMIT ?',
        [conversationId, limit]);
      return rows.map((r) => ({ tag: r.tag, units: Number(r.units), firstSeq: Number(r.first_seq), lastSeq: Number(r.last_seq), lastUsed: r.last_used }));
    },

    /**
     * Units carrying any of the weighted tags, scored by the sum of the weights of the tags they carry (a related
     * tag on the unit counts half), best first, ties to the later unit. Each tag contributes its latest `perTag`
     * units: a tag on thousands of units has a low weight, and reading all of them costs more than the rest of a
     * question (at 10,000 turns).
     */
    async matchUnits(conversationId: string, weights: ReadonlyMap<string, number>, limit: number, perTag = 128): Promise<{ unitSeq: number; endSeq: number; score: number; tags: string[] }[]> {
      if (weights.size === 0) return [];
      // The weighted tags are one JSON parameter read as a table (a compound SELECT per tag would need a term each:
      // the edge allows 5). Each tag's latest `perTag` units are those from its perTag-th newest on: that seq is
      // looked up once per tag (the subquery bounds the index range), so a tag on thousands of units costs perTag
      // rows, as a LIMIT per tag did. Summed per unit; only `limit` rows return.
      const order = new Map([...weights.keys()].map((t, i) => [t, i]));
      const lists = jsonLists([...weights].map(([tag, weight]) => [tag, weight]), limits);
      const byUnit = new Map<number, { unitSeq: number; endSeq: number; score: number; tags: string[] }>();
      for (const json of lists) {
        // Past the row limit the list is split (tens of thousands of tags): then every unit's parts are summed here.
        const rows = await driver.query<{ unit_seq: number; end_seq: number; score: number; tags: string }>(
          `WITH w AS (SELECT json_extract(value, '$[0]') AS tag, json_extract(value, '$[1]') AS weight FROM json_each(?4)),
           m AS (
             SELECT u.unit_seq AS unit_seq, SUM(w.weight * (CASE u.related WHEN 1 THEN 0.5 ELSE 1.0 END)) AS score, group_concat(u.tag, ' ') AS tags
             FROM w CROSS JOIN unit_tags u
             WHERE u.conversation_id = ?1 AND u.tag = w.tag AND u.unit_seq >= COALESCE((SELECT x.unit_seq FROM unit_tags x
               WHERE x.conversation_id = ?1 AND x.tag = w.tag ORDER BY x.unit_seq DESC LIMIT 1 OFFSET ?2 - 1), -1)
             GROUP BY u.unit_seq ORDER BY score DESC, u.unit_seq DESC LIMIT ?3)
           SELECT m.unit_seq AS unit_seq, n.end_seq AS end_seq, m.score AS score, m.tags AS tags
           FROM m JOIN units n ON n.conversation_id = ?1 AND n.unit_seq = m.unit_seq ORDER BY m.score DESC, m.unit_seq DESC`,
          [conversationId, perTag, lists.length === 1 ? limit : -1, json]);
        for (const r of rows) {
          const unitSeq = Number(r.unit_seq);
          const seen = byUnit.get(unitSeq);
          if (seen) { seen.score += Number(r.score); seen.tags.push(...r.tags.split(' ')); }
          else byUnit.set(unitSeq, { unitSeq, endSeq: Number(r.end_seq), score: Number(r.score), tags: r.tags.split(' ') });
        }
      }
      const out = [...byUnit.values()];
      // In the order the weights were given (a group's order is SQLite's).
      for (const u of out) u.tags.sort((a, b) => (order.get(a) ?? order.size) - (order.get(b) ?? order.size));
      return lists.length === 1 ? out : out.sort((a, b) => b.score - a.score || b.unitSeq - a.unitSeq).slice(0, limit);
    },

    /** The tags most often found on the same units as `tag`, over its latest `window` units. */
    async coTags(conversationId: string, tag: string, limit: number, window = 64): Promise<string[]> {
      const rows = await driver.query<{ tag: string }>(
        `SELECT o.tag AS tag FROM
           (SELECT unit_seq FROM unit_tags WHERE conversation_id = ?1 AND tag = ?2 ORDER BY unit_seq DESC LIMIT ?4) u
         CROSS JOIN unit_tags o INDEXED BY unit_tags_by_unit ON o.conversation_id = ?1 AND o.unit_seq = u.unit_seq
         WHERE o.tag <> ?2 AND o.related = 0
         GROUP BY o.tag ORDER BY COUNT(*) DESC, o.tag LIMIT ?3`, [conversationId, tag, limit, window]);
      return rows.map((r) => r.tag);
    },

    /** The unit each turn belongs to (the nearest unit start at or before it). */
    async unitOf(conversationId: string, seqs: readonly number[]): Promise<Map<number, { unitSeq: number; endSeq: number }>> {
      const out = new Map<number, { unitSeq: number; endSeq: number }>();
      if (seqs.length === 0) return out;
      const rows = await inJsonLists(seqs, limits, (json) => driver.query<{ seq: number; unit_seq: number | null; end_seq: number | null }>(
        `SELECT s.value AS seq, u.unit_seq AS unit_seq, u.end_seq AS end_seq FROM json_each(?) s
         LEFT JOIN units u ON u.conversation_id = ? AND u.unit_seq =
           (SELECT MAX(unit_seq) FROM units WHERE conversation_id = ? AND unit_seq <= s.value)`,
        [json, conversationId, conversationId]));
      for (const r of rows) if (r.unit_seq !== null && Number(r.seq) <= Number(r.end_seq)) out.set(Number(r.seq), { unitSeq: Number(r.unit_seq), endSeq: Number(r.end_seq) });
      return out;
    },

    /** The tags of units: `tags` first, then `related`. */
    async tagsOf(conversationId: string, unitSeqs: readonly number[]): Promise<Map<number, { tags: string[]; related: string[] }>> {
      const out = new Map<number, { tags: string[]; related: string[] }>();
      if (unitSeqs.length === 0) return out;
      const rows = await inJsonLists(unitSeqs, limits, (json) => driver.query<{ unit_seq: number; tag: string; related: number }>(
        // Without statistics the planner would walk the primary key (by tag) of every row of the conversation.
        `SELECT unit_seq, tag, related FROM unit_tags INDEXED BY unit_tags_by_unit
         WHERE conversation_id = ? AND unit_seq IN (SELECT value FROM json_each(?))`,
        [conversationId, json]));
      for (const r of rows) {
        const entry = out.get(Number(r.unit_seq)) ?? { tags: [], related: [] };
        out.set(Number(r.unit_seq), entry);
        (Number(r.related) === 1 ? entry.related : entry.tags).push(r.tag);
      }
      return out;
    },

    /**
     * Tags that only units holding a private turn carry: words of private messages, kept from every tagger but the
     * keyword one and from the summarizer (a tag that a unit without private turns carries is not withheld).
     */
    async privateTags(conversationId: string): Promise<Set<string>> {
      const rows = await driver.query<{ tag: string }>(
        `WITH p AS (SELECT DISTINCT u.unit_seq FROM turns t INDEXED BY turns_private
           JOIN units u ON u.conversation_id = ?1 AND u.unit_seq = (SELECT MAX(unit_seq) FROM units WHERE conversation_id = ?1 AND unit_seq <= t.seq)
           WHERE t.conversation_id = ?1 AND t.private = 1 AND u.end_seq >= t.seq)
         SELECT DISTINCT c.tag FROM p CROSS JOIN unit_tags c INDEXED BY unit_tags_by_unit ON c.conversation_id = ?1 AND c.unit_seq = p.unit_seq
           WHERE NOT EXISTS (SELECT 1 FROM unit_tags o WHERE o.conversation_id = ?1 AND o.tag = c.tag AND o.unit_seq NOT IN (SELECT unit_seq FROM p))`,
        [conversationId]);
      return new Set(rows.map((r) => r.tag));
    },

    /** Units starting at or after `fromSeq`, in order. */
    async unitsFrom(conversationId: string, fromSeq: number, limit = 100_000): Promise<{ unitSeq: number; endSeq: number }[]> {
      const rows = await driver.query<{ unit_seq: number; end_seq: number }>(
        'SELECT unit_seq, end_seq FROM units WHERE conversation_id = ? AND unit_seq >= ? ORDER BY unit_seq LIMIT ?', [conversationId, fromSeq, limit]);
      return rows.map((r) => ({ unitSeq: Number(r.unit_seq), endSeq: Number(r.end_seq) }));
    },

    /** Primary (not related) tags of every unit before `beforeSeq`: the universe of the set cover. */
    async primaryTagsBefore(conversationId: string, beforeSeq: number): Promise<Map<number, string[]>> {
      const rows = await driver.query<{ unit_seq: number; tag: string }>(
        'SELECT unit_seq, tag FROM unit_tags INDEXED BY unit_tags_by_unit WHERE conversation_id = ? AND unit_seq < ? AND related = 0', [conversationId, beforeSeq]);
      const out = new Map<number, string[]>();
      for (const r of rows) {
        const list = out.get(Number(r.unit_seq)) ?? [];
        list.push(r.tag);
        out.set(Number(r.unit_seq), list);
      }
      return out;
    },

    /** Marks tags as used now (a question matched them). */
    async touch(conversationId: string, tags: readonly string[], nowIso: string): Promise<void> {
      if (tags.length === 0) return;
      await driver.batch(chunks(tags, per).map((chunk) => (
        { sql: `UPDATE tags SET last_used = ? WHERE conversation_id = ? AND tag IN (${placeholders(chunk.length)})`, params: [nowIso, conversationId, ...chunk] })));
    },

    /**
     * Aliases of one scope: the global ones (no argument), or the global ones then those of `conversationId` (with
     * `own`: that conversation's only). Each in alias order.
     */
    async aliases(conversationId?: string, own = false): Promise<TagAlias[]> {
      const scopes = conversationId === undefined ? [GLOBAL] : own ? [conversationId] : [GLOBAL, conversationId];
      const rows = await driver.query<AliasRow>(
        `SELECT conversation_id, alias, tag, source, created_at FROM tag_aliases WHERE conversation_id IN (${placeholders(scopes.length)})
         ORDER BY conversation_id <> '', alias`, scopes);
      return rows.map(aliasOf);
    },

    /** Every alias of every scope (for suggestions over all conversations). */
    async allAliases(): Promise<TagAlias[]> {
      return (await driver.query<AliasRow>('SELECT conversation_id, alias, tag, source, created_at FROM tag_aliases ORDER BY conversation_id, alias')).map(aliasOf);
    },

    /** Every tag of every conversation with its units, grouped by conversation (for alias suggestions). */
    async tagsByConversation(): Promise<{ conversationId: string; tag: string; units: number }[]> {
      const rows = await driver.query<{ conversation_id: string; tag: string; units: number }>(
        'SELECT conversation_id, tag, units FROM tags ORDER BY conversation_id, units DESC, tag');
      return rows.map((r) => ({ conversationId: r.conversation_id, tag: r.tag, units: Number(r.units) }));
    },

    /** Conversations with stored tags spelled `tag`. */
    async conversationsWithTag(tag: string): Promise<string[]> {
      const rows = await driver.query<{ conversation_id: string }>('SELECT DISTINCT conversation_id FROM unit_tags WHERE tag = ? ORDER BY conversation_id', [tag]);
      return rows.map((r) => r.conversation_id);
    },

    /**
     * Records an alias in its scope and, in the same transaction, rewrites the stored tags spelled `alias` in the
     * conversations named by `rewrites` (derived data, with their statistics) — never in any other conversation.
     * Aliases of the same scope that pointed at `alias` now point at its tag. A manual alias replaces one of the same
     * spelling and scope; a learned one never replaces anything.
     */
    async addAlias(entry: TagAlias, rewrites: readonly AliasRewrite[]): Promise<void> {
      const scope = scopeOf(entry.conversationId);
      const statements: Statement[] = [
        { sql: `INSERT OR ${entry.source === 'manual' ? 'REPLACE' : 'IGNORE'} INTO tag_aliases (conversation_id, alias, tag, source, created_at) VALUES (?, ?, ?, ?, ?)`,
          params: [scope, entry.alias, entry.tag, entry.source, entry.createdAt] },
        { sql: 'UPDATE tag_aliases SET tag = ? WHERE conversation_id = ? AND tag = ?', params: [entry.tag, scope, entry.alias] },
        // A spelling read as itself is no alias.
        { sql: 'DELETE FROM tag_aliases WHERE conversation_id = ? AND alias = tag', params: [scope] },
      ];
      for (const { conversationId: c, tag } of rewrites) {
        if (tag === entry.alias) continue;
        const params: SqlValue[] = [c, tag, entry.createdAt];
        statements.push(
          { sql: `INSERT OR IGNORE INTO unit_tags (conversation_id, tag, unit_seq, related)
                  SELECT conversation_id, ?, unit_seq, related FROM unit_tags WHERE conversation_id = ? AND tag = ?`, params: [tag, c, entry.alias] },
          { sql: 'DELETE FROM unit_tags WHERE conversation_id = ? AND tag = ?', params: [c, entry.alias] },
          { sql: RESTAT, params },
          { sql: RESTAT, params: [c, entry.alias, entry.createdAt] },
          { sql: 'DELETE FROM tags WHERE conversation_id = ? AND units = 0', params: [c] },
        );
      }
      await driver.batch(statements);
    },

    /** Removes the alias of one scope (stored tags it rewrote stay as they are). */
    async removeAlias(conversationId: string | null, alias: string): Promise<boolean> {
      const scope = scopeOf(conversationId);
      const rows = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM tag_aliases WHERE conversation_id = ? AND alias = ?', [scope, alias]);
      if (Number(rows[0]?.n ?? 0) === 0) return false;
      await driver.batch([{ sql: 'DELETE FROM tag_aliases WHERE conversation_id = ? AND alias = ?', params: [scope, alias] }]);
      return true;
    },
  };
}

export type TagStore = ReturnType<typeof createTagStore>;
