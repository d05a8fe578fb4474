import { CACHED_CONVERSATIONS, Lru } from '../common/cache.js';
import { inJsonLists } from '../storage/limits.js';
import type { Statement, StorageDriver, StorageLimits } from '../contracts/types.js';

/** A tagged unit: a user turn (`unitSeq`) and the replies that follow it, up to `endSeq`. */
export interface UnitTags {
  unitSeq: number;
  endSeq: number;
  tags: string[];
  relatedTags: string[];
  tagger: string;
}

// Statistics of a tag recomputed from its rows: exact, and cheap with the (conversation, tag, unit) key.
export const RESTAT = `INSERT INTO tags (conversation_id, tag, units, first_seq, last_seq, last_used)
  SELECT ?1, ?2, COUNT(*), MIN(unit_seq), MAX(unit_seq), ?3 FROM unit_tags WHERE conversation_id = ?1 AND tag = ?2
  ON CONFLICT (conversation_id, tag) DO UPDATE SET units = excluded.units, first_seq = excluded.first_seq,
  last_seq = excluded.last_seq, last_used = excluded.last_used`;

// A tag gained by one unit: one more unit, first and last seq widened.
const GAIN = `INSERT INTO tags (conversation_id, tag, units, first_seq, last_seq, last_used) VALUES (?1, ?2, 1, ?3, ?3, ?4)
  ON CONFLICT (conversation_id, tag) DO UPDATE SET units = units + 1, first_seq = MIN(first_seq, excluded.first_seq),
  last_seq = MAX(last_seq, excluded.last_seq), last_used = excluded.last_used`;

/**
 * The statements that store the tags of `units` over the tags they had (`before`: tag → related, per unit), and
 * the tags gained (`changed`) and lost: a gained tag's statistics move by one unit; a lost one's are recounted.
 */
function unitStatements(conversationId: string, units: readonly UnitTags[], before: ReadonlyMap<number, ReadonlyMap<string, number>>, nowIso: string): { statements: Statement[]; lost: Set<string>; changed: Set<string> } {
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
  return { statements, lost, changed };
}

/** The units of a conversation as the tagger stores them, with their count (kept current here: the engine is the only writer). */
export function createUnitWriter(driver: StorageDriver, limits: Readonly<StorageLimits>) {
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
     * (a unit re-tagged once its replies arrived) are recounted. Returns the tags whose statistics changed. `also`:
     * the caller's statements, in the same transaction (the tagger's signature).
     */
    async saveUnits(conversationId: string, units: readonly UnitTags[], terms: ReadonlyMap<string, number>, nowIso: string, also: readonly Statement[] = []): Promise<string[]> {
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
      const { statements, lost, changed } = unitStatements(conversationId, units, before, nowIso);
      for (const [term, n] of terms) {
        statements.push({ sql: `INSERT INTO term_df (conversation_id, term, turns) VALUES (?, ?, ?)
          ON CONFLICT (conversation_id, term) DO UPDATE SET turns = turns + excluded.turns`, params: [conversationId, term, n] });
      }
      await driver.batch([...statements, ...also]);
      const count = unitCounts.get(conversationId);
      if (count !== undefined) unitCounts.set(conversationId, count + units.filter((u) => !known.has(u.unitSeq)).length);
      return [...changed, ...[...lost].filter((t) => !changed.has(t))];
    },
  };
}

/** The units as retrieval and compaction read them: which unit holds a turn, their tags, those from a seq on. */
export function createUnitReader(driver: StorageDriver, limits: Readonly<StorageLimits>) {
  return {
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
           WHERE t.conversation_id = ?1 AND t.private = 1 AND t.seq >= 0 AND u.end_seq >= t.seq)
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
  };
}
