// Retention policies: turns past maxAgeDays, idle conversations and those beyond maxConversations removed through
// forget's path (no byte left in the file), pins kept unless told otherwise, a conversation's own policy over the
// option's, typed errors that change nothing, the log a page at a time, and sync replicas that do not bring removed
// turns back.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Memory, isPagewiseError } from '../../../src/index.js';
import { fileStorage } from '../../../src/storage/node-file.js';
import type { ChatMessage, MemoryOptions } from '../../../src/contracts/types.js';
import type { RetentionLogEntry } from '../../../src/contracts/types-ops.js';
import { createMemory } from '../../support/helpers.js';

const DAY = 86_400_000;
// The simulated clock every applyRetention({ now }) here reads.
const NOW = Date.parse('2031-03-01T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

let dir: string;
let n = 0;
const open: Memory[] = [];
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'pagewise-retention-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });
afterEach(async () => { await Promise.all(open.splice(0).map((m) => m.close().catch(() => undefined))); });

async function memory(options: MemoryOptions = {}): Promise<Memory> {
  const m = await createMemory({ compaction: false, maintenance: 'manual', ...options });
  open.push(m);
  return m;
}

/** `count` messages, one user turn then replies, the i-th written `ageDays(i)` days before NOW, each with a marker word. */
function messages(prefix: string, count: number, ageDays: (i: number) => number): ChatMessage[] {
  return Array.from({ length: count }, (_, i) => ({
    role: i % 4 === 0 ? 'user' : 'assistant', id: `${prefix}${i}`, content: `Note ${i} of ${prefix}: marker ${prefix}mark${i}x about the harbour.`,
    createdAt: iso(NOW - ageDays(i) * DAY),
  }));
}

async function codeOf(p: Promise<unknown>): Promise<{ code: string; path?: string } | null> {
  return p.then(() => null, (e: unknown) => {
    if (!isPagewiseError(e)) throw e;
    return { code: e.code, path: e.path };
  });
}

const ids = async (m: Memory, c: string) => (await m.turns(c)).map((t) => t.id);
const has = (bytes: Uint8Array, word: string) => Buffer.from(bytes).toString('latin1').toLowerCase().includes(word.toLowerCase());

describe('maxAgeDays', () => {
  it('removes turns past the age from turns, export, the index and the file; pinned and recent turns stay; the log says what went', async () => {
    const path = join(dir, `age-${++n}.sqlite3`);
    const m = await memory({ storage: fileStorage(path), retention: { maxAgeDays: 30, sliceTurns: 16 } });
    // 60 turns, 89.25 to 0.75 days old (1.5 days apart): those older than the bound (30 days before NOW, rounded down
    // to the start of that UTC day: 30.5 days) are the first 40.
    await m.onTurnComplete({ conversationId: 'c', messages: messages('a', 60, (i) => 89.25 - i * 1.5) });
    await m.onTurnComplete({ conversationId: 'fresh', messages: messages('f', 8, () => 1) });
    await m.pin('c', 'a5');
    const report = await m.applyRetention({ now: iso(NOW) });
    const old = Array.from({ length: 40 }, (_, i) => `a${i}`).filter((id) => id !== 'a5');
    expect(report.turnsRemoved).toBe(old.length);
    expect(report.pinnedKept).toBe(1);
    expect(report.conversationsRemoved).toEqual([]);
    expect(report.more).toBe(false);
    // Slices of at most 16 turns, each a log entry.
    expect(report.entries.map((e) => e.turns)).toEqual([16, 16, 7]);
    expect(report.entries.every((e) => e.reason === 'maxAgeDays' && e.conversationId === 'c' && e.before === '2031-01-30T00:00:00.000Z')).toBe(true);
    expect((await m.retentionLog()).items).toEqual(report.entries);
    expect(await ids(m, 'c')).toEqual(['a5', ...Array.from({ length: 20 }, (_, i) => `a${40 + i}`)]);
    expect(await ids(m, 'fresh')).toHaveLength(8);
    const exported = JSON.stringify(await m.export('c'));
    expect(exported).not.toContain('amark0x');
    expect(exported).toContain('amark5x');
    // Nothing more is due: the same call again removes nothing.
    expect((await m.applyRetention({ now: iso(NOW) })).turnsRemoved).toBe(0);
    // Recall still works on what is left, and finds nothing of what went.
    const ctx = await m.onMessageInbound({ conversationId: 'c', message: { role: 'user', content: 'What about amark3x and amark50x?' } });
    expect(JSON.stringify(ctx.messages)).not.toContain('amark3x.');
    await m.close();
    // In the closed file: no byte of a removed turn, the kept ones there (the control).
    const bytes = readFileSync(path);
    for (const id of ['amark0x', 'amark17x', 'amark39x']) expect(has(bytes, id)).toBe(false);
    for (const id of ['amark5x', 'amark40x', 'fmark3x']) expect(has(bytes, id)).toBe(true);
    expect(existsSync(`${path}-journal`)).toBe(false);
    // The full-text index holds none of them either.
    const driver = await fileStorage(path)();
    expect(await driver.query("SELECT rowid FROM turns_fts WHERE turns_fts MATCH 'amark0x OR amark17x'")).toEqual([]);
    expect((await driver.query("SELECT rowid FROM turns_fts WHERE turns_fts MATCH 'amark45x'")).length).toBe(1);
    await driver.close();
  });

  it('keepPinned: false removes pinned turns too; a conversation left with none is removed whole', async () => {
    const m = await memory({ retention: { maxAgeDays: 10, keepPinned: false } });
    await m.onTurnComplete({ conversationId: 'c', messages: messages('k', 12, () => 20) });
    await m.pin('c', 'k2');
    const report = await m.applyRetention({ now: iso(NOW) });
    expect(report).toMatchObject({ turnsRemoved: 12, pinnedKept: 0, conversationsRemoved: ['c'], more: false });
    expect(report.entries.at(-1)!.conversationRemoved).toBe(true);
    expect((await m.conversations()).map((c) => c.id)).toEqual([]);
  });

  it('maxTurns bounds a call (report.more), the next call goes on', async () => {
    const m = await memory({ retention: { maxAgeDays: 10, sliceTurns: 4 } });
    await m.onTurnComplete({ conversationId: 'c', messages: messages('b', 20, (i) => (i < 14 ? 40 : 1)) });
    const first = await m.applyRetention({ now: iso(NOW), maxTurns: 6 });
    expect(first).toMatchObject({ turnsRemoved: 6, more: true });
    expect(first.entries.map((e) => e.turns)).toEqual([4, 2]);
    const rest = await m.applyRetention({ now: iso(NOW) });
    expect(rest).toMatchObject({ turnsRemoved: 8, more: false });
    expect(await ids(m, 'c')).toEqual(Array.from({ length: 6 }, (_, i) => `b${14 + i}`));
  });

  it('the background pass runs with the real clock, a slice per job, and flush() waits for it', async () => {
    const m = await memory({ maintenance: 'auto', retention: { maxAgeDays: 30, sliceTurns: 8, intervalMs: 60_000 } });
    // The background checked at creation (nothing to do); maintain() by hand is the check the interval would make.
    const now = Date.now();
    await m.onTurnComplete({ conversationId: 'c', messages: messages('r', 30, () => 0).map((x, i) => ({ ...x, createdAt: iso(now - (i < 20 ? 45 : 2) * DAY) })) });
    const first = await m.maintain();
    expect(first.retention).toMatchObject({ turnsRemoved: 8, more: true });
    expect(first.more).toBe(true);
    while ((await m.maintain()).more) { /* one slice per call, as the edge's alarms take them */ }
    await m.flush();
    expect(await ids(m, 'c')).toEqual(Array.from({ length: 10 }, (_, i) => `r${20 + i}`));
    expect((await m.retentionLog()).items.reduce((s, e) => s + e.turns, 0)).toBe(20);
  });
});

describe('idleDays, maxConversations and each conversation its own policy', () => {
  it('idle conversations go whole; one with a pin keeps it; setRetention overrides the option', async () => {
    const m = await memory({ retention: { idleDays: 5 } });
    for (const c of ['idle', 'pinned', 'exempt', 'shorter']) await m.onTurnComplete({ conversationId: c, messages: messages(c, 6, () => 1) });
    await m.pin('pinned', 'pinned1');
    await m.setRetention('exempt', { idleDays: null });
    await m.setRetention('shorter', { idleDays: 100 });
    // Ten days later: all four have been idle since their last turn was written.
    const report = await m.applyRetention({ now: iso(NOW + 10 * DAY) });
    expect(report.conversationsRemoved).toEqual(['idle']);
    expect(report.pinnedKept).toBe(1);
    expect(report.entries.every((e) => e.reason === 'idleDays')).toBe(true);
    expect((await m.conversations()).map((c) => c.id).sort()).toEqual(['exempt', 'pinned', 'shorter']);
    expect(await ids(m, 'pinned')).toEqual(['pinned1']);
    expect(await ids(m, 'exempt')).toHaveLength(6);
    // The override goes: the option's idleDays again.
    await m.setRetention('exempt', null);
    const again = await m.applyRetention({ now: iso(NOW + 10 * DAY) });
    expect(again.conversationsRemoved).toEqual(['exempt']);
    expect(again.pinnedKept).toBe(0);
  });

  it('maxConversations keeps those with the latest turns; the rest go (their pins kept); a per-conversation maxAgeDays and keepPinned', async () => {
    const m = await memory({ retention: { maxConversations: 2 } });
    // c4's turns are the latest, c1's the oldest (50 to 47 days old).
    for (const [k, c] of ['c1', 'c2', 'c3', 'c4'].entries()) await m.onTurnComplete({ conversationId: c, messages: messages(c, 4, () => 50 - k) });
    await m.pin('c1', 'c11');
    const report = await m.applyRetention({ now: iso(NOW) });
    expect(report.conversationsRemoved).toEqual(['c2']);
    expect(report.entries.map((e) => [e.conversationId, e.reason, e.turns])).toEqual([['c2', 'maxConversations', 4], ['c1', 'maxConversations', 3]]);
    expect((await m.conversations()).map((c) => c.id).sort()).toEqual(['c1', 'c3', 'c4']);
    // A conversation's own maxAgeDays (no global one), pins not kept there.
    await m.setRetention('c4', { maxAgeDays: 20, keepPinned: false });
    await m.pin('c4', 'c40');
    const aged = await m.applyRetention({ now: iso(NOW) });
    expect(aged).toMatchObject({ conversationsRemoved: ['c4'], turnsRemoved: 4, pinnedKept: 0 });
    expect(await ids(m, 'c3')).toHaveLength(4);
  });

  it('without a policy, applyRetention removes nothing', async () => {
    const m = await memory();
    await m.onTurnComplete({ conversationId: 'c', messages: messages('z', 4, () => 400) });
    expect(await m.applyRetention({ now: iso(NOW) })).toEqual({ turnsRemoved: 0, conversationsRemoved: [], pinnedKept: 0, entries: [], more: false });
    expect((await m.maintain()).retention).toBeNull();
    expect(await ids(m, 'c')).toHaveLength(4);
  });
});

describe('bad input: typed errors, nothing changed', () => {
  it('the option is checked at createMemory', async () => {
    const bad: [unknown, string][] = [
      [5, 'retention'], [{ maxAgeDays: 0 }, 'retention.maxAgeDays'], [{ maxAgeDays: '30' }, 'retention.maxAgeDays'], [{ idleDays: -2 }, 'retention.idleDays'],
      [{ maxConversations: 1.5 }, 'retention.maxConversations'], [{ keepPinned: 'yes' }, 'retention.keepPinned'], [{ intervalMs: 0 }, 'retention.intervalMs'],
      [{ sliceTurns: 0 }, 'retention.sliceTurns'], [{ sliceTurns: 1e6 }, 'retention.sliceTurns'], [{ maxAge: 3 }, 'retention.maxAge'],
    ];
    for (const [retention, path] of bad) expect(await codeOf(createMemory({ retention } as MemoryOptions))).toEqual({ code: 'INVALID_OPTIONS', path });
  });

  it('setRetention, applyRetention and retentionLog refuse bad input and change nothing stored', async () => {
    const m = await memory({ retention: { maxAgeDays: 30 } });
    await m.onTurnComplete({ conversationId: 'c', messages: messages('x', 8, () => 40) });
    await m.setRetention('c', { maxAgeDays: 60 });
    const cases: [() => Promise<unknown>, string, string | undefined][] = [
      [() => m.setRetention('nobody', { maxAgeDays: 1 }), 'CONVERSATION_NOT_FOUND', undefined],
      [() => m.setRetention('', { maxAgeDays: 1 }), 'INVALID_CONVERSATION_ID', 'conversationId'],
      [() => m.setRetention('c', { maxConversations: 1 } as never), 'INVALID_ARGUMENT', 'policy.maxConversations'],
      [() => m.setRetention('c', { maxAgeDays: 0 }), 'INVALID_ARGUMENT', 'policy.maxAgeDays'],
      [() => m.setRetention('c', { idleDays: Number.NaN }), 'INVALID_ARGUMENT', 'policy.idleDays'],
      [() => m.setRetention('c', { keepPinned: 1 } as never), 'INVALID_ARGUMENT', 'policy.keepPinned'],
      [() => m.setRetention('c', { sliceTurns: 3 } as never), 'INVALID_ARGUMENT', 'policy.sliceTurns'],
      [() => m.setRetention('c', 'forever' as never), 'INVALID_ARGUMENT', 'policy'],
      [() => m.applyRetention({ maxTurns: 0 }), 'INVALID_ARGUMENT', 'options.maxTurns'],
      [() => m.applyRetention({ now: 'last tuesday' }), 'INVALID_DATE', 'options.now'],
      [() => m.applyRetention(7 as never), 'INVALID_ARGUMENT', 'options'],
      [() => m.retentionLog({ cursor: 'abc' }), 'INVALID_ARGUMENT', 'page.cursor'],
      [() => m.retentionLog({ cursor: '-1' }), 'INVALID_ARGUMENT', 'page.cursor'],
      [() => m.retentionLog({ limit: 0 }), 'INVALID_ARGUMENT', 'page.limit'],
      [() => m.retentionLog({ limit: 10_001 }), 'INVALID_ARGUMENT', 'page.limit'],
    ];
    for (const [p, code, path] of cases) expect(await codeOf(p())).toMatchObject({ code, ...(path ? { path } : {}) });
    // The conversation's policy (60 days) still stands: 40-day-old turns stay; nothing was logged.
    expect((await m.applyRetention({ now: iso(NOW) })).turnsRemoved).toBe(0);
    expect(await ids(m, 'c')).toHaveLength(8);
    expect((await m.retentionLog()).items).toEqual([]);
  });
});

describe('the log', () => {
  it('pages with its cursor, oldest first, to the end', async () => {
    const m = await memory({ retention: { maxAgeDays: 1, sliceTurns: 1 } });
    await m.onTurnComplete({ conversationId: 'c', messages: messages('l', 11, () => 5) });
    await m.onTurnComplete({ conversationId: 'd', messages: messages('m', 1, () => 0) });
    const report = await m.applyRetention({ now: iso(NOW) });
    expect(report.entries).toHaveLength(11);
    const seen: RetentionLogEntry[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await m.retentionLog({ cursor, limit: 3 });
      seen.push(...page.items);
      cursor = page.cursor;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(4);
    expect(seen).toEqual(report.entries);
    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(seen.at(-1)!.conversationRemoved).toBe(true);
    // What a log entry holds: what went and why, never text.
    expect(JSON.stringify(seen)).not.toContain('lmark');
  });
});

describe('sync', () => {
  it('a replica synced before the pass loses the removed turns too and never brings them back; its new turns still arrive', async () => {
    const a = await memory({ retention: { maxAgeDays: 30, sliceTurns: 32 } });
    const b = await memory();
    const now = Date.now();
    await a.onTurnComplete({ conversationId: 'c', messages: messages('s', 120, () => 0).map((x, i) => ({ ...x, createdAt: iso(now - (i < 80 ? 60 : 2) * DAY) })) });
    await a.pin('c', 's3');
    await a.sync(b);
    expect(await ids(b, 'c')).toHaveLength(120);
    const report = await a.applyRetention();
    expect(report.turnsRemoved).toBe(79);
    const again = await a.sync(b);
    expect(again.forgotten).toBe(79);
    const kept = ['s3', ...Array.from({ length: 40 }, (_, i) => `s${80 + i}`)];
    expect(await ids(a, 'c')).toEqual(kept);
    expect(await ids(b, 'c')).toEqual(kept);
    expect(has(await b.exportDatabase(), 'smark10x')).toBe(false);
    // B writes on; its new turns arrive, and nothing removed comes back.
    await b.onTurnComplete({ conversationId: 'c', messages: [{ role: 'user', content: 'A new note from the phone.', id: 'b1' }] });
    const third = await b.sync(a);
    expect(third.pushed + third.pulled).toBe(1);
    expect(await ids(a, 'c')).toEqual([...kept, 'b1']);
    expect(await ids(b, 'c')).toEqual([...kept, 'b1']);
  });
});
