// What retention costs and decides over a memory's life: conversations ranked by when they were last used as every
// device knows it (their latest turn), not by when this device received them; trims of a compacted conversation at
// most once a day (each rebuilds its summaries); and a purge a pass left undone, done at the next open whatever the
// policy then.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Memory } from '../../../src/index.js';
import type { Summarizer } from '../../../src/contracts/seams.js';
import type { MemoryOptions } from '../../../src/contracts/types.js';
import { fileStorage } from '../../../src/storage/node-file.js';
import { createMemory, user } from '../../support/helpers.js';
import { at } from '../../support/sync-harness.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

let dir: string;
const open: Memory[] = [];
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'pagewise-retention-upkeep-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(open.splice(0).map((m) => m.close().catch(() => undefined)));
});

async function memory(options: MemoryOptions = {}): Promise<Memory> {
  const m = await createMemory({ compaction: false, maintenance: 'manual', ...options });
  open.push(m);
  return m;
}

describe('a replica ranks conversations by their latest turn', () => {
  it('maxConversations on a phone that pulled them keeps those used last on the laptop, and the laptop keeps them too', async () => {
    const now = Date.now();
    const laptop = await memory();
    const phone = await memory({ retention: { maxConversations: 2, intervalMs: null } });
    // Written on the laptop 50 to 10 days ago: 'a' used last, 'e' first. The phone receives them all at once, now.
    for (const [i, c] of ['e', 'd', 'c', 'b', 'a'].entries()) {
      const t = now - (50 - i * 10) * DAY;
      await at(t, () => laptop.onTurnComplete({ conversationId: c, messages: [user(`A note in ${c}.`, { id: `${c}1`, createdAt: iso(t) })] }));
    }
    await phone.sync(laptop);
    const report = await phone.applyRetention();
    expect(report.conversationsRemoved.sort()).toEqual(['c', 'd', 'e']);
    // The removals travel (they are forgets): the laptop is left with the same two, those used last.
    await phone.sync(laptop);
    expect((await laptop.conversations()).map((c) => c.id).sort()).toEqual(['a', 'b']);
    expect((await phone.conversations()).map((c) => c.id).sort()).toEqual(['a', 'b']);
  });

  it('idleDays counts from the latest turn: a conversation just received but unused for long is idle', async () => {
    const now = Date.now();
    const laptop = await memory();
    const phone = await memory({ retention: { idleDays: 30, intervalMs: null } });
    await at(now - 40 * DAY, () => laptop.onTurnComplete({ conversationId: 'old', messages: [user('An old plan.', { id: 'o1', createdAt: iso(now - 40 * DAY) })] }));
    await laptop.onTurnComplete({ conversationId: 'new', messages: [user('A fresh plan.', { id: 'n1' })] });
    await phone.sync(laptop);
    expect((await phone.applyRetention()).conversationsRemoved).toEqual(['old']);
    // Meanwhile the laptop wrote in it (39 days ago, as its clock says). The phone's tombstone takes only o1 there,
    // and leaves the conversation's time as it was: a removal received is no use of it.
    await at(now - 39 * DAY, () => laptop.onTurnComplete({ conversationId: 'old', messages: [user('A second old plan.', { id: 'o2', createdAt: iso(now - 39 * DAY) })] }));
    const updatedAt = async () => (await laptop.conversations()).find((c) => c.id === 'old')!.updatedAt;
    const before = await updatedAt();
    await phone.sync(laptop);
    expect((await laptop.turns('old')).map((t) => t.id)).toEqual(['o2']);
    expect(await updatedAt()).toBe(before);
    // o2 arrived on the phone just now, and it is idle there all the same.
    expect((await phone.applyRetention()).conversationsRemoved).toEqual(['old']);
  });
});

describe('trims of a compacted conversation', () => {
  it('happen once a day at most: hours later nothing is trimmed or summarized again; after the day boundary it is', async () => {
    let calls = 0;
    const summarizer: Summarizer = { name: 'count', version: 1, async summarize(r) { calls++; return { text: `A summary of ${r.items.length} messages.` }; } };
    const m = await memory({ compaction: true, nSum: 8, summarizer, retention: { maxAgeDays: 30, intervalMs: null } });
    // The clock starts at 01:00 UTC yesterday; 400 turns, one every 2 hours before it (33 days of them).
    const start = Math.floor(Date.now() / DAY) * DAY - DAY + HOUR;
    const msgs = Array.from({ length: 400 }, (_, i) => ({
      role: (i % 2 ? 'assistant' : 'user') as 'user' | 'assistant', id: `t${i}`,
      content: `Turn ${i}: the harbour ferry schedule for step ${i} changes on Friday ${i * 7}.`, createdAt: iso(start - (400 - i) * 2 * HOUR),
    }));
    for (let i = 0; i < 400; i += 50) await m.onTurnComplete({ conversationId: 'c', messages: msgs.slice(i, i + 50) });
    await m.flush();
    const first = await m.applyRetention({ now: iso(start) });
    expect(first.turnsRemoved).toBeGreaterThan(0);
    // The bound is the start of a UTC day.
    expect(first.entries.every((e) => e.before!.endsWith('T00:00:00.000Z'))).toBe(true);
    await m.flush();
    const base = calls;
    const entries = (await m.retentionLog()).items.length;
    const summaries = (await m.summaries('c')).length;
    expect(summaries).toBeGreaterThan(0);
    // Later the same day, turns pass the 30 days every 2 hours; none is trimmed until the day is over.
    for (const h of [4, 10, 20]) {
      expect((await m.applyRetention({ now: iso(start + h * HOUR) })).turnsRemoved, `${h} h later`).toBe(0);
      await m.flush();
    }
    expect(calls).toBe(base);
    expect((await m.retentionLog()).items).toHaveLength(entries);
    expect((await m.summaries('c')).length).toBe(summaries);
    // The next day: a day's worth (12 turns) goes at once, and the summaries are made again.
    const next = await m.applyRetention({ now: iso(start + 24 * HOUR) });
    expect(next.turnsRemoved).toBe(12);
    expect(next.entries).toHaveLength(1);
    await m.flush();
    expect(calls).toBeGreaterThan(base);
    expect((await m.summaries('c')).length).toBeGreaterThan(0);
  });
});

describe('a purge left undone', () => {
  it('is done at the first maintenance slice after opening, even without a retention option', async () => {
    const path = join(dir, 'purge.sqlite3');
    const m = await memory({ storage: fileStorage(path) });
    await m.onTurnComplete({ conversationId: 'c', messages: [user('The gate code is 2210.'), user('The boat leaves at nine.')] });
    await m.close();
    // A pass that removed turns and stopped before its purge (a crash): the flag is set, free pages are left.
    const driver = await fileStorage(path)();
    await driver.batch([
      { sql: 'CREATE TABLE junk (x BLOB)' },
      { sql: 'INSERT INTO junk (x) SELECT randomblob(4000) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) SELECT i FROM n)' },
      { sql: 'DROP TABLE junk' },
      { sql: "INSERT OR REPLACE INTO pagewise_meta (key, value) VALUES ('retention:purge', '1')" },
    ]);
    const free = async (d: typeof driver) => Number((await d.query<{ n: number }>('SELECT freelist_count AS n FROM pragma_freelist_count'))[0]!.n);
    expect(await free(driver)).toBeGreaterThan(0);
    await driver.close();

    const again = await memory({ storage: fileStorage(path) });
    await again.maintain();
    await again.close();
    const after = await fileStorage(path)();
    expect(await after.query("SELECT 1 FROM pagewise_meta WHERE key = 'retention:purge'")).toEqual([]);
    expect(await free(after)).toBe(0);
    await after.close();
  });
});
