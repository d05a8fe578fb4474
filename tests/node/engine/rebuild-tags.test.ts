// Upgrades that finish themselves, for tags (engine/rebuild-tags.ts): a database tagged by one version of a tagger,
// opened again with the next version, has each conversation's tag index made again beside the stored one, a slice at
// a time, newest conversation first, and swapped in whole: recall reads the old tags until then, and the new index
// is the one a fresh memory makes of the same turns with the new tagger.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { RETRY_MIN_MS } from '../../../src/engine/rebuild-vectors.js';
import { fileStorage } from '../../../src/storage/node-file.js';
import { keywordTagger } from '../../../src/tags/keyword-tagger.js';
import { SLICE_TURNS } from '../../../src/engine/rebuild-tags.js';
import type { Memory } from '../../../src/index.js';
import type { ChatMessage, TagRequest, Tagger } from '../../../src/contracts/types.js';
import type { TagStat } from '../../../src/contracts/types-data.js';
import type { MaintenanceReport } from '../../../src/contracts/types-ops.js';
import { startUpstream, type Upstream } from '../../support/upstream.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'pagewise-rebuild-tags-'));
let file = 0;
const open: Memory[] = [];
let up: Upstream | undefined;
afterEach(async () => { await Promise.all(open.splice(0).map((m) => m.close())); await up?.close(); up = undefined; vi.restoreAllMocks(); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The tag version 2 adds to every unit: the visible difference between the two versions. */
const MARK = 'retagged-by-two';
const TOPICS = ['postgres materialized views for the feed', 'half-marathon training in Lisbon', 'sourdough starter feeding', 'tenant rights and rent stabilization'];

/**
 * The keyword tagger under a version of the test's: version 2 tags as version 1 does and adds MARK. `gate`: a unit
 * waits there (a question does not), so a slice can be held mid-tagging.
 */
function versioned(version: number, gate?: () => Promise<void>): Tagger {
  const keyword = keywordTagger();
  return {
    name: 'topics', version,
    async tag(request: TagRequest) {
      const result = await keyword.tag(request);
      if (request.kind !== 'unit') return result;
      await gate?.();
      return version >= 2 ? { ...result, tags: [...result.tags, MARK] } : result;
    },
  };
}

/** A conversation: runs of exchanges per topic, each with its own numbers. */
function chat(tag: string, pairs: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; i < pairs; i++) {
    const topic = TOPICS[Math.floor(i / 5) % TOPICS.length]!;
    out.push(user(`About ${topic}: question ${i} of ${tag}, what should we decide for step ${i}?`, { id: `${tag}u${i}` }));
    out.push(assistant(`For ${topic}, step ${i} of ${tag}: we decided to keep option ${i * 7} because it costs ${i + 3} dollars.`, { id: `${tag}a${i}` }));
  }
  return out;
}
const LATE = [user('One more thing about the sourdough starter feeding schedule.', { id: 'late-u' }), assistant('Feed the sourdough starter twice a day.', { id: 'late-a' })];
const PAIRS = 150;

async function mem(options: Parameters<typeof createMemory>[0]): Promise<Memory> {
  const m = await createMemory(options);
  open.push(m);
  return m;
}

/** Each conversation's messages as written: the first one written is updated again last (the newest). */
function written(conversations: string[]): Map<string, ChatMessage[]> {
  const all = new Map(conversations.map((c) => [c, chat(c, PAIRS)]));
  all.get(conversations[0]!)!.push(...LATE);
  return all;
}

/** A file tagged by `tagger` (closed again); returns its path. */
async function write(tagger: Tagger, conversations = ['ca', 'cb', 'cc']): Promise<string> {
  const path = join(dir, `db${file++}.sqlite`);
  const m = await createMemory({ storage: fileStorage(path), tagger, maintenance: 'manual' });
  const all = written(conversations);
  for (const c of conversations) await m.onTurnComplete({ conversationId: c, messages: all.get(c)!.slice(0, PAIRS * 2) });
  await m.onTurnComplete({ conversationId: conversations[0]!, messages: LATE });
  await m.flush();
  await m.close();
  return path;
}

/** The tag index as tags() shows it, without the time a question last used each tag (recall changes that). */
const index = async (m: Memory, c: string): Promise<Omit<TagStat, 'lastUsed'>[]> =>
  (await m.tags(c)).map(({ lastUsed: _, ...rest }) => rest).sort((a, b) => (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0));
const marked = async (m: Memory, c: string) => (await m.tags(c)).find((t) => t.tag === MARK)?.units ?? 0;
const ask = (m: Memory, c: string) => m.onMessageInbound({ conversationId: c, message: user('What did we decide about the sourdough starter feeding?') });
const tagsKind = (r: MaintenanceReport) => r.rebuilds.find((s) => s.kind === 'tags');

describe('tags rebuilt after the tagger\'s version changes', () => {
  it('rebuilds a conversation at a time, newest first, recall on the old tags until the new index replaces them whole', async () => {
    const path = await write(versioned(1));
    const m = await mem({ storage: fileStorage(path), tagger: versioned(2), maintenance: 'manual', contextWindow: 2000 });
    const order = (await m.conversations()).map((c) => c.id);
    // Newest first: the first one written was updated last.
    expect(order[0]).toBe('ca');
    const before = new Map<string, Awaited<ReturnType<typeof index>>>();
    for (const c of order) before.set(c, await index(m, c));
    for (const c of order) expect(await marked(m, c)).toBe(0);

    const swapped: string[] = [];
    let slices = 0;
    for (let more = true; more;) {
      const report = await m.maintain();
      slices++;
      const status = tagsKind(report)!;
      more = report.more;
      for (const c of order) {
        if (swapped.includes(c)) continue;
        if ((await marked(m, c)) === 0) {
          // Not swapped yet: the old index, whole — never an empty or a half-made one.
          expect(await index(m, c), `${c} after slice ${slices}`).toEqual(before.get(c));
        } else swapped.push(c);
      }
      expect(status).toMatchObject({ kind: 'tags', done: swapped.length, total: 3 });
      expect(status.conversationId).toBe(order.find((c) => !swapped.includes(c)) ?? null);
      // Recall between slices: every conversation's question finds tagged turns, with the tags of its index now.
      for (const c of order) {
        const recalled = (await ask(m, c)).manifest.filter((e) => e.kind === 'recall');
        expect(recalled.length, `${c} after slice ${slices}`).toBeGreaterThan(0);
        expect(recalled.some((e) => (e.tags ?? []).includes(MARK))).toBe(swapped.includes(c));
      }
      expect(slices).toBeLessThan(20);
    }
    // Newest first, each conversation over more than one slice (SLICE_TURNS turns per slice at most).
    expect(swapped).toEqual(order);
    expect(slices).toBeGreaterThanOrEqual(order.length * Math.ceil((PAIRS * 2) / SLICE_TURNS));

    // Every unit carries the new version's tags, and the index is the one a fresh memory makes of the same turns.
    const fresh = await mem({ tagger: versioned(2), maintenance: 'manual', contextWindow: 2000 });
    const all = written(order);
    for (const c of order) {
      await fresh.onTurnComplete({ conversationId: c, messages: all.get(c)! });
      expect(await marked(m, c)).toBe(all.get(c)!.length / 2);
      expect(await index(m, c)).toEqual(await index(fresh, c));
    }
    const after = await m.maintain();
    expect(tagsKind(after)).toBeUndefined();
    expect(after.more).toBe(false);
  });

  it('rebuilds nothing when the version is the same, nor for a tagger without a version', async () => {
    const path = await write(versioned(1), ['cs']);
    const same = await mem({ storage: fileStorage(path), tagger: versioned(1), maintenance: 'manual' });
    const report = await same.maintain();
    expect(tagsKind(report)).toBeUndefined();
    expect(report.more).toBe(false);
    await same.close();
    const { version: _, ...unversioned } = versioned(2);
    const plain = await mem({ storage: fileStorage(path), tagger: unversioned, maintenance: 'manual' });
    expect(tagsKind(await plain.maintain())).toBeUndefined();
    expect(await marked(plain, 'cs')).toBe(0);
  });

  it('with maintenance "auto" the rebuild runs by itself, and flush() returns once it is done', async () => {
    const path = await write(versioned(1), ['cx', 'cy']);
    const m = await mem({ storage: fileStorage(path), tagger: versioned(2) });
    await m.flush();
    for (const c of ['cx', 'cy']) expect(await marked(m, c)).toBe(c === 'cx' ? PAIRS + 1 : PAIRS);
    expect(tagsKind(await m.maintain())).toBeUndefined();
  });

  it('tags the turns appended during the rebuild with the new tagger, those of its last slice once the new index is in', async () => {
    const path = await write(versioned(1), ['cp']);
    // Armed, the next unit the tagger gets waits at the gate (once): the last slice is held mid-tagging.
    let hold: Promise<void> | null = null;
    let entered!: () => void;
    const m = await mem({ storage: fileStorage(path), maintenance: 'manual', tagger: versioned(2, async () => {
      const wait = hold;
      hold = null;
      if (wait) { entered(); await wait; }
    }) });
    const first = await m.maintain();
    expect(first.more).toBe(true);
    expect(await marked(m, 'cp')).toBe(0);
    const early = [user('And the tenant rights question about the deposit?', { id: 'x-u' }), assistant('The deposit comes back within 30 days.', { id: 'x-a' })];
    await m.onTurnComplete({ conversationId: 'cp', messages: early });
    let release!: () => void;
    hold = new Promise<void>((r) => { release = r; });
    const inTagger = new Promise<void>((r) => { entered = r; });
    const last = m.maintain();
    await inTagger;
    // Appended while the last slice tags the turns it read: after them, so indexNew tags it on the new index.
    const late = [user('Is the sourdough starter ready for the half-marathon carb loading?', { id: 'y-u' }), assistant('Yes, bake the loaf on Friday.', { id: 'y-a' })];
    await m.onTurnComplete({ conversationId: 'cp', messages: late });
    // Still the old index: only the two appended exchanges are the new tagger's (the hooks tagged them).
    expect(await marked(m, 'cp')).toBe(2);
    release();
    expect((await last).more).toBe(false);
    const fresh = await mem({ tagger: versioned(2), maintenance: 'manual' });
    await fresh.onTurnComplete({ conversationId: 'cp', messages: [...written(['cp']).get('cp')!, ...early, ...late] });
    expect(await marked(m, 'cp')).toBe(PAIRS + 3);
    expect(await index(m, 'cp')).toEqual(await index(fresh, 'cp'));
  });

  it('starts a conversation over when turns it read were forgotten meanwhile: no unit of a forgotten turn is written', async () => {
    const path = await write(versioned(1), ['cf']);
    const m = await mem({ storage: fileStorage(path), tagger: versioned(2), maintenance: 'manual' });
    expect((await m.maintain()).more).toBe(true);
    // The first exchanges, read by the slice that ran: the positions after them move.
    const gone = ['cfu0', 'cfa0', 'cfu1', 'cfa1'];
    await m.forget({ conversationId: 'cf', messageIds: gone });
    for (let n = 0; (await m.maintain()).more; n++) expect(n).toBeLessThan(10);
    const kept = written(['cf']).get('cf')!.filter((x) => !gone.includes(x.id!));
    const fresh = await mem({ tagger: versioned(2), maintenance: 'manual' });
    await fresh.onTurnComplete({ conversationId: 'cf', messages: kept });
    expect(await marked(m, 'cf')).toBe(kept.length / 2);
    // Positions keep their gap where the forgotten turns were (the fresh memory's start at 0).
    const shifted = (await index(fresh, 'cf')).map((t) => ({ ...t, firstSeq: t.firstSeq + gone.length, lastSeq: t.lastSeq + gone.length }));
    expect(await index(m, 'cf')).toEqual(shifted);
  });
});

describe('a tag rebuild with an LLM tagger', () => {
  it('keeps the old tags while the LLM fails (no fallback tags), tries again after a wait, its calls the rebuild\'s', async () => {
    const path = await write(keywordTagger(), ['cl']);
    // The wall clock moved on by hand (the wait is a minute).
    const real = Date.now.bind(Date);
    let ahead = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => real() + ahead);
    up = await startUpstream({ reply: JSON.stringify({ tags: ['llm-made'], relatedTags: [] }) });
    const m = await mem({ storage: fileStorage(path), maintenance: 'manual', tagger: 'llm', llm: { baseUrl: `${up.base}/v1`, model: 'test-model', maxRetries: 0 } as never });
    const before = await index(m, 'cl');
    up.next.push({ status: 400, body: '{"error":"down"}' });
    const failed = await m.maintain();
    expect(tagsKind(failed)).toMatchObject({ kind: 'tags', done: 0, total: 1, conversationId: 'cl', lastError: expect.any(String) });
    expect(failed.more).toBe(false);
    expect(await index(m, 'cl')).toEqual(before);
    // Within the wait no slice calls the tagger; after it the rebuild goes on to the end.
    const calls = up.seen.length;
    expect(tagsKind(await m.maintain())).toMatchObject({ done: 0, lastError: expect.any(String) });
    expect(up.seen.length).toBe(calls);
    ahead += RETRY_MIN_MS + 1;
    for (let n = 0; (await m.maintain()).more; n++) expect(n).toBeLessThan(20);
    expect((await m.tags('cl')).find((t) => t.tag === 'llm-made')?.units).toBe(PAIRS + 1);
    const ledger = (await m.costReport('cl')).lines.filter((l) => l.purpose === 'rebuild').reduce((n, l) => n + l.calls, 0);
    expect(ledger).toBe(up.seen.length);
    expect(ledger).toBeGreaterThan(PAIRS);
  });
});

describe('a hook during a tag rebuild', () => {
  it('waits for no tagging: it is answered while the slice\'s tagger is held, in less than the slice\'s own time', async () => {
    const path = await write(versioned(1), ['ch']);
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    let entered!: () => void;
    const inTagger = new Promise<void>((r) => { entered = r; });
    const m = await mem({ storage: fileStorage(path), tagger: versioned(2, async () => { entered(); await gate; }), maintenance: 'manual' });
    const before = await index(m, 'ch');
    const sliceStart = performance.now();
    let sliceEnd = 0;
    const slice = m.maintain().then((r) => { sliceEnd = performance.now(); return r; });
    await inTagger;
    const hookStart = performance.now();
    const ctx = await ask(m, 'ch');
    const hookEnd = performance.now();
    expect(sliceEnd).toBe(0);
    expect(ctx.manifest.length).toBeGreaterThan(0);
    expect(await index(m, 'ch')).toEqual(before);
    release();
    await slice;
    expect(hookStart).toBeGreaterThan(sliceStart);
    expect(hookEnd).toBeLessThan(sliceEnd);
    expect(hookEnd - hookStart).toBeLessThan(sliceEnd - sliceStart);
  });
});
