import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// The CLI as a user runs it: a separate Node process, on a database file, reading stdout and the exit code.
const dir = mkdtempSync(join(tmpdir(), 'pagewise-cli-'));
const db = join(dir, 'memory.sqlite3');
// A short chat written for the tests in LoCoMo's format (tests never read ../shared: a clone stands alone).
const LOCOMO = resolve(import.meta.dirname, '../fixtures/locomo/priya-tom.json');
const cli = (...args: string[]) => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, '../../src/surfaces/cli.ts'), ...args], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr, json: () => JSON.parse(r.stdout) as Record<string, unknown> };
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npx pagewise (the CLI)', () => {
  it('imports a LoCoMo file with progress, then status, retrieve, transform, tags, forget, export and import on the file', () => {
    const imported = cli('import', LOCOMO, '--db', db, '--embedder', 'off', '--json');
    expect(imported.code, imported.err).toBe(0);
    expect(imported.json()).toEqual({ conversations: ['priya-tom'], stored: 61 });
    expect(imported.err).toMatch(/import: \d+\/32 batches/);
    const status = cli('status', '--db', db, '--json');
    expect((status.json().conversations as { id: string; turns: number }[])[0]).toMatchObject({ id: 'priya-tom', turns: 61 });
    const retrieved = cli('retrieve', '-c', 'priya-tom', '-m', "What is the name of Priya's cat?", '--db', db, '--embedder', 'off', '--window', '1024', '--json');
    expect(retrieved.code).toBe(0);
    const r = retrieved.json() as { manifest: { kind: string; sourceIds: string[] }[]; budget: { total: number; available: number } };
    expect(r.budget.total).toBeLessThanOrEqual(r.budget.available);
    expect(r.manifest.filter((e) => e.kind === 'recall').flatMap((e) => e.sourceIds)).toContain('D2:9'); // the evidence: "Biscuit. She already knocked a plant off…"
    const transformed = cli('transform', '-c', 'priya-tom', '-m', "What is the name of Priya's cat?", '--db', db, '--embedder', 'off', '--window', '1024');
    expect(transformed.out).toContain('<prior-conversation>');
    expect(transformed.out).toMatch(/<turn role="user"[^\n]*>\nWhat is the name of Priya's cat\?\n<\/turn>/);
    expect(cli('tags', '-c', 'priya-tom', '--db', db, '--json').json()).toEqual(expect.arrayContaining([expect.objectContaining({ tag: 'biscuit' })]));
    const forgot = cli('forget', '-c', 'priya-tom', '--message', 'D1:3', '--db', db, '--embedder', 'off', '--json');
    expect(forgot.json()).toMatchObject({ messageIds: ['D1:3'], conversationRemoved: false });
    // The count is of the turns stored, not the highest position (a forget leaves a gap).
    expect((cli('status', '--db', db, '--json').json().conversations as { turns: number }[])[0]!.turns).toBe(60);
    const file = join(dir, 'export.json');
    expect(cli('export', '-o', file, '--db', db, '--json').json()).toEqual({ file, conversations: 1 });
    const copy = join(dir, 'copy.sqlite3');
    expect(cli('import', file, '--db', copy, '--embedder', 'off', '--json').json()).toMatchObject({ turns: 60, skipped: 0 });
    expect((JSON.parse(readFileSync(file, 'utf8')) as { conversations: { turns: unknown[] }[] }).conversations[0]!.turns).toHaveLength(60);
  });

  it('replays a benchmark file in memory and prints the evidence found', () => {
    const replay = cli('replay', LOCOMO, '--embedder', 'off', '--window', '3000', '--json');
    expect(replay.code, replay.err).toBe(0);
    const out = replay.json() as { questions: number; evidenceShare: number };
    expect(out.questions).toBe(15);
    expect(out.evidenceShare).toBeGreaterThan(0.5);
  });

  it('exit codes a script can rely on: 2 for a bad command line, 1 with the error code for a refusal', () => {
    expect(cli('frobnicate').code).toBe(2);
    expect(cli('tags', '--db', db).code).toBe(2);
    expect(cli('status', '--window', 'lots', '--db', db).code).toBe(2);
    const refused = cli('forget', '-c', 'nope', '--db', db, '--embedder', 'off', '--json');
    expect(refused.code).toBe(1);
    expect(refused.json()).toMatchObject({ error: { code: 'CONVERSATION_NOT_FOUND' } });
    // The fix named as a command, not as the API (it said "List them with memory.conversations()").
    expect((refused.json().error as { message: string }).message).toMatch(/List them with `pagewise status`\.$/);
    expect(cli('config', 'validate', LOCOMO).code).toBe(1);
    expect(cli('--help').code).toBe(0);
  });

  it('config validate refuses what is not a JSON object of options, naming what it got and what to write', () => {
    const file = join(dir, 'options.json');
    for (const [text, got] of [['[]', 'an array'], ['null', 'null'], ['3', 'a number'], ['"window"', 'a string']] as const) {
      writeFileSync(file, text);
      const r = cli('config', 'validate', file, '--json');
      expect(r.code, text).toBe(1);
      expect(r.json(), text).toMatchObject({ error: { code: 'INVALID_OPTIONS', message: expect.stringContaining(`holds ${got}, but engine options are a JSON object`) } });
    }
    writeFileSync(file, '{"contextWindow": ');
    expect(cli('config', 'validate', file, '--json').json()).toMatchObject({ error: { code: 'INVALID_OPTIONS', message: expect.stringContaining('is not JSON') } });
    // A BOM (as Windows editors write) is the file's encoding mark, not content.
    writeFileSync(file, '\uFEFF{"contextWindow": 8000}');
    expect(cli('config', 'validate', file, '--json').json()).toEqual({ valid: true });
    const missing = cli('config', 'validate', join(dir, 'nowhere.json'), '--json');
    expect(missing.code).toBe(1);
    expect(missing.json()).toMatchObject({ error: { code: 'NOT_FOUND', message: expect.stringContaining('nowhere.json') } });
  });

  it('sync: one database file with another, nothing the second time; an endpoint without a token is refused', () => {
    const a = join(dir, 'sync-a.sqlite3');
    const b = join(dir, 'sync-b.sqlite3');
    expect(cli('import', LOCOMO, '--db', a, '--embedder', 'off').code).toBe(0);
    const first = cli('sync', b, '--db', a, '--embedder', 'off', '--json');
    expect(first.code, first.err).toBe(0);
    expect(first.json()).toMatchObject({ pushed: 61, pulled: 0, conversations: ['priya-tom'] });
    expect(first.err).toMatch(/sync: push 61 turns, 1 batches/);
    const again = cli('sync', a, '--db', b, '--embedder', 'off');
    expect(again.out).toMatch(/^pulled 0, pushed 0 turns \(0 conversations\)/);
    const ids = (path: string) => {
      const file = join(dir, `${basename(path)}.json`);
      expect(cli('export', '--db', path, '-o', file).code).toBe(0);
      return (JSON.parse(readFileSync(file, 'utf8')) as { conversations: { turns: { id: string }[] }[] }).conversations[0]!.turns.map((t) => t.id);
    };
    expect(ids(b)).toHaveLength(61);
    expect(ids(b)).toEqual(ids(a));
    const refused = cli('sync', 'https://memory.example/v1/pagewise/sync', '--db', a, '--embedder', 'off');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/UNAUTHENTICATED.*--token TOKEN, or PAGEWISE_SYNC_TOKEN/);
    expect(cli('sync', '--db', a).code).toBe(2);
  });

  it('import of a missing file is NOT_FOUND naming the path, and leaves no database behind', () => {
    const target = join(dir, 'untouched.sqlite3');
    const r = cli('import', join(dir, 'missing.json'), '--db', target, '--embedder', 'off', '--json');
    expect(r.code).toBe(1);
    expect(r.json()).toMatchObject({ error: { code: 'NOT_FOUND', message: expect.stringMatching(/missing\.json".*pass the path of a LoCoMo/) } });
    expect(existsSync(target)).toBe(false);
  });
});
