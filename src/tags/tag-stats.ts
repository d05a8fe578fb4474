import { jsonLists } from '../storage/limits.js';
import { chunks, inChunks, placeholders } from '../store/turn-store.js';
import type { StorageDriver, StorageLimits } from '../contracts/types.js';
import type { TagStat } from '../contracts/types-data.js';

export type { TagStat } from '../contracts/types-data.js';


/**
 * Tag and term statistics, and the units they match: what retrieval weighs a question's tags with. `per`: values
 * per IN list beside the conversation id.
 */
export function createTagStats(driver: StorageDriver, limits: Readonly<StorageLimits>, per: number) {
  return {
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

    /** Marks tags as used now (a question matched them). */
    async touch(conversationId: string, tags: readonly string[], nowIso: string): Promise<void> {
      if (tags.length === 0) return;
      await driver.batch(chunks(tags, per).map((chunk) => (
        { sql: `UPDATE tags SET last_used = ? WHERE conversation_id = ? AND tag IN (${placeholders(chunk.length)})`, params: [nowIso, conversationId, ...chunk] })));
    },
  };
}
