// Who holds tombstone compaction back: only peers that showed a signed cursor, at most the 64 heard from last; a
// memory no peer has read compacts as it forgets. Over HTTP a caller never ends a resync of the memory it reaches.
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { remoteMemory, syncEndpoint, type Memory } from '../../../src/index.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import { createMemory } from '../../support/helpers.js';
import { ids, replicaOf, say } from '../../support/sync-harness.js';

let open: Memory[] = [];
afterEach(async () => {
  for (const m of open) await m.close().catch(() => undefined);
  open = [];
});

async function replica(): Promise<{ m: Memory; driver: StorageDriver }> {
  const driver = await sqliteWasm({})();
  const m = await createMemory({ storage: driver });
  open.push(m);
  return { m, driver };
}
const count = async (driver: StorageDriver, sql: string) => Number((await driver.query<{ n: number }>(sql))[0]!.n);
const tombstones = (driver: StorageDriver) => count(driver, 'SELECT COUNT(*) AS n FROM sync_tombstones');

describe('peers that hold compaction back', () => {
  it('a peer that synced once, from the start, holds nothing back', async () => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    for (const id of ['a1', 'a2', 'a3']) await say(a.m, id);
    await a.m.sync(b.m);
    await c.m.sync(a.m);
    await a.m.forget({ conversationId: 'c', messageIds: ['a1', 'a2'] });
    await a.m.sync(b.m);
    await a.m.sync(b.m);
    expect(await tombstones(a.driver)).toBe(1);
    // C comes back: it read from the start once, so it resyncs (it holds copies), and nothing forgotten returns.
    const told = await c.m.sync(a.m);
    expect(told.resync).toMatchObject({ replica: await replicaOf(c.m), turns: 3 });
    await c.m.sync(a.m, { resync: true });
    expect(await ids(c.m)).toEqual(['a3']);
    expect(await ids(a.m)).toEqual(['a3']);
  });

  it('keeps the acknowledgments of the 64 peers heard from last (a token holder cannot add peers without end)', async () => {
    const a = await replica();
    await say(a.m, 'a1');
    for (let i = 0; i < 70; i++) {
      const peer = `rpeer${i}`;
      const batch = await a.m.syncChanges({ to: peer, cursor: { turns: 0, tombstones: 0 } });
      await a.m.syncState(peer, undefined, { seen: batch.cursor });
    }
    expect(await count(a.driver, 'SELECT COUNT(DISTINCT peer) AS n FROM sync_acks')).toBe(64);
  });
});

describe('a memory no peer has read', () => {
  it('keeps only its last tombstone of a single message, and a newcomer still joins', async () => {
    const a = await replica();
    for (const id of ['a1', 'a2', 'a3', 'a4']) await say(a.m, id);
    await a.m.forget({ conversationId: 'c', messageIds: ['a1'] });
    await a.m.forget({ conversationId: 'c', messageIds: ['a2', 'a3'] });
    await say(a.m, 'x1', 'x');
    await a.m.forget({ conversationId: 'x' });
    expect(await tombstones(a.driver)).toBe(2);
    const b = await replica();
    await say(b.m, 'b1');
    const r = await b.m.sync(a.m);
    expect(r.resync).toBeUndefined();
    expect(await ids(a.m)).toEqual(['a4', 'b1']);
    expect(await ids(b.m)).toEqual(['a4', 'b1']);
    // Now it has a peer: what it forgets stays until the peer has read it.
    await a.m.forget({ conversationId: 'c', messageIds: ['a4'] });
    await a.m.forget({ conversationId: 'c', messageIds: ['b1'] });
    expect(await count(a.driver, "SELECT COUNT(*) AS n FROM sync_tombstones WHERE turn_id IN ('a4', 'b1')")).toBe(2);
    await b.m.sync(a.m);
    expect(await ids(b.m)).toEqual([]);
  });

  it('does not compact what it receives in its first sync (it can pass it on)', async () => {
    const [a, b] = [await replica(), await replica()];
    for (const id of ['a1', 'a2', 'a3']) await say(a.m, id);
    await a.m.sync(b.m);
    await a.m.forget({ conversationId: 'c', messageIds: ['a1'] });
    await a.m.forget({ conversationId: 'c', messageIds: ['a2'] });
    const e = await replica();
    await e.m.sync(a.m);
    expect(await tombstones(e.driver)).toBe(2);
  });
});

describe('over HTTP', () => {
  it('a batch applied through the sync endpoint never ends a resync the memory has under way', async () => {
    const [edge, phone, other] = [await replica(), await replica(), await replica()];
    const endpoint = syncEndpoint({ memory: edge.m, authenticate: (r) => (r.headers.get('authorization') === 'Bearer t' ? 'me' : null) });
    const remote = remoteMemory('http://127.0.0.1/v1/pagewise/sync', { token: 't', fetch: (url, init) => endpoint(new Request(url, init)) });
    await say(other.m, 'o1');
    await edge.m.sync(other.m);
    const phoneId = await replicaOf(phone.m);
    // The edge's own runner started a resync with the phone (in-process): o1 is marked.
    expect((await edge.m.syncState(phoneId, undefined, { resync: 'start' })).resync).toEqual({ turns: 1, started: true });
    const batch = await phone.m.syncChanges({ to: await replicaOf(edge.m), cursor: { turns: 0, tombstones: 0 }, resync: true });
    expect(batch.resync).toBe(true);
    await remote.applySync(batch);
    expect(await ids(edge.m)).toEqual(['o1']);
    expect((await edge.m.syncState(phoneId)).resyncing).toBe(true);
    // Applied by the edge's own runner, the same last batch ends it: the phone does not hold o1.
    const applied = await edge.m.applySync(batch);
    expect(applied.resynced).toBe(1);
    expect(await ids(edge.m)).toEqual([]);
  });
});
