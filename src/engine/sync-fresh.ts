// Which of a batch's turns a replica lacks: not forgotten here (a tombstone, or a removal whose tombstone was since
// compacted), not stored already, within the row limit; the rest are conflicts.
import type { IncomingTurn } from './sync-batch.js';
import type { DataDeps } from './data-types.js';
import type { SyncStore } from '../store/sync-store.js';
import type { SyncConflict } from '../contracts/types-sync.js';
import type { Statement } from '../contracts/types.js';
import { turnRowError } from '../store/turn-store.js';
import { pacer } from '../common/pace.js';
import { MAX_ORD } from '../store/order.js';

type FreshDeps = Pick<DataDeps, 'driver' | 'store'> & { sync: SyncStore };

/**
 * Whether `t` is forgotten here: a tombstone covers it, or it is a copy of a turn a forget removed here or named
 * whose tombstone was compacted since (`removed`, with the clock a forget written again takes: the forget's own where
 * it is known, else just past the copy).
 */
export function forgottenHere(gone: Awaited<ReturnType<SyncStore['forgotten']>>, t: IncomingTurn): { by: 'tombstone' } | { by: 'removed'; ord: number } | null {
  if (t.ord < gone.before) return { by: 'tombstone' };
  const named = (gone.turns.get(t.id) ?? []).filter((f) => f.hash === t.contentHash && t.ord < f.ord);
  if (named.length === 0) return null;
  return named.some((f) => !f.removed) ? { by: 'tombstone' } : { by: 'removed', ord: Math.max(...named.map((f) => f.ord)) };
}

/** The turns of one conversation this replica lacks, checked against its tombstones and stored ids. */
export async function fresh(d: FreshDeps, conversationId: string, turns: IncomingTurn[], conflicts: SyncConflict[]): Promise<IncomingTurn[]> {
  const { driver, sync } = d;
  const ids = turns.map((t) => t.id);
  const gone = await sync.forgotten(conversationId, ids);
  const stored = await sync.storedHashes(conversationId, ids);
  const out: IncomingTurn[] = [];
  // A row that may be near the limit is measured byte by byte (measuring 2,000 long turns, 7.8 MB, held the event
  // loop 0.16 s): the event loop is handed back now and then.
  const pace = pacer();
  const again: Statement[] = [];
  const nowIso = new Date().toISOString();
  for (const t of turns) {
    await pace(1);
    // A copy of a turn forgotten here whose tombstone was compacted (a device restored from a backup pushes what
    // it held): refused, and the forget written again, so the device that sent it hears of it and lets it go.
    const why = forgottenHere(gone, t);
    if (why?.by === 'removed' && t.ord < MAX_ORD) again.push(sync.tombstoneStatement({ conversationId, id: t.id, contentHash: t.contentHash, ord: why.ord, forgottenAt: nowIso }));
    if (why) continue;
    const hash = stored.get(t.id);
    if (hash === undefined) {
      if (!turnRowError(d.store.limits, driver.name, conversationId, t.id, t.message, t.text)) out.push(t);
      else conflicts.push({ conversationId, id: t.id, reason: 'too-large' });
    } else if (hash !== t.contentHash) conflicts.push({ conversationId, id: t.id, reason: 'id' });
  }
  if (again.length > 0) await driver.batch(again);
  return out;
}

