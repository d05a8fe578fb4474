// Issue 12: with embeddings, a question searched every summary vector of the conversation read from SQLite; the
// summary vectors now live in memory like the turns' (appended as they are embedded).
import { describe, expect, it } from 'vitest';
import { createBackground } from '../../../src/common/background.js';
import { type NewSummary, createSummaryStore } from '../../../src/compaction/summary-store.js';
import { createSemantic } from '../../../src/embed/semantic.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { migrate } from '../../../src/store/schema.js';
import type { Embedder, StorageDriver } from '../../../src/contracts/types.js';

// A toy vector space: one dimension per topic word.
const WORDS = ['sourdough', 'kubernetes', 'marathon', 'tax'];
const fake: Embedder = {
  modelId: 'toy', dimensions: WORDS.length, maxBatchSize: 16, threshold: 0.5,
  embed: async (texts) => texts.map((t) => Float32Array.from(WORDS.map((w) => (t.toLowerCase().includes(w) ? 1 : 0.01)))),
};

function summary(i: number, text: string, kind: NewSummary['kind'] = 'segment', tag?: string): NewSummary {
  return {
    id: `sum_${kind}_${i}_${text.length}`, conversationId: 'c', kind, level: kind === 'tag' ? 2 : 1, ...(tag ? { tag } : {}), firstSeq: 2 * i, lastSeq: 2 * i + 1,
    from: new Date(0).toISOString(), to: new Date(0).toISOString(), sourceIds: [], text, tags: tag ? [tag] : [], relatedTags: [], tokens: 10,
    madeBy: 'test', promptVersion: 1, createdAt: new Date(0).toISOString(),
  };
}

describe('summary vectors in memory', () => {
  it('searches summaries without reading every vector each time, and returns only summaries still stored', async () => {
    const base = await sqliteWasm()();
    await migrate(base);
    let vectorReads = 0;
    const driver: StorageDriver = {
      name: base.name,
      query: (sql, params) => { if (/FROM embeddings WHERE conversation_id = \? AND model_id = \? AND kind = \?/.test(sql)) vectorReads++; return base.query(sql, params); },
      batch: (statements) => base.batch(statements),
      close: () => base.close(),
    };
    const summaries = createSummaryStore(driver);
    for (let i = 0; i < 40; i++) await summaries.commitSegment(summary(i, `${WORDS[i % 4]} notes ${i}`), 2 * i + 2, new Date(0).toISOString());
    expect(await summaries.foldTagSummary(summary(0, 'All about sourdough starters', 'tag', 'sourdough'), null)).toBe(true);
    // Another pass got there first: nothing written.
    expect(await summaries.foldTagSummary(summary(0, 'All about sourdough, again', 'tag', 'sourdough'), null)).toBe(false);
    const background = createBackground();
    const semantic = createSemantic({ driver, embedder: fake, implicit: false, threshold: undefined, background, serial: (fn) => fn() });
    semantic.schedule('c');
    await background.idle();
    const query = (await semantic.query('How is the sourdough doing?')).vector!;
    const first = await semantic.searchSummaries('c', query, 4);
    expect(first).toHaveLength(4);
    const texts = async (hits: { ref: number }[]) => (await summaries.byRowids('c', hits.map((h) => h.ref))).map((x) => x.text);
    expect((await texts(first)).every((t) => t.toLowerCase().includes('sourdough'))).toBe(true);
    for (let k = 0; k < 5; k++) await semantic.searchSummaries('c', query, 4);
    expect(vectorReads).toBe(1);

    // The tag summary folds new segments in (a new version, the old one kept): the new one is embedded and found
    // without reading every vector again.
    const oldTag = (await summaries.tagSummaries('c'))[0]!;
    expect(await summaries.foldTagSummary(summary(1, 'Sourdough starters, feeding and baking: everything so far', 'tag', 'sourdough'), oldTag.id)).toBe(true);
    const newTag = (await summaries.tagSummaries('c'))[0]!;
    expect(newTag.rowid).not.toBe(oldTag.rowid);
    semantic.schedule('c');
    await background.idle();
    let hits = await semantic.searchSummaries('c', query, 40);
    expect(hits.map((h) => h.ref)).toContain(newTag.rowid);
    expect(hits).toHaveLength(12);
    expect(vectorReads).toBe(1);
    // A summary no longer stored is never returned.
    await base.batch([{ sql: 'DELETE FROM summaries WHERE rowid = ?', params: [first[0]!.ref] }]);
    hits = await semantic.searchSummaries('c', query, 40);
    expect(hits.map((h) => h.ref)).not.toContain(first[0]!.ref);
    expect(hits).toHaveLength(11);
    await background.stop('done');
    base.close();
  });
});
