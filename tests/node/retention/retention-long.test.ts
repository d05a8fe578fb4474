// Retention on a 20,000-turn conversation written over 120 days, under maxAgeDays: 30. The background's slices (each
// maintain() is one, as the engine's loop and the edge's alarms run them) remove every older turn but the pinned ones
// — from the turns, the export, the full-text index and the bytes of the closed file — while calls on another
// conversation (a forget among them) and on the same one go on, none waiting much more than one slice measured in
// the same run.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileStorage } from '../../../src/storage/node-file.js';
import type { ChatMessage } from '../../../src/contracts/types.js';
import { createMemory } from '../../support/helpers.js';

const DAY = 86_400_000;
const N = 20_000;
const BATCH = 2_000;
// Turns i < OLD are written more than 31 days ago, i >= RECENT less than 29 days ago (those between are not checked:
// the cutoff is read from the real clock at each slice).
const OLD = Math.floor(N * 0.74);
const RECENT = Math.ceil(N * 0.76);
const PINNED = [120, 5_000, 11_111];

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'pagewise-retention-long-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });

const marker = (i: number) => (PINNED.includes(i) ? `zqp${i}x` : i < OLD ? `zqo${i}x` : i >= RECENT ? `zqr${i}x` : `zqb${i}x`);
const has = (bytes: Uint8Array, word: string) => Buffer.from(bytes).toString('latin1').includes(word);

describe('retention on 20,000 turns', () => {
  it('removes every turn past 30 days (pins kept) from turns, export, index and file; calls wait at most about a slice', async () => {
    const path = join(dir, 'big.sqlite3');
    const memory = await createMemory({ storage: fileStorage(path), compaction: false, maintenance: 'manual', retention: { maxAgeDays: 30 } });
    const now = Date.now();
    // One user turn per 50 (an exchange of a question and many replies): tagging stays cheap, the turns are as many.
    for (let b = 0; b < N; b += BATCH) {
      const messages: ChatMessage[] = Array.from({ length: BATCH }, (_, k) => {
        const i = b + k;
        return { role: i % 50 === 0 ? 'user' : 'assistant', id: `t${i}`, content: `Entry ${i}: ${marker(i)} logged.`, createdAt: new Date(now - 120 * DAY + (i * 120 * DAY) / N).toISOString() };
      });
      await memory.onTurnComplete({ conversationId: 'big', messages });
    }
    for (const i of PINNED) await memory.pin('big', `t${i}`);
    await memory.onTurnComplete({ conversationId: 'other', messages: [{ role: 'user', content: 'The lighthouse keeper logs the weather.' }, { role: 'assistant', content: 'Every six hours.' }] });

    // The calls measured: each kind alone first (its own time, without retention), then during the pass.
    let k = 0;
    let written = 0;
    let forgotten = 0;
    type Span = { start: number; end: number };
    const time = async (fn: () => Promise<unknown>): Promise<Span> => {
      const start = performance.now();
      await fn();
      return { start, end: performance.now() };
    };
    const ms = (s: Span) => s.end - s.start;
    // Each resolves with when its call started and ended.
    const calls: Record<string, () => Promise<Span>> = {
      otherInbound: () => time(() => memory.onMessageInbound({ conversationId: 'other', message: { role: 'user', content: 'When does the keeper log the weather?' } })),
      otherTurn: () => time(() => memory.onTurnComplete({ conversationId: 'other', messages: [{ role: 'user', content: `Other note ${++k}.` }] })),
      sameTurn: () => time(() => memory.onTurnComplete({ conversationId: 'big', messages: [{ role: 'user', content: `A new entry ${++written} zqn${written}x.` }] })),
      sameRead: () => time(() => memory.turns('big', { cursor: null, limit: 20 })),
      // A forget waits for the work derived from the turns under way, never for the pass (maintenance's own lane).
      otherForget: async () => {
        const id = `gone${++forgotten}`;
        await memory.onTurnComplete({ conversationId: 'other', messages: [{ role: 'user', id, content: `A note to forget ${forgotten}.` }] });
        return time(() => memory.forget({ conversationId: 'other', messageIds: [id] }));
      },
    };
    const alone = new Map<string, number>();
    for (const [name, fn] of Object.entries(calls)) {
      let most = 0;
      for (let r = 0; r < 3; r++) most = Math.max(most, ms(await fn()));
      alone.set(name, most);
    }

    // The pass: one slice per maintain(), timed; the calls go on meanwhile, one at a time, each timed.
    const slices: number[] = [];
    const waits: (Span & { name: string })[] = [];
    let running = true;
    const pass = (async () => {
      try {
        for (;;) {
          const t = performance.now();
          const report = await memory.maintain();
          slices.push(performance.now() - t);
          if (!report.more) break;
        }
      } finally {
        running = false;
      }
    })();
    // One caller per kind, each making its calls one after another while the pass runs.
    const callers = Object.entries(calls).map(async ([name, fn]) => {
      while (running) {
        const span = await fn();
        if (running) waits.push({ name, ...span });
      }
    });
    await Promise.all([pass, ...callers]);
    console.log(`slices: ${slices.length}, longest ${Math.round(Math.max(...slices))} ms; alone: ${JSON.stringify(Object.fromEntries([...alone].map(([k, v]) => [k, Math.round(v)])))}; `
      + `during: ${JSON.stringify(Object.fromEntries(Object.keys(calls).map((c) => [c, waits.filter((w) => w.name === c).map((w) => Math.round(ms(w)))])))}`);

    // The pass took many slices, and calls of every kind ran during it.
    expect(slices.length).toBeGreaterThan(20);
    for (const name of Object.keys(calls)) expect(waits.filter((w) => w.name === name).length).toBeGreaterThanOrEqual(3);
    // No call waited more than about one slice: the longest slice of this run, with margin, plus the call's own time.
    // A forget holds the whole memory for its purge, retention or not: another call waits for the forgets that ran
    // meanwhile too (each of them having waited at most a slice itself).
    const slice = Math.max(...slices);
    const forgets = waits.filter((w) => w.name === 'otherForget');
    for (const w of waits) {
      const meanwhile = w.name === 'otherForget' ? 0 : forgets.filter((f) => f.start < w.end && f.end > w.start).reduce((sum, f) => sum + ms(f), 0);
      expect(ms(w), `${w.name} took ${Math.round(ms(w))} ms; slices took up to ${Math.round(slice)} ms; forgets meanwhile ${Math.round(meanwhile)} ms`)
        .toBeLessThan(2 * slice + 3 * alone.get(w.name)! + meanwhile);
    }

    // Every turn past 30 days went but the pinned ones; recent ones and those written meanwhile are there.
    const exported = JSON.stringify(await memory.export('big'));
    expect(/zqo\d+x/.test(exported)).toBe(false);
    for (const i of PINNED) expect(exported.includes(marker(i)), marker(i)).toBe(true);
    for (let i = RECENT; i < N; i++) expect(exported.includes(`zqr${i}x`), `t${i}`).toBe(true);
    for (let i = 1; i <= written; i++) expect(exported.includes(`zqn${i}x`), `zqn${i}x`).toBe(true);
    const log = await memory.retentionLog({ limit: 10_000 });
    const removed = log.items.filter((e) => e.conversationId === 'big' && e.reason === 'maxAgeDays');
    expect(removed.reduce((s, e) => s + e.turns, 0)).toBeGreaterThanOrEqual(OLD - PINNED.length);
    expect(removed.every((e) => e.turns <= 512 && !e.conversationRemoved)).toBe(true);
    // Nothing more is due by the clock the pass ran on (a run across midnight UTC would find the next day's due).
    expect((await memory.applyRetention({ now: new Date(now).toISOString() })).turnsRemoved).toBe(0);
    await memory.close();

    const bytes = readFileSync(path);
    expect(has(bytes, 'zqo')).toBe(false);
    expect(has(bytes, 'zqr19999x')).toBe(true);
    expect(has(bytes, 'zqp5000x')).toBe(true);
    const driver = await fileStorage(path)();
    expect(await driver.query("SELECT rowid FROM turns_fts WHERE turns_fts MATCH 'zqo0x OR zqo7000x OR zqo14000x'")).toEqual([]);
    expect((await driver.query("SELECT rowid FROM turns_fts WHERE turns_fts MATCH 'zqp11111x'")).length).toBe(1);
    await driver.close();
  });
});
