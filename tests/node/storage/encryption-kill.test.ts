// rekey killed with SIGKILL at random points: a child commits rows and changes the key without pause — A to B and
// back in place, and every fourth time to plain and back (the whole file rewritten beside it, then copied over) —
// and is killed at a random moment, again and again. After each kill the file must open with the old key or the
// new one (or both, between the two slot writes), never neither, with every acknowledged row and a sound database.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isPagewiseError } from '../../../src/contracts/errors.js';
import { fileStorage } from '../../../src/storage/node-file.js';
import { rng } from '../../support/rng.js';

const CHILD = fileURLToPath(new URL('../../support/rekey-child.ts', import.meta.url));
const KILLS = 16;
// More kills, up to this many, until at least one landed between the two slot writes and one inside a rewrite.
const MOST_KILLS = 48;

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'pagewise-rekey-kill-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });

/** How long each kind of change took the child last (ms): in place (a slot), or the whole file rewritten. */
const took = { slot: 4, rewrite: 20 };

/**
 * Runs the child until it starts its `rekeys`-th change of key, then kills it at a random point within how long such
 * a change takes (`at`, 0–1); what it acknowledged.
 */
function runAndKill(path: string, env: NodeJS.ProcessEnv, rekeys: number, at: number): Promise<{ rows: number[]; states: string[] }> {
  const proc: ChildProcess = spawn(process.execPath, ['--import', 'tsx', CHILD, path], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const rows: number[] = [];
  const states: string[] = [];
  let buffered = '';
  let err = '';
  let killing = false;
  return new Promise((resolve, reject) => {
    proc.stderr!.on('data', (b: Buffer) => { err += b.toString(); });
    // 'close': the pipes are drained, so every acknowledgement written before the kill has been read.
    proc.on('close', (code, signal) => (signal === 'SIGKILL' ? resolve({ rows, states }) : reject(new Error(`child exited (${code ?? signal}): ${err}`))));
    proc.stdout!.on('data', (b: Buffer) => {
      buffered += b.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const [kind, value] = line.split(' ');
        if (kind === 'r') rows.push(Number(value));
        if (kind === 'k' || kind === 'ready') states.push(value!);
        if (kind === 'k') {
          const rewrite = value === 'plain' || states.at(-2) === 'plain';
          took[rewrite ? 'rewrite' : 'slot'] = Number(line.split(' ')[2]);
        }
        if (kind === 's' && !killing && states.length >= rekeys) {
          killing = true;
          const rewrite = value === 'plain' || states.at(-1) === 'plain';
          const delay = at * took[rewrite ? 'rewrite' : 'slot'];
          // Under a millisecond: spun here, as setTimeout waits at least one.
          if (delay < 1) { const end = performance.now() + delay; while (performance.now() < end) { /* spin */ } proc.kill('SIGKILL'); }
          else setTimeout(() => proc.kill('SIGKILL'), delay);
        }
      }
    });
  });
}

it(`rekey killed at ${KILLS} or more random points: the file opens with the old key or the new one, never neither, every acknowledged row there`, async () => {
  const path = join(dir, 'rekey.sqlite3');
  const hex = { a: randomBytes(32).toString('hex'), b: randomBytes(32).toString('hex') };
  const env = { ...process.env, PAGEWISE_KEY_A: hex.a, PAGEWISE_KEY_B: hex.b };
  const options = { a: { encryption: { key: Uint8Array.from(Buffer.from(hex.a, 'hex')) } }, b: { encryption: { key: Uint8Array.from(Buffer.from(hex.b, 'hex')) } }, plain: {} };
  const seed = await fileStorage(path, options.a)();
  await seed.close();
  const random = rng(40);
  const acked = new Set<number>();
  const opened = { a: 0, b: 0, plain: 0, two: 0, interrupted: 0 };
  let kill = 0;
  for (; kill < MOST_KILLS && (kill < KILLS || opened.two === 0 || opened.interrupted === 0); kill++) {
    const { rows, states } = await runAndKill(path, env, 1 + Math.floor(random() * 6), random());
    for (const r of rows) acked.add(r);
    if (existsSync(`${path}-pagewise-convert`) || existsSync(`${path}-pagewise-convert-ok`)) opened.interrupted++;
    const last = states.at(-1)!;
    const opens: ('a' | 'b' | 'plain')[] = [];
    for (const k of ['a', 'b', 'plain'] as const) {
      try {
        const d = await fileStorage(path, options[k])();
        try {
          expect(await d.query('PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
          const present = new Set((await d.query<{ id: number }>('SELECT id FROM acked')).map((r) => r.id));
          expect([...acked].filter((id) => !present.has(id))).toEqual([]);
        } finally {
          await d.close();
        }
        opens.push(k);
      } catch (error) {
        if (!isPagewiseError(error) || !['WRONG_KEY', 'KEY_REQUIRED'].includes(error.code)) throw error;
      }
    }
    // The key it had acknowledged last, or the one it was changing to (both, between the two slot writes).
    expect(opens.length, `kill ${kill} after "${last}": opens with ${opens.join(', ') || 'nothing'}`).toBeGreaterThanOrEqual(1);
    expect(opens.length).toBeLessThanOrEqual(2);
    for (const k of opens) opened[k]++;
    if (opens.length === 2) opened.two++;
    expect(existsSync(`${path}-pagewise-convert`) || existsSync(`${path}-pagewise-convert-ok`)).toBe(false);
  }
  // The risky moments were reached, not only the quiet ones between changes.
  expect(opened.two).toBeGreaterThanOrEqual(1);
  expect(opened.interrupted).toBeGreaterThanOrEqual(1);
  console.log(`rekey kills: ${kill} kills, ${acked.size} acknowledged rows all present; opened with A ${opened.a}, B ${opened.b}, plain ${opened.plain} times, with two keys ${opened.two} times; ${opened.interrupted} kill(s) interrupted a whole-file rewrite, finished at the next open`);
});
