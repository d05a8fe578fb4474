// The tag index rewritten where turns left it (forget, a move to another branch): the units' tags replaced, the
// tags' statistics recounted, the terms of the turns that left uncounted.
import type { DataDeps } from './data-types.js';
import type { UnitTags } from '../tags/tag-store.js';
import { chunks } from '../store/turn-store.js';
import type { Statement } from '../contracts/types.js';

export type RetagDeps = Pick<DataDeps, 'driver' | 'store' | 'canonicalizer' | 'index'>;

/** How many of the units carry each of their tags, and the tags only these units carry. */
export async function tagsOfUnits(d: RetagDeps, conversationId: string, seqs: number[]) {
  const old: { tag: string; n: number }[] = [];
  for (const part of chunks(seqs, 500)) {
    old.push(...(await d.driver.query<{ tag: string; n: number }>(
      'SELECT tag, COUNT(*) AS n FROM unit_tags WHERE conversation_id = ?1 AND unit_seq IN (SELECT value FROM json_each(?2)) GROUP BY tag', [conversationId, JSON.stringify(part)])));
  }
  const counts = await d.canonicalizer.counts(conversationId);
  const byTag = new Map<string, number>();
  for (const r of old) byTag.set(r.tag, (byTag.get(r.tag) ?? 0) + Number(r.n));
  // Tags only these units carry: they may be the forgotten turns' words.
  const hidden = new Set([...byTag].filter(([t, n]) => (counts.get(t) ?? 0) <= n).map(([t]) => t));
  return { byTag, hidden };
}

/** The rewrite itself: the units' tags replaced, the tags' statistics recounted, the forgotten terms uncounted. */
export function retagStatements(conversationId: string, seqs: number[], fresh: UnitTags[], byTag: Map<string, number>, gone: Map<string, number>): Statement[] {
  const now = new Date().toISOString();
  const statements: Statement[] = [];
  for (const part of chunks(seqs, 500)) {
    const json = JSON.stringify(part);
    statements.push(
      { sql: 'DELETE FROM unit_tags WHERE conversation_id = ?1 AND unit_seq IN (SELECT value FROM json_each(?2))', params: [conversationId, json] },
      { sql: 'DELETE FROM units WHERE conversation_id = ?1 AND unit_seq IN (SELECT value FROM json_each(?2))', params: [conversationId, json] },
    );
  }
  const touched = new Set(byTag.keys());
  for (const u of fresh) {
    statements.push({ sql: 'INSERT INTO units (conversation_id, unit_seq, end_seq, tagger, tagged_at) VALUES (?, ?, ?, ?, ?)', params: [conversationId, u.unitSeq, u.endSeq, u.tagger, now] });
    const tags = new Map<string, number>(u.relatedTags.map((t) => [t, 1]));
    for (const t of u.tags) tags.set(t, 0);
    for (const [tag, related] of tags) {
      statements.push({ sql: 'INSERT INTO unit_tags (conversation_id, tag, unit_seq, related) VALUES (?, ?, ?, ?)', params: [conversationId, tag, u.unitSeq, related] });
      touched.add(tag);
    }
  }
  for (const tag of touched) {
    statements.push({ sql: `INSERT INTO tags (conversation_id, tag, units, first_seq, last_seq, last_used)
        SELECT ?1, ?2, COUNT(*), MIN(unit_seq), MAX(unit_seq), ?3 FROM unit_tags WHERE conversation_id = ?1 AND tag = ?2
        ON CONFLICT (conversation_id, tag) DO UPDATE SET units = excluded.units, first_seq = excluded.first_seq, last_seq = excluded.last_seq, last_used = excluded.last_used`,
    params: [conversationId, tag, now] });
  }
  statements.push({ sql: 'DELETE FROM tags WHERE conversation_id = ? AND units = 0', params: [conversationId] });
  for (const [term, n] of gone) statements.push({ sql: 'UPDATE term_df SET turns = turns - ? WHERE conversation_id = ? AND term = ?', params: [n, conversationId, term] });
  statements.push({ sql: 'DELETE FROM term_df WHERE conversation_id = ? AND turns <= 0', params: [conversationId] });
  return statements;
}
