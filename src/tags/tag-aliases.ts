import { placeholders } from '../store/turn-store.js';
import type { SqlValue, Statement, StorageDriver } from '../contracts/types.js';
import { RESTAT } from './tag-units.js';
import type { TagAlias } from '../contracts/types-data.js';

export type { TagAlias } from '../contracts/types-data.js';


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

/** Manual and learned aliases, in their scopes, and the rewrites of stored tags they bring. */
export function createAliasStore(driver: StorageDriver) {
  return {
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
        // An earlier removal of this manual alias no longer stands (sync merges adds and removals by time).
        ...(entry.source === 'manual' ? [{ sql: 'DELETE FROM sync_alias_removals WHERE conversation_id = ? AND alias = ?', params: [scope, entry.alias] }] : []),
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

    /**
     * Removes the alias of one scope (stored tags it rewrote stay as they are); a manual one's removal is kept with
     * its time (`nowIso`), for sync.
     */
    async removeAlias(conversationId: string | null, alias: string, nowIso: string): Promise<boolean> {
      const scope = scopeOf(conversationId);
      const rows = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM tag_aliases WHERE conversation_id = ? AND alias = ?', [scope, alias]);
      if (Number(rows[0]?.n ?? 0) === 0) return false;
      await driver.batch([
        { sql: "INSERT OR REPLACE INTO sync_alias_removals (conversation_id, alias, removed_at) SELECT conversation_id, alias, ? FROM tag_aliases WHERE conversation_id = ? AND alias = ? AND source = 'manual'", params: [nowIso, scope, alias] },
        { sql: 'DELETE FROM tag_aliases WHERE conversation_id = ? AND alias = ?', params: [scope, alias] },
      ]);
      return true;
    },
  };
}
