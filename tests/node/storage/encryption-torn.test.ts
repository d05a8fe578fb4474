// A process killed inside one write(): Linux stops a write between the file's 4 KiB pages when a fatal signal arrives,
// so a kill can leave the first pages of a write new and the rest old. The encrypted journal rewrites blocks in place
// (SQLite writes the record count into the journal header at its second sync of a commit); a block that straddled a
// page boundary was then half new, half old, authenticated as neither, and the database would not open again. Here
// the kill is modelled exactly: the write lands up to its next page boundary, the files are copied at that moment
// (what a SIGKILL leaves), and the copy must open with every committed row.
import fs, { copyFileSync, existsSync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BLOCK_SLOT, JOURNAL_PREFIX } from '../../../src/storage/crypt-journal.js';
import { fileStorage } from '../../../src/storage/node-file.js';

const key = new Uint8Array(32).fill(7);
const dir = mkdtempSync(join(tmpdir(), 'pagewise-torn-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Write { journal: boolean; position: number; length: number }
class Killed extends Error {}
const realWrite = fs.writeSync;
let armed: { tear: (w: Write, seen: Write[]) => boolean; seen: Write[]; snapshot: string } | undefined;

(fs as { writeSync: unknown }).writeSync = function (fd: number, buf: Uint8Array, off: number, len: number, pos: number): number {
  if (armed && typeof pos === 'number') {
    const target = readlinkSync(`/proc/self/fd/${fd}`);
    const journal = target.endsWith('-journal');
    if (journal || target.endsWith('.sqlite3')) {
      const w = { journal, position: pos, length: len };
      if (armed.tear(w, armed.seen)) {
        realWrite(fd, buf, off, Math.min(len, (Math.floor(pos / 4096) + 1) * 4096 - pos), pos);
        const db = journal ? target.slice(0, -'-journal'.length) : target;
        copyFileSync(db, armed.snapshot);
        if (existsSync(`${db}-journal`)) copyFileSync(`${db}-journal`, `${armed.snapshot}-journal`);
        armed = undefined;
        throw new Killed('killed inside this write');
      }
      armed.seen.push(w);
    }
  }
  return (realWrite as (...a: unknown[]) => number)(fd, buf, off, len, pos);
};
syncBuiltinESMExports();

let n = 0;
/** Commits 20 rows, then one more with a write torn where `tear` says; the copy taken there opens with the 20. */
async function tornAt(tear: (w: Write, seen: Write[]) => boolean): Promise<number> {
  const path = join(dir, `db-${++n}.sqlite3`);
  const snapshot = join(dir, `killed-${n}.sqlite3`);
  const d = await fileStorage(path, { encryption: { key } })();
  await d.batch([{ sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)' }]);
  for (let i = 0; i < 20; i++) await d.batch([{ sql: 'INSERT INTO t (v) VALUES (?)', params: [`row ${i} `.repeat(40)] }]);
  armed = { tear, seen: [], snapshot };
  try {
    await d.batch([{ sql: 'INSERT INTO t (v) VALUES (?)', params: ['new '.repeat(40)] }]);
  } catch { /* the kill */ }
  expect(armed, 'the write to tear came').toBeUndefined();
  const reopened = await fileStorage(snapshot, { encryption: { key } })();
  expect(await reopened.query('PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
  const rows = await reopened.query<{ c: number }>('SELECT count(*) AS c FROM t');
  await reopened.close();
  try {
    await d.close();
  } catch { /* the killed connection */ }
  return Number(rows[0]?.c);
}

// A rewrite in place of one block: one slot's length, at a block's place in the journal.
const rewrite = (w: Write) => w.journal && w.position >= JOURNAL_PREFIX && w.length === BLOCK_SLOT;

describe('an encrypted database killed inside one write()', () => {
  it('journal blocks lie on page boundaries, one page each', () => {
    expect(JOURNAL_PREFIX % 4096).toBe(0);
    expect(BLOCK_SLOT).toBe(4096);
  });

  it('torn inside the rewrite of journal block 0 (the record count, at the second sync): it opens, rolled back', async () => {
    expect(await tornAt((w) => rewrite(w) && w.position === JOURNAL_PREFIX)).toBe(20);
  });

  it('torn inside the rewrite of the last journal block: it opens, rolled back', async () => {
    expect(await tornAt((w, seen) => rewrite(w) && w.position > JOURNAL_PREFIX && seen.some((s) => rewrite(s) && s.position === JOURNAL_PREFIX))).toBe(20);
  });

  it('torn inside a database page write, the journal synced: it opens, rolled back', async () => {
    expect(await tornAt((w) => !w.journal && w.position > 4096)).toBe(20);
  });
});
