// Sync's merges of what travels whole with a batch's last piece: pin states (the later of pin and unpin wins) and
// manual aliases (the later of alias and removal wins), each against what this replica holds.
import type { DataDeps } from './data-types.js';
import type { SyncStore } from '../store/sync-store.js';
import type { ReadBatch } from './sync-batch.js';
import { PagewiseError } from '../contracts/errors.js';
import type { Statement } from '../contracts/types.js';
import type { SyncAlias, SyncPin } from '../contracts/types-sync.js';

/** What the merges read and write with. */
export type MergeDeps = Pick<DataDeps, 'driver' | 'store' | 'canonicalizer'> & { sync: SyncStore };

export function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) out.set(key(item), [...(out.get(key(item)) ?? []), item]);
  return out;
}

/** Pins whose state the batch changes (the later of pin and unpin wins; a tie pins), as statements. */
export async function pinStatements(d: MergeDeps, pins: readonly SyncPin[], conversations: readonly string[] | null): Promise<{ statements: Statement[]; changed: number }> {
  const { sync } = d;
  if (pins.length === 0) return { statements: [], changed: 0 };
  const local = new Map((await sync.pins(conversations ?? [...new Set(pins.map((p) => p.conversationId))])).map((p) => [`${p.conversationId}\u0000${p.messageId}`, p]));
  const stored = new Map<string, Map<string, string>>();
  for (const [conversationId, list] of groupBy(pins, (p) => p.conversationId)) stored.set(conversationId, await sync.storedHashes(conversationId, list.map((p) => p.messageId)));
  const statements: Statement[] = [];
  let changed = 0;
  for (const pin of pins) {
    // A pin of a message not stored here (private where it was written) is not kept.
    if (!stored.get(pin.conversationId)?.has(pin.messageId)) continue;
    const mine = local.get(`${pin.conversationId}\u0000${pin.messageId}`);
    const wins = !mine || pin.at > mine.at || (pin.at === mine.at && pin.pinned && !mine.pinned);
    if (!wins || (mine && mine.pinned === pin.pinned)) continue;
    statements.push(...sync.pinStatements(pin));
    changed++;
  }
  return { statements, changed };
}

/** Whether alias state `a` wins over `b`: the later one; a tie: an alias over a removal, then the greater tag. */
function laterAlias(a: SyncAlias, b: SyncAlias): boolean {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt;
  if (!a.removed !== !b.removed) return !a.removed;
  return a.tag > b.tag;
}

/** Manual aliases and their removals, merged (laterAlias); an alias that would make a loop here is left out. */
export async function applyAliases(d: MergeDeps, batch: ReadBatch): Promise<number> {
  const { driver, sync } = d;
  if (batch.aliases.length === 0) return 0;
  const local = new Map((await sync.aliases(batch.conversations)).map((a) => [`${a.conversationId ?? ''}\u0000${a.alias}`, a]));
  let changed = 0;
  for (const a of batch.aliases) {
    if (a.conversationId !== null && !(await d.store.conversation(a.conversationId))) continue;
    const mine = local.get(`${a.conversationId ?? ''}\u0000${a.alias}`);
    if (mine && (!laterAlias(a, mine) || (!!mine.removed === !!a.removed && mine.tag === a.tag))) continue;
    const scope = a.conversationId === null ? undefined : { conversationId: a.conversationId };
    try {
      if (!a.removed) await d.canonicalizer.add(a.alias, a.tag, scope, a.createdAt);
      else if (mine && !mine.removed) await d.canonicalizer.remove(a.alias, scope, a.createdAt);
      else {
        await driver.batch([sync.aliasRemovalStatement(a)]);
        continue;
      }
      changed++;
    } catch (error) {
      if (!(error instanceof PagewiseError) || error.code !== 'INVALID_ARGUMENT') throw error;
    }
  }
  return changed;
}

