// A copy of a forgotten turn is refused, even after the forget's tombstone was compacted: whether this replica removed
// the turn, or only ever heard of its forget. What a resync let go, or an import undone, was forgotten by nobody, and
// arrives again like any turn. (sync-renewal.test.ts: "… does not bring back its own turn it forgot after the backup".)
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteWasm, type ExportData, type Memory } from '../../../src/index.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import { createMemory } from '../../support/helpers.js';
import { deviceHarness, httpEdge, ids, say } from '../../support/sync-harness.js';

const { dir, memory, reopen } = deviceHarness('pagewise-removed-');
const open: Memory[] = [];
afterEach(async () => { for (const m of open.splice(0)) await m.close().catch(() => undefined); });

describe('what was let go, not forgotten', () => {
  it('a turn a resync let go (the edge did not hold it yet) arrives again, and stays everywhere', async () => {
    const edgeMemory = await memory();
    const { edge } = httpEdge(edgeMemory);
    const [laptop, phone, tablet, fresh] = [await memory(), await memory(), await memory(), await memory()];
    for (const id of ['p1', 'p2']) await say(phone, id);
    for (const id of ['l1', 'l2', 'l3']) await say(laptop, id);
    for (let i = 0; i < 2; i++) for (const m of [phone, laptop]) await m.sync(edge);
    await laptop.forget({ conversationId: 'c', messageIds: ['l1', 'l2'] });
    for (let i = 0; i < 3; i++) for (const m of [laptop, phone]) await m.sync(edge);
    // A tablet writes x1 and pairs with a new device, which then resyncs with the edge (it compacted forgets).
    await say(tablet, 'x1');
    await fresh.sync(tablet);
    if ((await fresh.sync(edge)).resync) await fresh.sync(edge, { resync: true });
    if ((await tablet.sync(edge)).resync) await tablet.sync(edge, { resync: true });
    for (let i = 0; i < 2; i++) for (const m of [fresh, tablet, laptop, phone]) await m.sync(edge);
    for (const m of [edgeMemory, tablet, fresh, phone, laptop]) expect(await ids(m)).toContain('x1');
  });

  it('an import undone on one device does not forget the same turns another device imported', async () => {
    const turns = Array.from({ length: 600 }, (_, i) => ({
      id: `t${i}`, role: (i % 2 ? 'assistant' : 'user') as 'user' | 'assistant',
      content: `Message ${i}: water the beans in bed ${i % 13} early, the clay keeps it.`, createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    }));
    const file = (): ExportData => ({
      format: 'pagewise', version: 1, exportedAt: '2026-01-01T00:00:00Z', aliases: [],
      conversations: [{ id: 'big', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', pins: [], aliases: [], turns }] as never,
    });
    const phone = await createMemory({ compaction: false });
    open.push(phone);
    await phone.import(file());
    // The laptop's import fails at its fourth write and is undone.
    const inner = await sqliteWasm()();
    let [batches, armed] = [0, false];
    const driver: StorageDriver = {
      name: 'failing', query: (sql, params) => inner.query(sql, params),
      batch: (statements) => { if (armed && ++batches === 4) throw new Error('disk I/O error'); return inner.batch(statements); },
      export: () => inner.export!(), close: () => undefined,
    };
    const laptop = await createMemory({ compaction: false, storage: driver });
    open.push(laptop);
    armed = true;
    await expect(laptop.import(file())).rejects.toThrow(/disk I\/O error/);
    await laptop.sync(phone);
    await phone.sync(laptop);
    const count = async (m: Memory) => (await m.turns('big')).length;
    expect(await count(phone)).toBe(600);
    expect(await count(laptop)).toBe(600);
  });

  it('a turn forgotten before it ever reached the edge stays forgotten when a backup that holds it is restored', async () => {
    const edgeMemory = await memory();
    const { edge } = httpEdge(edgeMemory);
    const file = join(dir, 'unsynced.sqlite3');
    let laptop = await memory(file);
    const phone = await memory();
    for (const id of ['p1', 'p2']) await say(phone, id);
    for (const id of ['l1', 'l2', 'l3']) await say(laptop, id);
    for (let i = 0; i < 2; i++) for (const m of [phone, laptop]) await m.sync(edge);
    await say(laptop, 'x1');
    const backup = await laptop.exportDatabase();
    await laptop.forget({ conversationId: 'c', messageIds: ['x1'] });
    await laptop.forget({ conversationId: 'c', messageIds: ['l2'] });
    for (let i = 0; i < 3; i++) for (const m of [laptop, phone]) await m.sync(edge);
    // The premise: the edge, which never held x1, compacted its forget.
    const kept = (await edgeMemory.syncChanges({ to: 'rsomeone', cursor: { turns: 0, tombstones: 0 }, resync: true })).tombstones;
    expect(kept.map((t) => t.id)).toEqual(['l2']);
    await say(laptop, 'l9');
    await laptop.sync(edge);
    laptop = await reopen(laptop, file, () => writeFileSync(file, backup));
    if ((await laptop.sync(edge)).resync) await laptop.sync(edge, { resync: true });
    for (let i = 0; i < 2; i++) for (const m of [laptop, phone]) await m.sync(edge);
    for (const m of [edgeMemory, phone, laptop]) expect(await ids(m)).toEqual(['l1', 'l3', 'l9', 'p1', 'p2']);
  });
});
