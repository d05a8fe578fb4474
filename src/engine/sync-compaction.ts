// Tombstones do not stay forever. A replica records how far each peer has read its tombstones — the cursor the peer
// shows back, signed by this replica when it served it (a bare number, the start, or a receipt signed for another
// cursor, peer or filter, records nothing) — and deletes the tombstones of single messages that every peer of every
// conversation heard from within `tombstoneRetentionDays` has read. A whole conversation's forgets stay (one row per
// forget, and what covers turns written offline that no replica saw). The floor left behind, in each conversation
// (its last row deleted, its highest clock deleted), is what a reader of that conversation that has not read that
// far must pass: it resyncs before its turns from before the floor's clock are taken. A resync never lets go of
// anything before the peer's copy has arrived: the received turns are marked, the peer's every turn is pulled (each
// unmarks its copy here), and only what is still marked after the peer's last batch goes — the peer no longer holds
// it. A replica's own turns are never let go. A replica no peer has read compacts as it forgets (schema trigger).
import { PagewiseError } from '../contracts/errors.js';
import { describe } from '../common/messages.js';
import { yieldToEventLoop } from '../common/pace.js';
import { settlePath } from './branches.js';
import type { Remove } from './data-rows.js';
import type { DataDeps } from './data-types.js';
import type { SyncStore } from '../store/sync-store.js';
import type { SyncCursor, SyncTurn } from '../contracts/types-sync.js';
import type { StorageDriver } from '../contracts/types.js';
import type { CursorVerdict } from './sync-identity.js';

const MODULE = 'sync';
/** Tombstones deleted per transaction, and transactions per acknowledgment (the rest at the next one). */
const COMPACT_SLICE = 2000;
const COMPACT_SLICES = 8;
/** Turns a resync lets go per read (each conversation's in one removal). */
const RESYNC_SLICE = 500;
const DAY_MS = 24 * 3600 * 1000;

/** How long a peer not heard from holds compaction back: the option, 90 days when not given, null: for ever. */
export const DEFAULT_TOMBSTONE_DAYS = 90;

/** The error a peer that must resync gets (in syncChanges, applySync): what to run, and why. */
export function resyncRequired(peer: string, replica: string): PagewiseError {
  return new PagewiseError('SYNC_RESYNC_REQUIRED', MODULE,
    `Replica ${describe(peer)} has not read forgets that ${describe(replica)} has since deleted (it was away longer than tombstoneRetentionDays, or is new here), so its copies could bring forgotten turns back; nothing was applied. On the replica ${describe(peer)}, run memory.sync(other, { resync: true }): it pulls everything ${describe(replica)} holds again, then lets go of the copies ${describe(replica)} no longer holds; its own turns stay.`);
}

/**
 * Records how far `peer` shows it has read this replica reading `filter`, when its cursor is one this replica gave.
 * A cursor for some conversations says nothing of the others' tombstones: it is kept to judge that peer's batches of
 * those conversations, and holds no compaction back.
 */
export async function acknowledge(driver: StorageDriver, sync: SyncStore, peer: string, seen: SyncCursor, verdict: CursorVerdict, filter: readonly string[] | null): Promise<void> {
  if (verdict.kind !== 'ok') return;
  await driver.batch(sync.ackStatements(peer, filter, seen, new Date().toISOString()));
}

/**
 * After this replica read all of `peer`'s changes (the last batch of a sync of every conversation, `settle` in its
 * transaction): what the peer showed before counts, and what every peer heard from has read is compacted. Counted
 * only then, a tombstone the peer received from here and sends back is one this replica still holds (it is not
 * stored again as new, going round the peers for ever).
 */
export async function compactAfterRead(driver: StorageDriver, sync: SyncStore, days: number | null | undefined): Promise<void> {
  const d = days === undefined ? DEFAULT_TOMBSTONE_DAYS : days;
  await compact(driver, sync, d === null ? '' : new Date(Date.now() - d * DAY_MS).toISOString());
}

/** Deletes the single messages' tombstones every peer acknowledged since `sinceIso` has read, a slice per transaction. */
async function compact(driver: StorageDriver, sync: SyncStore, sinceIso: string): Promise<void> {
  const bound = await sync.compactBound(sinceIso);
  if (bound === null || bound <= 0) return;
  for (let i = 0; i < COMPACT_SLICES; i++) {
    const to = await sync.compactable(bound, COMPACT_SLICE);
    if (!to) return;
    await driver.batch(sync.compactStatements(to));
  }
}

/** Whether a reader of `filter` (null: all) at tombstone row `read` has not read what this replica compacted there. */
export async function behind(sync: SyncStore, read: number, filter: readonly string[] | null): Promise<boolean> {
  const floor = await sync.floor(filter);
  return floor.rowid > 0 && read < floor.rowid;
}

/**
 * A batch's turns from a peer that has not read what this replica compacted in their conversations (as it showed
 * reading the batch's filter): refused whole when one of them is older than its conversation's floor clock (a forget
 * deleted here may have covered it); newer ones, and those of conversations nothing was compacted in, cannot be.
 */
export async function checkSender(sync: SyncStore, from: string, filter: readonly string[] | null, turns: readonly Pick<SyncTurn, 'ord' | 'conversationId'>[]): Promise<void> {
  if (turns.length === 0) return;
  const floors = await sync.floors([...new Set(turns.map((t) => t.conversationId))]);
  if (floors.size === 0) return;
  const read = await sync.acked(from, filter);
  if (turns.some((t) => { const f = floors.get(t.conversationId); return f !== undefined && read < f.rowid && t.ord < f.ord; })) throw resyncRequired(from, await sync.replica());
}

export interface ResyncDeps extends DataDeps {
  sync: SyncStore;
  remove: Remove;
}

/**
 * This replica's start of a resync with `peer` for `filter` (null: every conversation): the turns it received from
 * others are marked (nothing goes yet) and its cursors for `peer` dropped, in one transaction with the record that the
 * resync is under way. `check`: only counts them. Resolves with how many it marked (or would).
 */
export async function resyncStart(d: ResyncDeps, peer: string, filter: readonly string[] | null, check: boolean): Promise<number> {
  const count = await d.sync.resyncCount(filter);
  if (!check) await d.driver.batch(d.sync.startResyncStatements(peer, filter, new Date().toISOString()));
  return count;
}

/**
 * The end of a resync with `peer` (its last batch is in): what is still marked — received turns `peer` did not send
 * again, so it no longer holds them — goes (without a tombstone: this replica forgot nothing), a conversation at a
 * time with their marks, then the record. Stopped anywhere, the next sync with `peer` goes on in resync mode and ends
 * here again. Resolves with how many turns went.
 */
export async function resyncSweep(d: ResyncDeps, peer: string, filter: readonly string[] | null): Promise<number> {
  let dropped = 0;
  let removed = false;
  for (;;) {
    const rows = await d.sync.markedRows(peer, filter, RESYNC_SLICE);
    if (rows.length === 0) break;
    const byConversation = new Map<string, typeof rows>();
    for (const r of rows) byConversation.set(r.conversation_id, [...(byConversation.get(r.conversation_id) ?? []), r]);
    for (const [conversationId, list] of byConversation) {
      await yieldToEventLoop();
      const left = await d.driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM turns WHERE conversation_id = ?', [conversationId]);
      const whole = list.length >= Number(left[0]?.n ?? 0);
      await d.remove(conversationId, list, whole, undefined, [d.sync.unmarkRowsStatement(peer, filter, list.map((r) => r.rowid))], true, false);
      removed = true;
      dropped += list.length;
      if (!whole) {
        await settlePath(d, conversationId);
        await d.index.indexNew(conversationId, new Date().toISOString());
        d.rebuildLater(conversationId);
      }
    }
  }
  await d.driver.batch(d.sync.endResyncStatements(peer, filter));
  if (removed) await d.remove.purge();
  return dropped;
}
