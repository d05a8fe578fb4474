// memory.stats()'s SQL: the persisted counters (usage_counters), bytes stored, vectors stored, and the stored path's
// tokens a request is compared with.
import type { StorageDriver, Tokenizer } from '../contracts/types.js';
import { Lru } from '../common/cache.js';
import { TOKENS_PER_MESSAGE, countCacheKey } from '../tokens/chat-format.js';
import { storedTextTokens } from '../store/stored-tokens.js';
import type { TurnStore } from '../store/turn-store.js';

// Uncounted stored turns (a conversation just imported or synced) counted per background slice.
const COUNT_PER_SLICE = 1024;
// Conversations whose path sum is kept (a conversation not among them is summed whole at its next request).
const PATH_SUMS = 4096;

/** A conversation's path summed up to its turn at `last` (row `rowid`): `n` turns, their cached counts `tokens`. */
interface PathSum { last: number; rowid: number | null; n: number; tokens: number }

export interface UsageStore {
  /** Adds each conversation's deltas to its counters: one transaction, one statement per conversation (a JSON parameter). */
  add(deltas: ReadonlyMap<string, Readonly<Record<string, number>>>): Promise<void>;
  /** The conversation's counters, or every conversation's summed (null). */
  read(conversationId: string | null): Promise<Map<string, number>>;
  /** The database's pages in bytes (null when the driver refuses the pragma), or a conversation's stored text. */
  bytes(conversationId: string | null): Promise<number | null>;
  /** Vectors stored, of the conversation or all. */
  embeddings(conversationId: string | null): Promise<number>;
  /**
   * Whether the conversation is stored, and the tokens of its path to the head as messages (each turn's cached text
   * count plus its markup; null when some turn's count is not cached): one statement, so it reads one state of the
   * path whatever runs beside it. The sum is kept, so a request reads only the turns stored since the last one.
   */
  pathTokens(conversationId: string, tokenizer: Tokenizer): Promise<{ stored: boolean; tokens: number | null }>;
  /** Forgets the kept sum (the engine moved or removed some of the conversation's turns). */
  uncache(conversationId: string): void;
  /** Counts (and caches) up to COUNT_PER_SLICE of the path's uncounted turns; whether some are left. Call in the conversation's slot. */
  countPath(conversationId: string, tokenizer: Tokenizer): Promise<boolean>;
}

export function createUsageStore(driver: StorageDriver, store: TurnStore): UsageStore {
  const num = (v: unknown): number => Number(v ?? 0);
  const sums = new Lru<string, PathSum>(PATH_SUMS);
  // Uncaches so far: a sum read while one happened may predate it, and is not kept.
  let moves = 0;
  // The path's turns after `after`, with the row now at `after` (the kept sum holds while it is the same row) and
  // whether the conversation is stored. The bare `t.rowid` is the row of MAX(t.seq) (SQLite's rule for one max()).
  const pathAfter = async (conversationId: string, key: string, after: number) => (await driver.query<{ n: number; counted: number; tokens: number | null; last: number | null; rowid: number | null; at: number | null; stored: number }>(
    `SELECT COUNT(*) AS n, COUNT(c.tokens) AS counted, SUM(c.tokens) AS tokens, MAX(t.seq) AS last, t.rowid AS rowid,
       (SELECT rowid FROM turns WHERE conversation_id = ? AND seq = ?) AS at, EXISTS (SELECT 1 FROM conversations WHERE id = ?) AS stored
     FROM turns t LEFT JOIN turn_tokens c ON c.turn_rowid = t.rowid AND c.encoding = ? WHERE t.conversation_id = ? AND t.seq > ?`,
    [conversationId, after, conversationId, key, conversationId, after]))[0]!;
  return {
    async add(deltas) {
      const statements = [...deltas].flatMap(([conversationId, d]) => {
        const figures = Object.fromEntries(Object.entries(d).filter(([, v]) => v !== 0));
        // `WHERE true`: SQLite's rule for an upsert on a SELECT (else ON CONFLICT would read as a join's).
        return Object.keys(figures).length === 0 ? [] : [{
          // Only for a conversation stored now: what a call adds after its conversation was removed (a forget, a
          // sync, retention) or before anything of it was stored leaves no row behind.
          sql: `INSERT INTO usage_counters (conversation_id, name, value) SELECT ?, key, value FROM json_each(?)
                WHERE EXISTS (SELECT 1 FROM conversations WHERE id = ?)
                ON CONFLICT (conversation_id, name) DO UPDATE SET value = value + excluded.value`,
          params: [conversationId, JSON.stringify(figures), conversationId],
        }];
      });
      if (statements.length > 0) await driver.batch(statements);
    },

    async read(conversationId) {
      const rows = conversationId === null
        ? await driver.query<{ name: string; value: number }>('SELECT name, SUM(value) AS value FROM usage_counters GROUP BY name')
        : await driver.query<{ name: string; value: number }>('SELECT name, value FROM usage_counters WHERE conversation_id = ?', [conversationId]);
      return new Map(rows.map((r) => [r.name, num(r.value)]));
    },

    async bytes(conversationId) {
      if (conversationId !== null) {
        const [t] = await driver.query<{ n: number }>('SELECT SUM(length(CAST(content AS BLOB)) + COALESCE(length(CAST(tool_calls AS BLOB)), 0)) AS n FROM turns WHERE conversation_id = ?', [conversationId]);
        const [s] = await driver.query<{ n: number }>('SELECT SUM(length(CAST(text AS BLOB))) AS n FROM summaries WHERE conversation_id = ?', [conversationId]);
        return num(t?.n) + num(s?.n);
      }
      try {
        const [count] = await driver.query<{ page_count: number }>('PRAGMA page_count');
        const [size] = await driver.query<{ page_size: number }>('PRAGMA page_size');
        return count && size ? num(count.page_count) * num(size.page_size) : null;
      } catch {
        // Durable Object SQL allows only some pragmas.
        return null;
      }
    },

    async embeddings(conversationId) {
      const rows = conversationId === null
        ? await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM embeddings')
        : await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM embeddings WHERE conversation_id = ?', [conversationId]);
      return num(rows[0]?.n);
    },

    async pathTokens(conversationId, tokenizer) {
      const key = countCacheKey(tokenizer);
      // A tokenizer whose counts are not cached would count the whole path at every request.
      if (key === null) {
        const [row] = await driver.query<{ stored: number }>('SELECT EXISTS (SELECT 1 FROM conversations WHERE id = ?) AS stored', [conversationId]);
        return { stored: num(row?.stored) === 1, tokens: null };
      }
      const before = moves;
      let base = sums.get(conversationId);
      let r = await pathAfter(conversationId, key, base?.last ?? -1);
      if (base && (r.at === null ? null : num(r.at)) !== base.rowid) {
        // The path moved under the kept sum (the engine's uncache comes after the move): summed whole again.
        if (sums.get(conversationId) === base) sums.delete(conversationId);
        base = undefined;
        r = await pathAfter(conversationId, key, -1);
      }
      const stored = num(r.stored) === 1;
      if (num(r.n) !== num(r.counted)) return { stored, tokens: null };
      const next: PathSum = num(r.n) === 0
        ? base ?? { last: -1, rowid: null, n: 0, tokens: 0 }
        : { last: num(r.last), rowid: num(r.rowid), n: (base?.n ?? 0) + num(r.n), tokens: (base?.tokens ?? 0) + num(r.tokens) };
      // Kept unless another request replaced the sum meanwhile, or the engine moved some conversation's turns.
      if (stored && moves === before && sums.get(conversationId) === base) sums.set(conversationId, next);
      return { stored, tokens: next.tokens + TOKENS_PER_MESSAGE * next.n };
    },

    uncache(conversationId) {
      moves++;
      sums.delete(conversationId);
    },

    async countPath(conversationId, tokenizer) {
      const key = countCacheKey(tokenizer);
      if (key === null) return false;
      const missing = await driver.query<{ seq: number }>(
        `SELECT t.seq FROM turns t LEFT JOIN turn_tokens c ON c.turn_rowid = t.rowid AND c.encoding = ?
         WHERE t.conversation_id = ? AND t.seq >= 0 AND c.tokens IS NULL ORDER BY t.seq LIMIT ?`, [key, conversationId, COUNT_PER_SLICE + 1]);
      await storedTextTokens(store, tokenizer, await store.bySeqs(conversationId, missing.slice(0, COUNT_PER_SLICE).map((r) => num(r.seq))));
      return missing.length > COUNT_PER_SLICE;
    },
  };
}
