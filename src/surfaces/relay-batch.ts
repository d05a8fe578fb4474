// What relayPeer makes of the relay's log for a device: the entries after its cursor (each one batch another device
// pushed: its tombstones, then its turns) handed on as one batch within maxTurns/maxBytes, and — with the last batch,
// as every replica sends them — the pins, manual aliases and checkouts of every other device, merged by the rules the
// engine merges them by. A device's cursor on the relay is a place in the log: `turns` the entry, `tombstones` how
// many items of it were handed (0: all), `receipt` the entry's random id (a log rewound or replaced has another).
import type { SyncAlias, SyncCursor, SyncHead, SyncPin, SyncTombstone, SyncTurn } from '../contracts/types-sync.js';

/** A log entry as the devices seal it: one pushed batch's tombstones and turns. */
export interface EntryBody {
  tombstones: SyncTombstone[];
  turns: SyncTurn[];
}

export interface OpenEntry extends EntryBody {
  seq: number;
  eid: string;
}

/** What a device keeps on the relay per conversation filter besides its cursor: what its last batch carried whole. */
export interface StateBody {
  conversations: string[] | null;
  pins: SyncPin[];
  aliases: SyncAlias[];
  heads: SyncHead[];
}

/** A place in the log: entries before `seq` handed, and of entry `seq` its first `off` items (0: all of it). */
export interface Position {
  seq: number;
  off: number;
  eid?: string;
}

/** Tombstones per batch, as the engine sends them. */
const TOMBSTONES_PER_BATCH = 2000;
const utf8 = new TextEncoder();

export const positionOf = (c: SyncCursor): Position => ({ seq: c.turns, off: c.tombstones, ...(c.receipt !== undefined ? { eid: c.receipt } : {}) });

export const cursorOf = (p: Position): SyncCursor => ({ turns: p.seq, tombstones: p.off, ...(p.seq > 0 && p.eid !== undefined ? { receipt: p.eid } : {}) });

/**
 * The items of `entries` from `start` on that one batch holds: tombstones (2,000 at most) and turns (`maxTurns`, about
 * `maxBytes`, one always), only of `filter`'s conversations (null: all), never the same turn twice (a turn another
 * device pushed too ends the batch before it). `cut`: the batch stopped before the entries' end.
 */
export function assemble(entries: readonly OpenEntry[], start: Position, filter: ReadonlySet<string> | null, maxTurns: number, maxBytes: number) {
  const tombstones: SyncTombstone[] = [];
  const turns: SyncTurn[] = [];
  const keys = new Set<string>();
  const wanted = (conversationId: string) => filter === null || filter.has(conversationId);
  let pos = start;
  let bytes = 0;
  // Whether item `i` of `e` fits (false: the batch is full before it).
  const fits = (e: OpenEntry, i: number): boolean => {
    if (i < e.tombstones.length) {
      const t = e.tombstones[i]!;
      if (!wanted(t.conversationId)) return true;
      if (tombstones.length >= TOMBSTONES_PER_BATCH) return false;
      tombstones.push(t);
      return true;
    }
    const t = e.turns[i - e.tombstones.length]!;
    if (!wanted(t.conversationId)) return true;
    const key = JSON.stringify([t.conversationId, t.id]);
    const size = utf8.encode(JSON.stringify(t)).length;
    if (keys.has(key) || turns.length >= maxTurns || (turns.length > 0 && bytes + size > maxBytes)) return false;
    keys.add(key);
    turns.push(t);
    bytes += size;
    return true;
  };
  for (const e of entries) {
    if (e.seq < start.seq || (e.seq === start.seq && start.off === 0)) continue;
    const n = e.tombstones.length + e.turns.length;
    const from = e.seq === start.seq ? start.off : 0;
    let i = from;
    while (i < n && fits(e, i)) i++;
    if (i === n) pos = { seq: e.seq, off: 0, eid: e.eid };
    else if (i > from) pos = { seq: e.seq, off: i, eid: e.eid };
    if (i < n) return { tombstones, turns, pos, cut: true };
  }
  return { tombstones, turns, pos, cut: false };
}

/** The last state of each key in `items` (a replica lists a message's unpin after its pin: the last one is its state). */
function lastOf<T>(items: readonly T[], key: (t: T) => string): Map<string, T> {
  return new Map(items.map((t) => [key(t), t]));
}

const laterPin = (a: SyncPin, b: SyncPin): boolean => a.at > b.at || (a.at === b.at && a.pinned && !b.pinned);
const laterAlias = (a: SyncAlias, b: SyncAlias): boolean => {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt;
  if (!a.removed !== !b.removed) return !a.removed;
  return a.tag > b.tag;
};
const laterHead = (a: SyncHead, b: SyncHead): boolean => a.ord > b.ord || (a.ord === b.ord && a.origin > b.origin);

function merge<T>(into: Map<string, T>, items: Map<string, T>, later: (a: T, b: T) => boolean): void {
  for (const [k, t] of items) {
    const had = into.get(k);
    if (!had || later(t, had)) into.set(k, t);
  }
}

const sorted = <T>(m: Map<string, T>): T[] => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, t]) => t);

/**
 * The pins, manual aliases and checkouts of `states` as one replica holding them all would send them: for each, the
 * later state wins (a pin over an unpin at the same time; an alias over a removal, then the greater tag; a checkout
 * by the conversation's clock, then origin), only of `filter`'s conversations (global aliases only without one).
 */
export function mergeStates(states: readonly StateBody[], filter: ReadonlySet<string> | null): { pins: SyncPin[]; aliases: SyncAlias[]; heads: SyncHead[] } {
  const pins = new Map<string, SyncPin>();
  const aliases = new Map<string, SyncAlias>();
  const heads = new Map<string, SyncHead>();
  const wanted = (conversationId: string | null) => (conversationId === null ? filter === null : filter === null || filter.has(conversationId));
  for (const s of states) {
    merge(pins, lastOf(s.pins.filter((p) => wanted(p.conversationId)), (p) => JSON.stringify([p.conversationId, p.messageId])), laterPin);
    merge(aliases, lastOf(s.aliases.filter((a) => wanted(a.conversationId)), (a) => JSON.stringify([a.conversationId, a.alias])), laterAlias);
    merge(heads, lastOf(s.heads.filter((h) => wanted(h.conversationId)), (h) => h.conversationId), laterHead);
  }
  return { pins: sorted(pins), aliases: sorted(aliases), heads: sorted(heads) };
}
