import { afterEach, describe, expect, it } from 'vitest';
import { type ExportData, type Memory, sqliteWasm } from '../../../src/index.js';
import type { ChatMessage, StorageDriver } from '../../../src/contracts/types.js';
import { RETAG_ALL_TURNS } from '../../../src/engine/data-control.js';
import { forgetPlan, locomoLikeChat, toExportData } from '../../fixtures/locomo-like.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

// Words that occur nowhere else: where they are found in the database's bytes or indexes, something was kept.
const SECRET = 'Quorvex';
const OTHER = 'Plimsoll';

const has = (bytes: Uint8Array, word: string): boolean => {
  const text = Buffer.from(bytes).toString('latin1');
  return text.includes(word) || text.toLowerCase().includes(word.toLowerCase());
};

async function driver(): Promise<StorageDriver> {
  return sqliteWasm()();
}

/** A conversation long enough to be tagged, compacted and summarized in a 1,500-token window. */
function conversation(secretAt: number[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (let i = 0; i < 40; i++) {
    const secret = secretAt.includes(i);
    messages.push(
      user(secret ? `My bank PIN hint is ${SECRET} ${SECRET}, do not tell anyone about ${SECRET}.` : `Question ${i} about the garden: how often should I water the tomatoes in week ${i}?`, { id: `u${i}`, createdAt: new Date(Date.UTC(2026, 0, 1 + i)).toISOString() }),
      assistant(secret ? `Noted: ${SECRET} stays private.` : `Water the tomatoes deeply twice in week ${i}, mulch them, and check the leaves.`, { id: `a${i}`, createdAt: new Date(Date.UTC(2026, 0, 1 + i, 1)).toISOString() }),
    );
  }
  return messages;
}

let memory: Memory | undefined;
afterEach(async () => {
  await memory?.close();
  memory = undefined;
});

describe('forget', () => {
  it('a whole conversation: gone from turns, indexes, summaries and the database bytes; others untouched', async () => {
    const d = await driver();
    memory = await createMemory({ storage: d, contextWindow: 1500, reserveTokens: 300 });
    await memory.onTurnComplete({ conversationId: 'secret', messages: conversation([3, 10, 25]) });
    await memory.onTurnComplete({ conversationId: 'kept', messages: [user(`The ${OTHER} line marks the load.`, { id: 'k1' }), assistant('Yes, on the hull.', { id: 'k2' })] });
    await memory.compact('secret');
    await memory.flush();
    expect((await memory.summaries('secret')).length).toBeGreaterThan(0);
    // The control: before forgetting, the word is there to be found.
    expect(has(await memory.exportDatabase(), SECRET)).toBe(true);

    const report = await memory.forget({ conversationId: 'secret' });
    expect(report.conversationRemoved).toBe(true);
    expect(report.messageIds).toHaveLength(80);
    expect(report.summaries).toBeGreaterThan(0);
    expect((await memory.conversations()).map((c) => c.id)).toEqual(['kept']);
    await expect(memory.turns('secret')).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    for (const table of ['turns', 'units', 'unit_tags', 'tags', 'term_df', 'summaries', 'summary_tags', 'compaction_state', 'pins', 'embeddings', 'llm_usage']) {
      const rows = await d.query(`SELECT COUNT(*) AS n FROM ${table} WHERE conversation_id = 'secret'`);
      expect(rows[0]!.n, table).toBe(0);
    }
    expect(await d.query("SELECT term FROM turns_fts_vocab WHERE term LIKE 'quorv%'")).toEqual([]);
    expect(has(await memory.exportDatabase(), SECRET)).toBe(false);
    // The other conversation is whole, and still found by its words.
    expect((await memory.turns('kept')).map((t) => t.id)).toEqual(['k1', 'k2']);
    const ctx = await memory.onMessageInbound({ conversationId: 'kept', message: user(`What is the ${OTHER} line?`) });
    expect(ctx.messages.map((m) => m.content).join('\n')).toContain(OTHER);
    // Append-only holds again for every other path.
    expect(() => d.batch([{ sql: "DELETE FROM turns WHERE conversation_id = 'kept'" }])).toThrow(/append-only/);
  });

  it('some messages: the rest stays, tags and summaries are rebuilt without them, no byte of them is left', async () => {
    const d = await driver();
    memory = await createMemory({ storage: d, contextWindow: 1500, reserveTokens: 300 });
    await memory.onTurnComplete({ conversationId: 'c', messages: conversation([3, 10]) });
    await memory.pin('c', 'u10');
    await memory.compact('c');
    await memory.flush();
    expect((await memory.tags('c')).map((t) => t.tag)).toContain('quorvex');

    const report = await memory.forget({ conversationId: 'c', messageIds: ['u3', 'a3', 'u10', 'a10'] });
    expect(report).toMatchObject({ conversationRemoved: false, messageIds: ['u3', 'a3', 'u10', 'a10'] });
    const ids = (await memory.turns('c')).map((t) => t.id);
    expect(ids).toHaveLength(76);
    // What conversations() says is what is stored (it once said 80: the highest position + 1).
    expect((await memory.conversations()).find((c) => c.id === 'c')).toMatchObject({ turns: 76 });
    expect(ids).not.toContain('u3');
    expect(ids).toContain('u4');
    expect(await memory.pins('c')).toEqual([]);
    // The tags of the messages as if the forgotten ones had never been stored (counts may differ by one: a phrase
    // becomes a tag once it recurs, and the seqs keep their gaps).
    const tags = (await memory.tags('c')).map((t) => t.tag).sort();
    expect(tags).not.toContain('quorvex');
    const never = await createMemory({ contextWindow: 1500, reserveTokens: 300 });
    await never.onTurnComplete({ conversationId: 'c', messages: conversation([3, 10]).filter((m) => !['u3', 'a3', 'u10', 'a10'].includes(m.id!)) });
    expect(tags).toEqual((await never.tags('c')).map((t) => t.tag).sort());
    await never.close();
    // Compaction runs again over what is left; no summary quotes the forgotten turns.
    await memory.compact('c');
    await memory.flush();
    const summaries = await memory.summaries('c');
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries.map((s) => s.text).join('\n')).not.toContain(SECRET);
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user(`What was my ${SECRET} hint?`) });
    // Only the question itself carries the word.
    expect([ctx.prependText, ...ctx.messages.slice(0, -1).map((m) => String(m.content))].join('\n')).not.toContain(SECRET);
    expect(ctx.matchedTags).not.toContain('quorvex');
    expect(has(await memory.exportDatabase(), SECRET)).toBe(false);
    // New turns go on after the gap.
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('And the peppers?', { id: 'u99' }), assistant('Same as the tomatoes.', { id: 'a99' })] });
    expect((await memory.turns('c')).map((t) => t.id).slice(-2)).toEqual(['u99', 'a99']);
  });

  it('some messages of a long conversation: only the exchanges they were in (and the one before each) are tagged again; their terms leave the counts', async () => {
    const d = await driver();
    memory = await createMemory({ storage: d });
    const chat = locomoLikeChat({ turns: RETAG_ALL_TURNS + 300, facts: 40 });
    await memory.import(toExportData(chat, 'c'));
    const plan = forgetPlan(chat, { count: 24 });
    // A question whose reply stays: the reply joins the exchange before it, as if the question had never been stored.
    const q = chat.turns.findIndex((t, i) => i > 100 && t.role === 'user' && chat.turns[i - 1]!.role === 'assistant' && chat.turns[i + 1]!.role === 'assistant' && !plan.ids.includes(t.id) && !plan.ids.includes(chat.turns[i - 1]!.id));
    const ids = [...plan.ids, chat.turns[q]!.id];
    const units = async () => new Map((await d.query<{ unit_seq: number; end_seq: number; tagged_at: string }>(
      "SELECT unit_seq, end_seq, tagged_at FROM units WHERE conversation_id = 'c' ORDER BY unit_seq")).map((u) => [Number(u.unit_seq), { end: Number(u.end_seq), at: u.tagged_at }]));
    const seqOf = async (id: string) => Number((await d.query<{ seq: number }>("SELECT seq FROM turns WHERE conversation_id = 'c' AND id = ?", [id]))[0]!.seq);
    const [question, reply] = [await seqOf(chat.turns[q]!.id), await seqOf(chat.turns[q + 1]!.id)];
    const before = await units();
    const previous = Math.max(...[...before.keys()].filter((s) => s < question));
    const markers = plan.forgotten.map((x) => x.marker.toLowerCase());
    const terms = async () => (await d.query<{ term: string }>(`SELECT term FROM term_df WHERE conversation_id = 'c' AND term IN (${markers.map(() => '?').join(', ')})`, markers)).map((r) => r.term);
    // The control: before forgetting, the markers are counted.
    expect((await terms()).length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 5));
    await memory.forget({ conversationId: 'c', messageIds: ids });
    const after = await units();
    expect(after.get(previous)?.end).toBe(reply);
    expect(after.has(question)).toBe(false);
    // Most exchanges keep their tags as they were (not tagged again).
    const retagged = [...after].filter(([s, u]) => before.get(s)?.at !== u.at).length;
    expect(retagged).toBeGreaterThan(0);
    expect(retagged).toBeLessThanOrEqual(2 * ids.length);
    expect(await terms()).toEqual([]);
    expect((await memory.tags('c')).map((t) => t.tag).filter((t) => markers.includes(t))).toEqual([]);
    // The tags' statistics are those of the units carrying them.
    const stale = await d.query(`SELECT t.tag FROM tags t WHERE t.conversation_id = 'c'
      AND t.units <> (SELECT COUNT(*) FROM unit_tags u WHERE u.conversation_id = 'c' AND u.tag = t.tag)`);
    expect(stale).toEqual([]);
    const bytes = await memory.exportDatabase();
    expect(markers.filter((m) => has(bytes, m))).toEqual([]);
  });

  it('vectors: the forgotten turns\' go, the rest stay, summaries are embedded again', async () => {
    const d = await driver();
    // A bag-of-words embedder (the Embedder seam; retrieval quality is not what this is about).
    const embedder = {
      modelId: 'bag', dimensions: 32, maxBatchSize: 8, threshold: 0.1,
      async embed(texts: readonly string[]) {
        return texts.map((t) => {
          const v = new Float32Array(32);
          for (const w of t.toLowerCase().match(/[a-z]+/g) ?? []) v[[...w].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 32, 7)]! += 1;
          return v;
        });
      },
    };
    memory = await createMemory({ storage: d, contextWindow: 1500, reserveTokens: 300, embedder });
    await memory.onTurnComplete({ conversationId: 'c', messages: conversation([3]) });
    await memory.compact('c');
    await memory.flush();
    const seqs = async () => (await d.query<{ ref: number }>("SELECT ref FROM embeddings WHERE conversation_id = 'c' AND kind = 'turn' ORDER BY ref")).map((r) => Number(r.ref));
    expect(await seqs()).toContain(6);
    await memory.forget({ conversationId: 'c', messageIds: ['u3', 'a3'] });
    await memory.compact('c');
    await memory.flush();
    const left = await seqs();
    expect(left).toHaveLength(78);
    expect(left).not.toContain(6);
    expect(left).not.toContain(7);
    const summaries = await memory.summaries('c');
    const vectors = await d.query("SELECT COUNT(*) AS n FROM embeddings WHERE conversation_id = 'c' AND kind = 'summary'");
    expect(Number(vectors[0]!.n)).toBe(summaries.length);
    expect((await memory.embeddingStatus('c'))).toMatchObject({ embedded: 78 + summaries.length, total: 78 + summaries.length });
  });

  it('by tag: every exchange carrying it', async () => {
    memory = await createMemory();
    await memory.onTurnComplete({ conversationId: 'c', messages: conversation([5, 12]) });
    const report = await memory.forget({ conversationId: 'c', tag: SECRET });
    expect(report.messageIds.sort()).toEqual(['a12', 'a5', 'u12', 'u5']);
    expect((await memory.turns('c')).map((t) => t.text).join('\n')).not.toContain(SECRET);
  });

  it('refuses bad input with a typed error and forgets nothing', async () => {
    memory = await createMemory();
    await memory.onTurnComplete({ conversationId: 'c', messages: conversation([]) });
    await expect(memory.forget({ conversationId: 'nope' })).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    await expect(memory.forget({ conversationId: 'c', messageIds: ['u1', 'missing'] })).rejects.toMatchObject({ code: 'NOT_FOUND', message: expect.stringMatching(/"missing".*nothing was forgotten/) });
    await expect(memory.forget({ conversationId: 'c', messageIds: [] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(memory.forget({ conversationId: 'c', tag: 'no-such-topic' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(memory.forget({ conversationId: 'c', tag: 42 } as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(memory.forget('c' as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await memory.turns('c')).toHaveLength(80);
  });
});

describe('export and import', () => {
  const rich = (): ChatMessage[] => [
    user('Book a table for two at Luigi on Friday.', { id: 'm1', name: 'Ana', createdAt: '2026-02-01T18:00:00.000Z' }),
    assistant('', { id: 'm2', createdAt: '2026-02-01T18:00:05.000Z', toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'book', arguments: '{"place":"Luigi","people":2}' } }] }),
    { role: 'tool', content: '{"ok":true,"time":"20:00"}', toolCallId: 'call_1', id: 'm3', createdAt: '2026-02-01T18:00:06.000Z' },
    assistant('Booked Luigi for two on Friday at 20:00.', { id: 'm4', createdAt: '2026-02-01T18:00:07.000Z' }),
    ...conversation([]).slice(0, 30),
  ];

  it('round trip: every turn equal, pins and aliases kept, the same questions recall the same turns; twice is a no-op', async () => {
    memory = await createMemory({ contextWindow: 1200, reserveTokens: 200 });
    await memory.onTurnComplete({ conversationId: 'c', messages: rich() });
    await memory.pin('c', 'm4');
    await memory.aliases.add('trattoria', 'luigi', { conversationId: 'c' });
    const data = await memory.export();
    expect(data).toMatchObject({ format: 'pagewise', version: 1 });
    // Plain JSON: what a file would hold.
    const copy = JSON.parse(JSON.stringify(data)) as ExportData;
    const questions = ['Where did we book a table?', 'How often should I water the tomatoes in week 7?', 'What time on Friday?'];
    const recalled = async (m: Memory) => Promise.all(questions.map(async (q) => (await m.onMessageInbound({ conversationId: 'c', message: user(q) })).manifest.flatMap((e) => e.sourceIds)));
    const before = await recalled(memory);
    const original = await memory.turns('c');

    const other = await createMemory({ contextWindow: 1200, reserveTokens: 200 });
    try {
      expect(await other.import(copy)).toEqual({ conversations: ['c'], turns: original.length, skipped: 0 });
      const strip = (t: { id: string; role: string; name?: string; content: unknown; toolCalls?: unknown; toolCallId?: string; createdAt: string; text: string; contentHash: string }) =>
        ({ id: t.id, role: t.role, name: t.name, content: t.content, toolCalls: t.toolCalls, toolCallId: t.toolCallId, createdAt: t.createdAt, text: t.text, contentHash: t.contentHash });
      expect((await other.turns('c')).map(strip)).toEqual(original.map(strip));
      expect(await other.pins('c')).toEqual(['m4']);
      expect((await other.aliases.list({ conversationId: 'c' })).map((a) => [a.alias, a.tag])).toContainEqual(['trattoria', 'luigi']);
      expect(await recalled(other)).toEqual(before);
      // Again: nothing new.
      expect(await other.import(copy)).toEqual({ conversations: [], turns: 0, skipped: original.length });
      expect(await other.turns('c')).toHaveLength(original.length);
      // A conflicting message (same id, other content) is refused and nothing is stored.
      const changed = JSON.parse(JSON.stringify(copy)) as ExportData;
      changed.conversations[0]!.turns[0]!.content = 'Book a table for six.';
      changed.conversations.push({ ...changed.conversations[0]!, id: 'fresh', pins: [], aliases: [] });
      await expect(other.import(changed)).rejects.toMatchObject({ code: 'ID_CONFLICT' });
      expect((await other.conversations()).map((c) => c.id)).toEqual(['c']);
      await expect(other.import({ format: 'other' } as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      await other.close();
    }
  });

  it('exportDatabase gives bytes that open as the same memory', async () => {
    memory = await createMemory();
    await memory.onTurnComplete({ conversationId: 'c', messages: rich() });
    const bytes = await memory.exportDatabase();
    expect(Buffer.from(bytes.subarray(0, 15)).toString()).toBe('SQLite format 3');
    const copy = await createMemory({ storage: sqliteWasm({ bytes }) });
    try {
      expect(await copy.turns('c')).toEqual(await memory.turns('c'));
      expect(await copy.tags('c')).toEqual(await memory.tags('c'));
    } finally {
      await copy.close();
    }
    await expect(sqliteWasm({ bytes: new Uint8Array([1, 2, 3, 4]) })()).rejects.toMatchObject({ code: 'STORAGE_ERROR' });
    expect(() => sqliteWasm({ filename: 'x.sqlite3' })).toThrow(/fileStorage/);
  });
});
