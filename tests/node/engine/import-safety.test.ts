// memory.import() is all or nothing, and does not hold the engine while it runs: a refused import (bad alias, bad
// last turn, a conversation changed under it, a storage error half-way, a crash) leaves the store as it was; other
// conversations' calls complete while a large import is still going. Timings: tests/bench/import-lag.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { type ExportData, type Memory, sqliteWasm } from '../../../src/index.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import { parseConversationFile, readImportFile } from '../../../src/surfaces/formats.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

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
  });
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
  });

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
  });
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
  });

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
  });
});

// JSON.parse builds a value 100,000 levels deep without complaint; what reads it next must refuse it typed, not with
// "Cannot read properties of undefined" or a stack overflow.
const DEEP = 100_000;
const deepArrays = () => JSON.parse('['.repeat(DEEP) + ']'.repeat(DEEP)) as unknown;
const deepObjects = () => JSON.parse('{"a":'.repeat(DEEP) + '1' + '}'.repeat(DEEP)) as unknown;

describe('deeply nested input', () => {
  const turn = (extra: Record<string, unknown> = {}) => ({ id: 'd1', role: 'user', content: 'Deep water.', createdAt: '2026-01-01T00:00:00Z', ...extra });
  for (const [kind, deep] of [['arrays', deepArrays], ['objects', deepObjects]] as const) {
    const places: [string, () => unknown][] = [
      ['the whole argument', deep],
      ['data.conversations', () => ({ ...exportOf([]), conversations: deep() })],
      ['a conversation', () => ({ ...exportOf([]), conversations: [deep()] })],
      ['a conversation\'s turns', () => exportOf([{ id: 'd', turns: deep() as unknown[] }])],
      ['a turn', () => exportOf([{ id: 'd', turns: [deep()] }])],
      ['a turn\'s content', () => exportOf([{ id: 'd', turns: [turn({ content: deep() })] }])],
      ['a turn\'s toolCalls', () => exportOf([{ id: 'd', turns: [turn({ role: 'assistant', toolCalls: deep() })] }])],
      ['a turn\'s branch', () => exportOf([{ id: 'd', turns: [turn({ branch: deep() })] }])],
      ['pins', () => exportOf([{ id: 'd', turns: [turn()], pins: deep() as unknown[] }])],
      ['aliases', () => exportOf([{ id: 'd', turns: [turn()] }], deep() as unknown[])],
      ['attachments', () => ({ ...exportOf([{ id: 'd', turns: [turn()] }]), attachments: deep() })],
    ];
    for (const [where, data] of places) {
      it(`memory.import() with 100,000 nested ${kind} in ${where}: a typed refusal, nothing stored`, async () => {
        memory = await seeded();
        const before = await snapshot(memory);
        const error = await memory.import(data() as ExportData).then(() => undefined, (e: unknown) => e);
        expect(error).toMatchObject({ name: 'PagewiseError', code: expect.stringMatching(/^INVALID_/) });
        expect((error as Error).message).not.toMatch(/Cannot read properties|Maximum call stack/);
        expect(await snapshot(memory)).toEqual(before);
      });
    }
  }

  it('an import file (LoCoMo, LongMemEval, JSONL, export) nested 100,000 deep: INVALID_ARGUMENT saying what shape to pass', () => {
    const arrays = '['.repeat(DEEP) + ']'.repeat(DEEP);
    const objects = '{"a":'.repeat(DEEP) + '1' + '}'.repeat(DEEP);
    const texts = [
      arrays, objects, `{"messages":${arrays}}`, `{"messages":${objects}}`, `{"turns":${arrays}}`,
      `{"speaker_a":"A","session_1":${arrays}}`, `{"conversation":${objects},"qa":[]}`,
      `[{"question_id":"q","haystack_sessions":${arrays}}]`, `{"messages":[]}\n{"messages":${arrays}}\n`,
      `{"format":"pagewise","version":1,"conversations":[{"id":"x","turns":${arrays}}]}`,
    ];
    for (const text of texts) {
      for (const read of [() => readImportFile(text, 'deep.json'), () => parseConversationFile(text, 'deep')]) {
        let error: unknown;
        try { read(); } catch (e) { error = e; }
        expect(error, text.slice(0, 40)).toMatchObject({ name: 'PagewiseError', code: 'INVALID_ARGUMENT' });
        expect((error as Error).message, text.slice(0, 40)).toMatch(/more than 64 levels deep.*pass a LoCoMo conversation \{ speaker_a, session_1: \[\{ speaker, dia_id, text \}\], qa \}, a LongMemEval array/);
      }
    }
  });

  it('an import file of the wrong shape, shallow: a typed error naming the field and its expected shape', () => {
    const cases: [string, RegExp][] = [
      ['[[[1]]]', /\[0\] must be a question \{ question_id, question, haystack_dates, haystack_sessions \} \(got an array\)/],
      ['[{"question_id":"q","haystack_dates":[],"haystack_sessions":{"a":1}}]', /\[0\]\.haystack_sessions must be an array of sessions/],
      ['{"speaker_a":"A","session_1_date_time":"1:00 pm on 8 May, 2023","session_1":[{"speaker":"A","dia_id":"D1:1","text":["hi"]}]}', /session_1\[0\]\.text must be a string \(got an array\)/],
      ['{"speaker_a":"A","session_1_date_time":"1:00 pm on 8 May, 2023","session_1":[],"qa":[{"question":"?","evidence":[["D1:1"]],"category":1}]}', /qa\[0\]\.evidence\[0\] must be a turn id/],
      ['{"messages":[{"role":"assistant","content":"x","tool_calls":[{"id":"c","function":[1]}]}]}', /messages\[0\]\.tool_calls\[0\]\.function must be \{ name, arguments \}/],
    ];
    for (const [text, message] of cases) {
      let error: unknown;
      try { readImportFile(text, 'shape.json'); } catch (e) { error = e; }
      expect(error, text).toMatchObject({ name: 'PagewiseError', code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) });
      expect((error as Error).message, text).toContain('shape.json: ');
    }
  });
});
