// Retention's tables and the reads that choose what it removes: each conversation's own policy over the option's,
// the next conversation with something due (and why), the turns a slice removes, and the log of what went.
import type { RetentionLogEntry, RetentionReason } from '../contracts/types-ops.js';
import type { Statement, StorageDriver } from '../contracts/types.js';

const DAY_MS = 86_400_000;
/** Set in a slice's transaction, cleared after the purge: a pass cut short (a crash, a close) still ends purged. */
const PURGE_KEY = 'retention:purge';

/** The option's bounds, what every conversation without its own has. */
export interface GlobalPolicy {
  maxAgeDays: number | null;
  idleDays: number | null;
  maxConversations: number | null;
  keepPinned: boolean;
}

/** A conversation's own bounds as the app set them (undefined: the option's; null: none). */
export interface StoredPolicy {
  maxAgeDays?: number | null;
  idleDays?: number | null;
  keepPinned?: boolean;
}

/** What is due in one conversation: why, and which of its turns (written before `cutoffMs`; null: all of them). */
export interface DueWork {
  conversationId: string;
  reason: RetentionReason;
  cutoffMs: number | null;
  keepPinned: boolean;
}

/** A turn's row as the removal takes it (data-rows' TurnRow). */
export type RetentionRow = { rowid: number; seq: number; id: string; text: string; name: string | null };

// Each conversation's bounds in effect: its own over the option's (-1 stored: none), keepPinned likewise. When it
// was last used (`used`, ms) is its latest turn's time, which travels with the turns: `updated_at` is when this
// replica last changed it (a sync's receipt sets it), so ranking by it would make every device's choice differ and
// a phone that just pulled old conversations keep them over the ones used last. A conversation without a turn
// falls back to `updated_at` (it has nothing to remove anyway).
const EFFECTIVE = `WITH eff AS (
  SELECT c.id AS id,
    COALESCE((SELECT MAX(t.created_ms) FROM turns t WHERE t.conversation_id = c.id), CAST((julianday(c.updated_at) - 2440587.5) * ${DAY_MS} AS INTEGER)) AS used,
    CASE WHEN p.max_age_days IS NULL THEN ?2 WHEN p.max_age_days < 0 THEN NULL ELSE p.max_age_days END AS age,
    CASE WHEN p.idle_days IS NULL THEN ?3 WHEN p.idle_days < 0 THEN NULL ELSE p.idle_days END AS idle,
    COALESCE(p.keep_pinned, ?4) AS keep
  FROM conversations c LEFT JOIN retention_policies p ON p.conversation_id = c.id)`;

// A turn `t` of conversation `e` that the policy may remove: not a pinned one while pins are kept.
const REMOVABLE = '(e.keep = 0 OR NOT EXISTS (SELECT 1 FROM pins p WHERE p.conversation_id = t.conversation_id AND p.turn_id = t.id))';

// The maxAgeDays bound at `?1` (ms), rounded down to the start of its UTC day: turns pass it a day's worth at a time, so
// a conversation is trimmed once a day at most. Each trim drops its summaries (one may quote a removed turn, and the
// positions shift) and compaction summarizes it again: hourly trims of a few turns would cost that every hour.
const CUTOFF = `(CAST((?1 - e.age * ${DAY_MS}) / ${DAY_MS} AS INTEGER) * ${DAY_MS})`;

const stored = (v: number | null | undefined): number | null => (v === undefined ? null : v === null ? -1 : v);

export function createRetentionStore(driver: StorageDriver) {
  const params = (nowMs: number, g: GlobalPolicy, only: string | null) => [nowMs, g.maxAgeDays, g.idleDays, g.keepPinned ? 1 : 0, g.maxConversations, only];
  const filter = (column: string) => `(?6 IS NULL OR ${column} = ?6)`;

  return {
    /** How many conversations have a policy of their own. */
    async policies(): Promise<number> {
      return Number((await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM retention_policies'))[0]?.n ?? 0);
    },

    /** The statement that sets (or, with null, removes) a conversation's own policy. */
    policyStatement(conversationId: string, policy: StoredPolicy | null, nowIso: string): Statement {
      if (policy === null) return { sql: 'DELETE FROM retention_policies WHERE conversation_id = ?', params: [conversationId] };
      return {
        sql: 'INSERT OR REPLACE INTO retention_policies (conversation_id, max_age_days, idle_days, keep_pinned, set_at) VALUES (?, ?, ?, ?, ?)',
        params: [conversationId, stored(policy.maxAgeDays), stored(policy.idleDays), policy.keepPinned === undefined ? null : policy.keepPinned ? 1 : 0, nowIso],
      };
    },

    /**
     * The next conversation with turns due at `nowMs` (only `only`'s when given), with the first reason that applies:
     * beyond maxConversations, then idle, then turns older than maxAgeDays. A conversation whose due turns are all
     * pinned (pins kept) is not due.
     */
    async due(nowMs: number, g: GlobalPolicy, only: string | null = null): Promise<DueWork | null> {
      const p = params(nowMs, g, only);
      if (g.maxConversations !== null) {
        const [r] = await driver.query<{ id: string; keep: number }>(`${EFFECTIVE}, ranked AS (SELECT id, keep FROM eff ORDER BY used DESC, id DESC LIMIT -1 OFFSET ?5)
          SELECT e.id, e.keep FROM ranked e WHERE ${filter('e.id')} AND EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = e.id AND ${REMOVABLE}) LIMIT 1`, p);
        if (r) return { conversationId: r.id, reason: 'maxConversations', cutoffMs: null, keepPinned: Number(r.keep) === 1 };
      }
      const [idle] = await driver.query<{ id: string; keep: number }>(`${EFFECTIVE}
        SELECT e.id, e.keep FROM eff e WHERE ${filter('e.id')} AND e.idle IS NOT NULL AND e.used < ?1 - e.idle * ${DAY_MS}
          AND EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = e.id AND ${REMOVABLE}) ORDER BY e.used, e.id LIMIT 1`, p);
      if (idle) return { conversationId: idle.id, reason: 'idleDays', cutoffMs: null, keepPinned: Number(idle.keep) === 1 };
      const [old] = await driver.query<{ id: string; keep: number; cutoff: number }>(`${EFFECTIVE}
        SELECT e.id, e.keep, ${CUTOFF} AS cutoff FROM eff e WHERE ${filter('e.id')} AND e.age IS NOT NULL
          AND EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = e.id AND t.created_ms < ${CUTOFF} AND ${REMOVABLE}) ORDER BY e.used, e.id LIMIT 1`, p);
      if (old) return { conversationId: old.id, reason: 'maxAgeDays', cutoffMs: Number(old.cutoff), keepPinned: Number(old.keep) === 1 };
      return null;
    },

    /** Up to `limit` turns the work removes, oldest first (a slice). */
    rows(w: DueWork, limit: number): Promise<RetentionRow[]> | RetentionRow[] {
      return driver.query<RetentionRow>(`SELECT t.rowid, t.seq, t.id, t.text, t.name FROM turns t, (SELECT ?3 AS keep) e
        WHERE t.conversation_id = ?1 AND (?2 IS NULL OR t.created_ms < ?2) AND ${REMOVABLE} ORDER BY t.created_ms, t.rowid LIMIT ?4`,
      [w.conversationId, w.cutoffMs, w.keepPinned ? 1 : 0, limit]);
    },

    /** Pinned turns the work would have removed, kept. */
    async pinnedKept(w: DueWork): Promise<number> {
      if (!w.keepPinned) return 0;
      const rows = await driver.query<{ n: number }>(`SELECT COUNT(*) AS n FROM pins p JOIN turns t ON t.conversation_id = p.conversation_id AND t.id = p.turn_id
        WHERE p.conversation_id = ?1 AND (?2 IS NULL OR t.created_ms < ?2)`, [w.conversationId, w.cutoffMs]);
      return Number(rows[0]?.n ?? 0);
    },

    /** The conversation's turns in all. */
    async turns(conversationId: string): Promise<number> {
      return Number((await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM turns WHERE conversation_id = ?', [conversationId]))[0]?.n ?? 0);
    },

    /** The log's last position (0: empty). */
    async lastSeq(): Promise<number> {
      return Number((await driver.query<{ n: number | null }>('SELECT MAX(seq) AS n FROM retention_log'))[0]?.n ?? 0);
    },

    /** The statement that logs one removal (and marks the file as due a purge). */
    logStatements(e: RetentionLogEntry): Statement[] {
      return [
        { sql: 'INSERT INTO retention_log (seq, at, conversation_id, reason, turns, conversation_removed, before) VALUES (?, ?, ?, ?, ?, ?, ?)', params: [e.seq, e.at, e.conversationId, e.reason, e.turns, e.conversationRemoved ? 1 : 0, e.before ?? null] },
        { sql: "INSERT OR REPLACE INTO pagewise_meta (key, value) VALUES (?, '1')", params: [PURGE_KEY] },
      ];
    },

    /** Whether a removal has not been purged from the file yet. */
    async purgeDue(): Promise<boolean> {
      return (await driver.query('SELECT 1 FROM pagewise_meta WHERE key = ?', [PURGE_KEY])).length > 0;
    },

    async purged(): Promise<void> {
      await driver.batch([{ sql: 'DELETE FROM pagewise_meta WHERE key = ?', params: [PURGE_KEY] }]);
    },

    /** The log after position `after`, `limit` entries at most (one more read: whether more follow). */
    async log(after: number, limit: number): Promise<RetentionLogEntry[]> {
      const rows = await driver.query<{ seq: number; at: string; conversation_id: string; reason: RetentionReason; turns: number; conversation_removed: number; before: string | null }>(
        'SELECT seq, at, conversation_id, reason, turns, conversation_removed, before FROM retention_log WHERE seq > ? ORDER BY seq LIMIT ?', [after, limit]);
      return rows.map((r) => ({
        seq: Number(r.seq), at: r.at, conversationId: r.conversation_id, reason: r.reason, turns: Number(r.turns), conversationRemoved: Number(r.conversation_removed) === 1,
        ...(r.before === null ? {} : { before: r.before }),
      }));
    },
  };
}

export type RetentionStore = ReturnType<typeof createRetentionStore>;
