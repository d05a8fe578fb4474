// Tag aliases are scoped: what one conversation's content teaches stays in that conversation; manual aliases are
// global or per conversation by choice; every bad argument is a typed error that changes nothing.
import { afterEach, describe, expect, it } from 'vitest';
import { type Memory, isPagewiseError } from '../../../src/index.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { MIGRATIONS, SCHEMA_VERSION, migrate } from '../../../src/store/schema.js';
import type { TagStat } from '../../../src/tags/tag-store.js';
import type { ChatMessage, StorageDriver } from '../../../src/contracts/types.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

const tagNames = async (m: Memory, c: string) => (await m.tags(c)).map((t) => t.tag);

/** A conversation about an endocrinologist, Dr. Kowalsky, early on, then a long stretch about the garden. */
function conversationA(): ChatMessage[] {
  const messages: ChatMessage[] = [
    user('My endocrinologist Dr. Kowalsky changed my levothyroxine dose to 75 micrograms.'), assistant('Follow Dr. Kowalsky on the dose.'),
    user('Dr. Kowalsky wants a blood test in March.'), assistant('Book it early.'),
  ];
  for (let i = 0; i < 120; i++) messages.push(user(`Garden note ${i}: the tomatoes need water and the beans need poles.`), assistant(`Noted ${i}.`));
  return messages;
}

/** Another user's dentist, Dr. Kowalski: a different person one letter away, then a typo of the name. */
const conversationB: ChatMessage[] = [
  user('Dr. Kowalski is my dentist; Kowalski said to floss.'), assistant('Listen to Dr. Kowalski.'),
  user('Kowalski booked a cleaning.'), assistant('Good.'),
];
const typoInB: ChatMessage[] = [user('Dr. Kowalsky (sorry, typo) billed me twice.'), assistant('Call the office.')];

describe('aliases learned from content stay in their conversation', () => {
  it("B's content teaches kowalsky → kowalski; A's tags, new tags and retrieval are unchanged", async () => {
    memory = await createMemory({ contextWindow: 1500, reserveTokens: 200, protectedRecentTurns: 2, memoryTokens: 300 });
    await memory.onTurnComplete({ conversationId: 'A', messages: conversationA() });
    const question = { conversationId: 'A', message: user('What did Dr. Kowalsky say about my dose?'), now: '2030-01-01T00:00:00Z' };
    const recalled = (ctx: Awaited<ReturnType<Memory['onMessageInbound']>>) =>
      ({ matchedTags: ctx.matchedTags, recall: ctx.manifest.filter((e) => e.kind === 'recall').map((e) => e.sourceIds) });
    const tagsBefore = await memory.tags('A');
    const before = recalled(await memory.onMessageInbound(question));
    expect(tagsBefore.map((t) => t.tag)).toContain('kowalsky');
    expect(before.matchedTags).toContain('kowalsky');
    expect(before.recall.length).toBeGreaterThan(0);

    await memory.onTurnComplete({ conversationId: 'B', messages: conversationB });
    await memory.onTurnComplete({ conversationId: 'B', messages: typoInB });

    // A: same tags (statistics included), same retrieval.
    // (Less `lastUsed`, which the question itself moves.)
    const stats = (tags: TagStat[]) => tags.map(({ tag, units, firstSeq, lastSeq }) => ({ tag, units, firstSeq, lastSeq }));
    expect(stats(await memory.tags('A'))).toEqual(stats(tagsBefore));
    const after = await memory.onMessageInbound(question);
    expect(recalled(after)).toEqual(before);
    expect(after.recallText).toContain('levothyroxine');

    // B learned the alias, for itself.
    expect(await tagNames(memory, 'B')).not.toContain('kowalsky');
    expect(await memory.aliases.list({ conversationId: 'B' })).toEqual([
      expect.objectContaining({ alias: 'kowalsky', tag: 'kowalski', source: 'auto', conversationId: 'B' }),
    ]);
    expect(await memory.aliases.list()).toEqual([]);
    expect(await memory.aliases.list({ conversationId: 'A' })).toEqual([]);

    // New content of A keeps its own spelling.
    await memory.onTurnComplete({ conversationId: 'A', messages: [user('Dr. Kowalsky moved the appointment to April.'), assistant('Noted.')] });
    const a = await memory.tags('A');
    expect(a.find((t) => t.tag === 'kowalsky')?.units).toBe(3);
    expect(a.map((t) => t.tag)).not.toContain('kowalski');
  });

  it('a manual global alias applies to every conversation; a per-conversation one to its conversation only', async () => {
    memory = await createMemory({ tagKeywords: { db: ['sql'], k8s: ['cluster'] } });
    for (const c of ['A', 'B']) {
      await memory.onTurnComplete({ conversationId: c, messages: [user('Our sql cluster needs a postgres index.'), assistant('Add one on author.')] });
    }
    await memory.aliases.add('DB', 'Databases');
    for (const c of ['A', 'B']) {
      expect(await tagNames(memory, c)).toContain('database');
      expect(await tagNames(memory, c)).not.toContain('db');
    }
    const added = await memory.aliases.add('k8s', 'Kubernetes', { conversationId: 'A' });
    expect(added).toMatchObject({ alias: 'k8s', tag: 'kubernetes', source: 'manual', conversationId: 'A' });
    expect(await tagNames(memory, 'A')).toContain('kubernetes');
    expect(await tagNames(memory, 'A')).not.toContain('k8s');
    expect(await tagNames(memory, 'B')).toContain('k8s');
    expect(await tagNames(memory, 'B')).not.toContain('kubernetes');

    // Future content: the global alias everywhere, the scoped one in A only.
    for (const c of ['A', 'B']) await memory.onTurnComplete({ conversationId: c, messages: [user('Another sql question about the cluster.'), assistant('Sure.')] });
    const [a, b] = [await memory.tags('A'), await memory.tags('B')];
    expect(a.find((t) => t.tag === 'database')?.units).toBe(2);
    expect(b.find((t) => t.tag === 'database')?.units).toBe(2);
    expect(a.find((t) => t.tag === 'kubernetes')?.units).toBe(2);
    expect(b.find((t) => t.tag === 'k8s')?.units).toBe(2);

    expect((await memory.aliases.list()).map((x) => x.alias)).toEqual(['db']);
    expect((await memory.aliases.list({ conversationId: 'A' })).map((x) => [x.alias, x.conversationId])).toEqual([['db', null], ['k8s', 'A']]);
    expect(await memory.aliases.remove('k8s')).toBe(false);
    expect(await memory.aliases.remove('K8S', { conversationId: 'B' })).toBe(false);
    expect(await memory.aliases.remove('K8S', { conversationId: 'A' })).toBe(true);
    expect(await memory.aliases.list({ conversationId: 'A' })).toHaveLength(1);
  });

  it("a conversation's manual alias wins over a global one there, and the global one still applies elsewhere", async () => {
    memory = await createMemory({ tagKeywords: { db: ['sql'] } });
    await memory.aliases.add('db', 'database');
    await memory.aliases.add('db', 'dashboard', { conversationId: 'A' });
    for (const c of ['A', 'B']) await memory.onTurnComplete({ conversationId: c, messages: [user('The sql numbers look off.'), assistant('Check them.')] });
    expect(await tagNames(memory, 'A')).toContain('dashboard');
    expect(await tagNames(memory, 'A')).not.toContain('database');
    expect(await tagNames(memory, 'B')).toContain('database');
  });

  it('suggests pairs within a conversation only, scoped when asked', async () => {
    memory = await createMemory();
    await memory.onTurnComplete({ conversationId: 'A', messages: [user('The postgres index on author is slow.'), assistant('Vacuum it.')] });
    await memory.onTurnComplete({ conversationId: 'B', messages: [user('Is postgresql good for analytics?'), assistant('Yes.')] });
    const pairs = async (scope?: { conversationId: string }) => (await memory!.aliases.suggest(undefined, scope)).map((x) => [x.alias, x.tag].sort().join(' '));
    // The two spellings never met in one conversation: not a suggestion.
    expect(await pairs()).not.toContain('postgres postgresql');
    await memory.onTurnComplete({ conversationId: 'C', messages: [user('Postgres or PostgreSQL: what is the difference?'), assistant('One is a nickname.')] });
    expect(await pairs()).toContain('postgres postgresql');
    expect(await pairs({ conversationId: 'C' })).toContain('postgres postgresql');
    expect(await pairs({ conversationId: 'A' })).not.toContain('postgres postgresql');
    const [one] = (await memory.aliases.suggest(50, { conversationId: 'C' })).filter((x) => x.tag.startsWith('postgres'));
    expect(one).toMatchObject({ conversations: 1 });
    expect(await memory.aliases.suggest(1)).toHaveLength(1);
  });
});

function deepArray(depth: number): unknown {
  let v: unknown = [];
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

function revoked(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

describe('alias arguments of any type', () => {
  let driver: StorageDriver;
  const stored = async () => JSON.stringify([
    await driver.query('SELECT * FROM tag_aliases ORDER BY 1, 2, 3'),
    await driver.query('SELECT * FROM unit_tags ORDER BY conversation_id, tag, unit_seq'),
    await driver.query('SELECT conversation_id, tag, units, first_seq, last_seq FROM tags ORDER BY conversation_id, tag'),
  ]);

  const bad: [string, (m: Memory) => Promise<unknown>][] = [
    ['remove(Object.create(null))', (m) => m.aliases.remove(Object.create(null) as never)],
    ['remove(deep array)', (m) => m.aliases.remove(deepArray(20_000) as never)],
    ['remove(42)', (m) => m.aliases.remove(42 as never)],
    ['remove(lone surrogate)', (m) => m.aliases.remove('d\uD800b')],
    ['remove(undefined)', (m) => m.aliases.remove(undefined as never)],
    ['remove("!!!")', (m) => m.aliases.remove('!!!')],
    ['remove("db", [])', (m) => m.aliases.remove('db', [] as never)],
    ['suggest(10n)', (m) => m.aliases.suggest(10n as never)],
    ['suggest(Symbol())', (m) => m.aliases.suggest(Symbol() as never)],
    ['suggest([[[1]]])', (m) => m.aliases.suggest([[[1]]] as never)],
    ['suggest(-1)', (m) => m.aliases.suggest(-1)],
    ['suggest(0)', (m) => m.aliases.suggest(0)],
    ['suggest(1.5)', (m) => m.aliases.suggest(1.5)],
    ['suggest(NaN)', (m) => m.aliases.suggest(Number.NaN)],
    ['suggest(Infinity)', (m) => m.aliases.suggest(Number.POSITIVE_INFINITY)],
    ['suggest("5")', (m) => m.aliases.suggest('5' as never)],
    ['add(42, "database")', (m) => m.aliases.add(42 as never, 'database')],
    ['add("db", null)', (m) => m.aliases.add('db', null as never)],
    ['add(Symbol(), "database")', (m) => m.aliases.add(Symbol() as never, 'database')],
    ['add(Object.create(null), "database")', (m) => m.aliases.add(Object.create(null) as never, 'database')],
    ['add("", "database")', (m) => m.aliases.add('', 'database')],
    ['add("db", "")', (m) => m.aliases.add('db', '')],
    ['add("!!!", "database")', (m) => m.aliases.add('!!!', 'database')],
    ['add("db", "—")', (m) => m.aliases.add('db', '—')],
    ['add(lone high surrogate, "database")', (m) => m.aliases.add('db\uD800', 'database')],
    ['add("db", lone low surrogate)', (m) => m.aliases.add('db', '\uDC00database')],
    ['add("Tables", "table")', (m) => m.aliases.add('Tables', 'table')],
    ['add("Databases", "database")', (m) => m.aliases.add('Databases', 'database')],
    ['add(129 characters, "database")', (m) => m.aliases.add('a'.repeat(129), 'database')],
    ['add("db", 5000 characters)', (m) => m.aliases.add('db', 'z'.repeat(5000))],
    ['add loop: database → db after db → database', (m) => m.aliases.add('database', 'db')],
    ['add with a misspelt scope key', (m) => m.aliases.add('pg', 'postgres', { conversationID: 'A' } as never)],
    ['add with scope null', (m) => m.aliases.add('pg', 'postgres', null as never)],
    ['add with scope a Date', (m) => m.aliases.add('pg', 'postgres', new Date() as never)],
    ['add with a getter scope', (m) => m.aliases.add('pg', 'postgres', { get conversationId(): string { throw new Error('boom'); } })],
    ['remove(revoked proxy)', (m) => m.aliases.remove(revoked() as never)],
    ['list(revoked proxy)', (m) => m.aliases.list(revoked() as never)],
    ['list(a proxy whose traps throw)', (m) => m.aliases.list(new Proxy({}, { ownKeys() { throw new Error('trap'); } }) as never)],
    ['list([])', (m) => m.aliases.list([] as never)],
    ['list(Symbol())', (m) => m.aliases.list(Symbol() as never)],
  ];

  it.each(bad)('%s: INVALID_ARGUMENT, nothing stored changes', async (_, call) => {
    driver = await sqliteWasm()();
    memory = await createMemory({ storage: driver, tagKeywords: { db: ['sql'] } });
    await memory.onTurnComplete({ conversationId: 'A', messages: [user('Our sql schema needs a postgres index.'), assistant('Add one on author.')] });
    await memory.aliases.add('db', 'database');
    await memory.aliases.add('pgsql', 'postgres', { conversationId: 'A' });
    const before = await stored();
    const error = await call(memory).then(() => null, (e: unknown) => e);
    expect(isPagewiseError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/^\[pagewise\] \[aliases\] /);
    expect(await stored()).toBe(before);
    // The engine still works.
    expect((await memory.aliases.list({ conversationId: 'A' })).map((a) => a.alias)).toEqual(['db', 'pgsql']);
  });

  it('a bad conversation id in the scope is INVALID_CONVERSATION_ID', async () => {
    memory = await createMemory();
    for (const conversationId of ['', '  ', 42, 'a\uD800', 'x'.repeat(600)]) {
      await expect(memory.aliases.add('db', 'database', { conversationId } as never)).rejects.toMatchObject({ code: 'INVALID_CONVERSATION_ID' });
      await expect(memory.aliases.list({ conversationId } as never)).rejects.toMatchObject({ code: 'INVALID_CONVERSATION_ID' });
    }
    expect(await memory.aliases.list()).toEqual([]);
  });

  it('accepts an explicit undefined scope and limit as the defaults', async () => {
    memory = await createMemory();
    await expect(memory.aliases.add('db', 'database', { conversationId: undefined })).resolves.toMatchObject({ conversationId: null });
    await expect(memory.aliases.suggest(undefined, undefined)).resolves.toEqual([]);
    await expect(memory.aliases.remove('db', {})).resolves.toBe(true);
  });
});

describe('migration to scoped aliases', () => {
  // The version before scoped aliases: the migration that introduces them is found by its table.
  const scoped = MIGRATIONS.findIndex((m) => m.some((sql) => sql.includes('tag_aliases_scoped')));

  async function atPreviousVersion(): Promise<StorageDriver> {
    const driver = await sqliteWasm()();
    await driver.batch([
      { sql: 'CREATE TABLE pagewise_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)' },
      ...MIGRATIONS.slice(0, scoped).flat().map((sql) => ({ sql })),
      { sql: "INSERT INTO pagewise_meta (key, value) VALUES ('schema_version', ?)", params: [String(scoped)] },
      { sql: `INSERT INTO tag_aliases (alias, tag, source, created_at) VALUES
        ('db', 'database', 'manual', '2024-01-01T00:00:00.000Z'), ('k8s', 'kubernetes', 'manual', '2024-01-02T00:00:00.000Z'),
        ('kowalsky', 'kowalski', 'auto', '2024-01-03T00:00:00.000Z')` },
    ]);
    return driver;
  }

  it('keeps manual aliases as global ones and drops learned ones', async () => {
    expect(scoped).toBeGreaterThan(0);
    const driver = await atPreviousVersion();
    await migrate(driver);
    expect(await driver.query("SELECT value FROM pagewise_meta WHERE key = 'schema_version'")).toEqual([{ value: String(SCHEMA_VERSION) }]);
    expect(await driver.query('SELECT conversation_id, alias, tag, source, created_at FROM tag_aliases ORDER BY alias')).toEqual([
      { conversation_id: '', alias: 'db', tag: 'database', source: 'manual', created_at: '2024-01-01T00:00:00.000Z' },
      { conversation_id: '', alias: 'k8s', tag: 'kubernetes', source: 'manual', created_at: '2024-01-02T00:00:00.000Z' },
    ]);
    // A learned alias can never be global.
    await expect((async () => driver.batch([{ sql: "INSERT INTO tag_aliases VALUES ('', 'x', 'y', 'auto', '2024-01-01')" }]))()).rejects.toThrow();

    memory = await createMemory({ storage: driver, tagKeywords: { db: ['sql'] } });
    expect(await memory.aliases.list()).toEqual([
      { alias: 'db', tag: 'database', source: 'manual', createdAt: '2024-01-01T00:00:00.000Z', conversationId: null },
      { alias: 'k8s', tag: 'kubernetes', source: 'manual', createdAt: '2024-01-02T00:00:00.000Z', conversationId: null },
    ]);
    await memory.onTurnComplete({ conversationId: 'A', messages: [user('A sql question.'), assistant('Sure.')] });
    expect(await tagNames(memory, 'A')).toContain('database');
  });
});
