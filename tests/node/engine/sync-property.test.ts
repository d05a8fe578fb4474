// Sync (issue 28) as a property, on devices that fail as real ones do: random interleavings of writes (some private),
// forgets of a conversation or of one message, pins and unpins, and syncs (some in batches of one or two turns), mixed
// with faulty devices — a disk restored from an older backup, a database file copied to a new device (both go on
// writing), a clock a year or two hours ahead or two hours behind, a forged cursor, batches applied out of order and
// twice, pins and aliases in bulk. Replicas: two Node memories, each on its own database file, their copies, and a
// Durable Object (scope 'user') in real workerd reached over plain JSON. The model (sync-faults.ts) follows every
// operation and each replica is checked against it after every step: which turns it stores (turns a restore took from
// the only disk that held them are lost, nothing else is) and how many it holds aside (stamped too far ahead of its
// clock: absent there, present on their writer; a forget so stamped is taken as made when it arrives). At the end,
// after a ring of syncs twice: the turns every replica stores are on each path in the same order with the same
// content; pins and aliases as the model merged them; a turn sorts after every turn its writer held then; each file
// holds the text of what its replica stores or holds aside and of nothing else; syncing once more moves nothing.
import fc from 'fast-check';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StoredTurn } from '../../../src/contracts/types.js';
import type { ExportData } from '../../../src/contracts/types-data.js';
import { runSync } from '../../../src/common/sync.js';
import type { SyncApplied, SyncBatch, SyncPeer, SyncReport, SyncState } from '../../../src/contracts/types-sync.js';
import { BULK_C, DO, HOUR, Model, Replicas, YEAR, after, forgetConversation, forgetMessage, settleClamps, writeTurns } from '../../support/sync-faults.js';

const SEED = Number(process.env.PAGEWISE_SYNC_SEED ?? 20260728);
const RUNS = 25;
const MAX_OPS = 14;
/** Turns of the bulk write (one a run) and pins of a bulk pin; aliases are named from a pool of ALIAS_POOL. */
const BULK = 200;
const ALIAS_POOL = 60;
/** Two files, the Durable Object, and up to two copies of a file. */
const MAX_REPLICAS = 5;
/** What forgets pick from; BULK_C (bulk pins, per-conversation aliases) is never forgotten. */
const CONVERSATIONS = ['c1', 'c2', 'c3'] as const;
const ALL = [...CONVERSATIONS, BULK_C];

// ---- workerd: the test Worker bundled as one ES module, as tests/node/edge/edge.test.ts does ----

let mf: Miniflare;
const dir = mkdtempSync(join(tmpdir(), 'pagewise-sync-prop-'));

beforeAll(async () => {
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, '../../support/edge/sync-worker.ts')], bundle: true, format: 'esm', platform: 'neutral',
    target: 'es2022', write: false, external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
  });
  const script = join(dir, 'worker.mjs');
  writeFileSync(script, out.outputFiles[0]!.text);
  mf = new Miniflare({
    modulesRoot: dir, modules: [{ type: 'ESModule', path: script, contents: readFileSync(script, 'utf8') }], compatibilityDate: '2025-09-01',
    durableObjects: { SYNC_MEMORY: { className: 'SyncMemory', useSQLite: true } },
  });
  await mf.ready;
}, 120_000);

afterAll(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** A method of the object `name`, over the test Worker's route: its value, or its error thrown with its code. */
async function callObject<T>(name: string, method: string, args: unknown[]): Promise<T> {
  const response = await mf.dispatchFetch(`http://sync.test/call/${encodeURIComponent(name)}/${method}`, { method: 'POST', body: JSON.stringify(args) });
  const outcome = await response.json() as { value?: unknown; error?: { code?: string; message?: string } };
  if (outcome.error) throw Object.assign(new Error(`${method}: ${outcome.error.code}: ${outcome.error.message}`), { code: outcome.error.code });
  return outcome.value as T;
}

// ---- Operations (replica numbers are taken modulo the replicas there are; a moved clock, a backup, a restore and a copy
// apply to the file replicas, numbered among themselves) ----

type Op =
  | { kind: 'write'; r: number; c: string; private: boolean[]; skew?: number }
  | { kind: 'forgetConversation'; r: number; pick: number; skew?: number }
  | { kind: 'forgetMessage'; r: number; pick: number }
  | { kind: 'pin'; r: number; pick: number; pinned: boolean }
  | { kind: 'sync'; i: number; j: number; batchTurns?: number }
  | { kind: 'backup' | 'restore' | 'clone'; r: number }
  | { kind: 'forge'; r: number; from: number }
  | { kind: 'shuffle'; i: number; j: number; batchTurns: number }
  | { kind: 'bulk'; r: number; pinned: boolean; aliases: number; removals: number; offset: number; scoped: boolean };

const replica = fc.nat(4);
// Mostly c1, so that replicas often write to one conversation concurrently (and to one forgotten elsewhere).
const conversation = fc.oneof({ weight: 3, arbitrary: fc.constant('c1') }, { weight: 1, arbitrary: fc.constantFrom('c2', 'c3') });
const pick = fc.nat(1000);
const privacy = fc.array(fc.nat(3).map((n) => n === 0), { minLength: 1, maxLength: 3 });
const shareable = fc.array(fc.constant(false), { minLength: 1, maxLength: 3 });
const skew = fc.constantFrom(YEAR, 2 * HOUR, -2 * HOUR);
// Two replicas apart among the first three (with copies there, they may meet: then the sync is left out).
const pair = fc.tuple(replica, replica).filter(([i, j]) => i % 3 !== j % 3);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('write' as const), r: replica, c: conversation, private: privacy }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('forgetConversation' as const), r: replica, pick }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('forgetMessage' as const), r: replica, pick }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('pin' as const), r: replica, pick, pinned: fc.boolean() }) },
  // Sometimes in batches of one or two turns: a tombstone, the turns and the pins then travel in different batches.
  { weight: 7, arbitrary: fc.tuple(pair, fc.constantFrom(undefined, undefined, 1, 2))
    .map(([[i, j], batchTurns]) => (batchTurns === undefined ? { kind: 'sync' as const, i, j } : { kind: 'sync' as const, i, j, batchTurns })) },
  // Faulty devices. A clock ahead leaves its conversation keyed ahead on its writer (later turns there follow the key).
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('write' as const), r: replica, c: conversation, private: shareable, skew }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('forgetConversation' as const), r: replica, pick, skew }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('backup' as const), r: replica }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('restore' as const), r: replica }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('clone' as const), r: replica }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('forge' as const), r: replica, from: replica }) },
  { weight: 2, arbitrary: fc.tuple(pair, fc.constantFrom(1, 2)).map(([[i, j], batchTurns]) => ({ kind: 'shuffle' as const, i, j, batchTurns })) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bulk' as const), r: replica, pinned: fc.boolean(), aliases: fc.nat(60), removals: fc.nat(20), offset: fc.nat(59), scoped: fc.boolean() }) },
);

/** Batches of one or two turns, or of 50 or 100 once the bulk turns are written (200 one-turn batches are slow). */
const batchTurns = (model: Model, n: number) => (model.turns.size < 100 ? n : n * 50);

/** One operation, then the model follows; `stamp`: the time of the last pin or alias (the next comes later by the clock). */
async function apply(reps: Replicas, model: Model, o: Op, stamp: { ms: number }): Promise<void> {
  const files = reps.fileReplicas();
  const at = (r: number, file?: unknown) => (file ? files[r % files.length]! : r % reps.count);
  switch (o.kind) {
    case 'write':
      return writeTurns(reps, model, at(o.r, o.skew), o.c, o.private, o.skew);
    case 'forgetConversation': {
      const r = at(o.r, o.skew);
      const held = CONVERSATIONS.filter((c) => model.heldIn(r, c).length > 0);
      if (held.length > 0) await forgetConversation(reps, model, r, held[o.pick % held.length]!, o.skew);
      return;
    }
    case 'forgetMessage': {
      const held = model.heldAll(at(o.r), BULK_C);
      if (held.length > 0) await forgetMessage(reps, model, at(o.r), held[o.pick % held.length]!);
      return;
    }
    case 'pin': {
      const held = model.heldAll(at(o.r));
      if (held.length > 0) await pin(reps, model, at(o.r), [held[o.pick % held.length]!], o.pinned, stamp);
      return;
    }
    case 'sync':
      if (at(o.i) !== at(o.j)) await sync(reps, model, at(o.i), at(o.j), o.batchTurns && batchTurns(model, o.batchTurns));
      return;
    case 'backup':
      return void reps.backups.set(at(o.r, true), { bytes: await reps.memory(at(o.r, true)).exportDatabase(), state: model.backup(at(o.r, true)) });
    case 'restore':
      await reps.reopen(at(o.r, true), reps.backups.get(at(o.r, true))!.bytes);
      return model.restore(at(o.r, true), reps.backups.get(at(o.r, true))!.state);
    case 'clone': {
      if (reps.count >= MAX_REPLICAS) return;
      const k = await reps.clone(at(o.r, true));
      expect(model.clone(at(o.r, true))).toBe(k);
      reps.backups.set(k, { bytes: await reps.memory(k).exportDatabase(), state: model.backup(k) });
      return;
    }
    case 'forge':
      if (at(o.r) !== at(o.from)) await forge(reps, at(o.r), at(o.from));
      return;
    case 'shuffle': {
      const [i, j] = [at(o.i), at(o.j)];
      if (i === j) return;
      model.sync(i, j);
      await runSync(reps.peer(i), shuffled(reps.peer(j)), { batchTurns: batchTurns(model, o.batchTurns) });
      await settleClamps(reps, model);
      return void await sync(reps, model, i, j);
    }
    case 'bulk':
      await bulk(reps, model, at(o.r, true), o, stamp);
  }
}

/** `i.sync(j)` (run by j when i is the Durable Object), the model's too; forgets it took as made now read back. */
async function sync(reps: Replicas, model: Model, i: number, j: number, batchTurns?: number): Promise<SyncReport> {
  const [aside, clamped] = [i === DO ? model.sync(j, i) : model.sync(i, j), model.pending.length];
  const report = await reps.sync(i, j, batchTurns);
  await settleClamps(reps, model);
  // What the model newly holds aside or clamps arrived in this sync, stamped past the receiver's clock and its skew.
  if (aside > 0) expect(report.clock.held, `${i}↔${j}: turns held aside`).toBeGreaterThan(0);
  if (clamped > 0) expect(report.clock.clamped, `${i}↔${j}: forgets from a clock ahead`).toBeGreaterThan(0);
  return report;
}

// ---- Faulty devices (besides a moved clock: sync-faults.ts) ----

/** `peer` receiving each batch after the one that follows it, then every batch again, the last first. */
function shuffled(peer: SyncPeer): SyncPeer {
  const seen: SyncBatch[] = [];
  let waiting: SyncBatch | null = null;
  return {
    syncState: (...args) => peer.syncState(...args),
    syncChanges: (request) => peer.syncChanges(request),
    async applySync(batch) {
      if (batch.more && waiting === null) {
        waiting = batch;
        return { turns: 0, forgotten: 0, conversations: [], conflicts: [], pins: 0, aliases: 0 } satisfies SyncApplied;
      }
      const applied = await peer.applySync(batch);
      seen.push(batch, ...(waiting ? [waiting] : []));
      if (waiting) await peer.applySync(waiting);
      waiting = null;
      if (!batch.more) for (const b of seen.reverse()) await peer.applySync(b);
      return applied;
    },
  };
}

/** An empty batch "from" replica s that says replica r has read it up to a billion, with no receipt. */
async function forge(reps: Replicas, r: number, s: number): Promise<void> {
  const to = (await reps.on<SyncState>(r, 'syncState', '')).replica;
  const from = (await reps.on<SyncState>(s, 'syncState', '')).replica;
  // A copy that has not found itself out yet has its original's id: a batch from itself is refused.
  if (to !== from) await reps.on(r, 'applySync', { format: 'pagewise-sync', version: 1, from, to, conversations: null, cursor: { turns: 1e9, tombstones: 1e9 }, more: false, tombstones: [], turns: [], pins: [], aliases: [] });
}

/** Pins or unpins on replica r, one after another, after the last pin or alias by the clock. */
async function pin(reps: Replicas, model: Model, r: number, ids: readonly string[], pinned: boolean, stamp: { ms: number }): Promise<void> {
  await after(stamp.ms);
  for (const id of ids) {
    model.pin(r, id, pinned);
    await reps.on(r, pinned ? 'pin' : 'unpin', model.turns.get(id)!.c, id);
  }
  stamp.ms = Date.now();
}

/** Up to BULK pins (or unpins) at once on a file replica, then aliases removed and added there, global or of BULK_C. */
async function bulk(reps: Replicas, model: Model, r: number, o: Extract<Op, { kind: 'bulk' }>, stamp: { ms: number }): Promise<void> {
  // One bulk write a run: a replica without it gets it from one that has it.
  const holder = model.replicas.findIndex((_, k) => model.exists(k, BULK_C));
  if (holder < 0) await writeTurns(reps, model, r, BULK_C, Array.from({ length: BULK }, () => false));
  else if (!model.exists(r, BULK_C)) await sync(reps, model, r, holder);
  await pin(reps, model, r, model.heldIn(r, BULK_C).slice(0, BULK), o.pinned, stamp);
  const scope = o.scoped ? BULK_C : null;
  const options = o.scoped ? { conversationId: BULK_C } : undefined;
  const m = reps.memory(r);
  for (const alias of model.aliasesIn(r, scope).slice(0, o.removals)) {
    model.alias(r, scope, alias, null);
    await m.aliases.remove(alias, options);
  }
  // Aliases and tags never share a spelling: no alias reads through another, none makes a loop.
  for (let k = 0; k < o.aliases; k++) {
    const [alias, tag] = [`ali${(o.offset + k) % ALIAS_POOL}`, `topic${(o.offset + 3 * k) % 7}`];
    model.alias(r, scope, alias, tag);
    await m.aliases.add(alias, tag, options);
  }
  stamp.ms = Date.now();
}

// ---- Checks ----

/** A conversation's list, or none where it is not stored. */
const orNone = <T>(list: Promise<T[]>): Promise<T[]> => list.catch((e: { code?: string }) => (e.code === 'CONVERSATION_NOT_FOUND' ? [] : Promise.reject(e)));
const turnsOf = (reps: Replicas, r: number, c: string) => orNone(reps.on<StoredTurn[]>(r, 'turns', c, { limit: 1000 }));

/**
 * Every replica stores what the model says, per conversation (every branch: a forget of the message a conversation is
 * at writes a checkout that may leave another replica's turns off the current path, still stored), and holds aside as
 * many turns. Ids as sets: the order is checked at the end.
 */
async function checkHeld(reps: Replicas, model: Model, where: string): Promise<void> {
  // The replicas at once (workerd is a process of its own).
  const found = await Promise.all(Array.from({ length: reps.count }, async (_, r) => ({
    data: await reps.on<ExportData>(r, 'export'),
    held: (await reps.on<SyncState>(r, 'syncState', '')).held ?? 0,
  })));
  for (const [r, { data, held }] of found.entries()) {
    for (const c of ALL) {
      const ids = (data.conversations.find((x) => x.id === c)?.turns ?? []).map((t) => t.id).sort();
      expect(ids, `${where}: replica ${r}, conversation ${c}`).toEqual([...model.heldIn(r, c)].sort());
    }
    expect(held, `${where}: changes replica ${r} holds aside`).toBe(model.asideCount(r));
  }
}

const ring = (n: number): [number, number][] => Array.from({ length: n }, (_, k) => [k, (k + 1) % n]);
/** What a turn is, wherever it is stored (seq is each replica's own position). */
const shared = (t: StoredTurn) => ({ id: t.id, role: t.role, content: t.content, name: t.name, createdAt: t.createdAt, text: t.text, contentHash: t.contentHash });

/** Each conversation after the rings: the same turns in the same order wherever they are held, pins as the model merged them. */
async function checkConverged(reps: Replicas, model: Model): Promise<void> {
  const replicas = Array.from({ length: reps.count }, (_, r) => r);
  for (const c of ALL) {
    const lists = await Promise.all(replicas.map((r) => turnsOf(reps, r, c)));
    // The shareable turns every replica stores (not those held aside somewhere): the same, in the same order, on each path.
    const everywhere = new Set(model.heldIn(0, c).filter((id) => !model.turns.get(id)!.private && replicas.every((r) => model.replicas[r]!.held.has(id))));
    const sharedLists = lists.map((l) => l.filter((t) => everywhere.has(t.id)).map(shared));
    for (const r of replicas) expect(sharedLists[r], `conversation ${c}: replica ${r}'s turns against replica 0's`).toEqual(sharedLists[0]);
    for (const r of replicas) {
      const list = lists[r]!;
      expect(list.filter((t) => (t.private === true) !== model.turns.get(t.id)!.private).map((t) => t.id), `conversation ${c}: turns on replica ${r} stored with another privacy`).toEqual([]);
      // A turn sorts after every turn its writer held when it was written (a hybrid logical clock per conversation).
      const at = new Map(list.map((t, k) => [t.id, k]));
      const misplaced = list.flatMap((t, k) => model.turns.get(t.id)!.before.filter((u) => (at.get(u) ?? -1) > k).map((u) => `${u} (held when ${t.id} was written) sorts after it`));
      expect(misplaced, `conversation ${c} on replica ${r}`).toEqual([]);
      // Nothing a forget it knows covers.
      expect(list.filter((t) => model.covered(r, t.id)).map((t) => t.id), `forgotten turns of ${c} on replica ${r}`).toEqual([]);
    }
    const pinLists = await Promise.all(replicas.map((r) => orNone(reps.on<string[]>(r, 'pins', c))));
    for (const r of replicas) {
      expect([...pinLists[r]!].sort(), `pins of ${c} on replica ${r}`).toEqual(model.pinnedIn(r, c));
      // In order: every replica ends with the same pin times, so lists them oldest first alike.
      expect(pinLists[r]!.filter((id) => everywhere.has(id)), `pins of ${c}'s turns held everywhere, on replica ${r} against replica 0's`)
        .toEqual(pinLists[0]!.filter((id) => everywhere.has(id)));
    }
  }
  // Manual aliases and their removals, as each replica would send them, as the model merged them; those replica 0
  // holds too with the same time there.
  const first = new Map<string, string>();
  for (const r of replicas) {
    const batch = await reps.on<SyncBatch>(r, 'syncChanges', { to: 'rmodel', cursor: { turns: 0, tombstones: 0 }, maxTurns: 2000 });
    const states = batch.aliases.map((a) => `${a.conversationId ?? ''}/${a.alias} → ${a.removed ? '(removed)' : a.tag}`);
    expect([...states].sort(), `aliases on replica ${r}`).toEqual(model.aliasStates(r));
    const timed = batch.aliases.map((a, k) => [`${a.conversationId ?? ''}/${a.alias}`, `${states[k]} at ${a.createdAt}`] as const);
    if (r === 0) for (const [key, t] of timed) first.set(key, t);
    const both = timed.filter(([key]) => first.has(key));
    expect(both.map(([, t]) => t), `aliases on replica ${r} with their times against replica 0's`).toEqual(both.map(([key]) => first.get(key)));
  }
}

/** The files: the text of every turn a file's replica holds or holds aside is in it (the control), and of no other turn. */
function checkFiles(reps: Replicas, model: Model): void {
  for (const r of reps.fileReplicas()) {
    const file = reps.files[r]!;
    const bytes = readFileSync(file).toString('latin1').toLowerCase();
    const found = new Set(bytes.match(/quz[0-9a-z]{4}vox/g) ?? []);
    expect([...model.turns.values()].filter((t) => found.has(t.marker)).map((t) => t.id).sort(), `turns whose text is in replica ${r}'s file`)
      .toEqual([...model.replicas[r]!.held, ...model.replicas[r]!.aside].sort());
    expect(existsSync(`${file}-journal`), `replica ${r}'s journal after close`).toBe(false);
  }
}

let runs = 0;

async function runCase(ops: readonly Op[]): Promise<void> {
  const reps = new Replicas(dir, ++runs, callObject);
  const model = new Model();
  try {
    await reps.open(model);
    const stamp = { ms: 0 };
    for (const [k, o] of ops.entries()) {
      await apply(reps, model, o, stamp);
      await checkHeld(reps, model, `after step ${k} (${JSON.stringify(o)})`);
    }
    // Until quiet: a ring of syncs, twice (real clocks: what is held aside a year or two hours ahead stays aside).
    for (const [i, j] of [...ring(reps.count), ...ring(reps.count)]) await sync(reps, model, i, j);
    await checkHeld(reps, model, 'after the rings');
    // Once more: nothing moves.
    for (const [i, j] of ring(reps.count)) {
      const report = await reps.sync(i, j);
      expect({ pushed: report.pushed, pulled: report.pulled, forgotten: report.forgotten, pins: report.pins, aliases: report.aliases, conflicts: report.conflicts, renewed: report.renewed }, `a third ring, ${i}↔${j}`)
        .toEqual({ pushed: 0, pulled: 0, forgotten: 0, pins: 0, aliases: 0, conflicts: [], renewed: [] });
    }
    await checkConverged(reps, model);
    await reps.close();
    checkFiles(reps, model);
  } catch (e) {
    const lost = model.lost.size > 0 ? `\n  lost with a restored disk: ${[...model.lost].join(' ')}` : '';
    (e as Error).message = `${(e as Error).message}\n  operations:\n  ${ops.map((o) => JSON.stringify(o)).join('\n  ')}${lost}`;
    throw e;
  } finally {
    vi.useRealTimers();
    await reps.close(true);
  }
}

/**
 * Sequences every run starts with (random ones are rare to hit them): a conversation forgotten where it was received,
 * pushed to the Durable Object and pulled from it; two replicas forgetting one conversation without hearing of each
 * other, writing before and after; a message forgotten on the Durable Object; a private turn beside a pin. Then the
 * faulty devices: a disk restored from a backup (what was synced comes back, the rest is lost); a file copied to a new
 * device, both writing and forgetting; a clock a year ahead (its turn held aside everywhere else, the later forget of
 * its conversation there taken as made where it arrives; turns written elsewhere before that forget never reach it)
 * and a forget two hours ahead; a clock two hours behind (its turn counts as written before a forget it never heard
 * of); a forged cursor before a forget; batches out of order and twice across a forget; pins and aliases in bulk.
 */
const EXAMPLES: Op[][] = [
  [{ kind: 'write', r: 0, c: 'c1', private: [false, false] }, { kind: 'sync', i: 1, j: 0 }, { kind: 'forgetConversation', r: 1, pick: 0 }, { kind: 'sync', i: 0, j: 1 }],
  [{ kind: 'write', r: 0, c: 'c1', private: [false] }, { kind: 'sync', i: 2, j: 0 }, { kind: 'forgetConversation', r: 0, pick: 0 }, { kind: 'sync', i: 0, j: 2 }, { kind: 'sync', i: 1, j: 2 }],
  [{ kind: 'write', r: 0, c: 'c1', private: [false] }, { kind: 'sync', i: 1, j: 0 }, { kind: 'forgetConversation', r: 0, pick: 0 }, { kind: 'write', r: 0, c: 'c1', private: [false] },
    { kind: 'write', r: 1, c: 'c1', private: [false] }, { kind: 'forgetConversation', r: 1, pick: 0 }, { kind: 'write', r: 1, c: 'c1', private: [false] }, { kind: 'sync', i: 0, j: 1 }, { kind: 'sync', i: 2, j: 1 }],
  [{ kind: 'write', r: 0, c: 'c2', private: [false, false, true] }, { kind: 'sync', i: 2, j: 0, batchTurns: 1 }, { kind: 'forgetMessage', r: 2, pick: 0 }, { kind: 'pin', r: 0, pick: 2, pinned: true }, { kind: 'sync', i: 0, j: 2 }],
  [{ kind: 'write', r: 0, c: 'c1', private: [false] }, { kind: 'backup', r: 0 }, { kind: 'write', r: 0, c: 'c1', private: [false, true] }, { kind: 'sync', i: 1, j: 0 },
    { kind: 'write', r: 0, c: 'c2', private: [false] }, { kind: 'pin', r: 0, pick: 0, pinned: true }, { kind: 'restore', r: 0 }, { kind: 'write', r: 0, c: 'c1', private: [false] }, { kind: 'sync', i: 0, j: 2 }, { kind: 'sync', i: 0, j: 1 }],
  [{ kind: 'write', r: 0, c: 'c1', private: [false, true] }, { kind: 'sync', i: 0, j: 2 }, { kind: 'clone', r: 0 }, { kind: 'write', r: 0, c: 'c1', private: [false] }, { kind: 'write', r: 3, c: 'c1', private: [false] },
    { kind: 'sync', i: 2, j: 0 }, { kind: 'forgetMessage', r: 3, pick: 0 }, { kind: 'sync', i: 3, j: 2 }, { kind: 'sync', i: 3, j: 0 }],
  [{ kind: 'write', r: 0, c: 'c1', private: [false] }, { kind: 'sync', i: 0, j: 1 }, { kind: 'write', r: 1, c: 'c1', private: [false], skew: YEAR }, { kind: 'sync', i: 1, j: 2 },
    { kind: 'forgetConversation', r: 1, pick: 0 }, { kind: 'write', r: 0, c: 'c1', private: [false] }, { kind: 'sync', i: 1, j: 2 }, { kind: 'sync', i: 0, j: 1 },
    { kind: 'write', r: 2, c: 'c2', private: [false] }, { kind: 'forgetConversation', r: 2, pick: 0, skew: 2 * HOUR }, { kind: 'sync', i: 0, j: 2 }],
  [{ kind: 'write', r: 0, c: 'c1', private: [false] }, { kind: 'sync', i: 0, j: 1 }, { kind: 'forgetConversation', r: 1, pick: 0 }, { kind: 'write', r: 0, c: 'c1', private: [false], skew: -2 * HOUR },
    { kind: 'write', r: 0, c: 'c2', private: [false], skew: -2 * HOUR }, { kind: 'sync', i: 0, j: 1 }],
  [{ kind: 'write', r: 0, c: 'c1', private: [false, false] }, { kind: 'sync', i: 0, j: 2 }, { kind: 'forge', r: 2, from: 0 }, { kind: 'forgetMessage', r: 0, pick: 0 }, { kind: 'write', r: 0, c: 'c1', private: [false] }, { kind: 'sync', i: 0, j: 2 }],
  [{ kind: 'write', r: 0, c: 'c1', private: [false, false, false] }, { kind: 'write', r: 0, c: 'c2', private: [false, false] }, { kind: 'sync', i: 0, j: 1 }, { kind: 'forgetConversation', r: 1, pick: 1 },
    { kind: 'write', r: 1, c: 'c1', private: [false] }, { kind: 'shuffle', i: 1, j: 2, batchTurns: 1 }, { kind: 'shuffle', i: 2, j: 0, batchTurns: 1 }],
  [{ kind: 'bulk', r: 0, pinned: true, aliases: 50, removals: 0, offset: 0, scoped: false }, { kind: 'bulk', r: 1, pinned: true, aliases: 20, removals: 0, offset: 30, scoped: true }, { kind: 'sync', i: 0, j: 2 },
    { kind: 'bulk', r: 0, pinned: false, aliases: 10, removals: 5, offset: 10, scoped: false }, { kind: 'sync', i: 1, j: 2 }],
];

describe('sync across Node files, their copies and a Durable Object, on faulty devices: random interleavings', () => {
  it('loses only what a restored disk alone held, holds aside what is stamped ahead, and converges with a quiet sync after', async () => {
    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: MAX_OPS, size: 'max' }), runCase), {
      seed: SEED, numRuns: RUNS, examples: EXAMPLES.map((ops): [Op[]] => [ops]),
      // Passing takes about 25 s on an idle two-core machine; a failure's shrinking stops here (the shrunk-so-far case is reported).
      interruptAfterTimeLimit: 120_000, markInterruptAsFailure: true,
    });
  }, 300_000);
});
