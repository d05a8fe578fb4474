// A child process for tests/node/storage/file-storage.test.ts, run as `node --import tsx file-storage-child.ts <mode> <path>`
// (with PAGEWISE_TEST_KEY=<hex> in the environment, on an encrypted file).
//   open    tries to open the file; prints {"ok":true} or {"code":…,"message":…} and exits.
//   commit  opens the file and commits forever, one transaction per batch() call: single rows (`r <id>` once the
//           commit returned) and, every 10th, a group of GROUP_ROWS large rows in one batch (`g <group>`). The
//           parent kills it with SIGKILL.
//   spill   commits a small table, prints `spilling`, then runs one batch of about 64 MiB: more than SQLite's page cache
//           holds, so pages reach the database file before the commit. The parent kills it then; printing `done`
//           means it was too slow to.
import { writeSync } from 'node:fs';
import { isPagewiseError } from '../../src/contracts/errors.js';
import { fileStorage } from '../../src/storage/node-file.js';

export const GROUP_ROWS = 40;
const [mode, path] = process.argv.slice(2);
// PAGEWISE_TEST_KEY (hex): the file is encrypted with that key.
const keyHex = process.env.PAGEWISE_TEST_KEY;
const options = keyHex ? { encryption: { key: Uint8Array.from(Buffer.from(keyHex, 'hex')) } } : {};

if (mode === 'open') {
  try {
    const driver = await fileStorage(path!, options)();
    await driver.close();
    console.log(JSON.stringify({ ok: true }));
  } catch (e) {
    console.log(JSON.stringify(isPagewiseError(e) ? { code: e.code, message: e.message } : { error: String(e) }));
  }
} else if (mode === 'commit') {
  const driver = await fileStorage(path!, options)();
  await driver.batch([
    { sql: 'CREATE TABLE IF NOT EXISTS acked (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)' },
    { sql: 'CREATE TABLE IF NOT EXISTS grouped (grp INTEGER NOT NULL, n INTEGER NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (grp, n))' },
  ]);
  let id = Number((await driver.query<{ m: number }>('SELECT coalesce(max(id), 0) AS m FROM acked'))[0]!.m);
  let group = Number((await driver.query<{ m: number }>('SELECT coalesce(max(grp), 0) AS m FROM grouped'))[0]!.m);
  // Written with writeSync: an acknowledgement is on the pipe before the next transaction starts, on every platform.
  writeSync(1, 'ready\n');
  for (;;) {
    id++;
    await driver.batch([{ sql: 'INSERT INTO acked (id, payload) VALUES (?, ?)', params: [id, `row ${id} `.repeat(8)] }]);
    writeSync(1, `r ${id}\n`);
    if (id % 10 === 0) {
      group++;
      const big = `group ${group} `.repeat(300);
      await driver.batch(Array.from({ length: GROUP_ROWS }, (_, n) => ({ sql: 'INSERT INTO grouped (grp, n, payload) VALUES (?, ?, ?)', params: [group, n, big] })));
      writeSync(1, `g ${group}\n`);
    }
  }
} else if (mode === 'spill') {
  const driver = await fileStorage(path!, options)();
  await driver.batch([
    { sql: 'CREATE TABLE base (id INTEGER PRIMARY KEY, v TEXT NOT NULL)' },
    { sql: 'CREATE TABLE big (id INTEGER PRIMARY KEY, data BLOB NOT NULL)' },
    ...Array.from({ length: 100 }, (_, i) => ({ sql: 'INSERT INTO base VALUES (?, ?)', params: [i, `base ${i}`] })),
  ]);
  writeSync(1, 'spilling\n');
  const blob = new Uint8Array(100_000).fill(7);
  await driver.batch(Array.from({ length: 640 }, (_, i) => ({ sql: 'INSERT INTO big VALUES (?, ?)', params: [i, blob] })));
  writeSync(1, 'done\n');
  await driver.close();
} else {
  console.error(`unknown mode ${String(mode)}`);
  process.exit(2);
}
