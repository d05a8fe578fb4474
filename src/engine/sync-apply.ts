// Sync's write side: another replica's batch applied here. Tombstones first (what they cover is removed as forget
// removes it, leaving no byte of its text), then the turns this replica lacks, placed in the converged order — every
// replica orders a conversation by (order key, origin, id) — with the cursor the batch reached, in one transaction;
// then pins and manual aliases by their merge rules. Derived data is never received: it is rebuilt here.
import { readBatch, readTurn, wireTurn, type IncomingPiece, type IncomingTurn, type ReadBatch } from './sync-batch.js';
import { MISSING_PER_ASK, syncReadApi } from './sync-changes.js';
import { checkSender, compactAfterRead, resyncStart, resyncSweep } from './sync-compaction.js';
import { completeStatement } from '../store/attachment-store.js';
import { sha256Hex } from '../common/parts.js';
import { sentMessageText } from '../tokens/message-cost.js';
import type { Remove } from './data-rows.js';
import type { DataDeps } from './data-types.js';
import { PagewiseError } from '../contracts/errors.js';
import { describe } from '../common/messages.js';
import type { SyncStore } from '../store/sync-store.js';
import { compareKeys, headOf, type HeadRegister, type TreeNode } from '../store/tree.js';
import { moveTo, settlePath } from './branches.js';
import { groupBy, mergeAliases, mergePins, slices } from './sync-merge.js';
import { yieldToEventLoop } from '../common/pace.js';
import { countCacheKey } from '../tokens/chat-format.js';
import type { Statement } from '../contracts/types.js';
import { MAX_ORD } from '../store/order.js';
import { forgottenHere, fresh } from './sync-fresh.js';
import type { SyncApplied, SyncTombstone } from '../contracts/types-sync.js';

const MODULE = 'sync';
/** Thrown out of a slot that found background work under way where turns must move: settle, then apply again. */
const RETRY = Symbol('retry after background work');
/** Held changes released by one batch at most (the rest by the next ones). */
const HELD_PER_BATCH = 500;
/** Received turns written per transaction (about 30 ms of SQLite on a 2-core machine). */
const TURN_SLICE = 64;

export interface SyncApplyDeps extends DataDeps {
  sync: SyncStore;
  remove: Remove;
}

/**
 * Removes what the batch's tombstones cover, a conversation at a time, with the tombstones in the same transaction
 * (the event loop handed back between conversations), and purges the file once at the end (not once per conversation).
 */
async function applyTombstones(d: SyncApplyDeps, batch: ReadBatch, applied: SyncApplied, changed: Set<string>, nowIso: string): Promise<void> {
  const { driver, sync } = d;
  let removed = false;
  for (const [conversationId, tombstones] of groupBy(batch.tombstones, (t) => t.conversationId)) {
    await yieldToEventLoop();
    const stored = await sync.forgotten(conversationId, []);
    const before = Math.max(stored.before, ...tombstones.map((t) => (t.id === undefined ? t.ord : 0)));
    const named = tombstones.filter((t): t is SyncTombstone & { id: string } => t.id !== undefined);
    // Held turns they cover go too (their text is here, set aside).
    const statements = [sync.heardStatement(batch.from, batch.conversations, nowIso), ...tombstones.map((t) => sync.tombstoneStatement(t)), sync.dropHeldStatement(conversationId, before, named)];
    const rows = await sync.covered(conversationId, before, named);
    if (rows.length === 0) {
      await driver.batch(statements);
      continue;
    }
    const left = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM turns WHERE conversation_id = ?', [conversationId]);
    const whole = rows.length >= Number(left[0]?.n ?? 0);
    await d.remove(conversationId, rows, whole, undefined, statements, true, false);
    removed = true;
    applied.forgotten += rows.length;
    changed.add(conversationId);
    if (!whole) {
      // The head may have gone with them: the positions follow the one the tree has now.
      await settlePath(d, conversationId);
      await d.index.indexNew(conversationId, nowIso);
      d.rebuildLater(conversationId);
    }
  }
  if (removed) await d.remove.purge();
}

/** Whether checkout `a` is later than `b` (by the conversation's clock, then origin). */
const laterHead = (a: HeadRegister, b: HeadRegister | null): boolean => !b || a.ord > b.ord || (a.ord === b.ord && a.origin > b.origin);

/** The tree node an incoming turn will be (its row id and seq are not known before it is written: neither is read). */
function incomingNode(t: IncomingTurn, known: ReadonlyMap<string, TreeNode>): TreeNode {
  const p = t.place;
  const at = p.forkAfter ? known.get(p.forkAfter) : undefined;
  return {
    rowid: -1, id: t.id, branch: p.branch, forkAfter: p.forkAfter, forkBranch: p.forkBranch ?? at?.branch ?? null, forkOrd: p.forkOrd ?? at?.ord ?? null,
    ord: t.ord, origin: t.origin, seq: Number.NEGATIVE_INFINITY, createdAt: t.createdAt, hash: t.contentHash,
  };
}

/**
 * The statements that put `incoming` into the conversation: written off the path, then the conversation's positions
 * move to the path to its head (the later of the last turn written and the last checkout, `head` the batch's). Turns
 * that continue the path are appended; where stored turns move or leave it, what was derived from the positions there
 * is dropped, to be rebuilt. Resolves with whether stored turns moved.
 */
async function place(d: SyncApplyDeps, from: string, conversationId: string, incoming: IncomingTurn[], head: HeadRegister | null, countKey: string | null, count: (text: string) => number, nowIso: string): Promise<{ statements: Statement[]; moved: boolean }> {
  const sorted = [...incoming].sort(compareKeys);
  const statements: Statement[] = [
    { sql: 'INSERT OR IGNORE INTO conversations (id, created_at, updated_at) VALUES (?, ?, ?)', params: [conversationId, nowIso, nowIso] },
    { sql: 'UPDATE conversations SET updated_at = ? WHERE id = ?', params: [nowIso, conversationId] },
  ];
  // The cached count is of the text the turn is sent as (its reasoning included), as append() caches it.
  for (const t of sorted) statements.push(...d.sync.insertTurn(conversationId, t, t.via ?? from, countKey, countKey === null ? 0 : count(sentMessageText(t.message)), nowIso));
  const nodes = await d.tree.nodes(conversationId);
  const known = new Map(nodes.map((n) => [n.id, n]));
  for (const t of sorted) known.set(t.id, incomingNode(t, known));
  const all = [...known.values()];
  const local = await d.tree.register(conversationId);
  const register = head && laterHead(head, local) ? head : local;
  const move = await moveTo(d, conversationId, all, headOf(all, register));
  // Turns move: a compaction pass or vectors under way on this conversation would write for the old positions.
  if (move.moved && d.busy(conversationId)) throw RETRY;
  statements.push(...move.statements);
  if (register && register !== local) statements.push(d.tree.receivedHeadStatement(conversationId, register));
  return { statements, moved: move.moved };
}

/**
 * Pieces of attachments' bytes, each stored where the bytes here end (others are not what this replica asked for);
 * an attachment whose bytes are whole is checked against its id before it counts as stored. One this replica cannot
 * take — over its maxAttachmentBytes, or bytes that do not match their id (none of them kept) — is refused, never
 * failing the sync. Resolves with how many became whole, and the ids refused.
 */
async function applyPieces(d: SyncApplyDeps, pieces: readonly IncomingPiece[], nowIso: string): Promise<{ whole: number; refused: string[] }> {
  let whole = 0;
  const refused = new Set<string>();
  for (const p of [...pieces].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.start - b.start))) {
    if (refused.has(p.id) || (await d.attachments.stored([p.id])).has(p.id) || !(await d.attachments.referenced(null, p.id))) continue;
    if (p.size > d.maxAttachmentBytes) { refused.add(p.id); continue; }
    const have = await d.attachments.received(p.id);
    if (p.start !== have) continue;
    const statements = d.attachments.pieceStatements(p.id, p.start, p.bytes);
    if (have + p.bytes.length === p.size) {
      const before = have > 0 ? (await d.attachments.range(p.id, 0, have))!.bytes : new Uint8Array(0);
      const all = new Uint8Array(p.size);
      all.set(before);
      all.set(p.bytes, have);
      if ((await sha256Hex(all)) !== p.id) {
        // Wrong bytes: none of them is kept, so a later sync asks for them from the start (of another peer, perhaps).
        await d.driver.batch([{ sql: 'DELETE FROM attachment_chunks WHERE attachment_id = ?', params: [p.id] }]);
        refused.add(p.id);
        continue;
      }
      statements.push(completeStatement({ id: p.id, mediaType: p.mediaType, bytes: all }, nowIso));
      whole++;
    }
    await d.driver.batch(statements);
  }
  return { whole, refused: [...refused] };
}

/** Held turns at most (beyond, a turn from too far ahead is refused: a forged batch cannot fill the database). */
const MAX_HELD = 10_000;

/**
 * The batch as this replica's clock takes it (`bound`: its time plus the skew it allows). Turns stamped past it are
 * set aside as statements (held) and those held earlier whose time has come join the batch; a forget stamped past it
 * is taken as made when it arrives (its clock clamped to `now`): it removes what was written before it reached this
 * replica, not what others write in the time its sender's clock runs ahead; checkouts, pins and aliases past it are left out (they come again with every sync).
 */
async function bounded(d: SyncApplyDeps, batch: ReadBatch, bound: number, now: number, nowIso: string) {
  const { sync } = d;
  const due = await sync.due(bound, HELD_PER_BATCH);
  const key = (conversationId: string, id: string) => JSON.stringify([conversationId, id]);
  const inBatch = new Set(batch.turns.map((t) => key(t.conversationId, t.id)));
  const turns: IncomingTurn[] = [];
  const clock = { held: 0, clamped: 0, refused: 0, aheadMs: 0 };
  for (const h of due) {
    try {
      const t = await readTurn(JSON.parse(h.item) as unknown, 'held', d.maxMessageBytes);
      if (!inBatch.has(key(t.conversationId, t.id))) turns.push({ ...t, via: h.peer });
    } catch (error) {
      // Held under other limits than this replica has now (maxMessageBytes lowered since): let go, never blocking.
      if (!(error instanceof PagewiseError)) throw error;
      clock.refused++;
    }
  }
  const hold: Statement[] = [];
  let room = MAX_HELD - (await sync.held(now)).count;
  for (const t of batch.turns) {
    if (t.ord <= bound) {
      turns.push(t);
      continue;
    }
    clock.aheadMs = Math.max(clock.aheadMs, t.ord - now);
    // Stored here already (a copy of its writer), or forgotten here already: nothing to hold.
    if ((await sync.storedHashes(t.conversationId, [t.id])).has(t.id)) continue;
    if (forgottenHere(await sync.forgotten(t.conversationId, [t.id]), t)) continue;
    if (room-- <= 0) { clock.refused++; continue; }
    hold.push(sync.holdStatement(t.conversationId, t.id, t.ord, wireTurn(t), batch.from, nowIso));
    clock.held++;
  }
  const tombstones: SyncTombstone[] = [];
  for (const t of batch.tombstones) {
    if (t.ord <= bound) {
      tombstones.push(t);
      continue;
    }
    clock.aheadMs = Math.max(clock.aheadMs, t.ord - now);
    clock.clamped++;
    // Taken as made when it first arrived: sent again (a resync, another path), it keeps that clock.
    tombstones.push({ ...t, ord: (await sync.storedForgetOrd(t)) ?? now });
  }
  const isoBound = new Date(bound).toISOString();
  return {
    batch: {
      ...batch, turns, tombstones,
      heads: batch.heads.filter((h) => h.ord <= bound), pins: batch.pins.filter((p) => p.at <= isoBound), aliases: batch.aliases.filter((a) => a.createdAt <= isoBound),
    },
    hold, release: due.map((h) => h.rowid), clock: clock.held + clock.clamped + clock.refused > 0 ? clock : undefined,
  };
}

/** What the first slice of a batch leaves for the next ones: the batch as bounded, and what to write with its cursor. */
interface FirstSlice {
  applied: SyncApplied;
  batch: ReadBatch;
  /** Every turn the sender sent (held, stored already or not): each is one it holds, for a resync under way with it. */
  sent: ReadBatch['turns'];
  hold: Statement[];
  release: number[];
  changed: Set<string>;
  nowIso: string;
}

/**
 * A batch's first slice, in the engine's exclusive slot: tombstones, then the turns (TURN_SLICE per transaction), then
 * checkouts (see the top of this file). Pins, the cursor and aliases follow in slices of their own (applySync). A batch
 * of attachments' bytes is applied whole here (it moves no cursor): then the result is `{ done }`.
 */
async function applyFirst(d: SyncApplyDeps, read: ReadBatch): Promise<FirstSlice | { done: SyncApplied }> {
  const { driver, sync } = d;
  const me = await sync.replica();
  if (read.to !== me) throw new PagewiseError('INVALID_ARGUMENT', MODULE, `batch.to is ${describe(read.to)}, not this replica (${describe(me)}): the batch was read for another one; nothing was applied.`, { path: 'batch.to' });
  if (read.from === me) throw new PagewiseError('INVALID_ARGUMENT', MODULE, 'batch.from is this replica itself; a replica does not sync with itself.', { path: 'batch.from' });
  // A sender that has not read the forgets compacted here may hold what they covered: refused before anything is applied.
  await checkSender(sync, read.from, read.conversations, read.turns);
  const now = Date.now();
  const nowIso = new Date(now).toISOString();
  const applied: SyncApplied = { turns: 0, forgotten: 0, conversations: [], conflicts: [], pins: 0, aliases: 0 };
  // A batch of attachments' bytes (asked for by id) carries nothing else, and moves no cursor.
  if (read.pieces.length > 0) {
    const { whole, refused } = await applyPieces(d, read.pieces, nowIso);
    applied.attachments = whole;
    if (refused.length > 0) applied.refused = refused;
    return { done: await withMissing(d, applied, read.conversations) };
  }
  const { batch, hold, release, clock } = await bounded(d, read, Math.min(MAX_ORD, now + d.maxClockSkewMs), now, nowIso);
  if (clock) applied.clock = clock;
  const changed = new Set<string>();
  await applyTombstones(d, batch, applied, changed, nowIso);
  const tok = await d.tokenizer();
  const countKey = countCacheKey(tok);
  const heads = new Map(batch.heads.map((h) => [h.conversationId, { turnId: h.messageId, ord: h.ord, origin: h.origin, at: h.at }]));
  for (const [conversationId, turns] of groupBy(batch.turns, (t) => t.conversationId)) {
    const lacking = await fresh(d, conversationId, turns, applied.conflicts);
    if (lacking.length === 0) continue;
    // A transaction per TURN_SLICE turns, in the converged order, the event loop handed back between them (2,000
    // turns in one held it 0.9 s); the conversation's checkout with the last. A stop between them leaves turns
    // stored and the cursor not: the batch comes again and they are skipped.
    const parts = slices([...lacking].sort(compareKeys), TURN_SLICE);
    for (const [i, part] of parts.entries()) {
      if (i > 0) await yieldToEventLoop();
      const head = i === parts.length - 1 ? heads.get(conversationId) ?? null : null;
      await driver.batch((await place(d, batch.from, conversationId, part, head, countKey, (text) => tok.count(text), nowIso)).statements);
    }
    heads.delete(conversationId);
    applied.turns += lacking.length;
    changed.add(conversationId);
  }
  // Checkouts of conversations no turn of this batch came for: the later one is kept, and the positions follow it.
  for (const [conversationId, head] of heads) {
    if (!(await d.store.conversation(conversationId)) || !laterHead(head, await d.tree.register(conversationId))) continue;
    await driver.batch([d.tree.receivedHeadStatement(conversationId, head)]);
    await settlePath(d, conversationId);
    changed.add(conversationId);
  }
  return { applied, batch, sent: read.turns, hold, release, changed, nowIso };
}

/**
 * The batch's last slice: the cursor it reached, with the changes set aside and those released (a sync stopped
 * before the cursor sends this batch again, and what is stored already is skipped); then what was derived from the
 * changed conversations is scheduled again.
 */
async function applyLast(d: SyncApplyDeps, f: FirstSlice): Promise<void> {
  const { batch, nowIso } = f;
  // The last batch of every conversation: this replica has read all the peer's tombstones (see compactAfterRead).
  const settled = !batch.more && batch.conversations === null;
  // A resync with the sender under way: what it sent, it holds (no longer marked to go).
  const unmark = f.sent.length > 0 && (await d.sync.resyncingAny(batch.from)) ? [d.sync.unmarkStatement(batch.from, f.sent)] : [];
  await d.driver.batch([...f.hold, ...(f.release.length > 0 ? [d.sync.releaseStatement(f.release)] : []), d.sync.saveCursor(batch.from, batch.conversations, batch.cursor, nowIso),
    ...unmark, ...(settled ? [d.sync.settleAckStatement(batch.from)] : [])]);
  if (settled) await compactAfterRead(d.driver, d.sync, d.tombstoneRetentionDays);
  for (const conversationId of f.changed) {
    d.uncache(conversationId);
    if (!(await d.store.conversation(conversationId))) continue;
    await d.index.indexNew(conversationId, nowIso);
    d.rebuildLater(conversationId);
  }
}

/** The report with the attachments this replica's turns name whose bytes it still lacks (what the sync fetches next). */
async function withMissing(d: SyncApplyDeps, applied: SyncApplied, conversations: readonly string[] | null): Promise<SyncApplied> {
  const ids = await d.attachments.missing(conversations, MISSING_PER_ASK);
  if (ids.length === 0) return applied;
  return { ...applied, missing: await Promise.all(ids.map(async (id) => ({ id, from: await d.attachments.received(id) }))) };
}

export function syncApplyApi(d: SyncApplyDeps) {
  /** `fn` in the engine's exclusive slot, after handing the event loop back (another call may run between slices). */
  const slot = async <T>(fn: () => Promise<T>): Promise<T> => {
    await yieldToEventLoop();
    return await d.serial(fn);
  };
  return {
    /**
     * syncState is built here, with the read side's other calls: a resync lets go of turns, as forget removes them
     * (the removal and what is derived from the turns are this side's).
     */
    syncState: syncReadApi({
      driver: d.driver, sync: d.sync, tree: d.tree, attachments: d.attachments, serial: d.serial,
      resync: { start: (peer, filter, check) => resyncStart(d, peer, filter, check) },
    }).syncState,
    /**
     * Applies a batch a slice at a time: the batch is read and checked first (outside the engine's slot, handing the
     * event loop back as it goes), then tombstones and turns in one slot, pins and aliases a slice (MERGE_SLICE
     * states) per slot, and the cursor last — so a batch of any size holds the engine and the event loop for a slice
     * at a time, and every slice is a step of its own (a batch applied again changes nothing more).
     */
    applySync(raw: unknown): Promise<SyncApplied> {
      return (async () => {
        const read = await readBatch(raw, d.maxMessageBytes);
        // Vectors and summaries being made from a turn that a tombstone removes must land (or be refused) first.
        if (read.tombstones.length > 0) await d.settle();
        let first: FirstSlice | { done: SyncApplied };
        for (;;) {
          try {
            first = await d.serial(() => applyFirst(d, read));
            break;
          } catch (error) {
            if (error !== RETRY) throw error;
            await d.settle();
          }
        }
        if ('done' in first) return first.done;
        const f = first;
        if (!f.batch.more) {
          for (const part of slices(f.batch.pins)) {
            f.applied.pins += await slot(async () => {
              const merged = await mergePins(d, part);
              if (merged.statements.length > 0) await d.driver.batch(merged.statements);
              return merged.changed;
            });
          }
        }
        await slot(() => applyLast(d, f));
        if (!f.batch.more) for (const part of slices(f.batch.aliases)) f.applied.aliases += await slot(() => mergeAliases(d, part));
        // A resync's last batch: what the sender did not send again goes (vectors and summaries under way land first).
        if (!f.batch.more && (raw as { resync?: unknown }).resync === true && (await d.sync.resyncing(f.batch.from, f.batch.conversations))) {
          await d.settle();
          f.applied.resynced = await slot(() => resyncSweep(d, f.batch.from, f.batch.conversations));
        }
        f.applied.conversations = [...f.changed].sort();
        return await slot(() => withMissing(d, f.applied, f.batch.conversations));
      })();
    },
  };
}
