import { inJsonLists, limitsOf } from '../storage/limits.js';
import type { StorageDriver } from '../contracts/types.js';

/** A text waiting for its vector. */
export interface PendingText {
  kind: 'turn' | 'summary';
  /** Turn seq or summary rowid. */
  ref: number;
  text: string;
  createdMs: number;
}

export interface StoredVector {
  ref: number;
  createdMs: number;
  scale: number;
  vector: Int8Array;
}

/** Unit length, then int8 with one scale per vector (asymmetric search: the query stays float). */
export function quantize(v: Float32Array): { scale: number; bytes: Int8Array } {
  let norm = 0;
  for (let i = 0; i < v.length; i++) norm += v[i]! * v[i]!;
  norm = Math.sqrt(norm) || 1;
  let max = 0;
  for (let i = 0; i < v.length; i++) max = Math.max(max, Math.abs(v[i]! / norm));
  const scale = max / 127 || 1;
  const bytes = new Int8Array(v.length);
  for (let i = 0; i < v.length; i++) bytes[i] = Math.round(v[i]! / norm / scale);
  return { scale, bytes };
}

/** Unit length (in place). */
export function normalize(v: Float32Array): Float32Array {
  let norm = 0;
  for (let i = 0; i < v.length; i++) norm += v[i]! * v[i]!;
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
}

function toInt8(blob: unknown): Int8Array {
  if (blob instanceof Uint8Array) return new Int8Array(blob.buffer, blob.byteOffset, blob.byteLength);
  if (blob instanceof ArrayBuffer) return new Int8Array(blob);
  throw new TypeError('embedding vector is not a BLOB');
}

/** Long texts are embedded by their head: sentence encoders read a few hundred words at most. */
export const MAX_CHARS = 2000;

/** SQL for embeddings: what is missing for a model, saving a batch in one transaction, loading a conversation's vectors. */
export function createVectorStore(driver: StorageDriver) {
  const limits = limitsOf(driver);
  /** How many of the conversation's turns are private. */
  const privateTurns = async (conversationId: string): Promise<number> => {
    const rows = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM turns INDEXED BY turns_private WHERE conversation_id = ? AND private = 1 AND seq >= 0', [conversationId]);
    return Number(rows[0]?.n ?? 0);
  };
  return {
    /**
     * Turns after the last embedded one (turns are embedded in order), then summaries without a vector. Private
     * turns only with `withPrivate` (a local model): otherwise they never get a vector, and the order skips them.
     */
    async pending(conversationId: string, modelId: string, limit: number, withPrivate: boolean): Promise<PendingText[]> {
      const last = await driver.query<{ m: number | null }>(
        "SELECT MAX(ref) AS m FROM embeddings WHERE conversation_id = ? AND model_id = ? AND kind = 'turn'", [conversationId, modelId]);
      const after = last[0]?.m ?? -1;
      const turns = await driver.query<{ seq: number; text: string; created_ms: number }>(
        `SELECT seq, substr(text, 1, ?) AS text, created_ms FROM turns WHERE conversation_id = ? AND seq > ? ${withPrivate ? '' : 'AND private = 0'} ORDER BY seq LIMIT ?`,
        [MAX_CHARS, conversationId, Number(after), limit]);
      const out: PendingText[] = turns.map((t) => ({ kind: 'turn', ref: Number(t.seq), text: t.text, createdMs: Number(t.created_ms) }));
      if (out.length < limit) {
        const summaries = await driver.query<{ rowid: number; text: string; last_at: string }>(
          `SELECT s.rowid AS rowid, substr(s.text, 1, ?) AS text, s.last_at AS last_at FROM summaries s WHERE s.conversation_id = ?
           AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.conversation_id = s.conversation_id AND e.model_id = ? AND e.kind = 'summary' AND e.ref = s.rowid)
           ORDER BY s.rowid LIMIT ?`, [MAX_CHARS, conversationId, modelId, limit - out.length]);
        for (const s of summaries) out.push({ kind: 'summary', ref: Number(s.rowid), text: s.text, createdMs: Date.parse(s.last_at) || 0 });
      }
      return out;
    },

    /** Turns and summaries to embed (private turns only `withPrivate`), and those with a vector of `modelId`. */
    async counts(conversationId: string, modelId: string, withPrivate: boolean): Promise<{ total: number; embedded: number }> {
      const rows = await driver.query<{ total: number; embedded: number }>(
        `SELECT (SELECT COUNT(*) FROM turns WHERE conversation_id = ? AND seq >= 0) + (SELECT COUNT(*) FROM summaries WHERE conversation_id = ?) AS total,
                (SELECT COUNT(*) FROM embeddings WHERE conversation_id = ? AND model_id = ?) AS embedded`,
        [conversationId, conversationId, conversationId, modelId]);
      const total = Number(rows[0]?.total ?? 0) - (withPrivate ? 0 : await privateTurns(conversationId));
      return { total, embedded: Number(rows[0]?.embedded ?? 0) };
    },

    privateTurns,

    /** Over every conversation: texts to embed (private turns only `withPrivate`) and those with a vector of `modelId`. */
    async progress(modelId: string, withPrivate: boolean): Promise<{ total: number; done: number }> {
      const rows = await driver.query<{ turns: number; hidden: number; summaries: number; done: number }>(
        `SELECT (SELECT COUNT(*) FROM turns WHERE seq >= 0) AS turns, ${withPrivate ? '0' : '(SELECT COUNT(*) FROM turns WHERE private = 1 AND seq >= 0)'} AS hidden,
                (SELECT COUNT(*) FROM summaries) AS summaries, (SELECT COUNT(*) FROM embeddings WHERE model_id = ?) AS done`, [modelId]);
      const r = rows[0]!;
      return { total: Number(r.turns) - Number(r.hidden) + Number(r.summaries), done: Number(r.done) };
    },

    /**
     * The most recently updated conversations (at most `limit`) with a text waiting for a vector of `modelId`: a turn
     * after the last one embedded (turns are embedded in order), or a summary without one.
     */
    async lacking(modelId: string, withPrivate: boolean, limit: number): Promise<string[]> {
      const rows = await driver.query<{ id: string }>(
        `SELECT c.id AS id FROM conversations c WHERE EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = c.id ${withPrivate ? '' : 'AND t.private = 0'}
           AND t.seq > COALESCE((SELECT MAX(ref) FROM embeddings WHERE conversation_id = c.id AND model_id = ?1 AND kind = 'turn'), -1))
         OR EXISTS (SELECT 1 FROM summaries s WHERE s.conversation_id = c.id
           AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.conversation_id = c.id AND e.model_id = ?1 AND e.kind = 'summary' AND e.ref = s.rowid))
         ORDER BY c.updated_at DESC, c.id LIMIT ?2`, [modelId, limit]);
      return rows.map((r) => r.id);
    },

    /**
     * One batch's vectors, atomically; returns them as stored, turns' and summaries'. A summary rewritten meanwhile
     * is skipped (its text is no longer what was embedded).
     */
    async save(conversationId: string, modelId: string, items: ReadonlyArray<{ item: PendingText; vector: Float32Array }>): Promise<{ turns: StoredVector[]; summaries: StoredVector[] }> {
      const turns: StoredVector[] = [];
      const summaries: StoredVector[] = [];
      await driver.batch(items.map(({ item, vector }) => {
        const { scale, bytes } = quantize(vector);
        (item.kind === 'turn' ? turns : summaries).push({ ref: item.ref, createdMs: item.createdMs, scale, vector: bytes });
        const blob = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        return item.kind === 'turn'
          // Only while the turn is still the one embedded (forget may have removed it meanwhile, and its seq be reused).
          ? { sql: `INSERT OR REPLACE INTO embeddings (conversation_id, model_id, kind, ref, created_ms, scale, vector)
                    SELECT ?, ?, 'turn', seq, ?, ?, ? FROM turns WHERE conversation_id = ? AND seq = ? AND substr(text, 1, ?) = ?`,
            params: [conversationId, modelId, item.createdMs, scale, blob, conversationId, item.ref, MAX_CHARS, item.text] }
          : { sql: `INSERT OR REPLACE INTO embeddings (conversation_id, model_id, kind, ref, created_ms, scale, vector)
                    SELECT ?, ?, 'summary', rowid, ?, ?, ? FROM summaries WHERE rowid = ? AND substr(text, 1, ?) = ?`,
            params: [conversationId, modelId, item.createdMs, scale, blob, item.ref, MAX_CHARS, item.text] };
      }));
      return { turns, summaries };
    },

    /** Of `rowids`, the summaries still stored. */
    async storedSummaries(conversationId: string, rowids: readonly number[]): Promise<Set<number>> {
      if (rowids.length === 0) return new Set();
      const rows = await inJsonLists(rowids, limits, (json) => driver.query<{ rowid: number }>(
        'SELECT rowid FROM summaries WHERE conversation_id = ? AND rowid IN (SELECT value FROM json_each(?))', [conversationId, json]));
      return new Set(rows.map((r) => Number(r.rowid)));
    },

    async load(conversationId: string, modelId: string, kind: 'turn' | 'summary'): Promise<StoredVector[]> {
      const rows = await driver.query<{ ref: number; created_ms: number; scale: number; vector: Uint8Array }>(
        'SELECT ref, created_ms, scale, vector FROM embeddings WHERE conversation_id = ? AND model_id = ? AND kind = ? ORDER BY ref',
        [conversationId, modelId, kind]);
      return rows.map((r) => ({ ref: Number(r.ref), createdMs: Number(r.created_ms), scale: Number(r.scale), vector: toInt8(r.vector) }));
    },

    /** Drops other models' vectors once this one covers everything (no mixed spaces, no dead weight). */
    async dropOtherModels(conversationId: string, modelId: string): Promise<void> {
      await driver.batch([{ sql: 'DELETE FROM embeddings WHERE conversation_id = ? AND model_id <> ?', params: [conversationId, modelId] }]);
    },
  };
}

export type VectorStore = ReturnType<typeof createVectorStore>;
