import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, cliIn } from '../../support/cli.js';
import { progress } from '../../../src/surfaces/cli-text.js';

// What a person reads at the command line: each command's own --help, progress that suits where stderr goes, and
// counts with their nouns in agreement. The CLI runs as a separate process (tests/support/cli.ts), stderr a pipe.
const dir = mkdtempSync(join(tmpdir(), 'pagewise-cli-usage-'));
const LOCOMO = resolve(import.meta.dirname, '../../fixtures/locomo/priya-tom.json');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const COMMANDS = ['status', 'tags', 'branches', 'checkout', 'recall', 'retrieve', 'transform', 'compact', 'aliases', 'cost-report', 'config', 'import', 'export', 'forget', 'replay', 'sync', 'mcp', 'rekey', 'keygen', 'search'];

describe('pagewise COMMAND --help', () => {
  it('prints that command\'s usage, options and an example, exits 0 and opens no database', () => {
    const cwd = mkdtempSync(join(dir, 'help-'));
    const missing = join(cwd, 'typo.sqlite3');
    for (const command of COMMANDS) {
      const r = cliIn(cwd, command, '--help', '--db', missing);
      expect(r.code, `${command}: ${r.err}`).toBe(0);
      expect(r.out, command).toMatch(new RegExp(`^pagewise ${command}\\b`));
      expect(r.out, command).toContain('\nOptions:\n');
      expect(r.out, command).toMatch(new RegExp(`\\nExample:\\n  ([A-Z_]+=\\S+ )?pagewise ${command} `));
      expect(r.out, `${command}: the general help instead`).not.toContain('Commands (a database file');
      expect(r.err, command).toBe('');
    }
    // -h is --help; `pagewise help COMMAND` says the same.
    const short = cliIn(cwd, 'mcp', '-h');
    expect(short.code).toBe(0);
    expect(short.out).toBe(cliIn(cwd, 'mcp', '--help').out);
    expect(cliIn(cwd, 'help', 'mcp').out).toBe(short.out);
    for (const flag of ['--http PORT', '--host ADDR', '--token TOKEN', 'PAGEWISE_MCP_TOKEN', '--allow-host NAME', '--allow-origin ORIGIN']) expect(short.out).toContain(flag);
    // Nothing opened: neither --db nor the default ./pagewise.sqlite3 exists, and mcp did not wait for a client.
    expect(readdirSync(cwd)).toEqual([]);
    // The general help names the way in; an unknown command's help is a bad command line.
    expect(cliIn(cwd, '--help').out).toContain('pagewise COMMAND --help');
    const unknown = cliIn(cwd, 'frobnicate', '--help');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('unknown command "frobnicate"');
  });
});

describe('progress and counts', () => {
  it('an import into a log (stderr not a terminal) prints a first and a last line, not one per batch', () => {
    const r = cli('import', LOCOMO, '--db', join(dir, 'locomo.sqlite3'), '--embedder', 'off');
    expect(r.code, r.err).toBe(0);
    const lines = r.err.split('\n').filter((l) => l !== '');
    expect(lines).toEqual(['import: 32 batches of messages in 1 conversation to store', 'import: 32/32 batches, 61 messages stored']);
    expect(r.out).toBe('61 messages stored in 1 conversation\n');
  });

  it('one of a thing is said in the singular: import, status, export, sync, forget', () => {
    const file = join(dir, 'one.jsonl');
    writeFileSync(file, '{"id":"solo","messages":[{"id":"m1","role":"user","content":"Our deploys go out on Tuesdays."}]}\n');
    const db = join(dir, 'one.sqlite3');
    const imported = cli('import', file, '--db', db, '--embedder', 'off');
    expect(imported.code, imported.err).toBe(0);
    expect(imported.out).toBe('1 message stored in 1 conversation\n');
    expect(imported.err).toContain('import: 1 batch of messages in 1 conversation to store\n');
    expect(cli('status', '--db', db).out).toMatch(/^solo\t1 turn\t\d+ tags?\t0 summaries\tupdated /);
    expect(cli('export', '--db', db, '-o', join(dir, 'one.json')).out).toBe(`1 conversation → ${join(dir, 'one.json')}\n`);

    const copy = join(dir, 'one-copy.sqlite3');
    const synced = cli('sync', copy, '--create', '--db', db, '--embedder', 'off');
    expect(synced.code, synced.err).toBe(0);
    expect(synced.out).toMatch(/^pulled 0 turns, pushed 1 turn \(1 conversation\); 2 batches, /);
    // A log gets one line per direction, with what moved in it.
    expect(synced.err.split('\n').filter((l) => l !== '')).toEqual([expect.stringMatching(/^sync: pull 0 turns, 1 batch, /), expect.stringMatching(/^sync: push 1 turn, 1 batch, /)]);

    const forgot = cli('forget', '-c', 'solo', '--message', 'm1', '--db', copy, '--embedder', 'off');
    expect(forgot.code, forgot.err).toBe(0);
    expect(forgot.out).toMatch(/^forgot 1 message \(the conversation is gone\); \d+ summar(y|ies) to rebuild\n$/);
  });

  it('on a terminal, one line rewritten in place (at most ten times a second), ended with its last state', () => {
    const writes: string[] = [];
    let clock = 0;
    const p = progress({ isTTY: true, write: (t) => writes.push(t) }, 'import', '100 batches to store', () => clock);
    for (let i = 1; i <= 100; i++) {
      clock += 5; // 100 batches in half a second
      p.update(`${i}/100 batches`);
    }
    p.end('100/100 batches, 200 messages stored');
    const text = writes.join('');
    expect(text.split('\n')).toEqual([expect.stringMatching(/^\r\x1b\[Kimport: 100 batches to store\r/), '']);
    expect(writes.length).toBeLessThanOrEqual(8); // the start, at most 5 updates, the end
    expect(writes.at(-1)).toBe('\r\x1b[Kimport: 100/100 batches, 200 messages stored\n');
    expect(writes.some((w) => w.includes('/100 batches') && !w.includes('\n'))).toBe(true);

    // In a log the updates are not written; a stopped command leaves its start line alone.
    const log: string[] = [];
    const q = progress({ isTTY: false, write: (t) => log.push(t) }, 'sync');
    q.update('push 3 turns, 1 batch, 0.4 KB');
    q.end();
    expect(log).toEqual([]);
  });
});
