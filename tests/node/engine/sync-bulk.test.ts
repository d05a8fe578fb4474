// Sync's merges at scale (the bug: one applySync of 40,000 pins or 2,000 aliases held a server for tens of seconds):
// pins and aliases merged a slice at a time reach the other replica with the states one merge at a time gives, and
// canonicalizer.applyStates leaves exactly what add() and remove() one at a time leave. Timings: tests/bench/sync-bulk.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { isPagewiseError, remoteMemory, type Memory } from '../../../src/index.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { migrate } from '../../../src/store/schema.js';
import { createTagStore } from '../../../src/tags/tag-store.js';
import { type AliasState, createCanonicalizer } from '../../../src/tags/tag-canonicalizer.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import type { SyncAlias, SyncBatch, SyncPin } from '../../../src/contracts/types-sync.js';
import { bundleTestWorker, startTestWorker } from '../../support/edge-worker.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

const open: Memory[] = [];
afterEach(async () => { await Promise.all(open.splice(0).map((m) => m.close().catch(() => undefined))); });

const START = Date.UTC(2026, 0, 1);
const at = (seconds: number) => new Date(START + seconds * 1000).toISOString();
const ZERO = { turns: 0, tombstones: 0 };

interface Replica { memory: Memory; driver: StorageDriver; id: string }

async function replica(): Promise<Replica> {
  const driver = await sqliteWasm()();
  const memory = await createMemory({ storage: driver });
  open.push(memory);
  return { memory, driver, id: (await memory.syncState('')).replica };
}

/** Ids `${prefix}1`…`${prefix}n` of conversation `c`, written with SQL, marked as received from `via` (never offered to it). */
async function sqlTurns(driver: StorageDriver, c: string, n: number, via: string, prefix = 'm'): Promise<void> {
  await driver.batch([
    { sql: 'INSERT OR IGNORE INTO conversations (id, created_at, updated_at) VALUES (?, ?, ?)', params: [c, at(0), at(0)] },
    {
      sql: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
            INSERT INTO turns (conversation_id, seq, id, role, content, created_at, created_ms, stored_at, content_hash, text, origin, origin_ord, via)
            SELECT ?, (SELECT COALESCE(MAX(seq), -1) FROM turns WHERE conversation_id = ?) + i, ? || i, 'user', json_quote('note ' || i), ?, ?, ?, printf('%064d', i), 'note ' || i, 'r-test', i, ? FROM n`,
      params: [n, c, c, prefix, at(0), START, at(0), via],
    },
  ]);
}

/** Every pin and alias state a replica holds (what a sync's last batch carries), read from its tables. */
async function states(driver: StorageDriver): Promise<Pick<SyncBatch, 'pins' | 'aliases'>> {
  const pins = await driver.query<{ conversation_id: string; turn_id: string; pinned: number; at: string }>(
    'SELECT conversation_id, turn_id, 1 AS pinned, pinned_at AS at FROM pins UNION ALL SELECT conversation_id, turn_id, 0, unpinned_at FROM sync_unpins ORDER BY 1, 2, 3');
  const aliases = await driver.query<{ conversation_id: string; alias: string; tag: string; at: string; removed: number }>(
    "SELECT conversation_id, alias, tag, created_at AS at, 0 AS removed FROM tag_aliases WHERE source = 'manual' UNION ALL SELECT conversation_id, alias, '', removed_at, 1 FROM sync_alias_removals ORDER BY 1, 2, 5");
  return {
    pins: pins.map((p) => ({ conversationId: p.conversation_id, messageId: p.turn_id, pinned: Number(p.pinned) === 1, at: p.at })),
    aliases: aliases.map((a) => ({ conversationId: a.conversation_id === '' ? null : a.conversation_id, alias: a.alias, tag: a.tag, createdAt: a.at, ...(Number(a.removed) === 1 ? { removed: true as const } : {}) })),
  };
}

/** The rows every alias change touches, for comparing two databases. */
async function tagTables(driver: StorageDriver) {
  return {
    aliases: await driver.query('SELECT conversation_id, alias, tag, source, created_at FROM tag_aliases ORDER BY conversation_id, alias'),
    removals: await driver.query('SELECT conversation_id, alias, removed_at FROM sync_alias_removals ORDER BY conversation_id, alias'),
    units: await driver.query('SELECT conversation_id, tag, unit_seq, related FROM unit_tags ORDER BY conversation_id, tag, unit_seq'),
    tags: await driver.query('SELECT conversation_id, tag, units, first_seq, last_seq, last_used FROM tags ORDER BY conversation_id, tag'),
  };
}

/** The later of two pin states (a tie pins): the merge rule one pin at a time. */
const laterPin = (a: SyncPin, b: SyncPin | undefined) => (!b || a.at > b.at || (a.at === b.at && a.pinned && !b.pinned) ? a : b);

describe('sync at scale: pins', () => {
  it('40,000 pins of one conversation reach the other replica with the states one merge at a time gives', { timeout: 120_000 }, async () => {
    const n = 40_000;
    const a = await replica();
    const b = await replica();
    await sqlTurns(a.driver, 'c', n, b.id);
    await sqlTurns(b.driver, 'c', n, a.id);
    // Messages only the sender has (the receiver wrote them, sent them and forgot them since): their pins are not kept
    // on the receiver. What it removed it records (sync_removed), so it does not take them for a twin's turns.
    await sqlTurns(a.driver, 'c', 10, b.id, 'x');
    await b.driver.batch([{ sql: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) INSERT INTO sync_removed (rowid, content_hash) SELECT 1000000 + i, printf('%064d', i) FROM n` }]);
    const series = (where: string) => `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n}) SELECT 'c', 'm' || i, ${where} FROM n`;
    const time = (seconds: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', '${at(0)}', '+' || (${seconds}) || ' seconds')`;
    await a.driver.batch([
      { sql: `INSERT INTO pins (conversation_id, turn_id, pinned_at) ${series(time('i'))} WHERE i % 3 <> 0` },
      { sql: `INSERT INTO sync_unpins (conversation_id, turn_id, unpinned_at) ${series(time('i'))} WHERE i % 3 = 0` },
      { sql: `INSERT INTO pins (conversation_id, turn_id, pinned_at) SELECT 'c', 'x' || value, ? FROM json_each('[1,2,3]')`, params: [at(5)] },
    ]);
    // The receiver's own states: later on odd messages, earlier on even ones, and unpins at the very same time.
    await b.driver.batch([
      { sql: `INSERT INTO pins (conversation_id, turn_id, pinned_at) ${series(time('i + (i % 2) * 2 - 1'))} WHERE i % 5 = 0` },
      { sql: `INSERT INTO sync_unpins (conversation_id, turn_id, unpinned_at) ${series(time('i'))} WHERE i % 7 = 0 AND i % 5 <> 0` },
    ]);
    const key = (p: SyncPin) => `${p.conversationId}\u0000${p.messageId}`;
    const sorted = (l: readonly SyncPin[]) => [...l].sort((x, y) => (key(x) < key(y) ? -1 : 1));
    const sent = (await states(a.driver)).pins;
    expect(sent).toHaveLength(n + 3);
    // One merge at a time on the receiver: a state wins if later (a tie pins), and changes something if it differs
    // (the same state, later, only brings its time).
    const held = new Map((await states(b.driver)).pins.map((p) => [key(p), p]));
    let changes = 0;
    for (const p of sent.filter((q) => q.messageId.startsWith('m'))) {
      const mine = held.get(key(p));
      if (mine && laterPin(p, mine) !== p) continue;
      held.set(key(p), p);
      if (mine?.pinned !== p.pinned) changes++;
    }

    const batch = await a.memory.syncChanges({ to: b.id, cursor: ZERO });
    expect(batch.more).toBe(false);
    expect(batch.pins).toHaveLength(n + 3);
    expect((await b.memory.applySync(batch)).pins).toBe(changes);
    expect(sorted((await states(b.driver)).pins)).toEqual(sorted([...held.values()]));
    expect(new Set(await b.memory.pins('c'))).toEqual(new Set([...held.values()].filter((p) => p.pinned).map((p) => p.messageId)));
    expect((await b.memory.applySync(batch)).pins).toBe(0);

    // Both ways: each message pinned or not alike on both replicas, as the later state says.
    await b.memory.sync(a.memory);
    const flags = async (r: Replica) => new Map((await states(r.driver)).pins.filter((p) => p.messageId.startsWith('m')).map((p) => [key(p), p.pinned]));
    const later = new Map(held);
    for (const p of sent.filter((q) => q.messageId.startsWith('m'))) later.set(key(p), laterPin(p, later.get(key(p))));
    const want = new Map([...later].map(([k, p]) => [k, p.pinned]));
    expect(await flags(a)).toEqual(want);
    expect(await flags(b)).toEqual(want);
    // And with the same times: both list their pins alike.
    const pinsOf = async (r: Replica) => (await states(r.driver)).pins.filter((p) => p.messageId.startsWith('m'));
    expect(await pinsOf(a)).toEqual(await pinsOf(b));
    expect((await b.memory.sync(a.memory)).pins).toBe(0);
  });
});

/** A fresh migrated database holding `from`'s conversations and every table an alias change touches. */
async function copyOfTagTables(from: StorageDriver): Promise<StorageDriver> {
  const to = await sqliteWasm()();
  await migrate(to);
  for (const table of ['conversations', 'tag_aliases', 'sync_alias_removals', 'unit_tags', 'tags']) {
    const rows = await from.query<Record<string, string | number | null>>(`SELECT * FROM ${table}`);
    if (rows.length === 0) continue;
    const columns = Object.keys(rows[0]!);
    await to.batch([{ sql: `INSERT INTO ${table} (${columns.join(', ')}) SELECT ${columns.map((c) => `value ->> '${c}'`).join(', ')} FROM json_each(?)`, params: [JSON.stringify(rows)] }]);
  }
  return to;
}

/** What applySync did with a batch's aliases before the bulk merge: one state at a time through add() and remove(). */
async function oneByOne(driver: StorageDriver, aliases: readonly SyncAlias[]): Promise<number> {
  const canonicalizer = createCanonicalizer(createTagStore(driver));
  const mineOf = async (a: SyncAlias): Promise<SyncAlias | undefined> => {
    const scope = a.conversationId ?? '';
    const [row] = await driver.query<{ tag: string; created_at: string }>("SELECT tag, created_at FROM tag_aliases WHERE conversation_id = ? AND alias = ? AND source = 'manual'", [scope, a.alias]);
    const [removal] = await driver.query<{ removed_at: string }>('SELECT removed_at FROM sync_alias_removals WHERE conversation_id = ? AND alias = ?', [scope, a.alias]);
    if (removal) return { ...a, tag: '', createdAt: removal.removed_at, removed: true };
    return row ? { conversationId: a.conversationId, alias: a.alias, tag: row.tag, createdAt: row.created_at } : undefined;
  };
  const later = (x: SyncAlias, y: SyncAlias) => (x.createdAt !== y.createdAt ? x.createdAt > y.createdAt : !x.removed !== !y.removed ? !x.removed : x.tag > y.tag);
  const local = new Map(await Promise.all(aliases.map(async (a, i) => [i, await mineOf(a)] as const)));
  let changed = 0;
  for (const [i, a] of aliases.entries()) {
    if (a.conversationId !== null && (await driver.query('SELECT 1 FROM conversations WHERE id = ?', [a.conversationId])).length === 0) continue;
    const mine = local.get(i);
    if (mine && (!later(a, mine) || (!!mine.removed === !!a.removed && mine.tag === a.tag))) continue;
    const scope = a.conversationId === null ? undefined : { conversationId: a.conversationId };
    try {
      if (!a.removed) await canonicalizer.add(a.alias, a.tag, scope, a.createdAt);
      else if (mine && !mine.removed) await canonicalizer.remove(a.alias, scope, a.createdAt);
      else {
        await driver.batch([{ sql: 'INSERT OR REPLACE INTO sync_alias_removals (conversation_id, alias, removed_at) VALUES (?, ?, ?)', params: [a.conversationId ?? '', a.alias, a.createdAt] }]);
        continue;
      }
      changed++;
    } catch (error) {
      if (!isPagewiseError(error, 'INVALID_ARGUMENT')) throw error;
    }
  }
  return changed;
}

/**
 * A receiver with tagged turns in two conversations (its tags are what global aliases rewrite); `setup` writes with
 * SQL first, before the memory reads (and caches) anything.
 */
async function tagged(setup: (driver: StorageDriver) => Promise<void> = async () => {}): Promise<Replica> {
  const r = await replica();
  await setup(r.driver);
  const topics = ['sourdough starter', 'marathon training', 'kubernetes upgrade', 'tenant lease', 'guitar practice', 'garden planning'];
  for (const c of ['talk', 'notes']) {
    await r.memory.onTurnComplete({ conversationId: c, messages: topics.flatMap((t, i) => [user(`Tell me about the ${t} on day ${i} in ${c}.`), assistant(`The ${t}: check it on day ${i + 1}.`)]) });
  }
  return r;
}

/** `rows` [scope, alias, tag, createdAt] as manual aliases of the sender, written with SQL (as add() leaves them). */
async function sqlAliases(driver: StorageDriver, rows: readonly (readonly [string, string, string, string])[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await driver.batch([{ sql: "INSERT INTO tag_aliases (conversation_id, alias, tag, source, created_at) SELECT value ->> 0, value ->> 1, value ->> 2, 'manual', value ->> 3 FROM json_each(?)", params: [JSON.stringify(rows.slice(i, i + 500))] }]);
  }
}

describe('sync at scale: aliases', () => {
  it('2,000 global aliases leave what applying them one at a time leaves, and the replicas converge', { timeout: 180_000 }, async () => {
    const a = await replica();
    // The receiver's own: some later than the sender's (they stay), some earlier (they go), removals of either kind.
    const b = await tagged(async (driver) => {
      await sqlAliases(driver, Array.from({ length: 40 }, (_, i) => ['', `alias-${i * 10}`, `mine-${i}`, at(i * 10 + (i % 2 === 0 ? 1 : -1))] as const));
      await driver.batch([
        { sql: "INSERT INTO sync_alias_removals (conversation_id, alias, removed_at) SELECT '', 'alias-' || value, ? FROM json_each('[3,5,7]')", params: [at(6)] },
        { sql: "INSERT INTO tag_aliases (conversation_id, alias, tag, source, created_at) VALUES ('', 'gone-1', 'old', 'manual', ?)", params: [at(1)] },
      ]);
    });
    const tags = [...new Set([...(await b.memory.tags('talk')), ...(await b.memory.tags('notes'))].map((t) => t.tag))].sort();
    expect(tags.length).toBeGreaterThan(10);
    // The sender: its aliases spelled as the receiver's tags (rewritten there), made-up ones onto shared tags, a few
    // of the receiver's conversation, and removals.
    const rows: [string, string, string, string][] = [
      ...tags.map((t, i): [string, string, string, string] => ['', t, `${t}-x`, at(i)]),
      ...Array.from({ length: 2000 - tags.length }, (_, i): [string, string, string, string] => ['', `alias-${i}`, `topic-${i % 97}`, at(i)]),
      ...Array.from({ length: 20 }, (_, i): [string, string, string, string] => ['talk', `local-${i}`, tags[i % tags.length]!, at(i)]),
    ];
    await sqlAliases(a.driver, rows);
    await a.driver.batch([{ sql: "INSERT INTO sync_alias_removals (conversation_id, alias, removed_at) SELECT '', 'gone-' || value, ? FROM json_each('[1,2,3]')", params: [at(50)] }]);
    const batch = await a.memory.syncChanges({ to: b.id, cursor: ZERO });
    expect(batch.more).toBe(false);
    expect(batch.aliases.length).toBe(2000 + 20 + 3);

    const reference = await copyOfTagTables(b.driver);
    const expected = await oneByOne(reference, batch.aliases);
    const applied = await b.memory.applySync(batch);
    expect(applied.aliases).toBe(expected);
    expect(await tagTables(b.driver)).toEqual(await tagTables(reference));
    // The receiver's stored tags spelled as aliases read as their targets now.
    const after = new Set((await b.memory.tags('talk')).map((t) => t.tag));
    expect(tags.filter((t) => after.has(t))).toEqual([]);
    expect(after.has(`${tags[0]}-x`) || after.has(`${tags[1]}-x`)).toBe(true);

    // Both ways: the replicas hold the same states, and a second sync moves nothing.
    await b.memory.sync(a.memory);
    expect((await states(a.driver)).aliases).toEqual((await states(b.driver)).aliases);
    expect((await b.memory.sync(a.memory)).aliases).toBe(0);
  });

  it('20,000 global aliases reach the other replica whole', { timeout: 180_000 }, async () => {
    const a = await replica();
    const b = await tagged();
    const tags = (await b.memory.tags('talk')).map((t) => t.tag);
    const rows = Array.from({ length: 20_000 }, (_, i) => (i < tags.length ? ['', tags[i]!, `${tags[i]!}-x`, at(i)] as const : ['', `alias-${i}`, `topic-${i % 97}`, at(i)] as const));
    await sqlAliases(a.driver, rows);
    const report = await b.memory.sync(a.memory);
    expect(report.aliases).toBe(20_000);
    const mine = (await states(b.driver)).aliases;
    expect(mine).toHaveLength(20_000);
    expect(mine).toEqual((await states(a.driver)).aliases);
    expect((await b.memory.tags('talk')).map((t) => t.tag).sort()).toEqual(tags.map((t) => `${t}-x`).sort());
    expect((await b.memory.sync(a.memory)).aliases).toBe(0);
  });
});

describe('sync at scale: Durable Object SQL (real workerd)', () => {
  it('pins and aliases a slice over, through the edge and back, within its limits (100 parameters, 100 KB statements)', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pagewise-sync-bulk-'));
    const mf = await startTestWorker(dir, await bundleTestWorker(dir), { CLIENT_TOKENS: 'client:u1' });
    try {
      const edge = remoteMemory(`${(await mf.ready).href.replace(/\/$/, '')}/v1/pagewise/sync`, { token: 'client' });
      const laptop = await tagged(async (driver) => {
        await sqlAliases(driver, Array.from({ length: 1200 }, (_, i) => ['', `alias-${i}`, `topic-${i % 97}`, at(i)] as const));
        await driver.batch([{ sql: "INSERT INTO sync_alias_removals (conversation_id, alias, removed_at) VALUES ('', 'gone', ?)", params: [at(1)] }]);
      });
      await laptop.memory.onTurnComplete({ conversationId: 'long', messages: Array.from({ length: 1200 }, (_, i) => user(`line ${i}`, { id: `l${i}` })) });
      for (let i = 0; i < 1200; i += 2) await laptop.memory.pin('long', `l${i}`);
      for (let i = 0; i < 1200; i += 6) await laptop.memory.unpin('long', `l${i}`);
      const tags = (await laptop.memory.tags('talk')).map((t) => t.tag);
      await laptop.memory.aliases.add(tags[0]!, 'first-topic');
      await laptop.memory.aliases.add(tags[1]!, 'second-topic', { conversationId: 'talk' });
      const reopened = laptop.memory;

      // Up (the edge merges them), then down to a new device: 600 pin states, 1,202 aliases (a removal of an alias
      // never held is recorded, not counted).
      expect(await reopened.sync(edge)).toMatchObject({ pins: 600, aliases: 1202 });
      // An alias of a spelling others read as: on the edge, its stored aliases are pointed past it (one UPDATE … FROM).
      await reopened.aliases.add('topic-1', 'final-topic');
      expect((await reopened.sync(edge)).aliases).toBeGreaterThan(0);
      expect((await reopened.sync(edge)).aliases).toBe(0);
      const phone = await replica();
      expect(await phone.memory.sync(edge)).toMatchObject({ pins: 600, aliases: 1203 });
      expect((await phone.memory.aliases.list()).filter((a) => a.tag === 'final-topic')).toHaveLength(14);
      expect(await phone.memory.pins('long')).toEqual(await reopened.pins('long'));
      expect(await phone.memory.aliases.list({ conversationId: 'talk' })).toEqual(await reopened.aliases.list({ conversationId: 'talk' }));
      expect((await states(phone.driver)).aliases).toEqual((await states(laptop.driver)).aliases);
      expect((await phone.memory.tags('talk')).map((t) => t.tag)).toEqual((await reopened.tags('talk')).map((t) => t.tag));
      expect((await phone.memory.sync(edge)).aliases).toBe(0);
    } finally {
      await mf.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('canonicalizer.applyStates', () => {
  // Spellings that are canonical as they are (a digit keeps a word as it is), one that folds into one of them and one
  // that names no tag; conversations with stored tags, and one without any.
  const SPELLINGS = ['t0', 't1', 't2', 't3', 't4', 't5'];
  const CONVERSATIONS = ['c1', 'c2', 'c3'];
  const spelling = fc.oneof({ weight: 14, arbitrary: fc.constantFrom(...SPELLINGS) }, { weight: 1, arbitrary: fc.constant('T1') }, { weight: 1, arbitrary: fc.constant('?!') });
  const scope = fc.constantFrom<string | null>(null, null, 'c1', 'c2', 'c9');
  const time = fc.nat(40).map(at);
  const initial = fc.record({
    units: fc.array(fc.tuple(fc.constantFrom(...CONVERSATIONS), fc.constantFrom(...SPELLINGS), fc.nat(5), fc.nat(2)), { maxLength: 40 }),
    // Any rows, chains and self-aliases included: the two ways must agree from whatever is stored.
    aliases: fc.array(fc.tuple(fc.constantFrom('', ...CONVERSATIONS), fc.constantFrom(...SPELLINGS), fc.constantFrom(...SPELLINGS), fc.boolean(), time), { maxLength: 10 }),
    removals: fc.array(fc.tuple(fc.constantFrom('', ...CONVERSATIONS), fc.constantFrom(...SPELLINGS), time), { maxLength: 4 }),
  });
  const state = fc.record({ conversationId: scope, alias: spelling, tag: spelling, createdAt: time, removed: fc.boolean() })
    .map((s): AliasState => (s.removed ? { ...s, tag: '', removed: true } : { conversationId: s.conversationId, alias: s.alias, tag: s.tag, createdAt: s.createdAt }));

  it('leaves exactly what add() and remove() one at a time leave, in slices of any size, caches included', { timeout: 120_000 }, async () => {
    const one = await sqliteWasm()();
    const bulk = await sqliteWasm()();
    await migrate(one);
    await migrate(bulk);
    await fc.assert(fc.asyncProperty(initial, fc.array(state, { minLength: 1, maxLength: 30 }), fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1 }), fc.boolean(),
      async (start, states, sizes, warm) => {
        for (const driver of [one, bulk]) {
          await driver.batch([
            ...['tag_aliases', 'sync_alias_removals', 'unit_tags', 'tags'].map((t) => ({ sql: `DELETE FROM ${t}` })),
            ...start.units.map(([c, tag, seq, related]) => ({ sql: 'INSERT OR IGNORE INTO unit_tags (conversation_id, tag, unit_seq, related) VALUES (?, ?, ?, ?)', params: [c, tag, seq, related] })),
            { sql: "INSERT INTO tags SELECT conversation_id, tag, COUNT(*), MIN(unit_seq), MAX(unit_seq), '2020-01-01T00:00:00.000Z' FROM unit_tags GROUP BY conversation_id, tag" },
            ...start.aliases.map(([c, alias, tag, auto, t]) => ({ sql: 'INSERT OR REPLACE INTO tag_aliases VALUES (?, ?, ?, ?, ?)', params: [c, alias, tag, auto && c !== '' ? 'auto' : 'manual', t] })),
            ...start.removals.map(([c, alias, t]) => ({ sql: 'INSERT OR REPLACE INTO sync_alias_removals VALUES (?, ?, ?)', params: [c, alias, t] })),
          ]);
        }
        const c1 = createCanonicalizer(createTagStore(one));
        const c2 = createCanonicalizer(createTagStore(bulk));
        if (warm) for (const c of [c1, c2]) for (const id of CONVERSATIONS) await c.canonical(id, ['t0'], at(0));

        const expected: (boolean | null)[] = [];
        for (const s of states) {
          const where = s.conversationId === null ? undefined : { conversationId: s.conversationId };
          try {
            if (s.removed) expected.push(await c1.remove(s.alias, where, s.createdAt));
            else expected.push((await c1.add(s.alias, s.tag, where, s.createdAt), true));
          } catch (error) {
            if (!isPagewiseError(error, 'INVALID_ARGUMENT')) throw error;
            expected.push(null);
          }
        }
        const got: (boolean | null)[] = [];
        for (let i = 0, k = 0; i < states.length; k++) {
          const size = sizes[k % sizes.length]!;
          got.push(...await c2.applyStates(states.slice(i, i + size)));
          i += size;
        }
        expect(got).toEqual(expected);
        expect(await tagTables(bulk)).toEqual(await tagTables(one));
        // What each caches reads as the rows do: canonical spellings, and what they learn, the same.
        for (const id of CONVERSATIONS) expect(await c2.canonical(id, SPELLINGS, at(99))).toEqual(await c1.canonical(id, SPELLINGS, at(99)));
        expect(await tagTables(bulk)).toEqual(await tagTables(one));
      }), { numRuns: 300 });
  });

  it('refuses nothing but what add() refuses, and writes a slice in one transaction', async () => {
    const driver = await sqliteWasm()();
    await migrate(driver);
    const c = createCanonicalizer(createTagStore(driver));
    const batches: number[] = [];
    const batch = driver.batch.bind(driver);
    driver.batch = async (statements) => { batches.push(statements.length); return batch(statements); };
    const result = await c.applyStates([
      { conversationId: null, alias: 'js', tag: 'javascript', createdAt: at(1) },
      { conversationId: null, alias: 'javascript', tag: 'js', createdAt: at(2) },
      { conversationId: null, alias: 'Db', tag: 'DB', createdAt: at(3) },
      { conversationId: 'c', alias: 'pg', tag: '', createdAt: at(4), removed: true },
      { conversationId: null, alias: 'ecmascript', tag: 'JS', createdAt: at(5) },
    ]);
    expect(result).toEqual([true, null, null, false, true]);
    expect(batches).toHaveLength(1);
    expect((await c.list(undefined)).map((x) => [x.alias, x.tag])).toEqual([['ecmascript', 'javascript'], ['js', 'javascript']]);
  });
});
