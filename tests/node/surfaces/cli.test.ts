import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, cliIn } from '../../support/cli.js';

// The CLI as a user runs it (tests/support/cli.ts): a separate Node process, on a database file, reading stdout and the
// exit code.
const dir = mkdtempSync(join(tmpdir(), 'pagewise-cli-'));
const db = join(dir, 'memory.sqlite3');
// A short chat written for the tests in LoCoMo's format (tests never read ../shared: a clone stands alone).
const LOCOMO = resolve(import.meta.dirname, '../../fixtures/locomo/priya-tom.json');
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
    // b is new: made on purpose (--create); a mistyped path is refused (below).
    const first = cli('sync', b, '--db', a, '--embedder', 'off', '--create', '--json');
    expect(first.code, first.err).toBe(0);
    expect(first.json()).toMatchObject({ pushed: 61, pulled: 0, conversations: ['priya-tom'] });
    expect(first.err).toMatch(/sync: push 61 turns, 1 batch,/);
    const again = cli('sync', a, '--db', b, '--embedder', 'off');
    expect(again.out).toMatch(/^pulled 0 turns, pushed 0 turns \(0 conversations\); 2 batches,/);
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

  it('sync to a database file that does not exist is refused, naming it and --create; nothing is made or pushed', () => {
    const a = join(dir, 'sync-typo-a.sqlite3');
    expect(cli('import', LOCOMO, '--db', a, '--embedder', 'off').code).toBe(0);
    const typo = join(dir, 'sync-typo-b.sqlit3');
    const r = cli('sync', typo, '--db', a, '--embedder', 'off', '--json');
    expect(r.code, r.err).toBe(1);
    expect(r.json()).toMatchObject({ error: { code: 'NOT_FOUND', message: expect.stringMatching(/sync-typo-b\.sqlit3".*--create/) } });
    expect(existsSync(typo)).toBe(false);
    expect(r.err).not.toMatch(/sync: push/);
    // The other way round: --db mistyped, the other file real.
    const typoDb = join(dir, 'sync-typo-c.sqlite3');
    const back = cli('sync', a, '--db', typoDb, '--embedder', 'off', '--json');
    expect(back.code).toBe(1);
    expect(back.json()).toMatchObject({ error: { code: 'NOT_FOUND', message: expect.stringContaining('sync-typo-c.sqlite3') } });
    expect(existsSync(typoDb)).toBe(false);
  });

  it('a --db that does not exist is NOT_FOUND for every command that does not make one; --create makes it on purpose', () => {
    const missing = join(dir, 'no-such.sqlite3');
    const commands: string[][] = [
      ['status'], ['tags', '-c', 'x'], ['branches', 'x'], ['checkout', 'x', 'm'], ['recall', 'tag', '-c', 'x'],
      ['retrieve', '-c', 'x', '-m', 'hello'], ['transform', '-c', 'x', '-m', 'hello'], ['compact', '-c', 'x'],
      ['aliases', 'list'], ['aliases', 'add', 'db', 'database'], ['cost-report'], ['export'], ['forget', '-c', 'x'],
    ];
    for (const args of commands) {
      const r = cli(...args, '--db', missing, '--embedder', 'off', '--json');
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.json(), args.join(' ')).toMatchObject({ error: { code: 'NOT_FOUND', message: expect.stringMatching(/no-such\.sqlite3".*--create/) } });
      expect(existsSync(missing), args.join(' ')).toBe(false);
    }
    // The default --db (./pagewise.sqlite3) too, run where there is none.
    const cwd = mkdtempSync(join(tmpdir(), 'pagewise-cli-cwd-'));
    try {
      const r = cliIn(cwd, 'status', '--json');
      expect(r.code, r.err).toBe(1);
      expect(r.json()).toMatchObject({ error: { code: 'NOT_FOUND', message: expect.stringContaining('pagewise.sqlite3') } });
      expect(existsSync(join(cwd, 'pagewise.sqlite3'))).toBe(false);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
    const made = cli('status', '--db', missing, '--create', '--json');
    expect(made.code, made.err).toBe(0);
    expect(made.json()).toMatchObject({ conversations: [], encrypted: false });
    expect(existsSync(missing)).toBe(true);
  });

  it('import of a file nested 100,000 deep (arrays or objects, whole or in a field) is INVALID_ARGUMENT saying what shape to pass; nothing stored, no database made', () => {
    const deep = 100_000;
    const arrays = '['.repeat(deep) + ']'.repeat(deep);
    const objects = '{"a":'.repeat(deep) + '1' + '}'.repeat(deep);
    const files: [string, string][] = [
      ['arrays.json', arrays],
      ['objects.json', objects],
      ['messages.json', `{"messages":${arrays}}`],
      ['turns.json', `{"format":"pagewise","version":1,"conversations":[{"id":"x","turns":${arrays}}]}`],
      ['session.json', `{"speaker_a":"A","session_1_date_time":"1:00 pm on 8 May, 2023","session_1":${arrays},"qa":[]}`],
      ['haystack.json', `[{"question_id":"q","question":"?","haystack_dates":[],"haystack_sessions":${objects}}]`],
      ['content.jsonl', `{"messages":[{"role":"user","content":"fine"}]}\n{"messages":[{"role":"user","content":${arrays}}]}\n`],
    ];
    for (const [name, text] of files) {
      const file = join(dir, name);
      writeFileSync(file, text);
      const target = join(dir, `deep-${name}.sqlite3`);
      const r = cli('import', file, '--db', target, '--embedder', 'off', '--json');
      expect(r.code, name).toBe(1);
      const error = (r.json() as { error: { code: string; message: string } }).error;
      expect(error.code, name).toBe('INVALID_ARGUMENT');
      expect(error.message, name).toMatch(/more than 64 levels deep.*pass a LoCoMo conversation \{ speaker_a, session_1/);
      expect(error.message, name).toContain(name);
      expect(r.err, name).not.toMatch(/Cannot read properties|Maximum call stack|import: \d+\//);
      expect(existsSync(target), name).toBe(false);
    }
  });

  it('import of a file of the wrong shape names the field and what belongs there, and stores nothing (not even earlier lines)', () => {
    const cases: [string, string, RegExp][] = [
      ['lme.json', '[[[1]]]', /\[0\] must be a question \{ question_id, question, haystack_dates, haystack_sessions \} \(got an array\)/],
      ['haystack.json', '[{"question_id":"q","question":"?","question_type":"t","question_date":"2023/05/20 (Sat) 02:21","haystack_dates":["2023/05/20 (Sat) 02:21"],"haystack_sessions":[[[1]]]}]', /\[0\]\.haystack_sessions\[0\]\[0\] must be a turn \{ role, content \}/],
      ['locomo.json', '{"speaker_a":"A","session_1_date_time":"1:00 pm on 8 May, 2023","session_1":[[1]]}', /session_1\[0\] must be a turn \{ speaker, dia_id, text \}/],
      ['no-date.json', '{"speaker_a":"A","session_1":[]}', /session_1_date_time must be a LoCoMo date .* \(it is missing\)/],
      ['lines.jsonl', '{"messages":[{"role":"user","content":"stored first?"}]}\n{"messages":[[1]]}\n', /line 2: messages\[0\] must be a message \{ role, content \}/],
      ['other.json', '{"a":{"b":1}}', /none of the formats pagewise imports: pass a LoCoMo conversation/],
    ];
    for (const [name, text, message] of cases) {
      const file = join(dir, name);
      writeFileSync(file, text);
      const target = join(dir, `shape-${name}.sqlite3`);
      const r = cli('import', file, '--db', target, '--embedder', 'off', '--json');
      expect(r.code, name).toBe(1);
      expect(r.json(), name).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) } });
      expect(existsSync(target), name).toBe(false);
    }
    // A bad message in a later line: the first line's conversation is not stored either.
    writeFileSync(join(dir, 'role.jsonl'), '{"id":"first","messages":[{"role":"user","content":"hello"}]}\n{"messages":[{"role":"robot","content":"x"}]}\n');
    const target = join(dir, 'role.sqlite3');
    const r = cli('import', join(dir, 'role.jsonl'), '--db', target, '--embedder', 'off', '--json');
    expect(r.json()).toMatchObject({ error: { code: 'INVALID_ROLE', message: expect.stringContaining('line 2: messages[0].role') } });
    expect(existsSync(target)).toBe(false);
  });
});
