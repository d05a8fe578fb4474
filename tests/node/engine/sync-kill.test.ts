// A sync killed midway (issue 28): a child process pulls 600 turns from memory A's file into memory B's in batches of 20
// (tests/support/sync-kill-child.ts) and is killed with SIGKILL at a random batch, at a random moment in it, several
// times. After each kill both files pass SQLite's integrity check, every batch the child reported applied is in B, and
// B holds a prefix of what A holds — no turn twice, each the same as A's, in A's order — with its cursor of A at that
// prefix (or one batch short of it: that batch comes again and is skipped). Then a sync runs to the end: B equals A
// exactly, and syncing again moves nothing.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileStorage } from '../../../src/storage/node-file.js';
import type { Memory } from '../../../src/index.js';
import type { ChatMessage, StoredTurn } from '../../../src/contracts/types.js';
import type { SyncReport } from '../../../src/contracts/types-sync.js';
import { createMemory, rng } from '../../support/helpers.js';

const CHILD = fileURLToPath(new URL('../../support/sync-kill-child.ts', import.meta.url));
const SEED = 2028;
const CONVERSATIONS = ['alpha', 'beta', 'gamma'];
const TURNS = 600;
const BATCH = 20;
const KILLS = 4;

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'pagewise-sync-kill-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });

/** The n-th message A holds: mostly plain text, some with a speaker, text parts or a tool call and its answer. */
function message(n: number): ChatMessage {
  const createdAt = new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString();
  const id = `m${String(n).padStart(4, '0')}`;
  if (n % 50 === 7) return { id, role: 'assistant', content: null, createdAt, toolCalls: [{ id: `call${n}`, type: 'function', function: { name: 'lookup', arguments: JSON.stringify({ q: `item ${n}` }) } }] };
  if (n % 50 === 8) return { id, role: 'tool', toolCallId: `call${n - 1}`, content: `Result ${n}: the warehouse in Lyon holds ${n * 3} crates.`, createdAt };
  if (n % 11 === 0) return { id, role: 'user', name: 'Ines', content: [{ type: 'text', text: `Ines asks (${n}):` }, { type: 'text', text: ' where did we leave the kayak?' }], createdAt };
  return n % 2 === 0
    ? { id, role: 'user', content: `Question ${n}: how long should the sourdough proof at ${18 + (n % 7)} degrees?`, createdAt }
    : { id, role: 'assistant', content: `Answer ${n}: about ${4 + (n % 5)} hours, until it has grown by half and springs back slowly.`, createdAt };
}

/** Writes A: 600 turns over three conversations, ten at a time in turn. Returns the ids in the order written. */
async function prepareA(path: string): Promise<string[]> {
  const a = await createMemory({ storage: fileStorage(path) });
  const order: string[] = [];
  try {
    for (let n = 0; n < TURNS; n += 10) {
      const messages = Array.from({ length: 10 }, (_, k) => message(n + k));
      await a.onTurnComplete({ conversationId: CONVERSATIONS[(n / 10) % CONVERSATIONS.length]!, messages });
      order.push(...messages.map((m) => m.id!));
    }
  } finally {
    await a.close();
  }
  return order;
}

interface ChildRun { proc: ChildProcess; lines: string[]; err: () => string; closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }> }

function startChild(a: string, b: string): ChildRun {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, a, b, String(BATCH)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let buffered = '';
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  proc.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    lines.push(...parts);
  });
  // 'close': the process is gone and its pipes are drained, so every line written before it died has been read.
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('close', (code, signal) => resolve({ code, signal })));
  return { proc, lines, err: () => err, closed };
}

/** Resolves once the child has reported `batches` pull batches applied (rejects if it ends first). */
function untilBatch(run: ChildRun, batches: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (run.lines.some((l) => l === `batch pull ${batches}` || l.startsWith(`batch pull ${batches} `))) {
        run.proc.stdout!.off('data', check);
        resolve();
      }
    };
    run.proc.stdout!.on('data', check);
    void run.closed.then(({ code, signal }) => reject(new Error(`the child ended (${code ?? signal}) before batch ${batches}: ${run.err()}\n${run.lines.join('\n')}`)));
    check();
  });
}

const pulledBatches = (lines: readonly string[]) => lines.filter((l) => l.startsWith('batch pull ')).length;

async function integrity(path: string): Promise<void> {
  const driver = await fileStorage(path)();
  try {
    expect(await driver.query('PRAGMA integrity_check'), path).toEqual([{ integrity_check: 'ok' }]);
  } finally {
    await driver.close();
  }
}

async function allTurns(memory: Memory): Promise<Map<string, StoredTurn[]>> {
  const out = new Map<string, StoredTurn[]>();
  for (const c of CONVERSATIONS) {
    out.set(c, await memory.turns(c, { limit: 1000 }).catch((e: { code?: string }) => {
      if (e.code === 'CONVERSATION_NOT_FOUND') return [];
      throw e;
    }));
  }
  return out;
}

describe('sync killed with SIGKILL midway', () => {
  it('leaves both files sound and B a prefix of A, resumes, and ends with B equal to A', async () => {
    const aPath = join(dir, 'a.sqlite3');
    const bPath = join(dir, 'b.sqlite3');
    const written = await prepareA(aPath);
    await (await createMemory({ storage: fileStorage(bPath) })).close();
    const random = rng(SEED);
    let held = 0;
    let cursor = 0;
    const heldAfterKill: number[] = [];

    for (let kill = 0; kill < KILLS; kill++) {
      const left = Math.ceil((TURNS - held) / BATCH);
      // Killed 0–10 ms after batch k of this run was reported (a batch takes 15–25 ms here): inside the next one, or
      // between two. Enough batches are left for the kills still to come, and for this one to land before the end.
      const k = 1 + Math.floor(random() * Math.max(1, left - 5 * (KILLS - kill)));
      const delay = Math.floor(random() * 11);
      const run = startChild(aPath, bPath);
      await untilBatch(run, k);
      if (delay > 0) await new Promise((ok) => setTimeout(ok, delay));
      run.proc.kill('SIGKILL');
      const ended = await run.closed;
      expect(ended.signal, `kill ${kill}: the child finished before it was killed: ${run.err()}`).toBe('SIGKILL');
      const reported = pulledBatches(run.lines);

      await integrity(aPath);
      await integrity(bPath);
      const a = await createMemory({ storage: fileStorage(aPath) });
      const b = await createMemory({ storage: fileStorage(bPath) });
      try {
        const aTurns = await allTurns(a);
        const bTurns = await allTurns(b);
        const bIds = [...bTurns.values()].flat().map((t) => t.id);
        expect(new Set(bIds).size, `kill ${kill}: turns stored twice`).toBe(bIds.length);
        // A prefix of what A holds, in the order A sent it (A's own order of writing) …
        expect([...bIds].sort(), `kill ${kill}`).toEqual(written.slice(0, bIds.length).sort());
        // … and of each conversation: the same turns as A's, in A's order, at the same positions.
        for (const c of CONVERSATIONS) expect(bTurns.get(c), `kill ${kill}, conversation ${c}`).toEqual(aTurns.get(c)!.slice(0, bTurns.get(c)!.length));
        // B's cursor of A (A's turns are its rows 1…600, in the order written): every batch the child reported applied
        // moved it on, and at most the one in flight besides. B holds the turns up to it, and at most one batch more (a
        // kill between a batch's turns and its cursor: that batch comes again and what is stored is skipped).
        const { replica } = await a.syncState('');
        const at = (await b.syncState(replica)).cursor.turns;
        const state = `kill ${kill}: ${reported} batches reported; cursor ${cursor} before, ${at} now; ${bIds.length} turns held`;
        expect(at, state).toBeGreaterThanOrEqual(cursor + reported * BATCH);
        expect(at, state).toBeLessThanOrEqual(cursor + (reported + 1) * BATCH);
        expect(bIds.length, state).toBeGreaterThanOrEqual(at);
        expect(bIds.length, state).toBeLessThanOrEqual(at + BATCH);
        cursor = at;
        held = bIds.length;
        heldAfterKill.push(held);
      } finally {
        await b.close();
        await a.close();
      }
    }
    expect(held, `turns held after the kills: ${heldAfterKill.join(', ')}`).toBeLessThan(TURNS);

    // The last run goes to the end: it pulls exactly what B lacks.
    const last = startChild(aPath, bPath);
    const ended = await last.closed;
    expect(ended.code, last.err()).toBe(0);
    const done = last.lines.find((l) => l.startsWith('done '));
    expect(done, last.lines.join('\n')).toBeDefined();
    const report = JSON.parse(done!.slice(5)) as SyncReport;
    expect({ pulled: report.pulled, pushed: report.pushed, forgotten: report.forgotten, conflicts: report.conflicts }).toEqual({ pulled: TURNS - held, pushed: 0, forgotten: 0, conflicts: [] });

    await integrity(aPath);
    await integrity(bPath);
    const a = await createMemory({ storage: fileStorage(aPath) });
    const b = await createMemory({ storage: fileStorage(bPath) });
    try {
      const aTurns = await allTurns(a);
      expect([...aTurns.values()].flat().length).toBe(TURNS);
      expect(await allTurns(b)).toEqual(aTurns);
      const again = await b.sync(a);
      expect({ pulled: again.pulled, pushed: again.pushed, forgotten: again.forgotten, pins: again.pins, conflicts: again.conflicts }).toEqual({ pulled: 0, pushed: 0, forgotten: 0, pins: 0, conflicts: [] });
      const back = await a.sync(b);
      expect({ pulled: back.pulled, pushed: back.pushed }).toEqual({ pulled: 0, pushed: 0 });
    } finally {
      await b.close();
      await a.close();
    }
  }, 120_000);
});
