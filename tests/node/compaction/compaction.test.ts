import { afterEach, describe, expect, it } from 'vitest';
import { type Memory } from '../../../src/index.js';
import { FOLD_SEGMENTS, HARD_TURNS, ROLLUP_TAGS } from '../../../src/compaction/compactor.js';
import { setCover, segment } from '../../../src/compaction/segmenter.js';
import { createSummaryStore } from '../../../src/compaction/summary-store.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import type { ChatMessage, StorageDriver, Summarizer, SummaryRequest } from '../../../src/contracts/types.js';
import { assistant, createMemory, recount, user } from '../../support/helpers.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

const TOPICS = ['postgres materialized views for the feed', 'half-marathon training in Lisbon', 'sourdough starter feeding', 'tenant rights and rent stabilization', 'kubernetes upgrade to 1.30'];

/** A long multi-topic conversation: runs of a few exchanges per topic, each with a number and a decision. */
function chat(pairs: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; i < pairs; i++) {
    const topic = TOPICS[Math.floor(i / 4) % TOPICS.length]!;
    out.push(user(`About ${topic}: question ${i}, what should we decide for step ${i}?`, { id: `u${i}`, createdAt: new Date(Date.UTC(2024, 0, 1, 0, i)).toISOString() }));
    const code = `vendor${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}`;
    out.push(assistant(`For ${topic}, step ${i}: we decided to keep option ${i * 7} from ${code} because it costs ${i + 3} dollars. Remember to check it on Friday.`, { id: `a${i}`, createdAt: new Date(Date.UTC(2024, 0, 1, 0, i, 30)).toISOString() }));
  }
  return out;
}

/** A driver whose close() leaves the database open, so a second engine can inspect what the first left behind. */
function shared(driver: StorageDriver, failOn?: (sql: string) => boolean): StorageDriver {
  return {
    name: driver.name,
    query: (sql, params) => driver.query(sql, params),
    batch: (statements) => {
      if (failOn && statements.some((s) => failOn(s.sql))) throw new Error('disk full (injected)');
      return driver.batch(statements);
    },
    close: () => undefined,
  };
}

async function storedState(driver: StorageDriver) {
  const turns = await driver.query('SELECT rowid, conversation_id, seq, id, role, name, content, tool_calls, tool_call_id, created_at, content_hash, text FROM turns ORDER BY rowid');
  const summaries = await driver.query<{ first_seq: number; last_seq: number }>("SELECT first_seq, last_seq FROM summaries WHERE kind = 'segment' ORDER BY first_seq");
  const state = await driver.query<{ watermark: number }>('SELECT watermark FROM compaction_state');
  return { turns, segments: summaries.map((s) => [Number(s.first_seq), Number(s.last_seq)]), watermark: state[0] ? Number(state[0].watermark) : null };
}

/** Segments tile [0, watermark) without gaps or overlaps. */
function expectTiled(segments: number[][], watermark: number | null): void {
  let next = 0;
  for (const [first, last] of segments) {
    expect(first).toBe(next);
    next = last! + 1;
  }
  expect(watermark ?? 0).toBe(next);
}

describe('compaction', () => {
  it('keeps a 240-turn conversation inside a 3,000-token window, and never alters a stored turn', async () => {
    const driver = await sqliteWasm()();
    memory = await createMemory({ contextWindow: 3000, storage: driver });
    const messages = chat(120);
    const reports = [];
    let peak = 0;
    for (let i = 0; i < messages.length; i += 2) {
      const ctx = await memory.onMessageInbound({ conversationId: 'c', message: messages[i]! });
      expect(recount(ctx)).toBe(ctx.budget.total);
      peak = Math.max(peak, ctx.budget.total);
      const report = await memory.onTurnComplete({ conversationId: 'c', messages: messages.slice(i, i + 2) });
      if (report.compaction) reports.push(report.compaction);
      reports.push(...await memory.flush());
    }
    expect(peak).toBeLessThanOrEqual(3000 - 750);
    expect(reports.length).toBeGreaterThanOrEqual(2);
    for (const r of reports) {
      expect(r.tokensAfter).toBeLessThan(r.tokensBefore);
      expect(r.tokensAfter).toBeLessThanOrEqual(0.7 * 3000);
      expect(r.segmentsCompacted).toBeGreaterThan(0);
      expect(r.tagsCovered.length).toBeGreaterThan(0);
    }
    // Every message is stored verbatim, in order, whatever was compacted.
    const stored = await memory.turns('c', { limit: 1000 });
    expect(stored.map((t) => ({ id: t.id, role: t.role, content: t.content, createdAt: t.createdAt }))).toEqual(messages.map((m) => ({ id: m.id, role: m.role, content: m.content, createdAt: m.createdAt })));
    const state = await storedState(driver);
    expectTiled(state.segments, state.watermark);
    expect(state.watermark).toBeGreaterThan(200);
    // The canonical table refuses edits even from inside.
    await expect(Promise.resolve().then(() => driver.batch([{ sql: "UPDATE turns SET text = 'x' WHERE seq = 0" }]))).rejects.toThrow(/append-only/);
  });

  it('compacts by hand, with originals byte-for-byte the same before and after', async () => {
    const driver = await sqliteWasm()();
    memory = await createMemory({ contextWindow: 3000, compaction: false, storage: driver });
    await memory.onTurnComplete({ conversationId: 'c', messages: chat(40) });
    const before = await storedState(driver);
    expect(before.watermark).toBeNull();
    const report = await memory.compact('c');
    expect(report?.trigger).toBe('manual');
    const after = await storedState(driver);
    expect(after.turns).toEqual(before.turns);
    expectTiled(after.segments, after.watermark);
    expect(after.watermark).toBe(80 - 6);
    expect(await memory.compact('c')).toBeNull();
  });

  it('an aborted compaction (engine closed mid-way) leaves the last consistent state, and the next one goes on from it', async () => {
    const driver = await sqliteWasm()();
    let calls = 0;
    let release!: () => void;
    const hanging = new Promise<void>((r) => { release = r; });
    const slow: Summarizer = {
      name: 'slow', version: 1,
      async summarize(request: SummaryRequest) {
        calls++;
        if (calls > 2) {
          release();
          await new Promise((_, reject) => request.signal!.addEventListener('abort', () => reject(request.signal!.reason), { once: true }));
        }
        return { text: `summary of ${request.items.length} items` };
      },
    };
    const m1 = await createMemory({ contextWindow: 3000, compaction: false, summarizer: slow, maxConcurrentSummaries: 1, storage: shared(driver) });
    await m1.onTurnComplete({ conversationId: 'c', messages: chat(40) });
    const turnsBefore = (await storedState(driver)).turns;
    const running = m1.compact('c');
    await hanging;
    await m1.close();
    const report = await running;
    expect(report?.stoppedBy).toMatch(/abort|closed/i);
    const mid = await storedState(driver);
    expect(mid.turns).toEqual(turnsBefore);
    expect(mid.segments.length).toBe(2);
    expectTiled(mid.segments, mid.watermark);

    memory = await createMemory({ contextWindow: 3000, compaction: false, storage: shared(driver) });
    await memory.compact('c');
    const end = await storedState(driver);
    expectTiled(end.segments, end.watermark);
    expect(end.watermark).toBe(80 - 6);
    expect(end.turns).toEqual(turnsBefore);
  });

  it('a storage failure mid-compaction rolls back that segment only', async () => {
    const driver = await sqliteWasm()();
    let segments = 0;
    memory = await createMemory({ contextWindow: 3000, compaction: false, storage: shared(driver, (sql) => sql.includes('INSERT INTO summaries (') && ++segments === 3) });
    await memory.onTurnComplete({ conversationId: 'c', messages: chat(40) });
    const report = await memory.compact('c');
    expect(report?.stoppedBy).toMatch(/disk full/);
    expect(report?.segmentsCompacted).toBe(2);
    const state = await storedState(driver);
    expect(state.segments.length).toBe(2);
    expectTiled(state.segments, state.watermark);
  });

  it('tags survive summarization: a summarizer may add tags, never remove them', async () => {
    const adding: Summarizer = { name: 'adding', version: 1, summarize: async () => ({ text: 'short summary', tags: ['Feed Caching'], relatedTags: [] }) };
    memory = await createMemory({ contextWindow: 3000, compaction: false, summarizer: adding });
    await memory.onTurnComplete({ conversationId: 'c', messages: chat(24) });
    await memory.compact('c');
    const units = await memory.tags('c');
    const segments = await memory.summaries('c', { kind: 'segment' });
    expect(segments.length).toBeGreaterThan(0);
    const turns = await memory.turns('c', { limit: 100 });
    for (const s of segments) {
      expect(s.tags).toContain('feed-caching');
      // Every tag of every covered unit is still on the summary.
      const covered = units.filter((t) => t.firstSeq !== null && s.firstSeq <= t.lastSeq! && t.firstSeq! <= s.lastSeq);
      expect(covered.length).toBeGreaterThan(0);
      expect(s.sourceIds).toEqual(turns.filter((t) => t.seq >= s.firstSeq && t.seq <= s.lastSeq).map((t) => t.id));
    }
    const unitTags = new Set(segments.flatMap((s) => s.tags));
    for (const topicWord of ['postgres', 'sourdough', 'kubernetes']) expect([...unitTags].some((t) => t.includes(topicWord)), topicWord).toBe(true);
  });

  it('rolls summaries up by level into a master summary, and tag summaries cover every compacted exchange', async () => {
    memory = await createMemory({ contextWindow: 3000, compaction: false, nSumSum: 2, maxSumLevel: 3, sumWindow: 4 });
    await memory.onTurnComplete({ conversationId: 'c', messages: chat(40) });
    const report = await memory.compact('c');
    const all = await memory.summaries('c');
    expect(all.some((s) => s.kind === 'rollup' && s.level === 2)).toBe(true);
    const masters = all.filter((s) => s.kind === 'master' && !s.parentId);
    expect(masters).toHaveLength(1);
    expect(masters[0]!.level).toBe(3);
    // The frontier (summaries not rolled up) tiles the compacted range: seed 003's old-aggregated, middle-summarized view.
    const frontier = all.filter((s) => s.kind !== 'tag' && !s.parentId).sort((a, b) => a.firstSeq - b.firstSeq);
    expectTiled(frontier.map((s) => [s.firstSeq, s.lastSeq]), report!.watermark);
    const tagSummaries = all.filter((s) => s.kind === 'tag');
    expect(tagSummaries.map((s) => s.tag).sort()).toEqual([...report!.tagsCovered].sort());
    // Every tagged compacted exchange carries a cover tag.
    const tags = await memory.tags('c');
    expect(tags.length).toBeGreaterThan(0);
    for (const s of all.filter((x) => x.kind === 'segment')) expect(s.tags.some((t) => report!.tagsCovered.includes(t)), s.id).toBe(true);
  });

  it('pages summaries in: broad questions get tag summaries, temporal ones the earliest segments, others the frontier in the room excerpts leave', async () => {
    memory = await createMemory({ contextWindow: 3000 });
    const messages = chat(60);
    for (let i = 0; i < messages.length; i += 2) {
      await memory.onTurnComplete({ conversationId: 'c', messages: messages.slice(i, i + 2) });
      await memory.flush();
    }
    const broad = await memory.onMessageInbound({ conversationId: 'c', message: user('Give me a summary of everything we discussed.') });
    expect(broad.broad).toBe(true);
    expect(broad.manifest.filter((e) => e.kind === 'summary').some((e) => /topic/.test(e.reason))).toBe(true);
    expect(broad.recallText).toMatch(/<summary turns="\d+-\d+" time="[^"]+" topic="/);
    const temporal = await memory.onMessageInbound({ conversationId: 'c', message: user('Going back to the very beginning, what did we decide first?') });
    expect(temporal.temporal).toBe(true);
    const first = temporal.manifest.find((e) => e.kind === 'summary');
    expect(first?.covers?.fromSeq).toBe(0);
    const plain = await memory.onMessageInbound({ conversationId: 'c', message: user('How much did the vendorda option cost us?') });
    // The frontier is continuity: it only takes what the excerpts leave of the recall budget.
    for (const s of plain.manifest.filter((e) => e.kind === 'summary')) expect(s.reason).toMatch(/room the excerpts left/);
    // Deep retrieval still finds the verbatim turn behind the summaries.
    expect(plain.recallText).toContain('step 3: we decided to keep option 21 from vendorda because it costs 6 dollars');
    for (const ctx of [broad, temporal, plain]) expect(recount(ctx)).toBe(ctx.budget.total);
  });

  it('reports hard-threshold compaction in onTurnComplete and regenerates summaries on demand', async () => {
    memory = await createMemory({ contextWindow: 3000 });
    const report = await memory.onTurnComplete({ conversationId: 'c', messages: chat(60) });
    expect(report.compaction?.trigger).toBe('hard');
    expect(report.compaction?.tokensFreed).toBeGreaterThan(0);
    const before = await memory.summaries('c', { kind: 'segment' });
    const lazy = await memory.regenerateSummaries('c', { ids: [before[0]!.id], lazy: true });
    expect(lazy).toEqual({ regenerated: 0, marked: 1 });
    expect((await memory.summaries('c', { kind: 'segment' }))[0]!.stale).toBe(true);
    const done = await memory.regenerateSummaries('c');
    expect(done.regenerated).toBe(done.marked);
    const after = await memory.summaries('c', { kind: 'segment' });
    expect(after.map((s) => s.id)).toEqual(before.map((s) => s.id));
    expect(after.every((s) => !s.stale)).toBe(true);
    expect(after[0]!.text).toBe(before[0]!.text);
  });
});

describe('compaction stays bounded in a long conversation', () => {
  it('a hard compaction does a bounded batch; the next calls and the background finish it, every request within budget', async () => {
    const driver = await sqliteWasm()();
    memory = await createMemory({ contextWindow: 16_000, storage: driver });
    // 1,400 turns (~50,000 tokens) in one call: far over the hard threshold.
    const messages = chat(700);
    const report = await memory.onTurnComplete({ conversationId: 'c', messages });
    const hard = report.compaction!;
    expect(hard.trigger).toBe('hard');
    expect(hard.turnsCompacted).toBeGreaterThan(0);
    // Stopped between segments: at most HARD_TURNS and the segments summarized alongside the last ones.
    expect(hard.turnsCompacted).toBeLessThanOrEqual(HARD_TURNS + 4 * 12);
    expect(hard.tokensAfter).toBeGreaterThan(0.7 * 16_000);
    expect(hard.tokensAfter).toBeLessThan(hard.tokensBefore);
    // The active history is still over the window: assembly sends what fits, exactly counted.
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('How much did the vendorda option cost us?') });
    expect(recount(ctx)).toBe(ctx.budget.total);
    expect(ctx.budget.total).toBeLessThanOrEqual(ctx.budget.available);
    expect(ctx.recallText).toContain('from vendorda because it costs 6 dollars');
    // More exchanges: each call compacts another bounded batch (hard, which HARD_MS bounds too: how many calls that
    // takes depends on the machine) or hands it to the background (soft). Ten at least, then on while a call's is hard.
    const more = chat(1000).slice(1400);
    const reports = [hard];
    for (let i = 0, hardLast = true; i < more.length && (i < 20 || hardLast); i += 2) {
      const r = await memory.onTurnComplete({ conversationId: 'c', messages: more.slice(i, i + 2) });
      if (r.compaction) reports.push(r.compaction);
      hardLast = r.compaction?.trigger === 'hard';
    }
    reports.push(...await memory.flush());
    for (const r of reports.filter((x) => x.trigger === 'hard')) expect(r.turnsCompacted).toBeLessThanOrEqual(HARD_TURNS + 4 * 12);
    expect(reports.at(-1)!.tokensAfter).toBeLessThanOrEqual(0.7 * 16_000);
    const state = await storedState(driver);
    expectTiled(state.segments, state.watermark);
    expect(state.watermark).toBeGreaterThan(1000);
  });

  it('a backlog compacted a slice at a time (backgroundSliceTurns, compact maxTurns) ends where one pass ends', async () => {
    const messages = chat(400);
    // One pass over the whole backlog, for reference.
    const whole = await sqliteWasm()();
    memory = await createMemory({ contextWindow: 32_000, compaction: false, storage: shared(whole) });
    await memory.onTurnComplete({ conversationId: 'c', messages });
    const reference = await memory.compact('c');
    expect(reference?.more).toBeUndefined();
    await memory.close();
    const one = await storedState(whole);
    // The same backlog, its background pass bounded at 100 turns, then 150 turns per compact() call.
    const driver = await sqliteWasm()();
    memory = await createMemory({ contextWindow: 32_000, backgroundSliceTurns: 100, storage: shared(driver) });
    const report = await memory.onTurnComplete({ conversationId: 'c', messages });
    const slices = [...(report.compaction ? [report.compaction] : []), ...await memory.flush()];
    expect(slices.length).toBeGreaterThan(0);
    for (;;) {
      const last = slices.at(-1)!;
      // Stopped between segments: the bound and the segments summarized alongside the last ones.
      expect(last.turnsCompacted).toBeLessThanOrEqual((last.trigger === 'manual' ? 150 : last.trigger === 'hard' ? HARD_TURNS : 100) + 4 * 12);
      if (!last.more) break;
      expect(slices.length).toBeLessThan(40);
      const next = await memory.compact('c', { maxTurns: 150 });
      expect(next?.watermark).toBeGreaterThan(last.watermark);
      slices.push(next!);
    }
    expect(slices.length).toBeGreaterThan(3);
    const sliced = await storedState(driver);
    expectTiled(sliced.segments, sliced.watermark);
    expect(sliced.watermark).toBe(one.watermark);
    expect(sliced.turns).toEqual(one.turns);
    // Nothing left: another call compacts nothing.
    expect(await memory.compact('c', { maxTurns: 150 })).toBeNull();
    for (const bad of [0, -1, 1.5, '10', null]) {
      await expect(memory.compact('c', { maxTurns: bad as number })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'options.maxTurns' });
    }
    await expect(createMemory({ backgroundSliceTurns: 0, storage: await sqliteWasm()() })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', path: 'backgroundSliceTurns' });
  });

  it('tag summaries fold in the new segments of their tag: each lists exactly the segments carrying it, in order', async () => {
    const driver = await sqliteWasm()();
    memory = await createMemory({ contextWindow: 3000, compaction: false, sumWindow: 4, storage: driver });
    const messages = chat(90);
    const covered = new Set<string>();
    // Three passes, each over new turns only.
    for (const end of [60, 120, 180]) {
      await memory.onTurnComplete({ conversationId: 'c', messages: messages.slice(end - 60, end) });
      const report = await memory.compact('c');
      expect(report?.tagsCovered.length).toBeGreaterThan(0);
      for (const t of report!.tagsCovered) covered.add(t);
    }
    const all = await memory.summaries('c');
    const byId = new Map(all.map((x) => [x.id, x]));
    const segments = all.filter((x) => x.kind === 'segment');
    const tagSummaries = all.filter((x) => x.kind === 'tag' && !x.parentId);
    expect(new Set(tagSummaries.map((x) => x.tag))).toEqual(covered);
    expect(tagSummaries.length).toBe(covered.size);
    // A version's sources: the previous version (kept, rolled up into it) and the segments it folded in.
    const folded = (t: typeof all[number]): string[] => t.sourceIds.flatMap((id) => (byId.get(id)!.kind === 'tag' ? folded(byId.get(id)!) : [id]));
    let versions = 0;
    for (const t of tagSummaries) {
      const carrying = segments.filter((x) => x.firstSeq <= t.lastSeq && (x.tags.includes(t.tag!) || x.relatedTags.includes(t.tag!)));
      expect(folded(t), t.tag).toEqual(carrying.map((x) => x.id));
      expect(t.sourceIds.length).toBeLessThanOrEqual(FOLD_SEGMENTS + 1);
      expect(t.firstSeq).toBe(carrying[0]!.firstSeq);
      expect(t.tags[0]).toBe(t.tag);
      for (let v: typeof t | undefined = t; v; v = byId.get(v.sourceIds[0]!)?.kind === 'tag' ? byId.get(v.sourceIds[0]!) : undefined) versions++;
    }
    expect(versions).toBeGreaterThan(tagSummaries.length);
    // The cover: every compacted segment carries a tag that has a tag summary, including the last pass's.
    const summarized = new Set(tagSummaries.map((x) => x.tag!));
    for (const x of segments) expect(x.tags.some((t) => summarized.has(t)), `${x.firstSeq}-${x.lastSeq}`).toBe(true);
    expect(Math.max(...tagSummaries.map((x) => x.lastSeq))).toBe(segments.at(-1)!.lastSeq);
    // Tag rows index the segments only (what a tag summary folds in next), every one of them.
    const rows = await driver.query<{ kind: string; n: number }>('SELECT s.kind AS kind, COUNT(*) AS n FROM summary_tags st JOIN summaries s ON s.rowid = st.summary_rowid GROUP BY s.kind');
    expect(rows.map((r) => [r.kind, Number(r.n)])).toEqual([['segment', segments.reduce((n, x) => n + new Set([...x.tags, ...x.relatedTags]).size, 0)]]);
  });

  it('the master and the roll-ups inherit at most ROLLUP_TAGS tags, however many their sources carry', async () => {
    memory = await createMemory({ contextWindow: 3000, compaction: false, sumWindow: 2, nSumSum: 2, maxSumLevel: 3 });
    await memory.onTurnComplete({ conversationId: 'c', messages: chat(120) });
    await memory.compact('c');
    const all = await memory.summaries('c');
    const distinct = new Set(all.filter((x) => x.kind === 'segment').flatMap((x) => x.tags));
    expect(distinct.size).toBeGreaterThan(3 * ROLLUP_TAGS);
    const masters = all.filter((x) => x.kind === 'master');
    expect(masters.length).toBeGreaterThan(5);
    for (const x of all.filter((y) => y.kind === 'master' || y.kind === 'rollup')) expect(x.tags.length, x.kind).toBeLessThanOrEqual(ROLLUP_TAGS);
    // The current master names the most used tags of the whole conversation, not only the latest ones.
    const master = masters.find((x) => !x.parentId)!;
    for (const word of ['materialized', 'lisbon', 'sourdough', 'tenant', 'kubernetes']) expect(master.tags, word).toContain(word);
    const used = new Map((await memory.tags('c')).map((t) => [t.tag, t.units]));
    const least = Math.min(...master.tags.map((t) => used.get(t) ?? 0));
    expect([...used].filter(([t, n]) => n > least && !master.tags.includes(t))).toEqual([]);
  });

  it('reads the frontier level by level: the same summaries as every summary not rolled up', async () => {
    const driver = await sqliteWasm()();
    memory = await createMemory({ contextWindow: 3000, compaction: false, sumWindow: 2, nSumSum: 3, maxSumLevel: 3, storage: driver });
    const store = createSummaryStore(driver);
    const messages = chat(100);
    const kinds = new Set<string>();
    for (let end = 40; end <= 200; end += 40) {
      await memory.onTurnComplete({ conversationId: 'c', messages: messages.slice(end - 40, end) });
      await memory.compact('c');
      const all = await memory.summaries('c');
      const expected = all.filter((x) => x.kind !== 'tag' && !x.parentId).sort((a, b) => a.firstSeq - b.firstSeq || b.level - a.level).map((x) => x.id);
      const frontier = await store.frontier('c');
      expect(frontier.map((x) => x.id)).toEqual(expected);
      for (const x of frontier) kinds.add(x.kind);
    }
    expect([...kinds].sort()).toEqual(['master', 'rollup', 'segment']);
    expect(await store.frontier('nobody')).toEqual([]);
  });

  it('a temporal question reads the earliest segments only, not every one', async () => {
    memory = await createMemory({ contextWindow: 3000, compaction: false, sumWindow: 2 });
    await memory.onTurnComplete({ conversationId: 'c', messages: chat(150) });
    await memory.compact('c');
    expect((await memory.summaries('c', { kind: 'segment' })).length).toBeGreaterThan(120);
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('Going back to the very beginning, what did we decide first?') });
    expect(ctx.temporal).toBe(true);
    const considered = [...ctx.manifest.filter((e) => e.kind === 'summary'), ...ctx.dropped.filter((e) => e.kind === 'summary')];
    expect(considered.length).toBeGreaterThan(0);
    expect(considered.length).toBeLessThanOrEqual(64);
    expect(ctx.manifest.find((e) => e.kind === 'summary')?.covers?.fromSeq).toBe(0);
  });
});

describe('segmenter and set cover', () => {
  it('a segment shorter than half of sumWindow takes the next unit whatever its tags', () => {
    const units = Array.from({ length: 8 }, (_, i) => ({ unitSeq: 2 * i, endSeq: 2 * i + 1, tags: [`t${i}`] }));
    expect(segment(units, 0, 12).map((s) => [s.firstSeq, s.lastSeq])).toEqual([[0, 5], [6, 11], [12, 15]]);
    expect(segment(units, 0, 2).map((s) => [s.firstSeq, s.lastSeq])).toHaveLength(8);
  });

  it('groups consecutive units that share a tag, capped by sumWindow, tiling the range', () => {
    const units = [
      { unitSeq: 2, endSeq: 3, tags: ['a'] }, { unitSeq: 4, endSeq: 5, tags: ['a', 'b'] }, { unitSeq: 6, endSeq: 7, tags: ['b'] },
      { unitSeq: 8, endSeq: 9, tags: ['c'] }, { unitSeq: 11, endSeq: 12, tags: ['c'] },
    ];
    expect(segment(units, 1, 12).map((s) => [s.firstSeq, s.lastSeq])).toEqual([[1, 7], [8, 12]]);
    expect(segment(units, 1, 4).map((s) => [s.firstSeq, s.lastSeq])).toEqual([[1, 3], [4, 7], [8, 9], [10, 12]]);
  });

  it('covers every tagged unit with the fewest tags, deterministically', () => {
    const cover = setCover(new Map([[1, ['db', 'perf']], [2, ['db']], [3, ['perf', 'ui']], [4, ['ui']], [5, []]]));
    expect(cover).toEqual(['db', 'ui']);
  });
});
