// Sync's merges of what travels whole with a batch's last piece: pin states (the later of pin and unpin wins) and
// manual aliases (the later of alias and removal wins), each against what this replica holds.
//
// Both are linear in what the batch carries: a slice (MERGE_SLICE states) reads what this replica holds of it in one
// query and writes in a few statements (one JSON parameter each), so that a caller can apply a long list a slice at a
// time, yielding between slices. Each slice is a step of its own: it reads the states it merges against afresh, and
// a state applied again changes nothing.
import type { DataDeps } from './data-types.js';
import { chunks } from '../store/in-lists.js';
import { IN_LIST_MAX, jsonLists, limitsOf, type JsonItem } from '../storage/limits.js';
import type { Statement, StorageDriver } from '../contracts/types.js';
import type { SyncAlias, SyncPin } from '../contracts/types-sync.js';

/** What the merges read and write with. */
export type MergeDeps = Pick<DataDeps, 'driver' | 'canonicalizer'>;

/** States merged per slice: one JSON list of each statement (IN_LIST_MAX items), whatever the batch holds. */
export const MERGE_SLICE = IN_LIST_MAX;

/** `items` in slices of MERGE_SLICE (what mergePins and mergeAliases take at once). */
export function slices<T>(items: readonly T[], size = MERGE_SLICE): T[][] {
  return chunks(items, size);
}

/** `values` as JSON lists within the driver's limits (one parameter each), with the index of each list's first value. */
function jsonParts(driver: StorageDriver, values: readonly JsonItem[]): { json: string; first: number }[] {
  let first = 0;
  return jsonLists(values, limitsOf(driver)).map((json) => {
    const part = { json, first };
    first += (JSON.parse(json) as unknown[]).length;
    return part;
  });
}

/** One statement per JSON list of `values` (see jsonParts). */
const each = (driver: StorageDriver, sql: string, values: readonly JsonItem[]): Statement[] => jsonParts(driver, values).map(({ json }) => ({ sql, params: [json] }));

export function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

// ---- pins ----

/**
 * Of `pins` (at most MERGE_SLICE), by index, the local state of each whose message is stored here and shareable
 * (absent: not stored, or private here — its state stays where it was written; null: no state).
 */
async function localPins(driver: StorageDriver, pins: readonly SyncPin[]): Promise<Map<number, { pinned: boolean; at: string } | null>> {
  const out = new Map<number, { pinned: boolean; at: string } | null>();
  for (const { json, first } of jsonParts(driver, pins.map((p) => [p.conversationId, p.messageId]))) {
    const rows = await driver.query<{ i: number; private: number; pinned_at: string | null; unpinned_at: string | null }>(
      `SELECT j.key AS i, t.private AS private, p.pinned_at AS pinned_at, u.unpinned_at AS unpinned_at FROM json_each(?) j
       JOIN turns t ON t.conversation_id = j.value ->> 0 AND t.id = j.value ->> 1
       LEFT JOIN pins p ON p.conversation_id = t.conversation_id AND p.turn_id = t.id
       LEFT JOIN sync_unpins u ON u.conversation_id = t.conversation_id AND u.turn_id = t.id`, [json]);
    // An unpin recorded beside a pin reads as the state (as SyncStore.pins lists them: the unpins last).
    // A private message here is as good as not stored: its pin state never travels, either way (a copy of the
    // database holding it too must not change it).
    for (const r of rows) {
      if (Number(r.private) === 1) continue;
      out.set(first + Number(r.i), r.unpinned_at !== null ? { pinned: false, at: r.unpinned_at } : r.pinned_at !== null ? { pinned: true, at: r.pinned_at } : null);
    }
  }
  return out;
}

/** Statements that set the pins' states as they say (each message's last state in the list). */
function pinStateStatements(driver: StorageDriver, pins: readonly SyncPin[]): Statement[] {
  const last = [...new Map(pins.map((p) => [JSON.stringify([p.conversationId, p.messageId]), p])).values()];
  const list = (pinned: boolean) => last.filter((p) => p.pinned === pinned).map((p) => [p.conversationId, p.messageId, p.at]);
  const keys = 'SELECT value ->> 0, value ->> 1 FROM json_each(?)';
  return [
    ...each(driver, 'INSERT OR REPLACE INTO pins (conversation_id, turn_id, pinned_at) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)', list(true)),
    ...each(driver, `DELETE FROM sync_unpins WHERE (conversation_id, turn_id) IN (${keys})`, list(true)),
    ...each(driver, `DELETE FROM pins WHERE (conversation_id, turn_id) IN (${keys})`, list(false)),
    ...each(driver, 'INSERT OR REPLACE INTO sync_unpins (conversation_id, turn_id, unpinned_at) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)', list(false)),
  ];
}

/**
 * One slice of pins (at most MERGE_SLICE) merged: the statements that set the states that win here (the later of pin
 * and unpin; a tie pins), read against this replica's states in one query, and how many of them change a state. A
 * state equal to this replica's but later takes its time too, uncounted: every replica ends with the same state and
 * time, whichever way the syncs ran, so they list pins in the same order (oldest first). A pin of a message not
 * stored here (private where it was written) is not kept.
 */
export async function mergePins(d: MergeDeps, pins: readonly SyncPin[]): Promise<{ statements: Statement[]; changed: number }> {
  if (pins.length === 0) return { statements: [], changed: 0 };
  const local = await localPins(d.driver, pins);
  let changed = 0;
  const wins = pins.filter((pin, i) => {
    const mine = local.get(i);
    if (mine === undefined) return false;
    const win = !mine || pin.at > mine.at || (pin.at === mine.at && pin.pinned && !mine.pinned);
    if (win && (!mine || mine.pinned !== pin.pinned)) changed++;
    return win;
  });
  return { statements: pinStateStatements(d.driver, wins), changed };
}

// ---- aliases ----

/** Whether alias state `a` wins over `b`: the later one; a tie: an alias over a removal, then the greater tag. */
function laterAlias(a: SyncAlias, b: SyncAlias): boolean {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt;
  if (!a.removed !== !b.removed) return !a.removed;
  return a.tag > b.tag;
}

/** Of `aliases` (at most MERGE_SLICE), by index, this replica's state of each (a manual alias or its removal). */
async function localAliases(driver: StorageDriver, aliases: readonly SyncAlias[]): Promise<Map<number, SyncAlias>> {
  const out = new Map<number, SyncAlias>();
  for (const { json, first } of jsonParts(driver, aliases.map((a) => [a.conversationId ?? '', a.alias]))) {
    const rows = await driver.query<{ i: number; tag: string | null; created_at: string | null; removed_at: string | null }>(
      `SELECT j.key AS i, a.tag AS tag, a.created_at AS created_at, r.removed_at AS removed_at FROM json_each(?) j
       LEFT JOIN tag_aliases a ON a.conversation_id = j.value ->> 0 AND a.alias = j.value ->> 1 AND a.source = 'manual'
       LEFT JOIN sync_alias_removals r ON r.conversation_id = j.value ->> 0 AND r.alias = j.value ->> 1
       WHERE a.alias IS NOT NULL OR r.alias IS NOT NULL`, [json]);
    for (const r of rows) {
      const i = first + Number(r.i);
      const a = aliases[i]!;
      // A removal recorded beside an alias reads as the state (as SyncStore.aliases lists them: the removals last).
      out.set(i, r.removed_at !== null
        ? { conversationId: a.conversationId, alias: a.alias, tag: '', createdAt: r.removed_at, removed: true }
        : { conversationId: a.conversationId, alias: a.alias, tag: r.tag!, createdAt: r.created_at! });
    }
  }
  return out;
}

/** Of `ids`, those of conversations stored here. */
async function storedConversations(driver: StorageDriver, ids: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const { json } of jsonParts(driver, ids)) {
    for (const r of await driver.query<{ id: string }>('SELECT id FROM conversations WHERE id IN (SELECT value FROM json_each(?))', [json])) out.add(r.id);
  }
  return out;
}

/**
 * One slice of manual aliases and their removals (at most MERGE_SLICE) merged (laterAlias) and applied in one
 * transaction (canonicalizer.applyStates): an alias that would make a loop here is left out, a removal of an alias
 * not here is recorded (an older add arriving later loses to it). A state equal to this replica's but later only
 * takes its time, uncounted (every replica ends with the same times). Resolves with how many changed.
 */
export async function mergeAliases(d: MergeDeps, aliases: readonly SyncAlias[]): Promise<number> {
  if (aliases.length === 0) return 0;
  const exists = await storedConversations(d.driver, [...new Set(aliases.flatMap((a) => (a.conversationId === null ? [] : [a.conversationId])))]);
  const local = await localAliases(d.driver, aliases);
  const states: SyncAlias[] = [];
  const records: SyncAlias[] = [];
  const retimed: SyncAlias[] = [];
  for (const [i, a] of aliases.entries()) {
    if (a.conversationId !== null && !exists.has(a.conversationId)) continue;
    const mine = local.get(i);
    if (mine && !laterAlias(a, mine)) continue;
    if (mine && !!mine.removed === !!a.removed && mine.tag === a.tag) (a.removed ? records : retimed).push(a);
    else if (!a.removed || (mine && !mine.removed)) states.push(a);
    else records.push(a);
  }
  const also = [
    ...each(d.driver, 'INSERT OR REPLACE INTO sync_alias_removals (conversation_id, alias, removed_at) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)',
      records.map((a) => [a.conversationId ?? '', a.alias, a.createdAt])),
    // The same manual alias row with the later time: it reads as it did, nothing is retagged.
    ...each(d.driver, "INSERT OR REPLACE INTO tag_aliases (conversation_id, alias, tag, source, created_at) SELECT value ->> 0, value ->> 1, value ->> 2, 'manual', value ->> 3 FROM json_each(?)",
      retimed.map((a) => [a.conversationId ?? '', a.alias, a.tag, a.createdAt])),
  ];
  const applied = await d.canonicalizer.applyStates(states, also);
  // A removal counts as a change whether or not the alias was still there (as remove() one at a time counted it).
  return applied.filter((x) => x !== null).length;
}
