import { migrate, SCHEMA_VERSION } from '../../../src/store/schema.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import { equal, ok, rejectsWith } from './assert.js';
import { hostileStrings, hostileTwins, utf8Hex, visible } from './hostile-text.js';
import { storageLimitCases } from './storage-limits.js';

/** One conformance case: gets a fresh, empty driver. */
export interface DriverCase {
  name: string;
  run(driver: StorageDriver): Promise<void>;
}

/**
 * The StorageDriver conformance suite. Every driver runs it: sqlite-wasm in memory (Node, with its build's limits and
 * with the edge's), sqlite-wasm on OPFS inside a real Worker (Chromium), Durable Object SQL (workerd, with the edge
 * issue). The cases of storage-limits.ts hold each driver to the limits it declares.
 */
const driverCases: DriverCase[] = [
  {
    name: 'round-trips every value type',
    async run(d) {
      await d.batch([{ sql: 'CREATE TABLE v (t TEXT, i INTEGER, r REAL, n TEXT, b BLOB)' }]);
      const blob = new Uint8Array([0, 1, 2, 254, 255]);
      const text = 'naïve café — 日本語 🧠 "quotes" \'single\' \u0000nul';
      await d.batch([{ sql: 'INSERT INTO v VALUES (?, ?, ?, ?, ?)', params: [text, 9007199254740991, 3.25, null, blob] }]);
      const rows = await d.query('SELECT t, i, r, n, b FROM v');
      equal(rows.length, 1, 'one row');
      const row = rows[0]!;
      equal(row.t, text, 'text');
      equal(Number(row.i), 9007199254740991, 'integer');
      equal(row.r, 3.25, 'real');
      equal(row.n, null, 'null');
      ok(row.b instanceof Uint8Array, 'blob comes back as Uint8Array');
      equal(Array.from(row.b as Uint8Array), Array.from(blob), 'blob bytes');
      // Past 2^53 a double would round: the exact value comes back (as a BigInt, or whatever keeps it exact).
      const big = 9223372036854775807n;
      await d.batch([{ sql: 'INSERT INTO v (i) VALUES (?)', params: [big] }]);
      const back = (await d.query('SELECT i FROM v WHERE i > ?', [9007199254740991]))[0]!.i;
      // A driver that says so (Durable Object SQL) gives the nearest double; the stored value is still exact.
      if (d.roundsLargeIntegers) equal(back, Number(big), 'integer beyond 2^53, as the nearest double');
      else equal(String(back), String(big), 'integer beyond 2^53 is exact');
      equal(String((await d.query('SELECT CAST(i AS TEXT) AS t FROM v WHERE i > ?', [9007199254740991]))[0]!.t), String(big), 'stored exactly');
    },
  },
  {
    name: 'hostile ids round-trip byte-exact as keys and values, and each finds only its own row',
    async run(d) {
      await d.batch([
        { sql: 'CREATE TABLE h (k TEXT PRIMARY KEY, v TEXT NOT NULL)' },
        ...hostileStrings.map((s) => ({ sql: 'INSERT INTO h (k, v) VALUES (?, ?)', params: [s, s] })),
      ]);
      const rows = await d.query<{ k: string; v: string; hex: string }>('SELECT k, v, hex(k) AS hex FROM h');
      equal(rows.length, hostileStrings.length, 'one row per string');
      const wanted = new Set(hostileStrings);
      for (const row of rows) {
        ok(wanted.has(row.k), `read back a key that was never written: ${visible(row.k)} (stored as ${row.hex})`);
        ok(row.v === row.k, `value ${visible(row.v)} differs from its key ${visible(row.k)}`);
        wanted.delete(row.k);
      }
      equal([...wanted].map(visible), [], 'strings not read back');
      for (const s of hostileStrings) {
        // The bytes stored are the string's UTF-8, whatever the read path does with them.
        equal((await d.query('SELECT hex(k) AS hex FROM h WHERE k = ?', [s]))[0]?.hex, utf8Hex(s), `bytes of ${visible(s)}`);
        for (const column of ['k', 'v']) {
          const found = await d.query<{ k: string; v: string }>(`SELECT k, v FROM h WHERE ${column} = ?`, [s]);
          ok(found.length === 1 && found[0]!.k === s && found[0]!.v === s, `${column} = ${visible(s)} finds ${JSON.stringify(found.map((r) => visible(r.k)))}`);
        }
      }
      for (const [a, b] of hostileTwins) {
        equal((await d.query('SELECT count(*) AS n FROM h WHERE k IN (?, ?)', [a, b]))[0]?.n, 2, `${visible(a)} and ${visible(b)} are two keys`);
      }
    },
  },
  {
    name: 'binds parameters and returns rows as objects in order',
    async run(d) {
      await d.batch([
        { sql: 'CREATE TABLE p (k INTEGER, v TEXT)' },
        ...[3, 1, 2].map((k) => ({ sql: 'INSERT INTO p VALUES (?, ?)', params: [k, `v${k}`] })),
      ]);
      equal(await d.query('SELECT k, v FROM p WHERE k >= ? ORDER BY k', [2]), [{ k: 2, v: 'v2' }, { k: 3, v: 'v3' }], 'rows');
      equal(await d.query('SELECT k FROM p WHERE k > 10'), [], 'no rows');
    },
  },
  {
    name: 'batch is atomic: one failing statement rolls back all of it',
    async run(d) {
      await d.batch([{ sql: 'CREATE TABLE a (k INTEGER PRIMARY KEY)' }, { sql: 'INSERT INTO a VALUES (1)' }]);
      await rejectsWith(() => d.batch([
        { sql: 'INSERT INTO a VALUES (2)' },
        { sql: 'INSERT INTO a VALUES (1)' },
      ]), 'STORAGE_ERROR', 'duplicate key');
      equal(await d.query('SELECT k FROM a ORDER BY k'), [{ k: 1 }], 'only the committed row');
      await d.batch([{ sql: 'INSERT INTO a VALUES (3)' }]);
      equal((await d.query('SELECT COUNT(*) AS n FROM a'))[0]!.n, 2, 'usable after a rollback');
      await d.batch([]);
    },
  },
  {
    name: 'a statement that failed runs again cleanly with other parameters (prepared statements are reused)',
    async run(d) {
      await d.batch([{ sql: 'CREATE TABLE u (k INTEGER PRIMARY KEY, v TEXT NOT NULL)' }]);
      const insert = 'INSERT INTO u (k, v) VALUES (?, ?)';
      await d.batch([{ sql: insert, params: [1, 'one'] }]);
      await rejectsWith(() => d.batch([{ sql: insert, params: [2, null] }]), 'STORAGE_ERROR', 'NOT NULL');
      await d.batch([{ sql: insert, params: [2, 'two'] }]);
      const select = 'SELECT v FROM u WHERE k = ?';
      equal(await d.query(select, [2]), [{ v: 'two' }], 'no stale binding');
      equal(await d.query(select, [3]), [], 'no stale row');
      // More distinct statements than a driver would keep prepared, then the first ones again.
      for (let i = 0; i < 300; i++) equal((await d.query(`SELECT ${i} AS n, v FROM u WHERE k = ?`, [1]))[0], { n: i, v: 'one' }, `statement ${i}`);
      equal(await d.query(select, [1]), [{ v: 'one' }], 'evicted statements prepare again');
    },
  },
  {
    name: 'SQL errors are STORAGE_ERROR naming the statement',
    async run(d) {
      const e = await rejectsWith(() => d.query('SELECT * FROM missing_table'), 'STORAGE_ERROR', 'missing table');
      ok(/missing_table/.test(e.message), 'message names the table');
    },
  },
  {
    name: 'FTS5 with porter stemming, bm25 and column weights',
    async run(d) {
      await d.batch([
        { sql: "CREATE VIRTUAL TABLE f USING fts5(text, name, content='', tokenize='porter unicode61 remove_diacritics 2')" },
        { sql: 'INSERT INTO f (rowid, text, name) VALUES (?, ?, ?)', params: [1, 'I went running at the races', 'Caroline'] },
        { sql: 'INSERT INTO f (rowid, text, name) VALUES (?, ?, ?)', params: [2, 'Cooking pasta tonight', 'Melanie'] },
        { sql: 'INSERT INTO f (rowid, text, name) VALUES (?, ?, ?)', params: [3, 'The café had great crêpes', 'Caroline'] },
      ]);
      const hits = await d.query<{ rowid: number; s: number }>("SELECT rowid, bm25(f, 1.0, 0.5) AS s FROM f WHERE f MATCH ? ORDER BY s", ['"race" OR "run"']);
      equal(hits.map((h) => h.rowid), [1], 'stemmed match');
      ok(hits[0]!.s < 0, 'bm25 is negative (lower is better)');
      equal((await d.query("SELECT rowid FROM f WHERE f MATCH ?", ['"cafe"'])).map((r) => r.rowid), [3], 'diacritics folded');
      equal((await d.query("SELECT rowid FROM f WHERE f MATCH ? ORDER BY rowid", ['"caroline"'])).map((r) => r.rowid), [1, 3], 'speaker column searchable');
    },
  },
  {
    name: 'JSON1 functions',
    async run(d) {
      const rows = await d.query("SELECT json_extract(?, '$.a[1]') AS x, json_array_length(?) AS n", ['{"a":[1,"two"]}', '[1,2,3]']);
      equal(rows[0], { x: 'two', n: 3 }, 'json_extract / json_array_length');
    },
  },
  {
    name: 'a 1 MiB text round-trips',
    async run(d) {
      const big = 'x'.repeat(1024 * 1024 - 3) + 'end';
      await d.batch([{ sql: 'CREATE TABLE big (t TEXT)' }, { sql: 'INSERT INTO big VALUES (?)', params: [big] }]);
      const rows = await d.query<{ n: number; tail: string }>('SELECT length(t) AS n, substr(t, -3) AS tail FROM big');
      equal(rows[0], { n: big.length, tail: 'end' }, 'length and tail');
    },
  },
  {
    name: 'pagewise schema migrates once and refuses edits to canonical turns',
    async run(d) {
      await migrate(d);
      await migrate(d);
      equal(await d.query("SELECT value FROM pagewise_meta WHERE key = 'schema_version'"), [{ value: String(SCHEMA_VERSION) }], 'version');
      await d.batch([
        { sql: "INSERT INTO conversations (id, created_at, updated_at) VALUES ('c', 'x', 'x')" },
        { sql: `INSERT INTO turns (conversation_id, seq, id, role, content, created_at, created_ms, stored_at, content_hash, text)
                VALUES ('c', 0, 't0', 'user', '"hi"', 'x', 0, 'x', 'h', 'hi')` },
      ]);
      await rejectsWith(() => d.batch([{ sql: "UPDATE turns SET text = 'changed'" }]), 'STORAGE_ERROR', 'update refused');
      await rejectsWith(() => d.batch([{ sql: 'DELETE FROM turns' }]), 'STORAGE_ERROR', 'delete refused');
      equal(await d.query('SELECT text FROM turns'), [{ text: 'hi' }], 'turn unchanged');
    },
  },
  {
    name: 'after close, calls fail with ENGINE_CLOSED',
    async run(d) {
      await d.close();
      await rejectsWith(() => d.query('SELECT 1'), 'ENGINE_CLOSED', 'query after close');
      await rejectsWith(() => d.batch([{ sql: 'SELECT 1' }]), 'ENGINE_CLOSED', 'batch after close');
      await d.close();
    },
  },
];

export const storageDriverCases: DriverCase[] = [...driverCases, ...storageLimitCases];
