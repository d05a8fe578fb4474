// Review reproducers for sync on real devices (schema 12: receipts, renewal, held changes, bounded keys, sliced
// apply). Each `it` is one finding and fails while the finding stands.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { contentHash } from '../../../src/common/messages.js';
import type { Memory } from '../../../src/index.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import type { SyncBatch } from '../../../src/contracts/types-sync.js';
import { remoteMemory, syncEndpoint } from '../../../src/index.js';
import { memoryProxy, proxyConversationKey } from '../../../src/surfaces/proxy.js';
import { createMemory, user } from '../../support/helpers.js';
import { completion, startUpstream } from '../../support/upstream.js';

let open: Memory[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const m of open) await m.close().catch(() => undefined);
  open = [];
});

async function memory(options: Parameters<typeof createMemory>[0] = {}): Promise<Memory> {
  const m = await createMemory(options);
  open.push(m);
  return m;
}

/** A memory on its own in-memory database, with the driver for SQL the test needs. */
async function withDriver(bytes?: Uint8Array, options: Parameters<typeof createMemory>[0] = {}): Promise<{ m: Memory; driver: StorageDriver }> {
  const driver = await sqliteWasm(bytes ? { bytes } : {})();
  const m = await memory({ ...options, storage: driver });
  return { m, driver };
}

const ids = async (m: Memory, c = 'c'): Promise<string[]> => (await m.turns(c).catch(() => [])).map((t) => t.id!).sort();
const say = (m: Memory, id: string, c = 'c', text = `${id} says something`) => m.onTurnComplete({ conversationId: c, messages: [user(text, { id })] });
const has = (bytes: Uint8Array, word: string) => Buffer.from(bytes).includes(Buffer.from(word));
const YEAR = 365 * 24 * 3600 * 1000;
const replicaOf = async (m: Memory) => (await m.syncState('')).replica;

describe('copies and backups', () => {
  it('a backup taken before the upgrade (no secret in it) still finds itself and gets back what the old disk synced', async () => {
    const edge = await memory();
    const { m: laptop, driver: laptopDriver } = await withDriver();
    // A database from before schema 12 holds turns and no secret: it derives one when first needed.
    await laptopDriver.query("DELETE FROM pagewise_meta WHERE key = 'sync:secret'");
    await say(laptop, 'm1');
    const backup = await laptop.exportDatabase();
    await laptop.sync(edge);
    await say(laptop, 'lost-on-disk');
    await laptop.sync(edge);
    // The backup, taken with the previous version (no secret), is restored on a new disk.
    const driver = await sqliteWasm({ bytes: backup })();
    const restored = await memory({ storage: driver });
    await say(restored, 'r1');
    await restored.sync(edge);
    await restored.sync(edge);
    expect(await ids(restored)).toEqual(['lost-on-disk', 'm1', 'r1']);
  });

  it('a copy that syncs only some conversations with the edge, while the original syncs all, is found, and their turns meet', async () => {
    const edge = await memory();
    const { m: laptop } = await withDriver();
    await say(laptop, 'm1');
    await laptop.sync(edge);
    const { m: copy } = await withDriver(await laptop.exportDatabase());
    expect(await replicaOf(copy)).toBe(await replicaOf(laptop));
    await say(laptop, 'a1');
    await laptop.sync(edge);
    await say(copy, 'b1');
    // The copy syncs the one conversation it shows (its own cursor scope at the edge: ["c"]).
    await copy.sync(edge, { conversations: ['c'] });
    await copy.sync(edge, { conversations: ['c'] });
    await laptop.sync(edge);
    expect(await ids(edge)).toEqual(['a1', 'b1', 'm1']);
    expect(await ids(copy)).toEqual(['a1', 'b1', 'm1']);
    expect(await ids(laptop)).toEqual(['a1', 'b1', 'm1']);
  });
});

describe('copies syncing at the same time', () => {
  // The copy passes the handshake (the edge's receipt names rows both hold), the original pushes before the copy's
  // pull is read, so the pull skips the original's turn (it came "from" their shared id), and the copy's push then
  // replaces the edge's receipt with its own: no receipt is left that shows either of them a copy. The edge shows
  // each the newest turns it received from their id, and the copy lacks the original's.
  it('the original pushes while its copy is between handshake and pull: after every later sync, all three hold every turn', async () => {
    const edge = await memory();
    const { m: laptop } = await withDriver();
    await say(laptop, 'm1');
    await laptop.sync(edge);
    const { m: copy } = await withDriver(await laptop.exportDatabase());
    await say(laptop, 'a1');
    // More than the edge shows of what it received from their id: the copy's turns alone are the newest it shows.
    const bs = Array.from({ length: 20 }, (_, k) => `b${k + 1}`);
    for (const b of bs) await say(copy, b);
    // The edge as the copy reaches it: the original's sync runs just before the copy's first read of a batch.
    let cut = true;
    const between = {
      syncState: edge.syncState.bind(edge), applySync: edge.applySync.bind(edge),
      async syncChanges(request: Parameters<Memory['syncChanges']>[0]) {
        if (cut) {
          cut = false;
          await laptop.sync(edge);
        }
        return edge.syncChanges(request);
      },
    };
    expect((await copy.sync(between)).renewed).toEqual([]);
    expect(await ids(copy)).toEqual([...bs, 'm1'].sort());
    const renewed = [];
    for (let k = 0; k < 2; k++) {
      renewed.push(...(await copy.sync(edge)).renewed, ...(await laptop.sync(edge)).renewed);
    }
    // The original finds itself by the copy's receipt and tells the edge it left their id; the copy, still answering
    // to it, is told so at its next sync. Each renewal loses nothing.
    expect(renewed.map((r) => r.reason)).toEqual(['copy', 'copy']);
    for (const m of [edge, laptop, copy]) expect(await ids(m)).toEqual(['a1', ...bs, 'm1'].sort());
  });
});

describe('a token holder', () => {
  it('a receipt the laptop gave for one conversation, replayed as the edge\'s cursor of every conversation, does not keep the laptop\'s other turns and forgets from the edge', async () => {
    const edge = await memory();
    const laptop = await memory();
    await say(laptop, 'b1', 'b', 'b1: my bank PIN is 4921');
    await say(laptop, 'b2', 'b');
    await say(laptop, 'a1', 'a');
    await laptop.sync(edge, { conversations: ['a'] });
    const laptopId = await replicaOf(laptop);
    const edgeId = await replicaOf(edge);
    // Anyone with the edge's token reads the edge's cursor of the laptop, receipt included…
    const stolen = (await edge.syncState(laptopId, ['a'])).cursor;
    expect(stolen.receipt).toBeTruthy();
    // …and gives it back as "from the laptop" for the scope of every conversation (a receipt names no scope, no receiver).
    const forged: SyncBatch = { format: 'pagewise-sync', version: 1, from: laptopId, to: edgeId, conversations: null, cursor: stolen, more: false, tombstones: [], turns: [], pins: [], aliases: [] };
    await edge.applySync(forged);
    await laptop.forget({ conversationId: 'b', messageIds: ['b1'] });
    await laptop.sync(edge);
    expect(await ids(edge, 'b')).toEqual(['b2']);
  });
});

describe('one memory behind the proxy and the sync endpoint', () => {
  it('the proxy given the memory through a function (key) => memory, the endpoint given the object: bob pulls none of alice\'s conversation', async () => {
    const up = await startUpstream();
    try {
      const shared = await memory();
      const tokens = new Map([['tok-alice', 'alice'], ['tok-bob', 'bob']]);
      const bearer = (r: Request) => tokens.get(r.headers.get('authorization')?.replace(/^Bearer /, '') ?? '') ?? null;
      const proxy = memoryProxy({ memory: () => shared, authenticate: bearer, openai: { baseUrl: `${up.base}/v1`, apiKey: 'sk-up' } });
      const endpoint = syncEndpoint({ memory: shared, authenticate: bearer });
      up.next.push({ body: completion('Noted.') });
      const pending: Promise<unknown>[] = [];
      const res = await proxy(new Request('http://proxy.test/v1/chat/completions', {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer tok-alice', 'x-pagewise-conversation': 'c1' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Remember: the vault code is 7-7-3.' }] }),
      }), { waitUntil: (p) => { pending.push(p); } });
      expect(res.status).toBe(200);
      await Promise.all(pending);
      expect((await shared.conversations()).map((c) => c.id)).toContain(proxyConversationKey('alice', 'c1'));
      const bobsLaptop = await memory();
      const remote = remoteMemory('http://127.0.0.1/v1/pagewise/sync', { token: 'tok-bob', fetch: (url, init) => endpoint(new Request(url, init)) });
      await bobsLaptop.sync(remote).catch(() => null);
      expect(await bobsLaptop.conversations()).toEqual([]);
    } finally {
      await up.close();
    }
  });
});

describe('clocks', () => {
  it('a forget from a clock a year ahead, once the edge\'s clock reaches it, leaves what the phone wrote during that year', async () => {
    const start = Date.now();
    const edge = await memory();
    const phone = await memory();
    const ahead = await memory();
    await say(phone, 'm1');
    await phone.sync(edge);
    await ahead.sync(edge);
    // Today: the device whose clock is a year ahead forgets the conversation; the edge takes it as made now.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(start + YEAR);
    await ahead.forget({ conversationId: 'c' });
    vi.setSystemTime(start + 1000);
    expect((await ahead.sync(edge)).clock.clamped).toBe(1);
    // Half a year later (in real time, after the forget), the phone writes and syncs.
    vi.setSystemTime(start + YEAR / 2);
    await say(phone, 'p1');
    await phone.sync(edge);
    // A year later nothing more is forgotten: the forget counted as made when it reached the edge.
    vi.setSystemTime(start + YEAR + 20 * 60_000);
    await phone.sync(edge);
    await phone.sync(edge);
    expect(await ids(edge)).toEqual(['p1']);
    expect(await ids(phone)).toEqual(['p1']);
  });

  it('forgetting a conversation leaves no byte of its held turns in the file, and they never come back', async () => {
    const start = Date.now();
    const edge = await memory();
    const ahead = await memory();
    await say(edge, 'm1');
    await ahead.sync(edge);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(start + YEAR);
    await say(ahead, 'future', 'c', 'the safe code is Quillofax-77');
    vi.setSystemTime(start);
    expect((await ahead.sync(edge)).clock.held).toBe(1);
    await edge.forget({ conversationId: 'c' });
    expect(has(await edge.exportDatabase(), 'Quillofax')).toBe(false);
    vi.setSystemTime(start + YEAR + 20 * 60_000);
    await ahead.sync(edge);
    expect(await ids(edge)).toEqual([]);
  });

  // Before schema 12 a batch stamped 2^53-1 was stored, and every later write in its conversation stepped past it; the
  // database is built as a version at schema 13 left it (12 and 13 kept such keys), then opened by this one.
  it('a replica that stored the key 2^53-1 before the upgrade still syncs the turns it writes afterwards', async () => {
    const { MIGRATIONS } = await import('../../../src/store/schema.js');
    const left = 13;
    const driver = await sqliteWasm()();
    const now = Date.now();
    const at = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString();
    const rows: { c: string; id: string; ord: bigint; origin?: string; ago: number }[] = [
      { c: 'c', id: 'm1', ord: BigInt(now - 3_600_000), ago: 60 },
      // The hostile turn, then what this replica wrote after it (one past it: 2^53, then 2^53 + 1).
      { c: 'c', id: 'p', ord: 2n ** 53n - 1n, origin: 'r-hostile', ago: 50 },
      { c: 'c', id: 'o1', ord: 2n ** 53n, ago: 40 },
      { c: 'c', id: 'o2', ord: 2n ** 53n + 1n, ago: 30 },
      { c: 'd', id: 'd1', ord: BigInt(now - 3_000_000), ago: 50 },
    ];
    const statements: { sql: string; params?: (string | number)[] }[] = [
      { sql: 'CREATE TABLE pagewise_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)' },
      ...MIGRATIONS.slice(0, left).flat().map((sql) => ({ sql })),
      { sql: "INSERT INTO pagewise_meta (key, value) VALUES ('schema_version', ?)", params: [String(left)] },
      { sql: "INSERT INTO conversations (id, created_at, updated_at) VALUES ('c', ?1, ?1), ('d', ?1, ?1)", params: [at(60)] },
    ];
    for (const [i, r] of rows.entries()) {
      const message = user(`${r.id} says something`, { id: r.id, createdAt: at(r.ago) });
      statements.push({
        sql: `INSERT INTO turns (conversation_id, seq, id, role, content, created_at, created_ms, stored_at, content_hash, text, origin, origin_ord, via)
              VALUES (?, (SELECT COUNT(*) FROM turns WHERE conversation_id = ?), ?, 'user', ?, ?, ?, ?, ?, ?, ?, ${r.ord}, ?)`,
        params: [r.c, r.c, r.id, JSON.stringify(message.content), message.createdAt!, Date.parse(message.createdAt!), message.createdAt!, await contentHash(message),
          message.content as string, r.origin ?? '', r.origin ?? ''],
      }, { sql: 'INSERT INTO turns_fts (rowid, text, name) VALUES (?, ?, ?)', params: [i + 1, message.content as string, ''] });
    }
    // A message forgotten and a checkout, both after the hostile turn (their clocks past it too).
    statements.push(
      { sql: `INSERT INTO sync_tombstones (conversation_id, turn_id, content_hash, origin_ord, forgotten_at) VALUES ('c', 'gone', ?, ${2n ** 53n + 2n}, ?)`, params: ['0'.repeat(64), at(20)] },
      { sql: `INSERT INTO branch_heads (conversation_id, turn_id, ord, origin, at) VALUES ('c', 'o2', ${2n ** 53n + 3n}, '', ?)`, params: [at(10)] },
    );
    await driver.batch(statements);
    const laptop = await memory({ storage: driver });
    const phone = await memory();
    await say(laptop, 'n1');
    const first = await laptop.sync(phone);
    expect(first.clock).toMatchObject({ held: 0, clamped: 0, refused: 0 });
    expect((await phone.syncState('')).held).toBeUndefined();
    // Every turn reached the phone, in the laptop's order: the one written now last, with a key of its time.
    const order = async (m: Memory, c = 'c') => (await m.turns(c)).map((t) => t.id);
    expect(await order(laptop)).toEqual(['m1', 'p', 'o1', 'o2', 'n1']);
    expect(await order(phone)).toEqual(['m1', 'p', 'o1', 'o2', 'n1']);
    expect(await ids(phone, 'd')).toEqual(['d1']);
    const keys = await driver.query<{ id: string; ord: number }>("SELECT id, origin_ord AS ord FROM turns WHERE conversation_id = 'c'");
    for (const k of keys) expect(Number(k.ord)).toBeLessThanOrEqual(Date.now());
    // The conversation is forgotten on the laptop; the phone writes to it after that, before it hears of the forget.
    await laptop.forget({ conversationId: 'c' });
    await say(phone, 'later');
    await laptop.sync(phone);
    expect(await ids(phone)).toEqual(['later']);
    expect(await ids(laptop)).toEqual(['later']);
    expect(await ids(phone, 'd')).toEqual(['d1']);
    expect(await laptop.sync(phone)).toMatchObject({ pushed: 0, pulled: 0 });
  });

  it('a device whose clock reads 1970 at the upgrade keeps its order keys: only keys far past what it stored are repaired', async () => {
    const { MIGRATIONS } = await import('../../../src/store/schema.js');
    const driver = await sqliteWasm()();
    const stored = new Date(Date.now() - 60_000).toISOString();
    const message = user('m1 says something', { id: 'm1', createdAt: stored });
    await driver.batch([
      { sql: 'CREATE TABLE pagewise_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)' },
      ...MIGRATIONS.slice(0, 13).flat().map((sql) => ({ sql })),
      { sql: "INSERT INTO pagewise_meta (key, value) VALUES ('schema_version', '13')" },
      { sql: "INSERT INTO conversations (id, created_at, updated_at) VALUES ('c', ?1, ?1)", params: [stored] },
      {
        sql: `INSERT INTO turns (conversation_id, seq, id, role, content, created_at, created_ms, stored_at, content_hash, text, origin, origin_ord, via)
              VALUES ('c', 0, 'm1', 'user', ?, ?, ?, ?, ?, ?, '', ?, '')`,
        params: [JSON.stringify(message.content), stored, Date.parse(stored), stored, await contentHash(message), message.content as string, Date.parse(stored)],
      },
    ]);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.UTC(1970, 0, 2));
    const laptop = await memory({ storage: driver });
    vi.useRealTimers();
    expect(await driver.query('SELECT origin_ord AS ord FROM turns')).toEqual([{ ord: Date.parse(stored) }]);
    const phone = await memory();
    await say(phone, 'p1');
    await laptop.sync(phone);
    expect((await laptop.turns('c')).map((t) => t.id)).toEqual(['m1', 'p1']);
  });

  it('maxClockSkewMs is validated at construction: a large one does not make every applySync throw a RangeError', async () => {
    const a = await memory();
    await expect(memory({ maxClockSkewMs: Number.MAX_SAFE_INTEGER })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    const b = await memory({ maxClockSkewMs: 365 * 24 * 3600 * 1000 });
    await say(a, 'm1');
    await expect(a.sync(b)).resolves.toMatchObject({ pushed: 1 });
  });

  it('a held turn that no longer passes the receiver\'s checks (maxMessageBytes lowered) does not stop every later sync', async () => {
    const start = Date.now();
    const ahead = await memory();
    const edge = await memory();
    await say(edge, 'm1');
    await ahead.sync(edge);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(start + YEAR);
    await say(ahead, 'long', 'c', `a long note ${'x'.repeat(20_000)}`);
    vi.setSystemTime(start);
    expect((await ahead.sync(edge)).clock.held).toBe(1);
    // The edge's operator lowers maxMessageBytes; the same database is opened again.
    const bytes = await edge.exportDatabase();
    const { m: again } = await withDriver(bytes, { maxMessageBytes: 10_000 });
    const other = await memory();
    await say(other, 'o1');
    vi.setSystemTime(start + YEAR + 20 * 60_000);
    await expect(other.sync(again)).resolves.toMatchObject({ pushed: 1 });
  });
});
