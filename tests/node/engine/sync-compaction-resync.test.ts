// A resync lets go of nothing before the peer's copy has arrived: it marks what it received, pulls everything, and
// only then lets go of what the peer no longer holds; stopped half-way it goes on at the next sync. A sync of some
// conversations is judged by those conversations' forgets only.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Memory, SyncPeer, SyncState } from '../../../src/index.js';
import { at, deviceHarness, ids, replicaOf, say } from '../../support/sync-harness.js';

const h = deviceHarness('pagewise-resync-');
const DAY = 24 * 3600 * 1000;

/** A memory on its own database (in memory, or the file `file` in the test's folder). */
const mem = async (file?: string): Promise<Memory> => await h.memory(file ? join(h.dir, file) : undefined);

/** A and B synced; A forgot a1 and a2 of conversation c and compacted them with B (the last tombstone stays). */
async function compactedPair(): Promise<{ a: Memory; b: Memory }> {
  const a = await mem();
  const b = await mem();
  for (const id of ['a1', 'a2', 'a3']) await say(a, id);
  await say(a, 'x1', 'x');
  await a.sync(b);
  return { a, b };
}
async function forgetAndCompact(a: Memory, b: Memory): Promise<void> {
  await a.forget({ conversationId: 'c', messageIds: ['a1', 'a2'] });
  await a.sync(b);
  await a.sync(b);
}

describe('a sync of some conversations', () => {
  it('goes on after the other side compacted forgets of another conversation', async () => {
    const { a, b } = await compactedPair();
    const f = await mem();
    expect((await f.sync(a, { conversations: ['x'] })).resync).toBeUndefined();
    await forgetAndCompact(a, b);
    await say(f, 'x2', 'x');
    const r = await f.sync(a, { conversations: ['x'] });
    expect(r.resync).toBeUndefined();
    expect(r.pushed).toBe(1);
    expect(await ids(a, 'x')).toEqual(['x1', 'x2']);
  });

  it('lets a new device of one conversation join after compaction, and one behind in its own conversation resync it alone', async () => {
    const { a, b } = await compactedPair();
    await forgetAndCompact(a, b);
    const g = await mem();
    await say(g, 'g1', 'x');
    expect((await g.sync(a, { conversations: ['x'] })).resync).toBeUndefined();
    expect(await ids(a, 'x')).toEqual(['g1', 'x1']);
    // A device that read conversation c before its forgets were compacted, and holds copies there.
    const { a: a2, b: b2 } = await compactedPair();
    const p = await mem();
    await p.sync(a2, { conversations: ['c'] });
    await forgetAndCompact(a2, b2);
    const told = await p.sync(a2, { conversations: ['c'] });
    expect(told.resync).toMatchObject({ replica: await replicaOf(p), with: await replicaOf(a2), turns: 3 });
    const done = await p.sync(a2, { conversations: ['c'], resync: true });
    expect(done.resync).toBeUndefined();
    // a1 was let go (a2's tombstone A still holds removed a2); a3 came back.
    expect(done.resynced).toBe(1);
    expect(await ids(p, 'c')).toEqual(['a3']);
    await say(p, 'p1');
    expect((await p.sync(a2, { conversations: ['c'] })).pushed).toBe(1);
  });
});

/**
 * Q and A synced (Q's own turns in d, A's in c), then, while Q was away, A forgot a1, a2 and Q's own q1, and compacted
 * them with B (z1, forgotten last, keeps the last tombstone).
 */
async function awayFromA(now: number, qFile?: string) {
  const [a, b, q] = [await mem(), await mem(), await mem(qFile)];
  for (const id of ['a1', 'a2', 'a3', 'a4']) await say(a, id);
  for (const id of ['q1', 'q2', 'q3']) await say(q, id, 'd');
  await q.sync(a);
  await q.sync(a);
  await say(a, 'z1', 'z');
  await a.sync(b);
  // Q's own q1 is forgotten on A too: a resync never lets go of a replica's own turns.
  await a.forget({ conversationId: 'd', messageIds: ['q1'] });
  await a.forget({ conversationId: 'c', messageIds: ['a1', 'a2'] });
  await a.forget({ conversationId: 'z', messageIds: ['z1'] });
  await at(now + 100 * DAY, async () => { for (let i = 0; i < 3; i++) await a.sync(b); });
  return { a, b, q };
}

describe('a resync', () => {
  it('stopped after its first batch loses nothing, and the next plain sync finishes it', async () => {
    const now = Date.now();
    const { a, q } = await awayFromA(now);
    const aId = await replicaOf(a);
    await at(now + 101 * DAY, async () => {
      expect((await q.sync(a)).resync).toMatchObject({ turns: 4 });
      const ctl = new AbortController();
      await expect(q.sync(a, { resync: true, batchTurns: 1, signal: ctl.signal, onProgress: () => ctl.abort() })).rejects.toMatchObject({ code: 'ABORTED' });
      // Nothing was let go yet, and the resync is recorded as under way.
      expect(await ids(q, 'c')).toEqual(['a1', 'a2', 'a3', 'a4']);
      expect(await ids(q, 'd')).toEqual(['q1', 'q2', 'q3']);
      expect((await q.syncState(aId)).resyncing).toBe(true);
      const next = await q.sync(a);
      expect(next.resync).toBeUndefined();
      expect(next.resynced).toBe(2);
      expect((await q.syncState(aId)).resyncing).toBeUndefined();
      expect(await ids(q, 'c')).toEqual(['a3', 'a4']);
      expect(await ids(q, 'd')).toEqual(['q1', 'q2', 'q3']);
      expect(await ids(a, 'd')).toEqual(['q2', 'q3']);
      expect((await q.sync(a)).resync).toBeUndefined();
    });
  });

  it('survives the process stopping between its start and its end (the record is stored with the marks)', async () => {
    const now = Date.now();
    const { a, q } = await awayFromA(now, 'q.db');
    const aId = await replicaOf(a);
    await at(now + 101 * DAY, async () => {
      const started = await q.syncState(aId, undefined, { resync: 'start' });
      expect(started.resync).toEqual({ turns: 4, started: true });
      expect(started.cursor).toEqual({ turns: 0, tombstones: 0 });
      const again = await h.reopen(q, join(h.dir, 'q.db'), () => undefined);
      expect((await again.syncState(aId)).resyncing).toBe(true);
      const r = await again.sync(a);
      expect(r.resync).toBeUndefined();
      expect(r.resynced).toBe(2);
      expect(await ids(again, 'c')).toEqual(['a3', 'a4']);
      expect(await ids(again, 'd')).toEqual(['q1', 'q2', 'q3']);
    });
  });

  it('when both sides compacted forgets the other never read, lets go of nothing and says so', async () => {
    const now = Date.now();
    const [a, b, q, c] = [await mem(), await mem(), await mem(), await mem()];
    for (const id of ['a1', 'a2', 'a3', 'a4']) await say(a, id);
    for (const id of ['q1', 'q2', 'q3', 'q4']) await say(q, id, 'd');
    await q.sync(a);
    await q.sync(a);
    await a.sync(b);
    await q.sync(c);
    await a.forget({ conversationId: 'c', messageIds: ['a1', 'a2'] });
    await q.forget({ conversationId: 'd', messageIds: ['q1', 'q2'] });
    await at(now + 100 * DAY, async () => {
      for (let i = 0; i < 3; i++) { await a.sync(b); await q.sync(c); }
    });
    await at(now + 101 * DAY, async () => {
      const [qId, aId] = [await replicaOf(q), await replicaOf(a)];
      for (const [self, other, selfId, otherId] of [[q, a, qId, aId], [a, q, aId, qId]] as const) {
        const r = await self.sync(other, { resync: true });
        expect(r.resync).toEqual({ replica: selfId, with: otherId, turns: 0, both: true });
        expect(r.resynced).toBeUndefined();
      }
      expect(await ids(q, 'c')).toEqual(['a1', 'a2', 'a3', 'a4']);
      expect(await ids(q, 'd')).toEqual(['q3', 'q4']);
      expect(await ids(a, 'd')).toEqual(['q1', 'q2', 'q3', 'q4']);
      expect((await q.syncState(aId)).resyncing).toBeUndefined();
    });
  });

  it('a peer still behind after two resyncs ends the sync with report.resync', async () => {
    const { a, b } = await compactedPair();
    const q = await mem();
    await say(q, 'q1');
    // A peer that keeps saying this replica must resync (a bug, or a clock gone wrong there).
    const stuck: SyncPeer = {
      syncState: async (...args: Parameters<SyncPeer['syncState']>): Promise<SyncState> => ({ ...(await a.syncState(...args)), resyncRequired: true }),
      syncChanges: (request) => a.syncChanges(request),
      applySync: (batch) => a.applySync(batch),
    };
    await forgetAndCompact(a, b);
    const r = await q.sync(stuck, { resync: true });
    expect(r.resync).toEqual({ replica: await replicaOf(q), with: await replicaOf(a), turns: 0 });
  });
});
