// Sync tombstones compacted once every peer has read them, and a peer that comes back after that told to resync:
// forgotten turns never come back, and the peer's own turns are not lost.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { remoteMemory, syncEndpoint, type Memory } from '../../../src/index.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import { createMemory } from '../../support/helpers.js';
import { at, ids, replicaOf, say } from '../../support/sync-harness.js';

let open: Memory[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const m of open) await m.close().catch(() => undefined);
  open = [];
});

/** A memory on its own in-memory database, with the driver for the SQL the test reads. */
async function replica(): Promise<{ m: Memory; driver: StorageDriver }> {
  const driver = await sqliteWasm({})();
  const m = await createMemory({ storage: driver });
  open.push(m);
  return { m, driver };
}

const DAY = 24 * 3600 * 1000;
const tombstones = async (driver: StorageDriver) => Number((await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM sync_tombstones'))[0]!.n);

/** A, B and C synced (C twice, so that it counts); then A forgot a1 and a2, which neither has read yet. */
async function forgotOnA() {
  const a = await replica();
  const b = await replica();
  const c = await replica();
  for (const id of ['a1', 'a2', 'a3']) await say(a.m, id);
  await a.m.sync(b.m);
  // C counts once it has shown a cursor A signed (its second sync): one sync from the start holds nothing back.
  await a.m.sync(c.m);
  await a.m.sync(c.m);
  await a.m.forget({ conversationId: 'c', messageIds: ['a1', 'a2'] });
  return { a, b, c };
}

describe('tombstone compaction', () => {
  it('deletes what A forgot only once B and C have both read it, and the floor keeps later syncs quiet', async () => {
    const { a, b, c } = await forgotOnA();
    expect(await tombstones(a.driver)).toBe(2);
    // B reads them, and shows it at its next sync; C has not read them yet.
    await a.m.sync(b.m);
    await a.m.sync(b.m);
    expect(await ids(b.m)).toEqual(['a3']);
    expect(await tombstones(a.driver)).toBe(2);
    // C reads them: its next sync shows it, and A deletes them.
    await c.m.sync(a.m);
    expect(await tombstones(a.driver)).toBe(2);
    const quiet = await c.m.sync(a.m);
    // The last row stays (a new tombstone's row id follows it): the other is gone.
    expect(await tombstones(a.driver)).toBe(1);
    expect(quiet.resync).toBeUndefined();
    expect(quiet.pulled + quiet.pushed + quiet.forgotten).toBe(0);
    // Every replica still agrees, and syncs on from where it was.
    await say(b.m, 'b1');
    await b.m.sync(a.m);
    const last = await c.m.sync(a.m);
    expect(last.resync).toBeUndefined();
    for (const r of [a, b, c]) expect(await ids(r.m)).toEqual(['a3', 'b1']);
  });

  it('a new replica joins after compaction without being asked to resync (it has nothing to let go)', async () => {
    const a = await replica();
    const b = await replica();
    for (const id of ['a1', 'a2', 'a3']) await say(a.m, id);
    await a.m.sync(b.m);
    await a.m.forget({ conversationId: 'c', messageIds: ['a1', 'a2'] });
    await a.m.sync(b.m);
    await a.m.sync(b.m);
    expect(await tombstones(a.driver)).toBe(1);
    const e = await replica();
    await say(e.m, 'e1');
    const report = await e.m.sync(a.m);
    expect(report.resync).toBeUndefined();
    expect(await ids(e.m)).toEqual(['a3', 'e1']);
    expect(await ids(a.m)).toEqual(['a3', 'e1']);
  });
});

describe('a peer away past tombstoneRetentionDays', () => {
  it('is told to resync, brings nothing forgotten back anywhere, and after its resync keeps its own unsynced turns', async () => {
    const now = Date.now();
    const [a, b, c, d] = [await replica(), await replica(), await replica(), await replica()];
    await say(a.m, 'a1');
    await say(a.m, 'a2');
    await say(b.m, 'b1');
    await say(b.m, 'b2');
    await a.m.sync(b.m);
    await a.m.sync(c.m);
    await say(d.m, 'd1');
    // D gets everything from B (so its copies came from B, and it would offer them to A), then syncs with A.
    await d.m.sync(b.m);
    await d.m.sync(a.m);
    expect(await ids(d.m)).toEqual(['a1', 'a2', 'b1', 'b2', 'd1']);
    // D goes away; it writes offline, before A's forget.
    await say(d.m, 'd2');
    await a.m.forget({ conversationId: 'c', messageIds: ['a1', 'b1'] });
    // A hundred days on, B and C sync, read the forget and show it (B's copies of it read back by A and C too); D,
    // not heard from for longer than 90 days, no longer holds compaction back.
    await at(now + 100 * DAY, async () => {
      for (let i = 0; i < 3; i++) {
        await a.m.sync(b.m);
        await a.m.sync(c.m);
        await b.m.sync(c.m);
      }
    });
    expect(await tombstones(a.driver)).toBe(1);
    expect(await tombstones(b.driver)).toBe(1);
    const aId = await replicaOf(a.m);
    const dId = await replicaOf(d.m);
    await at(now + 101 * DAY, async () => {
      // D comes back: told to resync; nothing moved either way.
      const report = await d.m.sync(a.m);
      expect(report.resync).toEqual({ replica: dId, with: aId, turns: 4 });
      expect(report.pushed + report.pulled).toBe(0);
      expect(await ids(a.m)).toEqual(['a2', 'b2', 'd1']);
      // D's copies pushed directly (an older client, a token holder's replay) are refused whole.
      const batch = await d.m.syncChanges({ to: aId, cursor: { turns: 0, tombstones: 0 } });
      expect(batch.turns.map((t) => t.id).sort()).toEqual(['a1', 'a2', 'b1', 'b2', 'd1', 'd2']);
      await expect(a.m.applySync(batch)).rejects.toMatchObject({ code: 'SYNC_RESYNC_REQUIRED' });
      expect(await ids(a.m)).toEqual(['a2', 'b2', 'd1']);
      // And D cannot read past the forgets without resyncing: its cursor stays below them, and it is still told to.
      const read = await a.m.syncChanges({ to: dId, cursor: (await d.m.syncState(aId)).cursor });
      await d.m.applySync(read);
      expect((await d.m.sync(a.m)).resync).toMatchObject({ replica: dId, with: aId });

      const resynced = await d.m.sync(a.m, { resync: true });
      expect(resynced.resync).toBeUndefined();
      // What A no longer holds went (a1); b1 went with the tombstone A still held; the rest came back.
      expect(resynced.resynced).toBe(1);
      expect(await ids(d.m)).toEqual(['a2', 'b2', 'd1', 'd2']);
      expect(await ids(a.m)).toEqual(['a2', 'b2', 'd1', 'd2']);
      // B compacted too: D resyncs with it as well, and then every replica agrees.
      expect((await d.m.sync(b.m)).resync).toMatchObject({ replica: dId, with: await replicaOf(b.m) });
      await d.m.sync(b.m, { resync: true });
      await c.m.sync(a.m);
      await b.m.sync(a.m);
      for (const r of [a, b, c, d]) expect(await ids(r.m)).toEqual(['a2', 'b2', 'd1', 'd2']);
    });
  });
});

describe('over HTTP', () => {
  it('a device away too long is told to resync by the sync endpoint, and its copies pushed directly are refused with SYNC_RESYNC_REQUIRED', async () => {
    const now = Date.now();
    const [edge, laptop, phone] = [await replica(), await replica(), await replica()];
    const endpoint = syncEndpoint({ memory: edge.m, authenticate: (r) => (r.headers.get('authorization') === 'Bearer t' ? 'me' : null) });
    const remote = () => remoteMemory('http://127.0.0.1/v1/pagewise/sync', { token: 't', fetch: (url, init) => endpoint(new Request(url, init)) });
    for (const id of ['l1', 'l2', 'l3']) await say(laptop.m, id);
    await laptop.m.sync(remote());
    await say(phone.m, 'p1');
    await phone.m.sync(remote());
    await say(phone.m, 'p2');
    await laptop.m.forget({ conversationId: 'c', messageIds: ['l1', 'l2'] });
    await at(now + 100 * DAY, async () => {
      for (let i = 0; i < 3; i++) await laptop.m.sync(remote());
      expect(await tombstones(edge.driver)).toBe(1);
      const report = await phone.m.sync(remote());
      expect(report.resync).toMatchObject({ replica: await replicaOf(phone.m), with: await replicaOf(edge.m) });
      const batch = await phone.m.syncChanges({ to: await replicaOf(edge.m), cursor: { turns: 0, tombstones: 0 } });
      // Only a turn of its own would go (the laptop's came from the edge): one of them, stamped before the forgets.
      await expect(remote().applySync({ ...batch, turns: [...batch.turns, { ...batch.turns[0]!, id: 'l1' }] })).rejects.toMatchObject({ code: 'SYNC_RESYNC_REQUIRED' });
      expect((await phone.m.sync(remote(), { resync: true })).resync).toBeUndefined();
      expect(await ids(phone.m)).toEqual(['l3', 'p1', 'p2']);
      expect(await ids(edge.m)).toEqual(['l3', 'p1', 'p2']);
    });
  });
});

describe('acknowledgments', () => {
  it('a bare or borrowed cursor never makes A drop tombstones early', async () => {
    const { a, b, c } = await forgotOnA();
    await a.m.sync(b.m);
    await a.m.sync(b.m);
    const cId = await replicaOf(c.m);
    const bId = await replicaOf(b.m);
    // A token holder says C has read everything: a bare number, then B's genuine receipt shown as C's.
    await a.m.syncState(cId, undefined, { seen: { turns: 1e9, tombstones: 1e9 } });
    const borrowed = (await b.m.syncState(await replicaOf(a.m))).cursor;
    expect(borrowed.receipt).toBeDefined();
    await a.m.syncState(cId, undefined, { seen: borrowed });
    await a.m.syncState(cId, ['c'], { seen: borrowed });
    // Forged batches "from C" that end a pull (what settles an acknowledgment) count only what C showed signed.
    const forged = await a.m.syncChanges({ to: bId, cursor: { turns: 0, tombstones: 0 } });
    await a.m.applySync({ ...forged, from: cId, to: await replicaOf(a.m), turns: [], tombstones: [], cursor: { turns: 0, tombstones: 0 } }).catch(() => undefined);
    expect(await tombstones(a.driver)).toBe(2);
    expect(await ids(c.m)).toEqual(['a1', 'a2', 'a3']);
    // C really reads them: then they go (the last row stays).
    await a.m.sync(c.m);
    await a.m.sync(c.m);
    expect(await tombstones(a.driver)).toBe(1);
    expect(await ids(c.m)).toEqual(['a3']);
  });

  it('with tombstoneRetentionDays, the option is checked', async () => {
    await expect(createMemory({ tombstoneRetentionDays: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', path: 'tombstoneRetentionDays' });
    const m = await createMemory({ tombstoneRetentionDays: null });
    open.push(m);
  });
});
