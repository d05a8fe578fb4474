// A child process for tests/node/engine/sync-kill.test.ts, run as `node --import tsx sync-kill-child.ts <a> <b> <batchTurns>`:
// opens the memories on files a and b and runs `b.sync(a)` (B pulls what A has) in batches of `batchTurns`, printing
// `batch <direction> <n> <turns>` once each batch is applied, and `done <report as JSON>` at the end. The parent kills
// it with SIGKILL somewhere in between.
import { writeSync } from 'node:fs';
import { createMemory } from '../../src/index.js';
import { fileStorage } from '../../src/storage/node-file.js';

const [aPath, bPath, batchTurns] = process.argv.slice(2);
const a = await createMemory({ storage: fileStorage(aPath!), embedder: false });
const b = await createMemory({ storage: fileStorage(bPath!), embedder: false });
// Written with writeSync: a batch's line is on the pipe before the next batch is asked for.
writeSync(1, 'ready\n');
const report = await b.sync(a, {
  batchTurns: Number(batchTurns),
  onProgress: (p) => { writeSync(1, `batch ${p.direction} ${p.batches} ${p.turns}\n`); },
});
writeSync(1, `done ${JSON.stringify(report)}\n`);
await b.close();
await a.close();
