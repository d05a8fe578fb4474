// memory.sync(other): the run that moves batches between two replicas, over nothing but the three sync methods every
// transport has (syncState, syncChanges, applySync). It runs where it is called — in-process, in the page for the
// worker client, in the calling Worker for a Durable Object stub — so `other` may be any Memory, or remoteMemory().
import { PagewiseError } from '../contracts/errors.js';
import type { SyncApplied, SyncBatch, SyncCursor, SyncMissing, SyncOptions, SyncPeer, SyncRenewal, SyncReport, SyncState } from '../contracts/types-sync.js';
import { describe, readArray, readRecord, validateConversationId } from './messages.js';

const MODULE = 'sync';
export const DEFAULT_BATCH_TURNS = 500;
export const MAX_BATCH_TURNS = 2000;
export const DEFAULT_BATCH_BYTES = 1_000_000;

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path} ${message}`, { path });
}

/** The conversation filter as both sides key their cursors by it: sorted, without repeats; undefined: all. */
export function readConversationFilter(value: unknown, path = 'conversations'): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = readArray(value, path, 'INVALID_ARGUMENT', MODULE);
  if (!list || list.length === 0) invalid(path, `must be a non-empty array of conversation ids, or left out to sync every conversation (got ${describe(value)}).`);
  return [...new Set(list.map((id, i) => validateConversationId(id, `${path}[${i}]`)))].sort();
}

/** A positive whole number no larger than `max`, or the default. */
export function readCount(value: unknown, path: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) invalid(path, `must be a whole number from 1 to ${max} (got ${describe(value)}).`);
  return value;
}

function readOptions(options: unknown) {
  const o = options === undefined ? {} : readRecord(options, 'options', 'INVALID_ARGUMENT', MODULE);
  if (!o) invalid('options', `must be an object (got ${describe(options)}).`);
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') invalid('options.onProgress', 'must be a function.');
  const signal = o.signal as AbortSignal | undefined;
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || typeof signal.aborted !== 'boolean')) invalid('options.signal', 'must be an AbortSignal.');
  if (o.resync !== undefined && typeof o.resync !== 'boolean') invalid('options.resync', `must be true or false (got ${describe(o.resync)}).`);
  return {
    resync: o.resync === true,
    conversations: readConversationFilter(o.conversations, 'options.conversations'),
    maxTurns: readCount(o.batchTurns, 'options.batchTurns', DEFAULT_BATCH_TURNS, MAX_BATCH_TURNS),
    maxBytes: readCount(o.batchBytes, 'options.batchBytes', DEFAULT_BATCH_BYTES),
    onProgress: o.onProgress as SyncOptions['onProgress'],
    signal,
  };
}

function checkPeer(other: unknown): SyncPeer {
  const p = other as Partial<SyncPeer> | null;
  if (typeof p !== 'object' || p === null || typeof p.syncState !== 'function' || typeof p.syncChanges !== 'function' || typeof p.applySync !== 'function') {
    invalid('other', `must be a Memory (createMemory, connect, memoryStub) or remoteMemory(url, { token }) (got ${describe(other)}).`);
  }
  return p as SyncPeer;
}

const bytesOf = (batch: SyncBatch): number => new TextEncoder().encode(JSON.stringify(batch)).length;

type Direction = { from: SyncPeer; to: SyncPeer; fromId: string; toId: string; direction: 'pull' | 'push'; resync?: boolean };

/** A side was found to need a resync in the middle of a run (the other compacted meanwhile): the run stops there. */
class Behind {
  constructor(readonly replica: string, readonly peer: string) {}
}

/** `call`'s answer; SYNC_RESYNC_REQUIRED from it means `replica` must resync with `peer` (thrown as Behind). */
async function orBehind<T>(call: Promise<T>, replica: string, peer: string): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof PagewiseError && error.code === 'SYNC_RESYNC_REQUIRED') throw new Behind(replica, peer);
    throw error;
  }
}

function stopped(o: ReturnType<typeof readOptions>): void {
  if (o.signal?.aborted) throw new PagewiseError('ABORTED', MODULE, 'The sync was stopped; what was applied stays, and the next sync goes on from there.');
}

function checkBatch(batch: SyncBatch, p: Direction): void {
  if (batch.from !== p.fromId || batch.to !== p.toId) {
    throw new PagewiseError('STORAGE_ERROR', MODULE, `The peer answered with a batch from ${describe(batch.from)} to ${describe(batch.to)}, not from ${describe(p.fromId)} to ${describe(p.toId)}; nothing more was applied.`);
  }
}

/**
 * The bytes of attachments `to`'s turns name and it lacks, from `from`, in batches of pieces; an attachment `from`
 * does not send (it lacks the bytes too, or its turn is private there) is not asked for again in this run.
 */
async function fetchAttachments(p: Direction, cursor: SyncCursor, missing: readonly SyncMissing[] | undefined, o: ReturnType<typeof readOptions>, report: SyncReport): Promise<void> {
  const given = new Set<string>();
  let want = (missing ?? []).filter((m) => !given.has(m.id));
  while (want.length > 0) {
    stopped(o);
    const ask = want.slice(0, 16);
    const batch = await p.from.syncChanges({ to: p.toId, cursor, ...(o.conversations ? { conversations: o.conversations } : {}), maxTurns: 1, maxBytes: o.maxBytes, attachments: ask });
    checkBatch(batch, p);
    const asked = new Set(ask.map((m) => m.id));
    const sent = new Set((batch.attachments ?? []).map((x) => x.id).filter((id) => asked.has(id)));
    // Nothing sent of what was asked: `from` has none of it. (A batch that sent some may simply have been full.)
    if (sent.size === 0) {
      for (const m of ask) given.add(m.id);
      want = want.filter((m) => !given.has(m.id));
      continue;
    }
    const applied = await p.to.applySync(batch);
    report.attachments += applied.attachments ?? 0;
    report.batches++;
    report.bytes += bytesOf(batch);
    // An attachment whose bytes did not move on (refused, or sent from elsewhere than asked) is not asked for again.
    const after = new Map((applied.missing ?? []).map((m) => [m.id, m.from]));
    for (const m of ask) if (sent.has(m.id) && after.has(m.id) && after.get(m.id)! <= m.from) given.add(m.id);
    for (const id of applied.refused ?? []) given.add(id);
    want = (applied.missing ?? []).filter((m) => !given.has(m.id));
  }
}

/**
 * Moves everything `from` has and `to` lacks, a batch at a time: each batch is applied by `to` in one transaction
 * together with the cursor it reached, so a run stopped anywhere resumes after the last batch applied. Attachments'
 * bytes follow the turns that name them (and first, what `to` lacked already).
 */
async function move(p: Direction, cursor: SyncCursor, missing: readonly SyncMissing[] | undefined, o: ReturnType<typeof readOptions>, report: SyncReport, changed: Set<string>) {
  const { from, to, toId, direction } = p;
  let turns = 0;
  let batches = 0;
  let bytes = 0;
  await fetchAttachments(p, cursor, missing, o, report);
  for (;;) {
    stopped(o);
    const batch = await orBehind(from.syncChanges({ to: toId, cursor, ...(o.conversations ? { conversations: o.conversations } : {}), maxTurns: o.maxTurns, maxBytes: o.maxBytes, ...(p.resync ? { resync: true } : {}) }), toId, p.fromId);
    checkBatch(batch, p);
    const size = bytesOf(batch);
    const applied: SyncApplied = await orBehind(to.applySync(batch), p.fromId, toId);
    batches++;
    bytes += size;
    turns += applied.turns;
    report[direction === 'pull' ? 'pulled' : 'pushed'] += applied.turns;
    report.forgotten += applied.forgotten;
    report.pins += applied.pins;
    report.aliases += applied.aliases;
    report.conflicts.push(...applied.conflicts);
    if (applied.resynced !== undefined) report.resynced = (report.resynced ?? 0) + applied.resynced;
    if (applied.clock) {
      for (const k of ['held', 'clamped', 'refused'] as const) report.clock[k] += applied.clock[k];
      report.clock.aheadMs = Math.max(report.clock.aheadMs, applied.clock.aheadMs);
    }
    for (const c of applied.conversations) changed.add(c);
    report.batches++;
    report.bytes += size;
    o.onProgress?.({ direction, batches, turns, bytes });
    cursor = batch.cursor;
    await fetchAttachments(p, cursor, applied.missing, o, report);
    if (!batch.more) return;
  }
}

/**
 * What a replica's state shows its peer besides the cursor: its other cursors, the turns it received from it, whether
 * it heard the peer's id was left for a copy, and the ids it left itself.
 */
const shown = (s: SyncState) => ({
  ...(s.elsewhere ? { seenElsewhere: s.elsewhere } : {}), ...(s.received ? { seenTurns: s.received } : {}), ...(s.twin ? { seenTwin: true } : {}),
  ...(s.previous ? { left: s.previous } : {}),
});

/** The two replicas' ids and cursors, after each has checked what the other says it read of it (see SyncStateOptions). */
async function handshake(self: SyncPeer, peer: SyncPeer, filter: string[] | undefined, renewed: SyncRenewal[]) {
  const first = await self.syncState('', filter);
  let selfId = first.replica;
  // The ids this replica left, first: the peer shows the cursors it kept of them (how far it read this replica then).
  let theirs = await peer.syncState(selfId, filter, first.previous ? { left: first.previous } : undefined);
  if (theirs.replica === selfId) {
    // Two databases with one id: one is a copy of the other. This one takes a new id; if the other still answers
    // with it, they are one storage.
    const state = await self.syncState('', filter, { renew: true });
    if (state.renewed) renewed.push(state.renewed);
    selfId = state.replica;
    theirs = await peer.syncState(selfId, filter);
    if (theirs.replica === selfId) invalid('other', `is this same replica (${describe(selfId)}): sync two memories with their own storage.`);
  }
  // This replica checks what the peer read of it…
  let ours = await self.syncState(theirs.replica, filter, { seen: theirs.cursor, ...shown(theirs) });
  if (ours.renewed) {
    renewed.push(ours.renewed);
    selfId = ours.replica;
  }
  // …and the peer what this one read of it (a peer that renews is read from the start).
  theirs = await peer.syncState(selfId, filter, { seen: ours.cursor, ...shown(ours) });
  if (theirs.renewed) {
    renewed.push(theirs.renewed);
    ours = await self.syncState(theirs.replica, filter, theirs.previous ? { left: theirs.previous } : undefined);
  }
  return { selfId, ours, theirs };
}

/** memory.sync(other): pull what `other` has, then push what it lacks. */
export async function runSync(self: SyncPeer, other: unknown, options?: SyncOptions): Promise<SyncReport> {
  const peer = checkPeer(other);
  const o = readOptions(options);
  const started = performance.now();
  const report: SyncReport = {
    pushed: 0, pulled: 0, forgotten: 0, conversations: [], conflicts: [], pins: 0, aliases: 0, attachments: 0, batches: 0, bytes: 0, ms: 0,
    renewed: [], clock: { held: 0, clamped: 0, refused: 0, aheadMs: 0 },
  };
  const changed = new Set<string>();
  const done = () => {
    report.conversations = [...changed].sort();
    report.ms = performance.now() - started;
    return report;
  };
  try {
    let shake = await handshake(self, peer, o.conversations, report.renewed);
    // A side that has not read forgets the other has compacted, or that has a resync with it under way, resyncs
    // first (then the ids and cursors are read again).
    for (let round = 0; needsResync(shake); round++) {
      if (round === 2) {
        const mine = shake.theirs.resyncRequired === true || (!shake.ours.resyncRequired && shake.ours.resyncing === true);
        report.resync = mine ? { replica: shake.selfId, with: shake.theirs.replica, turns: 0 } : { replica: shake.theirs.replica, with: shake.selfId, turns: 0 };
        return done();
      }
      if (!(await resync(self, peer, shake, o, report, changed))) return done();
      shake = await handshake(self, peer, o.conversations, report.renewed);
    }
    const { selfId, ours, theirs } = shake;
    await move({ from: peer, to: self, fromId: theirs.replica, toId: selfId, direction: 'pull' }, ours.cursor, ours.missing, o, report, changed);
    await move({ from: self, to: peer, fromId: selfId, toId: theirs.replica, direction: 'push' }, theirs.cursor, theirs.missing, o, report, changed);
  } catch (error) {
    if (!(error instanceof Behind)) throw error;
    report.resync = { replica: error.replica, with: error.peer, turns: 0 };
  }
  return done();
}

type Shake = { selfId: string; ours: SyncState; theirs: SyncState };

const needsResync = (s: Shake): boolean => Boolean(s.theirs.resyncRequired || s.ours.resyncRequired || s.ours.resyncing || s.theirs.resyncing);

/**
 * The side that must resync (this one, or the other) marks the turns it received and pulls everything the other
 * holds in resync mode; its last batch lets go of what is still marked. It starts when `options.resync` allows it,
 * or when it has nothing to let go (a new replica, one that only wrote); one under way goes on. Resolves false when
 * it may not (then the report says which side must run `sync(other, { resync: true })`, or that both are stuck).
 */
async function resync(self: SyncPeer, peer: SyncPeer, shake: Shake, o: ReturnType<typeof readOptions>, report: SyncReport, changed: Set<string>): Promise<boolean> {
  const { selfId, ours, theirs } = shake;
  // Each side deleted forgets the other never read: neither may take the other's turns, so nothing is let go.
  if (theirs.resyncRequired && ours.resyncRequired) {
    report.resync = { replica: selfId, with: theirs.replica, turns: 0, both: true };
    return false;
  }
  const mine = theirs.resyncRequired === true || (!ours.resyncRequired && ours.resyncing === true);
  // The cursor the side behind keeps for the one ahead (where a resync under way goes on from).
  const s = mine
    ? { behind: self, ahead: peer, behindId: selfId, aheadId: theirs.replica, going: ours.resyncing, cursor: ours.cursor, allowed: o.resync, direction: 'pull' as const }
    : { behind: peer, ahead: self, behindId: theirs.replica, aheadId: selfId, going: theirs.resyncing, cursor: theirs.cursor, allowed: false, direction: 'push' as const };
  const stop = (turns: number) => { report.resync = { replica: s.behindId, with: s.aheadId, turns }; return false; };
  let cursor = s.cursor;
  if (!s.going) {
    // Over HTTP the endpoint ignores `resync`: no answer, so the side behind must run it itself.
    const check = (await s.behind.syncState(s.aheadId, o.conversations, { resync: 'check' })).resync;
    if (!check || (check.turns > 0 && !s.allowed)) return stop(check?.turns ?? 0);
    const started = await s.behind.syncState(s.aheadId, o.conversations, { resync: 'start' });
    if (!started.resync?.started) return stop(check.turns);
    cursor = started.cursor;
  }
  report.resynced ??= 0;
  await move({ from: s.ahead, to: s.behind, fromId: s.aheadId, toId: s.behindId, direction: s.direction, resync: true }, cursor, undefined, o, report, changed);
  return true;
}

/** Adds `sync` to an object with the Memory API's sync methods (each transport's own, like `close`). */
export function withSync<T extends SyncPeer>(memory: T): T & { sync(other: SyncPeer, options?: SyncOptions): Promise<SyncReport> } {
  return Object.assign(memory, { sync: (other: SyncPeer, options?: SyncOptions) => runSync(memory, other, options) });
}
