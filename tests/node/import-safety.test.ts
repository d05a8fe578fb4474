// memory.import() is all or nothing, and does not hold the engine while it runs: a refused import (bad alias, bad
// last turn, a conversation changed under it, a storage error half-way, a crash) leaves the store as it was; other
// conversations' calls complete while a large import is still going. Timings: tests/bench/import-lag.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { type ExportData, type Memory, sqliteWasm } from '../../src/index.js';
import type { StorageDriver } from '../../src/contracts/types.js';
import { assistant, createMemory, user } from './helpers.js';

let memory: Memory | undefined;
afterEach(async () => {
  await memory?.close();
  memory = undefined;
});

const turns = (n: number, prefix = 't') => Array.from({ length: n }, (_, i) => ({
  id: `${prefix}${i}`, role: (i % 2 ? 'assistant' : 'user') as 'user' | 'assistant',
  content: `Message ${i}: water the beans in bed ${i % 13} early, the clay keeps it.`,
  createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
}));

const exportOf = (conversations: { id: string; turns: unknown[]; aliases?: unknown[]; pins?: unknown[] }[], aliases: unknown[] = []): ExportData => ({
  format: 'pagewise', version: 1, exportedAt: '2026-01-01T00:00:00Z', aliases: aliases as never,
  conversations: conversations.map((c) => ({ createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', pins: [], aliases: [], ...c })) as never,
});

/** Everything stored: the portable export and the database's bytes. */
async function snapshot(m: Memory) {
  const data = await m.export();
  return { data: { ...data, exportedAt: '' }, bytes: Buffer.from(await m.exportDatabase()).toString('base64') };
}

async function seeded(options: Parameters<typeof createMemory>[0] = {}): Promise<Memory> {
  const m = await createMemory({ compaction: false, ...options });
  await m.onTurnComplete({ conversationId: 'kept', messages: [user('The canary release is on Thursday.', { id: 'k1' }), assistant('Noted.', { id: 'k2' })] });
  await m.aliases.add('db', 'database');
  return m;
}

describe('a refused import stores nothing', () => {
  const bad: [string, () => ExportData, string][] = [
    ['a conversation alias that names no tag', () => exportOf([{ id: 'n', turns: turns(6), aliases: [{ alias: '!!!', tag: 'garden' }] }]), 'data.conversations[0].aliases[0].alias'],
    ['a global alias that is not a string', () => exportOf([{ id: 'n', turns: turns(6) }], [{ alias: 42, tag: 'garden' }]), 'data.aliases[0].alias'],
    ['two imported aliases that make a loop', () => exportOf([{ id: 'n', turns: turns(6) }], [{ alias: 'veg', tag: 'garden' }, { alias: 'garden', tag: 'veg' }]), 'data.aliases[1].tag'],
    ['an alias looping through a stored one', () => exportOf([{ id: 'n', turns: turns(6) }], [{ alias: 'database', tag: 'db' }]), 'data.aliases[0].tag'],
    ['a pin naming no imported message', () => exportOf([{ id: 'n', turns: turns(6), pins: [{ messageId: 'nope', pinnedAt: '2026-01-01T00:00:00Z' }] }]), 'data.conversations[0].pins[0].messageId'],
  ];
  for (const [what, data, path] of bad) {
    it(what, async () => {
      memory = await seeded();
      const before = await snapshot(memory);
      await expect(memory.import(data())).rejects.toMatchObject({ name: 'PagewiseError', code: 'INVALID_ARGUMENT', path });
      expect(await snapshot(memory)).toEqual(before);
    });
  }

  it('the last turn of a 20,000-turn import invalid: no conversation of it stored, a stored one not extended', async () => {
    memory = await seeded();
    const extended = [{ id: 'k1', role: 'user', content: 'The canary release is on Thursday.', createdAt: (await memory.turns('kept'))[0]!.createdAt },
      { id: 'k2', role: 'assistant', content: 'Noted.', createdAt: (await memory.turns('kept'))[1]!.createdAt }, ...turns(2000, 'x')];
    const last = turns(10_000, 'b');
    (last[last.length - 1] as { role: string }).role = 'robot';
    const before = await snapshot(memory);
    await expect(memory.import(exportOf([{ id: 'kept', turns: extended }, { id: 'a', turns: turns(8000) }, { id: 'b', turns: last }])))
      .rejects.toMatchObject({ code: 'INVALID_ROLE', path: 'data.conversations[2].turns[9999].role' });
    expect(await snapshot(memory)).toEqual(before);
  }, 30_000);
});

/** A sqlite-wasm driver that calls `after` once a batch writing turns of `conversationId` has committed. */
async function watched(conversationId: string, after: (chunk: number) => void): Promise<StorageDriver> {
  const inner = await sqliteWasm()();
  let chunk = 0;
  return {
    name: 'watched', query: (sql, params) => inner.query(sql, params), export: () => inner.export!(), close: () => inner.close(),
    async batch(statements) {
      await inner.batch(statements);
      if (statements.some((s) => s.sql.includes('INSERT INTO turns (') && s.params?.[0] === conversationId)) after(++chunk);
    },
  };
}

describe('an import does not hold the engine', () => {
  it("another conversation's calls, made while the import checks and while it writes, complete before it", async () => {
    const order: string[] = [];
    const calls: Promise<unknown>[] = [];
    const other = (when: string) => {
      calls.push(memory!.turns('kept').then((t) => { order.push(`turns ${when}`); expect(t.map((x) => x.id)).toEqual(['k1', 'k2']); }));
      calls.push(memory!.onMessageInbound({ conversationId: 'kept', message: user('When is the canary release?') })
        .then((c) => { order.push(`inbound ${when}`); expect(c.recallText + JSON.stringify(c.messages)).toContain('Thursday'); }));
    };
    memory = await seeded({ storage: await watched('big', (chunk) => { if (chunk === 1) other('while writing'); }) });
    const importing = memory.import(exportOf([{ id: 'big', turns: turns(3000) }])).then((r) => { order.push('import'); return r; });
    other('while checking');
    expect(await importing).toEqual({ conversations: ['big'], turns: 3000, skipped: 0 });
    await Promise.all(calls);
    expect(order).toEqual(['turns while checking', 'inbound while checking', 'turns while writing', 'inbound while writing', 'import']);
    expect(await memory.turns('big', { limit: 5000 })).toHaveLength(3000);
  }, 30_000);

  it('a conversation changed by another call during the import: the import is refused and undone, the other call kept', async () => {
    let appended: Promise<unknown> | undefined;
    memory = await seeded({ storage: await watched('big', (chunk) => {
      if (chunk === 1) appended = memory!.onTurnComplete({ conversationId: 'big', messages: [user('A message of my own.', { id: 'mine' })] });
    }) });
    const before = await memory.turns('kept');
    await expect(memory.import(exportOf([{ id: 'big', turns: turns(3000) }]))).rejects.toMatchObject({ code: 'ID_CONFLICT' });
    expect(await appended).toMatchObject({ stored: 1 });
    expect((await memory.turns('big')).map((t) => t.id)).toEqual(['mine']);
    expect(await memory.turns('kept')).toEqual(before);
  }, 30_000);
});

/** A sqlite-wasm driver whose batches fail from the `failAt`-th on (the chunk writes of an import), once or for good. */
async function failing(failAt: number, forGood: boolean) {
  const inner = await sqliteWasm()();
  let batches = 0;
  let armed = false;
  const written = { chunks: 0 };
  const driver: StorageDriver = {
    name: 'failing',
    query: (sql, params) => {
      if (armed && forGood && batches >= failAt) throw new Error('the process died');
      return inner.query(sql, params);
    },
    batch: (statements) => {
      if (armed && ++batches >= failAt && (forGood || batches === failAt)) throw new Error('disk I/O error');
      if (armed && statements.some((s) => s.sql.includes('INSERT INTO turns ('))) written.chunks++;
      return inner.batch(statements);
    },
    export: () => inner.export!(),
    close: () => undefined,
  };
  return { driver, inner, written, arm: () => { armed = true; } };
}

describe('a failure half-way through the writes', () => {
  it('a storage error in a later chunk: what the import wrote is removed', async () => {
    const f = await failing(4, false);
    memory = await seeded({ storage: f.driver });
    const before = await snapshot(memory);
    f.arm();
    await expect(memory.import(exportOf([{ id: 'big', turns: turns(600) }], [{ alias: 'veg', tag: 'garden' }]))).rejects.toThrow(/disk I\/O error/);
    expect(f.written.chunks).toBeGreaterThan(0);
    const after = await snapshot(memory);
    expect(after.data).toEqual(before.data);
    expect(await f.inner.query("SELECT COUNT(*) AS n FROM pagewise_meta WHERE key LIKE 'import:%'")).toEqual([{ n: 0 }]);
  }, 30_000);

  it('a crash half-way: the next createMemory() on the storage undoes it', async () => {
    const f = await failing(4, true);
    memory = await seeded({ storage: f.driver });
    const before = await memory.export();
    f.arm();
    await expect(memory.import(exportOf([{ id: 'big', turns: turns(600) }]))).rejects.toThrow();
    // What the dead process left: some turns of the import, and its journal.
    expect(Number((await f.inner.query("SELECT COUNT(*) AS n FROM turns WHERE conversation_id = 'big'"))[0]!.n)).toBeGreaterThan(0);
    await memory.close();
    memory = await createMemory({ compaction: false, storage: f.inner });
    expect({ ...await memory.export(), exportedAt: '' }).toEqual({ ...before, exportedAt: '' });
    expect(await f.inner.query("SELECT COUNT(*) AS n FROM pagewise_meta WHERE key LIKE 'import:%'")).toEqual([{ n: 0 }]);
  }, 30_000);
});
