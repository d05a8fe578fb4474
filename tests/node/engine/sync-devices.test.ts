// Sync as people's devices behave: a database file copied to a new laptop, a laptop restored from an old backup, a
// device whose clock is a year ahead, and a token holder who forges cursors, origins and order keys. Each case is a
// reproducer of a report where sync went quiet and lost data; here each ends with every replica holding what it should.
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Memory } from '../../../src/index.js';
import type { SyncBatch } from '../../../src/contracts/types-sync.js';
import { remoteMemory, syncEndpoint } from '../../../src/index.js';
import { fileStorage } from '../../../src/node.js';
import { user } from '../../support/helpers.js';
import { SYNC_URL, YEAR, at, deviceHarness, forgeCursor, httpEdge } from '../../support/sync-harness.js';

const { dir, memory, close, reopen } = deviceHarness('pagewise-devices-');

const ids = async (m: Memory, c = 'c'): Promise<string[]> => (await m.turns(c)).map((t) => t.id!).sort();
const say = (m: Memory, id: string, text = `${id} says something`) => m.onTurnComplete({ conversationId: 'c', messages: [user(text, { id })] });

describe('a copied or restored database', () => {
  it('a file copied to a new laptop: the copy that syncs second finds itself, takes a new id, and everything meets', async () => {
    const file = join(dir, 'laptop.sqlite3');
    const copy = join(dir, 'laptop-copy.sqlite3');
    const edge = await memory();
    let laptop = await memory(file);
    for (const id of ['m1', 'm2', 'm3']) await say(laptop, id);
    await laptop.sync(edge);
    await close(laptop);
    copyFileSync(file, copy);
    laptop = await memory(file);
    const newLaptop = await memory(copy);
    const before = (await laptop.syncState('')).replica;
    expect((await newLaptop.syncState('')).replica).toBe(before);

    await say(laptop, 'a1');
    expect((await laptop.sync(edge)).renewed).toEqual([]);
    await say(newLaptop, 'b1');
    await newLaptop.forget({ conversationId: 'c', messageIds: ['m1'] });
    const report = await newLaptop.sync(edge);
    // Before: pushed 0, pulled 0 on every sync, and the forget never left the copy.
    expect(report.renewed).toEqual([{ previous: before, replica: expect.stringMatching(/^r/), reason: 'copy' }]);
    expect((await newLaptop.syncState('')).replica).not.toBe(before);
    expect(report.pulled).toBe(1);
    expect(report.pushed).toBe(1);
    await laptop.sync(edge);
    const all = ['a1', 'b1', 'm2', 'm3'];
    expect(await ids(edge)).toEqual(all);
    expect(await ids(laptop)).toEqual(all);
    expect(await ids(newLaptop)).toEqual(all);
    // One order everywhere, and a quiet sync after.
    const order = (await edge.turns('c')).map((t) => t.id);
    expect((await laptop.turns('c')).map((t) => t.id)).toEqual(order);
    expect((await newLaptop.turns('c')).map((t) => t.id)).toEqual(order);
    for (const m of [laptop, newLaptop]) {
      const again = await m.sync(edge);
      expect([again.pushed, again.pulled, again.renewed.length]).toEqual([0, 0, 0]);
    }
  });

  it('a laptop restored from an old backup (exportDatabase) takes a new id, gets what it lost from the edge, and sends what it writes', async () => {
    const file = join(dir, 'restored.sqlite3');
    const edge = await memory();
    const laptop = await memory();
    await say(laptop, 'm1');
    await laptop.sync(edge);
    const backup = await laptop.exportDatabase();
    await say(laptop, 'lost-on-disk');
    await laptop.sync(edge);
    await close(laptop);
    // The disk dies; the backup is restored on a new disk.
    writeFileSync(file, backup);
    const restored = await memory(file);
    await say(restored, 'r1');
    await edge.onTurnComplete({ conversationId: 'c', messages: [user('written at the edge', { id: 'e1' })] });
    const report = await restored.sync(edge);
    expect(report.renewed.map((r) => r.reason)).toEqual(['copy']);
    expect(await ids(restored)).toEqual(['e1', 'lost-on-disk', 'm1', 'r1']);
    expect(await ids(edge)).toEqual(['e1', 'lost-on-disk', 'm1', 'r1']);
  });

  it('two copies synced directly: one takes a new id, and they meet', async () => {
    const file = join(dir, 'direct.sqlite3');
    const copy = join(dir, 'direct-copy.sqlite3');
    let a = await memory(file);
    await say(a, 'm1');
    await close(a);
    copyFileSync(file, copy);
    a = await memory(file);
    const b = await memory(copy);
    await say(a, 'a1');
    await say(b, 'b1');
    const report = await a.sync(b);
    expect(report.renewed.map((r) => r.reason)).toEqual(['same-id']);
    expect(await ids(a)).toEqual(['a1', 'b1', 'm1']);
    expect(await ids(b)).toEqual(['a1', 'b1', 'm1']);
    // The same storage twice is still refused.
    await expect(a.sync(a)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('clocks', () => {
  it('an order key past the largest the format holds is refused whole; writes and syncs go on', async () => {
    const a = await memory();
    const b = await memory();
    await say(a, 'm1');
    const batch = await a.syncChanges({ to: (await b.syncState('')).replica, cursor: { turns: 0, tombstones: 0 } });
    const forged: SyncBatch = { ...batch, turns: batch.turns.map((t) => ({ ...t, ord: 2 ** 53 - 1 })) };
    await expect(b.applySync(forged)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'batch.turns[0].ord' });
    expect(await b.turns('c').catch(() => [])).toEqual([]);
    await say(b, 'b1');
    const report = await a.sync(b);
    expect(report.pulled + report.pushed).toBe(2);
    expect(await ids(a)).toEqual(['b1', 'm1']);
  });

  it('a forget from a device whose clock is a year ahead is taken as made when it arrives: what the phone writes afterwards stays', async () => {
    const edge = await memory();
    const phone = await memory();
    const ahead = await memory();
    await say(phone, 'm1');
    await phone.sync(edge);
    await ahead.sync(edge);
    // The device whose clock is a year ahead forgets the conversation; the phone, offline, writes on.
    await at(Date.now() + YEAR, () => ahead.forget({ conversationId: 'c' }));
    const push = await ahead.sync(edge);
    expect(push.clock).toMatchObject({ clamped: 1, held: 0 });
    expect(push.clock.aheadMs).toBeGreaterThan(YEAR - 3_600_000);
    expect(await edge.turns('c').catch(() => [])).toEqual([]);
    await new Promise((r) => setTimeout(r, 5));
    await say(phone, 'p1');
    await say(phone, 'p2');
    const phoneSync = await phone.sync(edge);
    // m1, written before the forget, goes on the phone too; p1 and p2, written after it reached the edge, stay.
    expect(phoneSync.forgotten).toBe(1);
    expect(await ids(phone)).toEqual(['p1', 'p2']);
    expect(await ids(edge)).toEqual(['p1', 'p2']);
    // Writes at the edge are not pushed a year ahead by it: their keys stay near the edge's clock.
    await edge.onTurnComplete({ conversationId: 'c', messages: [user('e1', { id: 'e1' })] });
    const next = await edge.syncChanges({ to: (await phone.syncState('')).replica, cursor: { turns: 0, tombstones: 0 } });
    for (const t of next.turns) expect(t.ord).toBeLessThan(Date.now() + 60_000);
  });

  it('a turn from a clock a year ahead is held at the edge and never comes back onto the device that forgot', async () => {
    const edge = await memory();
    const phone = await memory();
    const ahead = await memory();
    await say(phone, 'm1');
    await phone.sync(edge);
    await ahead.sync(edge);
    await at(Date.now() + YEAR, () => say(ahead, 'future'));
    expect((await ahead.sync(edge)).clock.held).toBe(1);
    await phone.forget({ conversationId: 'c' });
    await phone.sync(edge);
    await phone.sync(edge);
    expect(await phone.turns('c').catch(() => [])).toEqual([]);
    expect(await edge.turns('c').catch(() => [])).toEqual([]);
    // Once the edge's clock reaches it (here: moved on a year), the held turn is applied like any other.
    await at(Date.now() + YEAR + 60_000, () => ahead.sync(edge));
    expect(await ids(edge)).toEqual(['future']);
    expect((await edge.syncState('')).held).toBeUndefined();
  });
});

describe('the turns a peer received, shown back', () => {
  it('over HTTP: a restored laptop whose receipt at the edge was forged still finds itself by the turns the edge shows it', async () => {
    const edgeMemory = await memory();
    const handler = syncEndpoint({ memory: edgeMemory, authenticate: (r) => (r.headers.get('authorization') === 'Bearer t' ? 'me' : null) });
    const edge = remoteMemory('https://edge.test/v1/pagewise/sync', { token: 't', fetch: (url, init) => handler(new Request(url, init)) });
    const file = join(dir, 'restored-http.sqlite3');
    let laptop = await memory(file);
    await say(laptop, 'm1');
    await laptop.sync(edge);
    const backup = await laptop.exportDatabase();
    await say(laptop, 'a1');
    await laptop.sync(edge);
    await forgeCursor(edgeMemory, laptop);
    laptop = await reopen(laptop, file, () => writeFileSync(file, backup));
    expect((await laptop.sync(edge)).renewed.map((r) => r.reason)).toEqual(['copy']);
    expect(await ids(laptop)).toEqual(['a1', 'm1']);
  });

  it('a caller over HTTP cannot make the edge take a new id by naming turns it never held', async () => {
    const edgeMemory = await memory();
    const { handler } = httpEdge(edgeMemory);
    const before = (await edgeMemory.syncState('')).replica;
    const seenTurns = [{ conversationId: 'c', id: 'never', contentHash: 'a'.repeat(64) }];
    const res = await handler(new Request(SYNC_URL, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ method: 'syncState', args: ['rsomeone', null, { seenTurns }] }) }));
    expect(res.status).toBe(200);
    expect((await edgeMemory.syncState('')).replica).toBe(before);
    // In-process the same names do make it renew: a peer that received them from this id is a twin.
    expect((await edgeMemory.syncState('rsomeone', undefined, { seenTurns })).renewed).toMatchObject({ previous: before, reason: 'copy' });
  });

  it('a forget made before removals were recorded (its tombstone only) is not taken for a copy\'s gap', async () => {
    const [file, phoneFile] = [join(dir, 'old-forget.sqlite3'), join(dir, 'old-forget-phone.sqlite3')];
    let laptop = await memory(file);
    let phone = await memory(phoneFile);
    await say(laptop, 'm1');
    await say(laptop, 'm2');
    await laptop.sync(phone);
    await laptop.forget({ conversationId: 'c', messageIds: ['m2'] });
    // Databases from before schema 12: no sync_removed rows for older forgets, and cursors without receipts.
    const sql = async (at: string, statement: string) => {
      const driver = await fileStorage(at)();
      await driver.batch([{ sql: statement }]);
      await driver.close();
    };
    await Promise.all([close(laptop), close(phone)]);
    await sql(file, 'DELETE FROM sync_removed');
    await sql(phoneFile, "UPDATE sync_peers SET receipt = ''");
    [laptop, phone] = [await memory(file), await memory(phoneFile)];
    const report = await phone.sync(laptop);
    expect(report.renewed).toEqual([]);
    expect(await ids(phone)).toEqual(['m1']);
  });

  it('over HTTP: the original of a copy tells the edge the id it left, and the copy is told at its next sync', async () => {
    const edgeMemory = await memory();
    const { edge } = httpEdge(edgeMemory);
    const file = join(dir, 'twin.sqlite3');
    let laptop = await memory(file);
    await say(laptop, 'm1');
    await laptop.sync(edge);
    laptop = await reopen(laptop, file, () => copyFileSync(file, join(dir, 'twin-2.sqlite3')));
    const copy = await memory(join(dir, 'twin-2.sqlite3'));
    const shared = (await laptop.syncState('')).replica;
    // The two meet directly first: the laptop takes a new id there, and the edge has not heard of it yet.
    expect((await laptop.sync(copy)).renewed.map((r) => r.reason)).toEqual(['same-id']);
    expect((await laptop.syncState('rpeer')).previous).toEqual([shared]);
    await laptop.sync(edge);
    expect((await edgeMemory.syncState(shared)).twin).toBe(true);
    expect((await copy.sync(edge)).renewed).toMatchObject([{ previous: shared, reason: 'copy' }]);
  });

  it('malformed seenTurns and left are a typed error naming the field; nothing changes', async () => {
    const m = await memory();
    const before = (await m.syncState('')).replica;
    await expect(m.syncState('rpeer', undefined, { left: ['ok', ''] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('left[1]') });
    await expect(m.syncState('rpeer', undefined, { left: Array.from({ length: 9 }, (_, k) => `r${k}`) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    for (const seenTurns of ['x', Array.from({ length: 17 }, () => ({ conversationId: 'c', id: 'i', contentHash: 'a'.repeat(64) })), [{ conversationId: 'c', id: 'i', contentHash: 'nothex' }], [{ id: 'i', contentHash: 'a'.repeat(64) }]]) {
      await expect(m.syncState('rpeer', undefined, { seenTurns } as never)).rejects.toMatchObject({ code: expect.stringMatching(/^INVALID_(ARGUMENT|CONVERSATION_ID)$/), message: expect.stringContaining('seenTurns') });
    }
    expect((await m.syncState('')).replica).toBe(before);
  });
});

describe('a token holder who forges', () => {
  it('a forged cursor does not stop a forget from reaching the edge', async () => {
    const edge = await memory();
    const laptop = await memory();
    await say(laptop, 'pin', 'my bank PIN is 4921');
    await say(laptop, 'm2');
    await laptop.sync(edge);
    // "From the laptop": the edge has read it up to a billion.
    await forgeCursor(edge, laptop);
    await laptop.forget({ conversationId: 'c', messageIds: ['pin'] });
    const report = await laptop.sync(edge);
    expect(report.forgotten).toBe(1);
    expect(await ids(edge)).toEqual(['m2']);
    expect(JSON.stringify(await edge.turns('c'))).not.toContain('4921');
  });

  it('a turn that claims the laptop as its origin still reaches the laptop', async () => {
    const edge = await memory();
    const laptop = await memory();
    const other = await memory();
    await say(laptop, 'm1');
    await laptop.sync(edge);
    await say(other, 'x1');
    const laptopId = (await laptop.syncState('')).replica;
    const edgeId = (await edge.syncState('')).replica;
    const batch = await other.syncChanges({ to: edgeId, cursor: { turns: 0, tombstones: 0 } });
    await edge.applySync({ ...batch, turns: batch.turns.map((t) => ({ ...t, origin: laptopId })) });
    await laptop.sync(edge);
    expect(await ids(laptop)).toEqual(['m1', 'x1']);
  });
});
