// Encryption at rest in Node: a file (fileStorage) and an in-memory database's exports. Rare words and the bytes of
// stored vectors never reach a file; the right key recalls them; a wrong or missing key is a typed error that
// changes no byte; rekey (key, passphrase, CryptoKey, plain and back) in place; forget leaves nothing in any page;
// the StorageDriver conformance suite on an encrypted file.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemory as createRealMemory } from '../../../src/index.js';
import { isPagewiseError } from '../../../src/contracts/errors.js';
import { fileStorage } from '../../../src/storage/node-file.js';
import { loadSqlite3, sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { HEADER_BYTES, decodeHeader, openImage } from '../../../src/storage/crypt-format.js';
import { readEncryption, unlock } from '../../../src/storage/crypt-keys.js';
import { forgetContext, planOpen } from '../../../src/storage/crypt-driver.js';
import { JOURNAL_PREFIX } from '../../../src/storage/crypt-journal.js';
import { VFS_NAME } from '../../../src/storage/node-vfs.js';
import type { EncryptionOptions } from '../../../src/contracts/types.js';
import { storageDriverCases } from '../../support/conformance/storage-driver.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

let dir: string;
let n = 0;
const fresh = (name = 'db') => join(dir, `${name}-${++n}.sqlite3`);
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'pagewise-crypt-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });

const key = crypto.getRandomValues(new Uint8Array(32));
// A cheap Argon2id cost keeps the suite quick; the default is OWASP's minimum.
const FAST = { memoryKiB: 1024, iterations: 1 };

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  return promise.then(() => { throw new Error('expected a PagewiseError'); }, (e: unknown) => {
    if (!isPagewiseError(e)) throw e;
    return { code: e.code, message: e.message };
  });
}

/** Every file beside `path` (its journal, lock, side files) with its bytes. */
function filesOf(path: string): Map<string, Buffer> {
  const base = path.slice(dir.length + 1);
  return new Map(readdirSync(dir).filter((f) => f.startsWith(base)).map((f) => [f, readFileSync(join(dir, f))]));
}

/** The plaintext of every page of an encrypted database file, free pages included. */
async function pagesOf(bytes: Uint8Array, encryption: EncryptionOptions): Promise<Buffer> {
  const header = decodeHeader(bytes.subarray(0, HEADER_BYTES));
  const { dek } = await unlock(header, readEncryption(encryption)!);
  return Buffer.from(openImage(bytes, header, dek));
}

/** Where any 16-byte run of `vectors` occurs in `bytes` (the file offset), or -1. */
function vectorRunIn(bytes: Buffer, vectors: Uint8Array[]): number {
  const runs = new Set<string>();
  for (const v of vectors) for (let i = 0; i + 16 <= v.length; i++) runs.add(Buffer.from(v.subarray(i, i + 16)).toString('latin1'));
  const text = bytes.toString('latin1');
  for (let i = 0; i + 16 <= text.length; i++) if (runs.has(text.slice(i, i + 16))) return i;
  return -1;
}

const RARE = ['Quillbramble', 'Zorvathian', 'Pemmicanfjord', 'Ostrilux'];
const EXCHANGES = [
  [`My grandmother's village is called ${RARE[0]}, high in the hills.`, 'A lovely name for a hill village.'],
  [`The ${RARE[1]} protocol uses three handshakes before any payload.`, 'Three handshakes: noted.'],
  [`We booked the cabin at ${RARE[2]} for the second week of June.`, 'The cabin is booked for June.'],
  [`My cat ${RARE[3]} only eats salmon on Sundays.`, 'A cat with a weekly menu.'],
];

describe('encrypted at rest: a Node file', () => {
  it('no file holds a stored word or a 16-byte run of a stored vector; the right key recalls them; a wrong key changes no byte', async () => {
    const path = fresh('at-rest');
    const memory = await createRealMemory({ storage: fileStorage(path, { encryption: { key } }) });
    for (const [i, [u, a]] of EXCHANGES.entries()) {
      await memory.onTurnComplete({ conversationId: 'travel', messages: [user(u!, { id: `u${i}` }), assistant(a!, { id: `a${i}` })] });
    }
    await memory.flush();
    for (let s = await memory.embeddingStatus('travel'); s.embedded < s.total || s.total === 0; s = await memory.embeddingStatus('travel')) {
      expect(s.lastError).toBeNull();
      await new Promise((r) => setTimeout(r, 50));
    }
    const scan = (files: Map<string, Buffer>) => {
      for (const [name, bytes] of files) {
        const text = bytes.toString('latin1').toLowerCase();
        for (const word of [...RARE, 'travel', 'SQLite format 3']) expect(text.includes(word.toLowerCase()), `${word} in ${name}`).toBe(false);
      }
    };
    // While open (the journal is there) and after close.
    scan(filesOf(path));
    await memory.close();
    const files = filesOf(path);
    expect([...files.keys()]).toEqual([path.slice(dir.length + 1)]);
    scan(files);

    // The vectors, as stored (read through the key), are nowhere in the file.
    const reader = await fileStorage(path, { encryption: { key } })();
    const vectors = (await reader.query<{ vector: Uint8Array }>('SELECT vector FROM embeddings')).map((r) => r.vector);
    await reader.close();
    expect(vectors.length).toBeGreaterThanOrEqual(EXCHANGES.length * 2);
    expect(vectorRunIn(files.get(path.slice(dir.length + 1))!, vectors)).toBe(-1);
    // The control: the same scan finds them in the plaintext of the pages, so it can fail.
    const plain = await pagesOf(files.get(path.slice(dir.length + 1))!, { key });
    expect(vectorRunIn(plain, vectors)).toBeGreaterThanOrEqual(0);
    expect(plain.toString('latin1')).toContain(RARE[1]);

    // Wrong key, a passphrase, no key: typed errors, and every file byte-identical (no lock left either).
    const before = filesOf(path);
    const wrong = await failure(createRealMemory({ storage: fileStorage(path, { encryption: { key: new Uint8Array(32).fill(7) } }) }));
    expect(wrong.code).toBe('WRONG_KEY');
    expect((await failure(createRealMemory({ storage: fileStorage(path, { encryption: { passphrase: 'guess', kdf: FAST } }) }))).code).toBe('WRONG_KEY');
    const missing = await failure(createRealMemory({ storage: fileStorage(path) }));
    expect(missing).toMatchObject({ code: 'KEY_REQUIRED', message: expect.stringContaining('encryption: { key }') });
    expect(filesOf(path)).toEqual(before);

    // The right key: the rare words are recalled, by words and by meaning.
    const again = await createRealMemory({ storage: fileStorage(path, { encryption: { key } }) });
    try {
      const ctx = await again.onMessageInbound({ conversationId: 'travel', message: { role: 'user', content: 'Which protocol needs three handshakes before the payload?' } });
      expect(JSON.stringify(ctx.messages)).toContain(`The ${RARE[1]} protocol uses three handshakes`);
      expect((await again.turns('travel')).length).toBe(EXCHANGES.length * 2);
    } finally {
      await again.close();
    }
  });

  it('a key for a plain file is WRONG_KEY and says how to encrypt it; bad options are INVALID_OPTIONS without the key', async () => {
    const path = fresh('plain');
    const memory = await createMemory({ storage: fileStorage(path) });
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('plain words')] });
    await memory.close();
    const before = filesOf(path);
    const error = await failure(createMemory({ storage: fileStorage(path, { encryption: { key } }) }));
    expect(error).toMatchObject({ code: 'WRONG_KEY', message: expect.stringContaining('memory.rekey({ key })') });
    expect(filesOf(path)).toEqual(before);
    const secret = 'hunter2-passphrase';
    for (const bad of [{ key: new Uint8Array(16) }, { key: 'abc' }, { passphrase: '' }, { key, passphrase: secret }, { passphrase: secret, kdf: { memoryKiB: 1 } }, { secret }]) {
      let thrown: unknown;
      try { fileStorage(path, { encryption: bad as EncryptionOptions }); } catch (e) { thrown = e; }
      expect(thrown).toMatchObject({ code: 'INVALID_OPTIONS' });
      expect((thrown as Error).message).not.toContain(secret);
    }
    const hmac = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    expect(() => fileStorage(path, { encryption: { key: hmac } })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringContaining('AES-GCM') }));
  });

  it('rekey: key → passphrase → CryptoKey → plain → key, in place; each step opens only with its own key', async () => {
    const path = fresh('rekey');
    const aes = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
    const steps: (EncryptionOptions | null)[] = [{ passphrase: 'correct horse battery', kdf: FAST }, { key: aes }, null, { key }];
    let current: EncryptionOptions | null = { key };
    const memory0 = await createMemory({ storage: fileStorage(path, { encryption: current }) });
    await memory0.onTurnComplete({ conversationId: 'c', messages: [user(`Remember ${RARE[0]}.`, { id: 'u0' })] });
    await memory0.close();
    for (const [i, next] of steps.entries()) {
      const memory = await createMemory({ storage: fileStorage(path, current ? { encryption: current } : {}) });
      await memory.rekey(next);
      // The engine goes on writing after the rekey, on the new key.
      await memory.onTurnComplete({ conversationId: 'c', messages: [user(`Step ${i} about ${RARE[0]}.`, { id: `s${i}` })] });
      await memory.close();
      const bytes = readFileSync(path);
      expect(bytes.subarray(0, 16).toString('latin1')).toBe(next ? 'pagewise crypt 1' : 'SQLite format 3\0');
      expect(bytes.toString('latin1').includes(RARE[0]!)).toBe(next === null);
      if (current && next) expect((await failure(createMemory({ storage: fileStorage(path, { encryption: current }) }))).code).toBe('WRONG_KEY');
      if (!next) expect((await failure(createMemory({ storage: fileStorage(path, { encryption: current! }) }))).code).toBe('WRONG_KEY');
      current = next;
      const reopened = await createMemory({ storage: fileStorage(path, current ? { encryption: current } : {}) });
      expect((await reopened.turns('c')).map((t) => t.id)).toEqual(['u0', ...steps.slice(0, i + 1).map((_, j) => `s${j}`)]);
      await reopened.close();
      expect([...filesOf(path).keys()]).toEqual([path.slice(dir.length + 1)]);
    }
  });

  it('forget leaves no byte of a forgotten conversation in any page, free pages included', async () => {
    const SECRET = 'Quorvexian';
    const path = fresh('forget');
    const memory = await createMemory({ storage: fileStorage(path, { encryption: { key } }) });
    await memory.onTurnComplete({ conversationId: 'secret', messages: [user(`My PIN hint is ${SECRET}.`, { id: 's1' }), assistant(`Noted, ${SECRET} stays private.`, { id: 's2' })] });
    await memory.onTurnComplete({ conversationId: 'kept', messages: [user('The Plimsoll line marks the load.', { id: 'k1' })] });
    // The control: the plaintext of the pages holds it before the forget.
    expect((await pagesOf(readFileSync(path), { key })).toString('latin1')).toContain(SECRET);
    await memory.forget({ conversationId: 'secret' });
    await memory.close();
    const plain = (await pagesOf(readFileSync(path), { key })).toString('latin1');
    expect(plain).not.toContain(SECRET);
    expect(plain).toContain('Plimsoll');
  });

  it('a changed byte in a sealed page is an error, never wrong data', async () => {
    const path = fresh('tamper');
    const memory = await createMemory({ storage: fileStorage(path, { encryption: { key } }) });
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('a turn to keep')] });
    await memory.close();
    const bytes = readFileSync(path);
    bytes[HEADER_BYTES + 4096 + 40 + 100]! ^= 1;
    writeFileSync(path, bytes);
    const opened = await fileStorage(path, { encryption: { key } })().catch((e: unknown) => e as Error);
    if (isPagewiseError(opened)) expect(opened.code).toMatch(/STORAGE_/);
    else if (!(opened instanceof Error)) {
      await expect(Promise.resolve().then(() => opened.query('PRAGMA integrity_check'))).rejects.toMatchObject({ code: 'STORAGE_ERROR' });
      await opened.close();
    }
  });
});

describe('encrypted at rest: what a file may hold', () => {
  it('a new file has its header (the key slot) on disk before any page; a file of zeros is not taken for a new one', async () => {
    const path = fresh('new');
    const driver = await fileStorage(path, { encryption: { key } })();
    expect(readFileSync(path).subarray(0, 16).toString('latin1')).toBe('pagewise crypt 1');
    await driver.close();
    const zeros = fresh('zeros');
    writeFileSync(zeros, new Uint8Array(8192));
    expect((await failure(createMemory({ storage: fileStorage(zeros, { encryption: { key } }) }))).code).toBe('STORAGE_ERROR');
    expect(readFileSync(zeros).every((b) => b === 0)).toBe(true);
  });

  it('a hot journal changed on disk fails the open: it is never rolled into the database', async () => {
    const path = fresh('journal');
    const setup = await fileStorage(path, { encryption: { key } })();
    await setup.batch([{ sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)' }]);
    await setup.batch(Array.from({ length: 300 }, (_, i) => ({ sql: 'INSERT INTO t VALUES (?, ?)', params: [i, `balance=1000 row ${i} ${'.'.repeat(60)}`] })));
    await setup.close();
    // A transaction under way whose pages spilled into the file: its journal is hot. Copies of both are taken then.
    const plan = await planOpen(await loadSqlite3(), VFS_NAME, path, readEncryption({ key }), path);
    const raw = new (await loadSqlite3()).oo1.DB({ filename: path, flags: 'c', vfs: plan.vfs });
    raw.exec("PRAGMA cache_size = 2; BEGIN; UPDATE t SET v = replace(v, 'balance=1000', 'balance=2000');");
    const copies = [fresh('hot'), fresh('hot-tampered')];
    for (const copy of copies) {
      writeFileSync(copy, readFileSync(path));
      writeFileSync(`${copy}-journal`, readFileSync(`${path}-journal`));
    }
    raw.exec('ROLLBACK');
    raw.close();
    forgetContext({ ctx: plan.ctx, file: { crypt: plan.crypt, name: path, reopen: () => { throw new Error('unused'); } } });
    // The control: as copied, the journal rolls the spilled pages back.
    const sound = await fileStorage(copies[0]!, { encryption: { key } })();
    expect(await sound.query('SELECT count(*) AS n FROM t WHERE v LIKE ?', ['balance=1000%'])).toEqual([{ n: 300 }]);
    await sound.close();
    // One byte changed in a sealed journal block (no key needed to change it): the open fails, no wrong row is read.
    const journal = readFileSync(`${copies[1]}-journal`);
    journal[JOURNAL_PREFIX + 24 + 300]! ^= 8;
    writeFileSync(`${copies[1]}-journal`, journal);
    expect((await failure(createMemory({ storage: fileStorage(copies[1]!, { encryption: { key } }) }))).code).toMatch(/^STORAGE_/);
  });
});

describe('encrypted at rest: in memory, exports', () => {
  it('exportDatabase is sealed under the same key; the bytes open in memory and as a file only with it', async () => {
    const memory = await createMemory({ storage: sqliteWasm({ encryption: { key } }) });
    await memory.onTurnComplete({ conversationId: 'c', messages: [user(`Export ${RARE[2]}.`, { id: 'u1' }), assistant('Done.', { id: 'a1' })] });
    const bytes = await memory.exportDatabase();
    expect(Buffer.from(bytes).toString('latin1')).not.toContain(RARE[2]);
    expect((await failure(createMemory({ storage: sqliteWasm({ bytes }) }))).code).toBe('KEY_REQUIRED');
    expect((await failure(createMemory({ storage: sqliteWasm({ bytes, encryption: { key: new Uint8Array(32) } }) }))).code).toBe('WRONG_KEY');
    const path = fresh('from-export');
    writeFileSync(path, bytes);
    for (const storage of [sqliteWasm({ bytes, encryption: { key } }), fileStorage(path, { encryption: { key } })]) {
      const copy = await createMemory({ storage });
      try { expect((await copy.turns('c')).map((t) => t.id)).toEqual(['u1', 'a1']); } finally { await copy.close(); }
    }
    // rekey(null) in memory: the next export is a plain SQLite file.
    await memory.rekey(null);
    expect(Buffer.from((await memory.exportDatabase()).subarray(0, 15)).toString()).toBe('SQLite format 3');
    await memory.close();
  });
});

describe('encrypted at rest: exports of a file', () => {
  it('exportDatabase of an encrypted file is the sealed file itself; it opens in memory only with the key', async () => {
    const path = fresh('file-export');
    const memory = await createMemory({ storage: fileStorage(path, { encryption: { key } }) });
    await memory.onTurnComplete({ conversationId: 'c', messages: [user(`Exported ${RARE[3]}.`, { id: 'u1' })] });
    const bytes = await memory.exportDatabase();
    expect(Buffer.from(bytes).equals(readFileSync(path))).toBe(true);
    expect(Buffer.from(bytes).toString('latin1')).not.toContain(RARE[3]);
    const copy = await createMemory({ storage: sqliteWasm({ bytes, encryption: { key } }) });
    expect((await copy.turns('c')).map((t) => t.id)).toEqual(['u1']);
    await copy.close();
    await memory.close();
  });
});

describe('StorageDriver conformance: fileStorage, encrypted', () => {
  for (const c of storageDriverCases) {
    it(c.name, async () => {
      const path = fresh('conformance');
      const driver = await fileStorage(path, { encryption: { key } })();
      try { await c.run(driver); } finally { await driver.close(); }
      const again = await fileStorage(path, { encryption: { key } })();
      try { expect(await again.query('PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]); } finally { await again.close(); }
    });
  }
});
