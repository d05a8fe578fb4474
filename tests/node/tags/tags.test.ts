import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMemory, type Memory } from '../../../src/index.js';
import { detectIntent } from '../../../src/retrieval/intent.js';
import { isAutoAlias, slug } from '../../../src/tags/canonicalize.js';
import { keywordTagger } from '../../../src/tags/keyword-tagger.js';
import { parseTagReply } from '../../../src/tags/llm-tagger.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import type { ChatMessage } from '../../../src/contracts/types.js';
import { assistant, user } from '../../support/helpers.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

describe('canonicalizer', () => {
  it('slugs, folds plurals and keeps names and mass nouns', () => {
    expect(slug('Materialized Views')).toBe('materialized-view');
    expect(slug('  Queries ')).toBe('query');
    expect(slug('Kubernetes')).toBe('kubernetes');
    expect(slug('data')).toBe('data');
    expect(slug('Café Analysis')).toBe('cafe-analysis');
    expect(slug('!!!')).toBe('');
  });

  it('merges spelling variants only when they are close and long', () => {
    expect(isAutoAlias('data-base', 'database')).toBe(true);
    expect(isAutoAlias('kubernets', 'kubernetes')).toBe(true);
    expect(isAutoAlias('react', 'reach')).toBe(false);
    expect(isAutoAlias('postgres', 'postgresql')).toBe(false);
  });

  it('applies manual aliases to stored and future tags, and suggests likely ones', async () => {
    memory = await createMemory({ tagKeywords: { db: ['sql'] } });
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('Our sql schema needs a postgres index.'), assistant('Add one on author.')] });
    expect((await memory.tags('c')).map((t) => t.tag)).toContain('db');
    await memory.aliases.add('DB', 'Databases');
    const tags = (await memory.tags('c')).map((t) => t.tag);
    expect(tags).toContain('database');
    expect(tags).not.toContain('db');
    expect(await memory.aliases.list()).toEqual([expect.objectContaining({ alias: 'db', tag: 'database', source: 'manual', conversationId: null })]);
    await memory.onTurnComplete({ conversationId: 'c', messages: [user('Another sql question about postgresql.'), assistant('Sure.')] });
    expect((await memory.tags('c')).find((t) => t.tag === 'database')?.units).toBe(2);
    const pairs = (await memory.aliases.suggest()).map((x) => [x.alias, x.tag].sort().join(' '));
    expect(pairs).toContain('postgres postgresql');
    await expect(memory.aliases.add('', 'x')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('keyword tagger', () => {
  it('finds names, rare words and configured tags in real text', async () => {
    const tagger = keywordTagger({ tagKeywords: { caching: ['cache', 'materialized view'] } });
    const result = await tagger.tag({
      kind: 'unit', vocabulary: [], minTags: 2, maxTags: 6,
      text: 'user: We switched the feed to a materialized view in Postgres because the timeline query took 900 ms.\nassistant: Refresh it every five minutes.',
    });
    expect(result.tags[0]).toBe('caching');
    expect(result.tags).toEqual(expect.arrayContaining(['postgres', 'feed']));
    expect(result.tags.length).toBeLessThanOrEqual(6);
    expect(result.tags).not.toContain('because');
  });

  it('does not make tags of numbers, ordinals, times of day or titles', async () => {
    const result = await keywordTagger().tag({
      kind: 'query', vocabulary: [], minTags: 2, maxTags: 8,
      text: 'Yesterday Mrs Okafor moved the pottery workshop to 5pm on the 18th; it ran through the 1990s and cost 300.',
    });
    expect(result.tags).toEqual(expect.arrayContaining(['okafor', 'pottery', 'workshop']));
    for (const t of ['mrs', '5pm', '18th', '1990s', '300']) expect(result.tags).not.toContain(t);
  });

  it('tags stored units with the conversation\'s vocabulary and statistics', async () => {
    memory = await createMemory();
    const messages: ChatMessage[] = [];
    for (let i = 0; i < 12; i++) messages.push(user(`Week ${i} of marathon training: tempo run and long run on Sunday.`), assistant('Keep the easy pace easy.'));
    messages.push(user('Separately, my sourdough starter smells like acetone.'), assistant('Feed it more often.'));
    await memory.onTurnComplete({ conversationId: 'c', messages });
    const tags = await memory.tags('c');
    const marathon = tags.find((t) => t.tag === 'marathon')!;
    expect(marathon).toMatchObject({ units: 12, firstSeq: 0, lastSeq: 22 });
    expect(tags.find((t) => t.tag === 'sourdough')).toMatchObject({ units: 1, firstSeq: 24 });
  });

  it('keeps tag statistics equal to a recount while units grow and are re-tagged', async () => {
    const driver = await sqliteWasm()();
    memory = await createMemory({ storage: driver });
    const topics = ['marathon training plan', 'sourdough starter feeding', 'kubernetes upgrade window', 'tenant rights letter'];
    for (let i = 0; i < 24; i++) {
      const topic = topics[(i * 7) % 4]!;
      // The question alone first, its reply later: the unit is tagged twice and may lose tags the second time.
      await memory.onTurnComplete({ conversationId: 'c', messages: [user(`About the ${topic}: what now for step ${i}?`)] });
      await memory.onTurnComplete({ conversationId: 'c', messages: [assistant(i % 3 === 0
        ? `Ask Priya Raman, Tomasz Wolski and Ingrid Halvorsen at Nordvik Labs about the Zephyr and Quasar prototypes, the Obsidian ledger and the Marigold audit.`
        : 'Wait a week.')] });
      const stored = (await memory.tags('c')).map(({ tag, units, firstSeq, lastSeq }) => ({ tag, units, firstSeq, lastSeq }));
      const recount = (await driver.query<{ tag: string; units: number; firstSeq: number; lastSeq: number }>(
        `SELECT tag, COUNT(*) AS units, MIN(unit_seq) AS firstSeq, MAX(unit_seq) AS lastSeq FROM unit_tags
         WHERE conversation_id = 'c' GROUP BY tag`)).map((r) => ({ ...r }));
      const byTag = (a: { tag: string }, b: { tag: string }) => a.tag.localeCompare(b.tag);
      expect(stored.sort(byTag)).toEqual(recount.sort(byTag));
    }
  });
});

describe('topics shown: things, not wording', () => {
  // Frequent wording (`noted`, `appreciate`, `gonna`) beside things: a name, hobbies, objects.
  const EXCHANGES: [string, string][] = [
    ['Melanie signed up for a pottery class downtown.', 'Noted! I appreciate you telling me about the pottery class.'],
    ['She is gonna glaze her first bowl on Friday.', 'Noted, a glazed bowl sounds lovely.'],
    ['Melanie is also training for the city marathon.', 'I appreciate the update. How long has she trained for the marathon?'],
    ['Six months now, she is gonna run it in October.', 'Noted. October is a good month for running.'],
    ['Her pottery teacher says her vases are improving.', 'I appreciate hearing that, vases are hard to throw.'],
    ['Melanie wants to sell mugs at the spring market.', 'Noted, the spring market could be a fine start.'],
    ['The marathon route goes past the old harbour.', 'I appreciate the detail, the harbour must be scenic.'],
    ['I am gonna cheer for her near the finish line.', 'Noted, bring a sign for the finish line.'],
    ['My garden tomatoes finally ripened this week.', 'Ripe tomatoes are worth the wait.'],
    ['We had tomatoes with basil from the garden for dinner.', 'Basil and tomatoes go well together.'],
    ['I read a novel about sailing last night.', 'Sailing stories can be gripping.'],
    ['The novel ended on a quiet island.', 'A quiet island is a fitting end.'],
    ['Our kitchen sink has been leaking since Monday.', 'A leaking sink often needs a new washer.'],
    ['The plumber replaced the washer under the sink.', 'Good, a new washer should stop it.'],
    ['I bought a secondhand bicycle for commuting.', 'A bicycle makes commuting cheaper.'],
    ['The bicycle needed new brakes already.', 'Brakes wear quickly on used bikes.'],
    ['Our neighbour adopted a rescue greyhound.', 'Greyhounds are gentle companions.'],
    ['The greyhound sleeps on their porch all day.', 'Greyhounds love long naps.'],
  ];
  const WORDING = ['noted', 'appreciate', 'gonna'];

  it('topics() and the topics hint name the things talked about, not the wording around them', async () => {
    memory = await createMemory({ contextWindow: 600, reserveTokens: 100, protectedRecentTurns: 2 });
    for (const [i, [question, reply]] of EXCHANGES.entries()) {
      await memory.onTurnComplete({ conversationId: 'c', messages: [user(question, { id: `u${i}` }), assistant(reply, { id: `a${i}` })] });
    }
    // Retrieval keeps every tag: the wording is tagged, on several exchanges, and under the background share.
    const tags = new Map((await memory.tags('c')).map((t) => [t.tag, t.units]));
    for (const w of WORDING) expect(tags.get(w), w).toBeGreaterThanOrEqual(3);
    const topics = (await memory.topics('c')).map((t) => t.tag);
    expect(topics).toEqual(expect.arrayContaining(['melanie', 'pottery', 'marathon']));
    for (const w of WORDING) expect(topics).not.toContain(w);
    // Most used first, at most `limit`, each on more than one exchange.
    expect(topics[0]).toBe('melanie');
    expect((await memory.topics('c', { limit: 2 })).map((t) => t.tag)).toEqual(topics.slice(0, 2));
    expect((await memory.topics('c')).every((t) => t.units > 1)).toBe(true);
    expect(await memory.topics('nobody')).toEqual([]);
    for (const limit of [0, 1.5, 201, '3', null]) {
      await expect(memory.topics('c', { limit } as never), String(limit)).rejects.toMatchObject({ name: 'PagewiseError', code: 'INVALID_ARGUMENT' });
    }
    await expect(memory.topics('c', 7 as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });

    await memory.flush();
    const broad = await memory.onMessageInbound({ conversationId: 'c', message: user('What have we talked about so far?') });
    expect(broad.broad).toBe(true);
    const hint = broad.prependText.match(/<context-topics>[\s\S]*<\/context-topics>/)?.[0] ?? '';
    expect(hint).toMatch(/^- melanie \(3 exchanges\)/m);
    expect(hint).toMatch(/^- pottery /m);
    expect(hint).toMatch(/^- marathon /m);
    // Neither a topic nor a tag it comes with.
    for (const w of WORDING) expect(hint).not.toMatch(new RegExp(`\\b${w}\\b`));
  });
});

describe('broad and temporal detection', () => {
  const now = Date.parse('2023-07-10T12:00:00Z');
  it.each([
    ['What did we discuss?', true],
    ['Can you summarize everything so far?', true],
    ['catch me up', true],
    ['What did we discuss about the database?', false],
    ['What have we talked about so far?', true],
    ['What did we discuss in this conversation?', true],
    ['What have we talked about so far about the database?', false],
    ['What did we talk about with Anna?', false],
    ['What did you say about image storage?', false],
  ])('broad: %s', (q, broad) => expect(detectIntent(q, now).broad).toBe(broad));

  it.each([
    ['Going back to the very beginning, what were the key decisions?', 'earliest', null],
    ['Something you said early on about indexing', 'earliest', null],
    ['How did our conversation begin?', 'earliest', null],
    ['What was your first suggestion to me?', 'earliest', null],
    ['What did we talk about last week?', null, '2023-07-03'],
    ['two days ago you mentioned a book', null, '2023-07-08'],
    ['What did I do in June?', null, '2023-06-15'],
    ['yesterday', null, '2023-07-09'],
  ])('temporal: %s', (q, position, inside) => {
    const i = detectIntent(q, now);
    expect(i.temporal).toBe(true);
    expect(i.position).toBe(position);
    if (inside) {
      const t = Date.parse(`${inside}T12:00:00Z`);
      expect(i.window!.fromMs).toBeLessThanOrEqual(t);
      expect(i.window!.toMs).toBeGreaterThan(t);
    }
  });

  it.each(['I may go to the park', 'Can we march on?', 'What is the first thing I should check?', 'How did the race start for you?', 'When did Caroline go to the support group?'])(
    'not temporal: %s', (q) => expect(detectIntent(q, now).temporal).toBe(false));
});

// A local server speaking the OpenAI chat-completions protocol; each test sets how it answers.
let server: Server;
let baseUrl = '';
let reply: (body: { messages: { content: string }[] }) => { status?: number; delayMs?: number; content: string } = () => ({ content: '{}' });
const requests: { messages: { role: string; content: string }[]; response_format?: unknown }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c; });
    req.on('end', () => {
      const body = JSON.parse(raw) as (typeof requests)[number];
      requests.push(body);
      const r = reply(body);
      setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(r.status ?? 200, { 'content-type': 'application/json' });
        res.end(r.status && r.status >= 400 ? r.content : JSON.stringify({ model: 'test-model', choices: [{ message: { role: 'assistant', content: r.content } }], usage: { prompt_tokens: 10, completion_tokens: 5 } }));
      }, r.delayMs ?? 0);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

describe('LLM tagger (local OpenAI-compatible server)', () => {
  it('parses fenced JSON and refuses replies without tags', () => {
    expect(parseTagReply('```json\n{"tags":["a"],"related_tags":["b"],"broad":true}\n```')).toEqual({ tags: ['a'], relatedTags: ['b'], broad: true, temporal: false });
    expect(() => parseTagReply('sure! here are tags: a, b')).toThrow(/no JSON/);
    expect(() => parseTagReply('{"labels": []}')).toThrow(/no "tags"/);
  });

  it('bridges vocabularies with related tags: "that caching trick for the feed" finds the materialized views', async () => {
    requests.length = 0;
    reply = (body) => {
      const text = body.messages.at(-1)!.content.split('<excerpt part="text">')[1]!;
      if (text.includes('materialized')) return { content: JSON.stringify({ tags: ['postgres', 'materialized-views'], relatedTags: ['caching', 'precomputed'] }) };
      if (text.includes('caching trick')) return { content: JSON.stringify({ tags: ['caching'], relatedTags: ['performance'] }) };
      return { content: JSON.stringify({ tags: ['gardening'], relatedTags: [] }) };
    };
    memory = await createMemory({ contextWindow: 1500, reserveTokens: 200, protectedRecentTurns: 2, llm: { baseUrl, model: 'test-model' } });
    const messages: ChatMessage[] = [
      user('The timeline was slow, so we precomputed it with materialized views in Postgres.'),
      assistant('Refresh them concurrently every five minutes.'),
    ];
    for (let i = 0; i < 80; i++) messages.push(user(`Garden note ${i}: the tomatoes need water and the beans need poles.`), assistant(`Noted ${i}.`));
    await memory.onTurnComplete({ conversationId: 'c', messages });
    expect(requests[1]!.messages.at(-1)!.content).toMatch(/Known tags: .*postgres/);
    expect(requests[0]!.response_format).toEqual({ type: 'json_object' });
    await memory.flush();
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('Remind me of that caching trick for the feed?') });
    expect(ctx.matchedTags).toContain('caching');
    const first = ctx.manifest.find((e) => e.kind === 'recall' && e.scores.rank === 1)!;
    expect(first.tags).toContain('caching');
    expect(first.scores.tagIdf).toBeGreaterThan(0);
    expect(first.scores.bm25).toBeUndefined();
    expect(ctx.recallText, JSON.stringify(ctx.manifest.slice(0, 3))).toContain('materialized views');
  });

  it('falls back to the keyword tagger on malformed, failing and slow replies', async () => {
    memory = await createMemory({ llm: { baseUrl, model: 'test-model', timeoutMs: 300 } });
    for (const [i, r] of [{ content: 'not json at all' }, { status: 500, content: 'boom' }, { content: '{"tags": ["late"]}', delayMs: 1000 }].entries()) {
      reply = () => r;
      await memory.onTurnComplete({ conversationId: 'c', messages: [user(`Question ${i} about the Lisbon marathon route.`), assistant('It follows the river.')] });
    }
    const tags = (await memory.tags('c')).map((t) => t.tag);
    expect(tags).toContain('lisbon');
    expect(tags).not.toContain('late');
  });
});

describe('retrieval by time and breadth', () => {
  it('answers "at the beginning" earliest first and "in June" from June', async () => {
    memory = await createMemory({ contextWindow: 1500, reserveTokens: 200, protectedRecentTurns: 2, memoryTokens: 200 });
    const messages: ChatMessage[] = [];
    const day = (d: number) => new Date(Date.UTC(2023, 4, 1 + d)).toISOString();
    messages.push(user('First decision: the API uses Flask blueprints.', { createdAt: day(0) }), assistant('Blueprints it is.', { createdAt: day(0) }));
    for (let i = 1; i < 60; i++) messages.push(user(`Day ${i}: more work on the Flask API endpoints and tests.`, { createdAt: day(i) }), assistant(`OK ${i}.`, { createdAt: day(i) }));
    messages.push(user('We chose SQLite for the June prototype.', { createdAt: day(40) }), assistant('Good.', { createdAt: day(40) }));
    messages.push(user('How should our conversation with the vendor begin?', { createdAt: day(45) }), assistant('With the invoice.', { createdAt: day(45) }));
    await memory.onTurnComplete({ conversationId: 'c', messages });
    await memory.flush();
    const early = await memory.onMessageInbound({ conversationId: 'c', message: user('Going back to the very beginning, what did we decide about the API?'), now: day(70) });
    expect(early.temporal).toBe(true);
    expect(early.recallText).toContain('Flask blueprints');
    // No subject named: the conversation's own first turns, not the earliest of what its words happen to match.
    const begin = await memory.onMessageInbound({ conversationId: 'c', message: user('How did our conversation begin?'), now: day(70) });
    expect(begin.recallText).toContain('Flask blueprints');
    const june = await memory.onMessageInbound({ conversationId: 'c', message: user('What did we choose in June?'), now: day(70) });
    expect(june.temporal).toBe(true);
    const timed = june.manifest.filter((e) => e.kind === 'recall' && e.scores.time);
    expect(timed.length).toBeGreaterThan(0);
    // The topics hint goes with broad questions only, by default.
    expect(june.prependText).not.toMatch(/<context-topics>/);
    // A span the conversation has no turn in points at nothing: not temporal, no time signal, no extra budget.
    const ahead = await memory.onMessageInbound({ conversationId: 'c', message: user('Any tips for my trip this weekend about the API?'), now: day(70) });
    expect(ahead.temporal).toBe(false);
    expect(ahead.manifest.some((e) => e.kind === 'recall' && e.scores.time)).toBe(false);
    const broad = await memory.onMessageInbound({ conversationId: 'c', message: user('What did we discuss?'), now: day(70) });
    expect(broad.broad).toBe(true);
    expect(broad.manifest.filter((e) => e.kind === 'recall').length).toBeGreaterThanOrEqual(3);
    expect(broad.prependText).toMatch(/<context-topics>[\s\S]*flask/);
  });

  it('stops recalling memory whose tags expired, without deleting it', async () => {
    memory = await createMemory({ contextWindow: 1200, reserveTokens: 200, protectedRecentTurns: 2, tagRules: [{ match: 'debug*', ttlDays: 7 }, { match: '*', ttlDays: 30 }] });
    await memory.onTurnComplete({ conversationId: 'c', messages: [
      user('Debug stacktrace from the worker crash.', { createdAt: '2023-01-01T00:00:00Z' }),
      assistant('Debug it with a breakpoint.', { createdAt: '2023-01-01T00:00:01Z' }),
      ...Array.from({ length: 120 }, (_, i) => user(`note ${i} on weather and gardens`, { createdAt: '2023-02-15T00:00:00Z' })),
    ] });
    await memory.flush();
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('What was the worker crash stacktrace?'), now: '2023-03-01T00:00:00Z' });
    expect(ctx.recallText).not.toContain('worker crash');
    expect(ctx.dropped.some((d) => d.reason === 'expired')).toBe(true);
    expect((await memory.turns('c', { limit: 1 }))[0]!.text).toContain('worker crash');
  });
});
