// A child process for tests/node/storage/encryption-kill.test.ts, run as `node --import tsx rekey-child.ts <path>`
// with PAGEWISE_KEY_A and PAGEWISE_KEY_B (hex) in the environment. It opens the file with whichever of A, B or no key
// opens it, then forever: commits one row (`r <id>` once committed), and changes the key — A to B and back in place,
// and now and then to plain and back, the whole file rewritten (`s <next>` as it starts, `k <a|b|plain> <ms>` once
// done). The parent kills it.
import { writeSync } from 'node:fs';
import { isPagewiseError } from '../../src/contracts/errors.js';
import type { StorageDriver } from '../../src/contracts/types.js';
import { fileStorage } from '../../src/storage/node-file.js';

const path = process.argv[2]!;
const keys = { a: Buffer.from(process.env.PAGEWISE_KEY_A!, 'hex'), b: Buffer.from(process.env.PAGEWISE_KEY_B!, 'hex') };
const encryption = (k: 'a' | 'b' | 'plain') => (k === 'plain' ? null : { key: Uint8Array.from(keys[k]) });

let driver: StorageDriver | undefined;
let state: 'a' | 'b' | 'plain' = 'a';
for (const k of ['a', 'b', 'plain'] as const) {
  try {
    const e = encryption(k);
    driver = await fileStorage(path, e ? { encryption: e } : {})();
    state = k;
    break;
  } catch (error) {
    if (!isPagewiseError(error) || !['WRONG_KEY', 'KEY_REQUIRED'].includes(error.code)) throw error;
  }
}
if (!driver) throw new Error('no key opens the file');
await driver.batch([{ sql: 'CREATE TABLE IF NOT EXISTS acked (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)' }]);
let id = Number((await driver.query<{ m: number }>('SELECT coalesce(max(id), 0) AS m FROM acked'))[0]!.m);
writeSync(1, `ready ${state}\n`);
for (let step = 0; ; step++) {
  id++;
  await driver.batch([{ sql: 'INSERT INTO acked (id, payload) VALUES (?, ?)', params: [id, `row ${id} `.repeat(400)] }]);
  writeSync(1, `r ${id}\n`);
  const next = state === 'plain' ? 'a' : step % 4 === 3 ? 'plain' : state === 'a' ? 'b' : 'a';
  writeSync(1, `s ${next}\n`);
  const started = performance.now();
  await driver.rekey!(encryption(next));
  state = next;
  writeSync(1, `k ${state} ${(performance.now() - started).toFixed(1)}\n`);
}
