// fileStorage(path): a database file for Node on sqlite-wasm with a node:fs VFS. The StorageDriver conformance suite,
// persistence across close and reopen, one writer per file (in this process and across processes, stale locks taken
// over), clear errors for bad paths, and a child process killed with SIGKILL while committing: every acknowledged
// commit is there afterwards and the file is sound.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { threadId } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPagewiseError } from '../../../src/contracts/errors.js';
import { fileStorage } from '../../../src/storage/node-file.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import { storageDriverCases } from '../../support/conformance/storage-driver.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

const CHILD = fileURLToPath(new URL('../../support/file-storage-child.ts', import.meta.url));
/** Rows per group batch in the child (GROUP_ROWS there). */
const GROUP_ROWS = 40;

let dir: string;
let n = 0;
const fresh = (name = 'db') => join(dir, `${name}-${++n}.sqlite3`);
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'pagewise-file-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; message: string } | null> {
  return promise.then(() => null, (e: unknown) => {
    if (!isPagewiseError(e)) throw e;
    return { code: e.code, message: e.message };
  });
}

/** Runs the child in `mode` and returns its one JSON line. */
async function child(mode: string, path: string): Promise<Record<string, unknown>> {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, mode, path], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (b: Buffer) => { out += b.toString(); });
  proc.stderr.on('data', (b: Buffer) => { err += b.toString(); });
  const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve));
  if (code !== 0) throw new Error(`child ${mode} exited ${code}: ${err}`);
  return JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
}

describe('StorageDriver conformance: fileStorage (Node, a file through the node:fs VFS)', () => {
  for (const c of storageDriverCases) {
    it(c.name, async () => {
      const path = fresh('conformance');
      const driver = await fileStorage(path)();
      try { await c.run(driver); } finally { await driver.close(); }
      // Closed: the lock and the journal are gone, the file is sound.
      expect(readdirSync(dir).filter((f) => f.startsWith(path.slice(dir.length + 1)))).toEqual([path.slice(dir.length + 1)]);
      const again = await fileStorage(path)();
      try { expect(await again.query('PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]); } finally { await again.close(); }
    });
  }
});

describe('fileStorage: a database file', () => {
  it('keeps every committed row, blob and index across close and reopen', async () => {
    const path = fresh();
    let d: StorageDriver = await fileStorage(path)();
    expect(d.name).toBe('sqlite-wasm:node-file');
    expect(await d.query('PRAGMA journal_mode')).toEqual([{ journal_mode: 'delete' }]);
    expect(await d.query('PRAGMA synchronous')).toEqual([{ synchronous: 2 }]);
    expect(await d.query('PRAGMA foreign_keys')).toEqual([{ foreign_keys: 1 }]);
    await d.batch([{ sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT, data BLOB)' }, { sql: 'CREATE INDEX t_text ON t (text)' }]);
    // More than the page cache would hold in one page, and rows spilling to overflow pages.
    for (let b = 0; b < 20; b++) {
      await d.batch(Array.from({ length: 50 }, (_, i) => {
        const id = b * 50 + i + 1;
        return { sql: 'INSERT INTO t VALUES (?, ?, ?)', params: [id, `row ${id} ${'·'.repeat(id % 300)}`, new Uint8Array(id % 7 === 0 ? 20_000 : 16).fill(id % 251)] };
      }));
    }
    await d.close();
    expect(existsSync(`${path}.lock`)).toBe(false);
    expect(existsSync(`${path}-journal`)).toBe(false);

    d = await fileStorage(path)();
    expect(await d.query('SELECT count(*) AS n, sum(length(data)) AS bytes FROM t')).toEqual([{ n: 1000, bytes: 142 * 20_000 + 858 * 16 }]);
    expect(await d.query('SELECT text FROM t WHERE id = 777')).toEqual([{ text: `row 777 ${'·'.repeat(777 % 300)}` }]);
    const blob = (await d.query<{ data: Uint8Array }>('SELECT data FROM t WHERE id = 700'))[0]!.data;
    expect(blob.length).toBe(20_000);
    expect(blob.every((x) => x === 700 % 251)).toBe(true);
    // A rolled-back batch leaves nothing behind, on disk too.
    const failing = d;
    await expect(Promise.resolve().then(() => failing.batch([{ sql: 'INSERT INTO t (id) VALUES (5000)' }, { sql: 'INSERT INTO t (id) VALUES (1)' }])))
      .rejects.toMatchObject({ code: 'STORAGE_ERROR' });
    await d.batch([{ sql: 'DELETE FROM t WHERE id > 900' }]);
    await d.close();

    d = await fileStorage(path)();
    expect(await d.query('SELECT count(*) AS n, max(id) AS m FROM t')).toEqual([{ n: 900, m: 900 }]);
    expect(await d.query('PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    await d.close();
  });

  it('has FTS5 (same SQLite build as the browser), and the index persists', async () => {
    const path = fresh();
    let d = await fileStorage(path)();
    await d.batch([
      { sql: "CREATE VIRTUAL TABLE notes USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')" },
      { sql: 'INSERT INTO notes (rowid, body) VALUES (1, ?), (2, ?), (3, ?)', params: ['We upgraded the Kubernetes cluster', 'Sourdough starter needs feeding', 'The café near the station'] },
    ]);
    expect((await d.query('SELECT rowid FROM notes WHERE notes MATCH ?', ['upgrade'])).map((r) => r.rowid)).toEqual([1]);
    await d.close();
    d = await fileStorage(path)();
    expect((await d.query('SELECT rowid FROM notes WHERE notes MATCH ?', ['cafe'])).map((r) => r.rowid)).toEqual([3]);
    expect((await d.query('SELECT rowid FROM notes WHERE notes MATCH ?', ['feed'])).map((r) => r.rowid)).toEqual([2]);
    expect((await d.query("SELECT sqlite_compileoption_used('ENABLE_FTS5') AS fts5"))[0]).toEqual({ fts5: 1 });
    await d.close();
  });

  it('spills temporary data (temp_store = FILE) to nameless files that are gone at once', async () => {
    const d = await fileStorage(fresh())();
    const before = readdirSync(tmpdir()).filter((f) => /^pagewise-.*\.tmp$/.test(f));
    await d.query('PRAGMA temp_store = FILE');
    // 20 MB: more than the temp database's page cache, so it reaches its file.
    await d.batch([{ sql: 'CREATE TEMP TABLE scratch (v TEXT)' }, ...Array.from({ length: 2000 }, (_, i) => ({ sql: 'INSERT INTO scratch VALUES (?)', params: [`${i} ${'v'.repeat(10_000)}`] }))]);
    expect(await d.query('SELECT count(DISTINCT v) AS n FROM scratch')).toEqual([{ n: 2000 }]);
    if (process.platform !== 'win32') expect(readdirSync(tmpdir()).filter((f) => /^pagewise-.*\.tmp$/.test(f))).toEqual(before);
    await d.close();
  });

  it('runs the engine: turns stored in one memory are there in the next', async () => {
    const path = fresh('engine');
    let memory = await createMemory({ storage: fileStorage(path) });
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('My sister Ana lives in Porto.', { id: 'u1' }), assistant('Noted: Ana, Porto.', { id: 'a1' })] });
    await memory.close();
    memory = await createMemory({ storage: fileStorage(path) });
    const turns = await memory.turns('c');
    expect(turns.map((t) => t.id)).toEqual(['u1', 'a1']);
    const hits = await memory.callTool('pagewise_search', { query: 'Porto' }, { conversationId: 'c' });
    expect(hits.sourceIds.length).toBeGreaterThan(0);
    expect(hits.content).toContain('Porto');
    await memory.close();
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('exportDatabase gives the file\'s bytes: they open, in memory or as a file, with the same turns', async () => {
    const path = fresh('export');
    const memory = await createMemory({ storage: fileStorage(path) });
    try {
      await memory.onTurnComplete({ conversationId: 'c', messages: [user('My sister Ana lives in Porto.', { id: 'u1' }), assistant('Noted: Ana, Porto.', { id: 'a1' })] });
      const bytes = await memory.exportDatabase();
      expect(Buffer.from(bytes).equals(readFileSync(path))).toBe(true);
      writeFileSync(`${path}.copy`, bytes);
      for (const storage of [sqliteWasm({ bytes }), fileStorage(`${path}.copy`)]) {
        const copy = await createMemory({ storage });
        try { expect(await copy.turns('c')).toEqual(await memory.turns('c')); } finally { await copy.close(); }
      }
      // The engine goes on writing after the export.
      await memory.onTurnComplete({ conversationId: 'c', messages: [user('And her dog is Rui.', { id: 'u2' })] });
      expect((await memory.turns('c')).map((t) => t.id)).toEqual(['u1', 'a1', 'u2']);
    } finally {
      await memory.close();
    }
  });

  it('forget leaves no byte of a forgotten conversation in the file, nor in its journal', async () => {
    const SECRET = 'Quorvex';
    const path = fresh('forget');
    const on = (file: string) => existsSync(file) && readFileSync(file).toString('latin1').toLowerCase().includes(SECRET.toLowerCase());
    const memory = await createMemory({ storage: fileStorage(path) });
    await memory.onTurnComplete({ conversationId: 'secret', messages: [user(`My PIN hint is ${SECRET}.`, { id: 's1' }), assistant(`Noted, ${SECRET} stays private.`, { id: 's2' })] });
    await memory.onTurnComplete({ conversationId: 'kept', messages: [user('The Plimsoll line marks the load.', { id: 'k1' }), assistant('Yes.', { id: 'k2' })] });
    // The control: committed, so on disk.
    expect(on(path)).toBe(true);
    await memory.forget({ conversationId: 'secret' });
    expect(on(path)).toBe(false);
    expect(on(`${path}-journal`)).toBe(false);
    await memory.close();
    expect(on(path)).toBe(false);
    expect(existsSync(`${path}-journal`)).toBe(false);
    const again = await createMemory({ storage: fileStorage(path) });
    expect((await again.conversations()).map((c) => c.id)).toEqual(['kept']);
    await again.close();
  });
});

describe('fileStorage: one writer per file', () => {
  it('refuses a second open in the same process with STORAGE_LOCKED, and opens again after close', async () => {
    const path = fresh();
    const first = await fileStorage(path)();
    expect(readFileSync(`${path}.lock`, 'utf8')).toMatch(new RegExp(`^${process.pid} ${threadId} [0-9a-f]+\n$`));
    const refused = await codeOf(fileStorage(path)());
    expect(refused?.code).toBe('STORAGE_LOCKED');
    expect(refused?.message).toMatch(/already open in this process/);
    expect(refused?.message).toMatch(/Close it there first.*or use another path/);
    // The same file by another spelling of its path.
    expect((await codeOf(fileStorage(join(dir, '.', '..', dir.split(/[\\/]/).pop()!, path.slice(dir.length + 1)))()))?.code).toBe('STORAGE_LOCKED');
    await first.batch([{ sql: 'CREATE TABLE k (v)' }, { sql: 'INSERT INTO k VALUES (1)' }]);
    await first.close();
    const second = await fileStorage(path)();
    expect(await second.query('SELECT v FROM k')).toEqual([{ v: 1 }]);
    await second.close();
  });

  it('refuses an open from another process with STORAGE_LOCKED naming this pid; opens there once closed here', async () => {
    const path = fresh();
    const held = await fileStorage(path)();
    const refused = await child('open', path);
    expect(refused.code).toBe('STORAGE_LOCKED');
    expect(refused.message).toContain(`another process (pid ${process.pid})`);
    expect(refused.message).toMatch(/Close it there first/);
    await held.close();
    expect(await child('open', path)).toEqual({ ok: true });
  });

  it('takes over a lock left by a dead process or an earlier holder of this pid; respects a fresh empty one', async () => {
    const path = fresh();
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    writeFileSync(`${path}.lock`, `${dead} 0\n`);
    let d = await fileStorage(path)();
    expect(readFileSync(`${path}.lock`, 'utf8').startsWith(`${process.pid} ${threadId} `)).toBe(true);
    await d.close();
    // This pid and thread, but not held: an earlier process that had the same pid (containers) left it.
    writeFileSync(`${path}.lock`, `${process.pid} ${threadId} 0123456789ab\n`);
    d = await fileStorage(path)();
    await d.close();
    // Empty: a process between creating and writing it. Refused while new, taken over once old.
    writeFileSync(`${path}.lock`, '');
    expect((await codeOf(fileStorage(path)()))?.code).toBe('STORAGE_LOCKED');
    utimesSync(`${path}.lock`, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    d = await fileStorage(path)();
    await d.close();
    expect(readdirSync(dir).filter((f) => f.includes('.stale'))).toEqual([]);
  });
});

describe('fileStorage: clear errors', () => {
  it('a missing directory is STORAGE_UNAVAILABLE and says to create it', async () => {
    const e = await codeOf(fileStorage(join(dir, 'no-such-dir', 'x.sqlite3'))());
    expect(e?.code).toBe('STORAGE_UNAVAILABLE');
    expect(e?.message).toMatch(/does not exist: create it first/);
  });

  it('a directory, or a file that is no database, is STORAGE_UNAVAILABLE and leaves no lock', async () => {
    const sub = join(dir, 'a-directory');
    mkdirSync(sub);
    expect((await codeOf(fileStorage(sub)()))?.code).toBe('STORAGE_UNAVAILABLE');
    const junk = fresh('junk');
    writeFileSync(junk, 'this is not a database '.repeat(200));
    const e = await codeOf(fileStorage(junk)());
    expect(e?.code).toBe('STORAGE_UNAVAILABLE');
    expect(e?.message).toMatch(/not a database/);
    expect(existsSync(`${junk}.lock`)).toBe(false);
    expect(readFileSync(junk, 'utf8')).toBe('this is not a database '.repeat(200));
  });

  it('a path that names no file is INVALID_OPTIONS', () => {
    for (const bad of ['', '   ', ':memory:', 'a\0b', undefined as unknown as string]) {
      expect(() => fileStorage(bad)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    }
    expect(() => fileStorage('x.db', { synchronous: 'off' as 'full' })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
  });
});

// The same kills on a file encrypted at rest: the journal that rolls a kill back is sealed too.
for (const keyHex of [undefined, randomBytes(32).toString('hex')]) describe(`fileStorage: a process killed while committing${keyHex ? ', encrypted' : ''}`, () => {
  const open = (path: string) => fileStorage(path, keyHex ? { encryption: { key: Uint8Array.from(Buffer.from(keyHex, 'hex')) } } : {});
  const env = keyHex ? { ...process.env, PAGEWISE_TEST_KEY: keyHex } : process.env;
  /** Starts the committing child; resolves once it has acknowledged `target` single rows. */
  function runUntil(path: string, target: number): Promise<{ proc: ChildProcess; rows: Set<number>; groups: Set<number> }> {
    const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, 'commit', path], { stdio: ['ignore', 'pipe', 'pipe'], env });
    const rows = new Set<number>();
    const groups = new Set<number>();
    let buffered = '';
    let err = '';
    let since = -1;
    return new Promise((resolve, reject) => {
      proc.stderr!.on('data', (b: Buffer) => { err += b.toString(); });
      proc.on('exit', (code, signal) => { if (signal !== 'SIGKILL') reject(new Error(`child exited early (${code ?? signal}): ${err}`)); });
      proc.stdout!.on('data', (b: Buffer) => {
        buffered += b.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) {
          const [kind, value] = line.split(' ');
          if (kind === 'ready') since = 0;
          if (kind === 'r') { rows.add(Number(value)); since++; }
          if (kind === 'g') groups.add(Number(value));
        }
        if (since >= target) resolve({ proc, rows, groups });
      });
    });
  }

  it('every acknowledged commit survives SIGKILL; the file is sound; the stale lock is taken over', async () => {
    const path = fresh('kill');
    const acked = new Set<number>();
    const ackedGroups = new Set<number>();
    let hot = 0;
    // Rows stored whose acknowledgement never came, over the kills so far.
    let unacked = 0;
    const targets = [60, 25, 90];
    for (const target of targets) {
      const { proc, rows, groups } = await runUntil(path, target);
      // While it runs, the file is its: refused here.
      const refused = await codeOf(open(path)());
      expect(refused?.code).toBe('STORAGE_LOCKED');
      expect(refused?.message).toContain(`pid ${proc.pid}`);
      // 'close': the process is gone and its pipes are drained, so every acknowledgement written before it died (and
      // still on the pipe) has been read — one event-loop turn after 'exit' is not always enough on a busy machine.
      const closed = new Promise((resolve) => proc.on('close', resolve));
      proc.kill('SIGKILL');
      await closed;
      for (const r of rows) acked.add(r);
      for (const g of groups) ackedGroups.add(g);
      expect(existsSync(`${path}.lock`)).toBe(true);
      // A journal with a header: the kill came inside a commit, and opening rolls it back.
      const journal = `${path}-journal`;
      if (existsSync(journal) && readFileSync(journal).subarray(0, 8).some((b) => b !== 0)) hot++;

      const d = await open(path)();
      expect(await d.query('PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
      const present = new Set((await d.query<{ id: number }>('SELECT id FROM acked')).map((r) => r.id));
      const missing = [...acked].filter((id) => !present.has(id));
      expect(missing).toEqual([]);
      // Group batches are all or nothing, and every acknowledged one is whole.
      const counts = await d.query<{ grp: number; n: number }>('SELECT grp, count(*) AS n FROM grouped GROUP BY grp');
      for (const c of counts) expect(c.n).toBe(GROUP_ROWS);
      const whole = new Set(counts.map((c) => c.grp));
      expect([...ackedGroups].filter((g) => !whole.has(g))).toEqual([]);
      // At most the one commit in flight at this kill went through unacknowledged (each kill may leave its own: the
      // next child goes on from the highest id stored, acknowledged or not).
      expect(present.size - acked.size - unacked).toBeLessThanOrEqual(1);
      unacked = present.size - acked.size;
      await d.close();
    }
    console.log(`kill test: ${targets.length} kills, ${acked.size} acknowledged rows and ${ackedGroups.size} groups all present; ${hot} kill(s) left a hot journal that was rolled back`);
  });

  it('a kill after pages of an open transaction reached the file: the hot journal rolls them back on open', async () => {
    const path = fresh('spill');
    const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, 'spill', path], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    let err = '';
    proc.stderr.on('data', (b: Buffer) => { err += b.toString(); });
    const exited = new Promise<string | null>((resolve) => proc.on('exit', (_code, signal) => resolve(signal)));
    let before = 0;
    await new Promise<void>((resolve, reject) => {
      proc.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        if (/done/.test(out)) reject(new Error('the child committed before it could be killed'));
        if (before === 0 && /spilling/.test(out)) {
          before = statSync(path).size;
          const poll = setInterval(() => {
            // Pages of the uncommitted batch are in the database file: kill now.
            if (statSync(path).size > before + (1 << 20)) { clearInterval(poll); proc.kill('SIGKILL'); resolve(); }
          }, 2);
        }
      });
      void exited.then((signal) => { if (signal !== 'SIGKILL') reject(new Error(`child exited: ${err}`)); });
    });
    expect(await exited).toBe('SIGKILL');
    const journal = readFileSync(`${path}-journal`);
    expect(journal.subarray(0, 8).some((b) => b !== 0)).toBe(true);
    expect(statSync(path).size).toBeGreaterThan(before);

    const d = await open(path)();
    expect(await d.query('PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    expect(await d.query('SELECT count(*) AS n FROM big')).toEqual([{ n: 0 }]);
    expect(await d.query('SELECT count(*) AS n, max(v) AS m FROM base')).toEqual([{ n: 100, m: 'base 99' }]);
    await d.close();
    expect(statSync(path).size).toBe(before);
    expect(existsSync(`${path}-journal`)).toBe(false);
  });
});
