// A renewal after forgets were compacted: a device that takes a new id (a restored backup, a copied file, or one a
// token holder made renew) starts its cursors over, but not what it had read of each peer's forgets, nor what each
// peer had read of its own. Before, each side then judged the other new and behind: every later sync stopped with
// `report.resync.both` and nothing the device wrote left it again. Each case ends with everything written arriving.
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Memory } from '../../../src/index.js';
import type { SyncBatch } from '../../../src/contracts/types-sync.js';
import { contentHash } from '../../../src/common/messages.js';
import { SYNC_URL, deviceHarness, httpEdge, ids, replicaOf, say } from '../../support/sync-harness.js';

const { dir, memory, reopen } = deviceHarness('pagewise-renewal-');

/**
 * An edge behind syncEndpoint, a phone and a laptop on a file; the laptop forgets l1 and l2 and every side syncs until
 * the forgets are compacted on the laptop and the edge (their floors are past them).
 */
async function compacted(name: string) {
  const edgeMemory = await memory();
  const { handler, edge } = httpEdge(edgeMemory);
  const file = join(dir, `${name}.sqlite3`);
  const laptop = await memory(file);
  const phone = await memory();
  for (const id of ['p1', 'p2']) await say(phone, id);
  for (const id of ['l1', 'l2', 'l3']) await say(laptop, id);
  for (let i = 0; i < 2; i++) {
    await phone.sync(edge);
    await laptop.sync(edge);
  }
  await laptop.forget({ conversationId: 'c', messageIds: ['l1', 'l2'] });
  for (let i = 0; i < 3; i++) {
    await laptop.sync(edge);
    await phone.sync(edge);
  }
  return { edgeMemory, handler, edge, file, laptop, phone };
}

/**
 * b writes b3, b1 and b2 and forgets b2; the laptop hears of it from b and is backed up then (it holds b1, and never
 * met the edge); the edge forgets b1 and compacts the forget once b has read it. Resolves with the backup.
 */
async function backupBeforeTheEdgesForget(edge: Memory, b: Memory, laptop: Memory): Promise<Uint8Array> {
  for (const id of ['b3', 'b1', 'b2']) await say(b, id);
  for (let i = 0; i < 2; i++) await b.sync(edge);
  await b.forget({ conversationId: 'c', messageIds: ['b2'] });
  await laptop.sync(b);
  const backup = await laptop.exportDatabase();
  await edge.forget({ conversationId: 'c', messageIds: ['b1'] });
  for (let i = 0; i < 3; i++) await b.sync(edge);
  return backup;
}

const post = (handler: (r: Request) => Promise<Response>, method: string, args: unknown[]) =>
  handler(new Request(SYNC_URL, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ method, args }) }));

/** After the renewal: the laptop writes l4, the phone p3; both reach everyone, and nothing asks for a resync. */
async function flows(w: Awaited<ReturnType<typeof compacted>>, laptop: Memory, also: string[] = []): Promise<void> {
  await say(laptop, 'l4');
  await say(w.phone, 'p3');
  for (const m of [laptop, w.phone, laptop]) {
    const report = await m.sync(w.edge);
    expect(report.resync, JSON.stringify(report.resync)).toBeUndefined();
  }
  for (const m of [laptop, w.phone, w.edgeMemory]) expect(await ids(m)).toEqual(['l3', 'l4', 'p1', 'p2', 'p3', ...also].sort());
}

describe('a renewal after forgets were compacted', () => {
  it('the floors are past the forgets on the laptop and the edge (the premise)', async () => {
    const w = await compacted('premise');
    for (const m of [w.laptop, w.edgeMemory]) {
      const tombstones = (await m.syncChanges({ to: 'rsomeone', cursor: { turns: 0, tombstones: 0 }, resync: true })).tombstones;
      expect(tombstones.filter((t) => t.id === 'l1')).toEqual([]);
    }
    expect((await w.laptop.sync(w.edge)).resync).toBeUndefined();
  });

  it('a laptop restored from a backup: it renews, gets back what it synced after the backup, then syncs both ways', async () => {
    const w = await compacted('restored');
    const backup = await w.laptop.exportDatabase();
    await say(w.laptop, 'l9');
    await w.laptop.sync(w.edge);
    const laptop = await reopen(w.laptop, w.file, () => writeFileSync(w.file, backup));
    const report = await laptop.sync(w.edge);
    expect(report.resync).toBeUndefined();
    expect(report.renewed.map((r) => r.reason)).toEqual(['copy']);
    await flows(w, laptop, ['l9']);
  });

  it('a token holder names the laptop\'s id as left over HTTP: it renews once, and nothing stops', async () => {
    const w = await compacted('left');
    expect((await post(w.handler, 'syncState', ['rattacker', null, { left: [await replicaOf(w.laptop)] }])).status).toBe(200);
    const report = await w.laptop.sync(w.edge);
    expect(report.renewed.map((r) => r.reason)).toEqual(['copy']);
    expect(report.resync).toBeUndefined();
    await flows(w, w.laptop);
  });

  it('a token holder pushes a turn in the laptop\'s name: it renews once, and nothing stops', async () => {
    const w = await compacted('planted');
    const message = { id: 'planted', role: 'user' as const, content: 'planted', createdAt: new Date().toISOString() };
    const batch: SyncBatch = {
      format: 'pagewise-sync', version: 1, from: await replicaOf(w.laptop), to: await replicaOf(w.edgeMemory), conversations: null, cursor: { turns: 0, tombstones: 0 },
      more: false, tombstones: [], pins: [], aliases: [],
      turns: [{ conversationId: 'c', ...message, contentHash: await contentHash(message), origin: 'rplanter', ord: Date.now() }],
    };
    expect((await post(w.handler, 'applySync', [batch])).status).toBe(200);
    const report = await w.laptop.sync(w.edge);
    expect(report.renewed.map((r) => r.reason)).toEqual(['copy']);
    expect(report.resync).toBeUndefined();
    await w.edgeMemory.forget({ conversationId: 'c', messageIds: ['planted'] });
    await flows(w, w.laptop);
  });

  it('a token holder sets the edge\'s cursor of the laptop back to the start: the laptop still takes the edge for one that read its forgets', async () => {
    const w = await compacted('reset');
    const batch: SyncBatch = {
      format: 'pagewise-sync', version: 1, from: await replicaOf(w.laptop), to: await replicaOf(w.edgeMemory), conversations: null, cursor: { turns: 0, tombstones: 0 },
      more: false, tombstones: [], pins: [], aliases: [], turns: [],
    };
    expect((await post(w.handler, 'applySync', [batch])).status).toBe(200);
    const report = await w.laptop.sync(w.edge);
    expect(report.resync).toBeUndefined();
    await flows(w, w.laptop);
  });

  it('two copies of the laptop meet directly, then each syncs with the edge: both renew, and everything meets', async () => {
    const w = await compacted('copies');
    const laptop = await reopen(w.laptop, w.file, () => copyFileSync(w.file, join(dir, 'copies-2.sqlite3')));
    const copy = await memory(join(dir, 'copies-2.sqlite3'));
    expect((await laptop.sync(copy)).renewed.map((r) => r.reason)).toEqual(['same-id']);
    await say(copy, 'c1');
    for (const m of [laptop, copy]) {
      const report = await m.sync(w.edge);
      expect(report.resync, JSON.stringify(report)).toBeUndefined();
    }
    await say(laptop, 'l4');
    await say(w.phone, 'p3');
    for (const m of [laptop, copy, w.phone, laptop, copy]) {
      const report = await m.sync(w.edge);
      expect(report.resync, JSON.stringify(report)).toBeUndefined();
    }
    for (const m of [laptop, copy, w.phone, w.edgeMemory]) expect(await ids(m)).toEqual(['c1', 'l3', 'l4', 'p1', 'p2', 'p3']);
  });
});

// What a review of the proofs found: each case fails where a proof counted for more than it shows.
describe('what proves a read, and what does not', () => {
  it('a receipt naming the original\'s rows proves nothing to its copy, even where the forget it names is one both hold', async () => {
    const [edge, phone] = [await memory(), await memory()];
    const file = join(dir, 'pair.sqlite3');
    let laptop = await memory(file);
    for (const id of ['l1', 'l2', 'l3']) await say(laptop, id);
    await say(laptop, 'x1', 'x');
    for (const id of ['p1', 'p2']) await say(phone, id);
    for (let i = 0; i < 2; i++) {
      await laptop.sync(edge);
      await phone.sync(edge);
    }
    laptop = await reopen(laptop, file, () => copyFileSync(file, join(dir, 'pair-2.sqlite3')));
    const copy = await memory(join(dir, 'pair-2.sqlite3'));
    await phone.forget({ conversationId: 'c', messageIds: ['p1'] });
    await phone.sync(edge);
    // The original forgets l2, writes o1 and syncs: the phone's forget comes after its own in its rows.
    await laptop.forget({ conversationId: 'c', messageIds: ['l2'] });
    await say(laptop, 'o1');
    await laptop.sync(edge);
    // The copy forgets x1 and hears of the phone's forget from the phone: the same row, after another forget.
    await copy.forget({ conversationId: 'x', messageIds: ['x1'] });
    for (let i = 0; i < 3; i++) await copy.sync(phone, { conversations: ['c'] });
    for (let i = 0; i < 3; i++) for (const m of [copy, laptop, phone]) await m.sync(edge);
    for (const m of [copy, edge, laptop, phone]) expect(await ids(m, 'x')).toEqual([]);
    for (const m of [copy, edge, laptop, phone]) expect(await ids(m)).toEqual(['l1', 'l3', 'o1', 'p2']);
  });

  it('a laptop restored from before its first sync with the edge is not taken for the one that read the edge\'s forgets since', async () => {
    const [edge, b] = [await memory(), await memory()];
    const file = join(dir, 'early.sqlite3');
    let laptop = await memory(file);
    const backup = await backupBeforeTheEdgesForget(edge, b, laptop);
    // The laptop meets the edge: it resyncs, and lets b1 go.
    expect((await laptop.sync(edge)).resync).toBeDefined();
    await laptop.sync(edge, { resync: true });
    laptop = await reopen(laptop, file, () => writeFileSync(file, backup));
    // The backup still holds b1, and shows the edge no proof it read its forget: it is told to resync.
    expect((await laptop.sync(edge)).resync).toMatchObject({ replica: await replicaOf(laptop) });
    await b.sync(edge);
    expect(await ids(edge)).toEqual(['b3']);
    expect(await ids(b)).toEqual(['b3']);
  });

  it('after the edge renewed, a laptop restored from before it read the edge\'s forget is not vouched for by what it proved then', async () => {
    const edgeFile = join(dir, 'edge.sqlite3');
    let edge = await memory(edgeFile);
    const b = await memory();
    const file = join(dir, 'early-2.sqlite3');
    let laptop = await memory(file);
    const backup = await backupBeforeTheEdgesForget(edge, b, laptop);
    await laptop.sync(edge, { resync: true });
    expect((await laptop.sync(edge)).resync).toBeUndefined();
    // The edge meets an old copy of its file and renews; then the laptop's disk goes back to the backup.
    edge = await reopen(edge, edgeFile, () => copyFileSync(edgeFile, join(dir, 'edge-2.sqlite3')));
    expect((await edge.sync(await memory(join(dir, 'edge-2.sqlite3')))).renewed.map((r) => r.reason)).toEqual(['same-id']);
    laptop = await reopen(laptop, file, () => writeFileSync(file, backup));
    expect((await laptop.sync(edge)).resync).toMatchObject({ replica: await replicaOf(laptop) });
    await b.sync(edge);
    expect(await ids(edge)).toEqual(['b3']);
    expect(await ids(b)).toEqual(['b3']);
  });

  it('a receipt the laptop gave for one conversation, stored as the edge\'s cursor of all of them: the next syncs go on', async () => {
    const edgeMemory = await memory();
    const { handler, edge } = httpEdge(edgeMemory);
    const [laptop, phone] = [await memory(), await memory()];
    for (const id of ['p1', 'p2']) await say(phone, id);
    for (const id of ['l1', 'l2', 'l3']) await say(laptop, id);
    for (let i = 0; i < 2; i++) for (const m of [phone, laptop]) await m.sync(edge);
    await laptop.sync(edge, { conversations: ['c'] });
    await laptop.forget({ conversationId: 'c', messageIds: ['l1', 'l2'] });
    for (let i = 0; i < 3; i++) for (const m of [laptop, phone]) await m.sync(edge);
    const [laptopId, edgeId] = [await replicaOf(laptop), await replicaOf(edgeMemory)];
    const stolen = (await edgeMemory.syncState(laptopId, ['c'])).cursor;
    expect(stolen.receipt).toBeTruthy();
    const forged: SyncBatch = { format: 'pagewise-sync', version: 1, from: laptopId, to: edgeId, conversations: null, cursor: stolen, more: false, tombstones: [], turns: [], pins: [], aliases: [] };
    expect((await post(handler, 'applySync', [forged])).status).toBe(200);
    await say(laptop, 'l4');
    for (let i = 0; i < 2; i++) expect((await laptop.sync(edge)).resync).toBeUndefined();
    expect(await ids(edgeMemory)).toEqual(['l3', 'l4', 'p1', 'p2']);
  });

  it('a restored laptop that tells the edge it is a twin: the edge, renewing in that call, does not vouch for the laptop\'s lost reads', async () => {
    const edgeFile = join(dir, 'edge-3.sqlite3');
    let edge = await memory(edgeFile);
    const b = await memory();
    const file = join(dir, 'early-3.sqlite3');
    let laptop = await memory(file);
    const backup = await backupBeforeTheEdgesForget(edge, b, laptop);
    await laptop.sync(edge, { resync: true });
    expect((await laptop.sync(edge)).resync).toBeUndefined();
    // A copy of the edge's file meets it and leaves their id; the restored laptop hears of it from the copy.
    edge = await reopen(edge, edgeFile, () => copyFileSync(edgeFile, join(dir, 'edge-4.sqlite3')));
    const copy = await memory(join(dir, 'edge-4.sqlite3'));
    await copy.sync(edge);
    laptop = await reopen(laptop, file, () => writeFileSync(file, backup));
    await laptop.sync(copy);
    expect((await laptop.sync(edge)).resync).toMatchObject({ replica: await replicaOf(laptop) });
    await b.sync(edge);
    expect(await ids(edge)).toEqual(['b3']);
    expect(await ids(b)).toEqual(['b3']);
  });

  it('a laptop restored from a backup does not bring back its own turn it forgot after the backup, once that forget was compacted', async () => {
    const edgeMemory = await memory();
    const { edge } = httpEdge(edgeMemory);
    const file = join(dir, 'own.sqlite3');
    let laptop = await memory(file);
    const phone = await memory();
    for (const id of ['p1', 'p2']) await say(phone, id);
    for (const id of ['l1', 'l2', 'l3']) await say(laptop, id);
    for (let i = 0; i < 2; i++) for (const m of [phone, laptop]) await m.sync(edge);
    const backup = await laptop.exportDatabase();
    await laptop.forget({ conversationId: 'c', messageIds: ['l1', 'l2'] });
    for (let i = 0; i < 3; i++) for (const m of [laptop, phone]) await m.sync(edge);
    // The premise: the edge compacted l1's forget (it keeps only its last tombstone, l2's).
    const kept = (await edgeMemory.syncChanges({ to: 'rsomeone', cursor: { turns: 0, tombstones: 0 }, resync: true })).tombstones;
    expect(kept.map((t) => t.id)).toEqual(['l2']);
    await say(laptop, 'l9');
    await laptop.sync(edge);
    laptop = await reopen(laptop, file, () => writeFileSync(file, backup));
    if ((await laptop.sync(edge)).resync) await laptop.sync(edge, { resync: true });
    for (let i = 0; i < 2; i++) for (const m of [laptop, phone]) await m.sync(edge);
    // l1's forget is written again where its copy arrived: every replica lets it go, the laptop too.
    for (const m of [edgeMemory, phone, laptop]) expect(await ids(m)).toEqual(['l3', 'l9', 'p1', 'p2']);
  });
});
