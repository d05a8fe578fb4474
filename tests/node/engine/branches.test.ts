// Edits and regenerations fork a conversation, and memory follows the branch the user is on. The four steps,
// through every way an app reaches memory — the API (with and without message ids), the proxy (OpenAI and Anthropic,
// whole histories) and the AI SDK middleware —: plan a trip with a budget, edit the budget in the first message,
// regenerate a reply, then talk long enough (at a 2,048-token window) that the start no longer fits and compaction
// runs; the request for "remind me of my budget and what to eat" holds all of the current branch and none of the
// abandoned one, and the export still holds every word of both.
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { generateText, wrapLanguageModel, type ModelMessage } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryMiddleware } from '../../../src/ai-sdk.js';
import { memoryProxy } from '../../../src/surfaces/proxy.js';
import type { ChatMessage, Memory } from '../../../src/index.js';
import { createMemory } from '../../support/helpers.js';
import { completion, message as anthropicMessage, startUpstream, type Upstream } from '../../support/upstream.js';

const WINDOW = { contextWindow: 2048, reserveTokens: 256 };
const ABANDONED = [/\b500 dollars/, /hostel/i, /Azulejo/, /sardines/];
const CURRENT = [/5000 dollars/, /pastel de nata/];

const STEPS = {
  plan: 'Plan a trip to Lisbon; my budget is 500 dollars.',
  hostel: 'Within 500 dollars: stay at a hostel in Alfama and walk everywhere.',
  museum: 'Which museum first?',
  azulejo: 'Start with the Azulejo museum, it opens at ten.',
  edited: 'Plan a trip to Lisbon; my budget is 5000 dollars.',
  suite: 'With 5000 dollars: book a suite at a palace hotel in Chiado and take taxis.',
  eat: 'What should I eat?',
  sardines: 'Try the grilled sardines at a market stall.',
  nata: 'Try a pastel de nata, warm, with cinnamon.',
  remind: 'Remind me of my budget and what to eat.',
};
const FILLER = (i: number): [string, string] => [
  `Tell me something about tram line ${i} and the hills it climbs.`,
  `Tram ${i} rattles through narrow streets; the view from its last stop is worth the ride, and the conductor sells tickets on board number ${i}.`,
];

/** An app's side: it keeps the conversation as the user sees it and asks for one reply at a time. */
interface App {
  /** Sends `messages` (the whole conversation as the app holds it, the new user message last) and gets the reply. */
  ask(messages: ChatMessage[], reply: string, how?: { parentId?: string | null }): Promise<string>;
  /** What the model received for the last request, as one text. */
  lastRequest(): string;
}

async function run(app: App, memory: Memory, conversationId: string): Promise<void> {
  const user = (content: string): ChatMessage => ({ role: 'user', content });
  const bot = (content: string): ChatMessage => ({ role: 'assistant', content });
  let shown: ChatMessage[] = [];
  const say = async (text: string, reply: string, how?: { parentId?: string | null }) => {
    const asked = [...shown, user(text)];
    await app.ask(asked, reply, how);
    shown = [...asked, bot(reply)];
  };
  await say(STEPS.plan, STEPS.hostel);
  await say(STEPS.museum, STEPS.azulejo);
  // The user edits the first message: the app's conversation is the edit and its reply.
  shown = [];
  await say(STEPS.edited, STEPS.suite, { parentId: null });
  await say(STEPS.eat, STEPS.sardines);
  // The user regenerates the last reply: the same question, answered again.
  shown = shown.slice(0, -2);
  const before = await memory.turns(conversationId);
  const eatId = before.find((t) => t.content === STEPS.eat)!.id;
  const parent = before[before.findIndex((t) => t.id === eatId) - 1]!.id;
  await say(STEPS.eat, STEPS.nata, { parentId: parent });
  for (let i = 0; i < 40; i++) await say(...FILLER(i));
  await memory.flush();
  await say(STEPS.remind, 'Your budget is 5000 dollars; eat a pastel de nata.');
}

function checkRequest(text: string) {
  for (const re of CURRENT) expect(text, `the request holds ${re}`).toMatch(re);
  for (const re of ABANDONED) expect(text, `the request holds nothing of the abandoned branch (${re})`).not.toMatch(re);
}

async function checkStored(memory: Memory, conversationId: string) {
  const turns = await memory.turns(conversationId, { limit: 1000 });
  const all = JSON.stringify(turns);
  for (const re of ABANDONED) expect(all).not.toMatch(re);
  expect(turns[0]!.content).toBe(STEPS.edited);
  // A compaction pass ran, and no summary of the current branch holds the abandoned text.
  const summaries = await memory.summaries(conversationId);
  expect(summaries.length).toBeGreaterThan(0);
  for (const re of ABANDONED) expect(JSON.stringify(summaries)).not.toMatch(re);
  // Nothing is lost: the export holds both branches.
  const exported = JSON.stringify(await memory.export(conversationId));
  for (const re of [...ABANDONED, ...CURRENT]) expect(exported).toMatch(re);
  const tree = await memory.branches(conversationId);
  expect(tree.branches.length).toBe(3);
  expect(tree.forks.map((f) => f.starts.length)).toEqual([2, 2]);
}

describe('memory follows the branch the user is on', () => {
  let up: Upstream;
  beforeAll(async () => { up = await startUpstream(); });
  afterAll(() => up.close());

  for (const ids of [false, true]) {
    it(`through the API (${ids ? 'with' : 'without'} message ids; parentId for the edit and the regeneration)`, async () => {
      const memory = await createMemory(WINDOW);
      const conversationId = 'trip';
      let last = '';
      let n = 0;
      const withId = (m: ChatMessage): ChatMessage => (ids ? { ...m, id: `m${n++}` } : m);
      const app: App = {
        async ask(messages, reply, how) {
          const asked = withId(messages[messages.length - 1]!);
          const ctx = await memory.onMessageInbound({ conversationId, message: asked, ...(how ?? {}) });
          last = [ctx.prependText, ...ctx.messages.map((m) => JSON.stringify(m.content))].join('\n');
          await memory.onTurnComplete({ conversationId, messages: [asked, withId({ role: 'assistant', content: reply })], ...(how ?? {}) });
          return reply;
        },
        lastRequest: () => last,
      };
      await run(app, memory, conversationId);
      checkRequest(app.lastRequest());
      await checkStored(memory, conversationId);
      await memory.close();
    });
  }

  for (const kind of ['openai', 'anthropic'] as const) {
    it(`through the proxy (${kind}): each request carries the whole conversation, nothing else is said`, async () => {
      const memory = await createMemory(WINDOW);
      const proxy = memoryProxy({
        memory, authenticate: () => 'u1',
        openai: { baseUrl: `${up.base}/v1`, apiKey: 'sk' }, anthropic: { baseUrl: up.base, apiKey: 'sk' },
      });
      const pending: Promise<unknown>[] = [];
      const app: App = {
        async ask(messages, reply) {
          up.next.push({ body: kind === 'openai' ? completion(reply) : anthropicMessage(reply) });
          const body = kind === 'openai'
            ? { model: 'gpt-4.1', messages: [{ role: 'system', content: 'You plan trips.' }, ...messages.map((m) => ({ role: m.role, content: m.content }))] }
            : { model: 'claude-sonnet-4-5', max_tokens: 256, system: 'You plan trips.', messages: messages.map((m) => ({ role: m.role, content: m.content })) };
          const res = await proxy(new Request(`http://proxy.test${kind === 'openai' ? '/v1/chat/completions' : '/v1/messages'}`, {
            method: 'POST', headers: { 'content-type': 'application/json', 'x-pagewise-conversation': 'trip' }, body: JSON.stringify(body),
          }), { waitUntil: (p) => { pending.push(p); } });
          expect(res.status).toBe(200);
          await res.text();
          await Promise.all(pending.splice(0));
          return reply;
        },
        lastRequest: () => up.seen[up.seen.length - 1]!.raw,
      };
      const conversations = () => memory.conversations();
      await run(app, memory, 'u1:trip');
      checkRequest(app.lastRequest());
      expect((await conversations()).map((c) => c.id)).toEqual(['u1:trip']);
      await checkStored(memory, 'u1:trip');
      await memory.close();
    });
  }

  it('through the AI SDK middleware: the prompt is the whole conversation', async () => {
    const memory = await createMemory(WINDOW);
    let reply = '';
    let seen: LanguageModelV4CallOptions | undefined;
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        seen = options;
        return { content: [{ type: 'text', text: reply }], finishReason: { unified: 'stop', raw: 'stop' }, usage: { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } }, warnings: [] };
      },
    });
    const wrapped = wrapLanguageModel({ model, middleware: memoryMiddleware({ memory, conversationId: 'trip' }) });
    const app: App = {
      async ask(messages, text) {
        reply = text;
        await generateText({ model: wrapped, system: 'You plan trips.', messages: messages.map((m) => ({ role: m.role, content: m.content })) as ModelMessage[] });
        return text;
      },
      lastRequest: () => JSON.stringify(seen?.prompt),
    };
    await run(app, memory, 'trip');
    checkRequest(app.lastRequest());
    await checkStored(memory, 'trip');
    await memory.close();
  });
});

describe('branches across replicas and encoders', () => {
  const exchange = (id: string, q: string, a: string): ChatMessage[] => [{ id: `${id}q`, role: 'user', content: q }, { id: `${id}a`, role: 'assistant', content: a }];

  it('two devices that edited the same message offline end with both branches, the same tree, and the branch written last current', async () => {
    const laptop = await createMemory();
    const phone = await createMemory();
    const c = 'trip';
    await laptop.onTurnComplete({ conversationId: c, messages: [...exchange('0', STEPS.plan, STEPS.hostel), ...exchange('1', STEPS.museum, STEPS.azulejo)] });
    await laptop.sync(phone);
    expect((await phone.turns(c)).map((t) => t.id)).toEqual(['0q', '0a', '1q', '1a']);
    // Offline, each edits the second question; the phone's edit is written last.
    await laptop.onTurnComplete({ conversationId: c, messages: exchange('L', 'Which park first?', 'Start with the Estrela garden.'), parentId: '0a' });
    await new Promise((ok) => setTimeout(ok, 5));
    await phone.onTurnComplete({ conversationId: c, messages: exchange('P', 'Which beach first?', 'Start with Cascais.'), parentId: '0a' });
    await laptop.sync(phone);
    const [a, b] = [await laptop.branches(c), await phone.branches(c)];
    expect(a).toEqual(b);
    expect(a.branches.length).toBe(3);
    expect(a.forks).toEqual([{ after: '0a', starts: ['1q', 'Lq', 'Pq'] }]);
    for (const m of [laptop, phone]) expect((await m.turns(c)).map((t) => t.id)).toEqual(['0q', '0a', 'Pq', 'Pa']);
    // The laptop switches back to its own edit: after a sync the phone is there too, and continues from it.
    await laptop.checkout(c, 'Lq');
    await laptop.sync(phone);
    expect((await phone.turns(c)).map((t) => t.id)).toEqual(['0q', '0a', 'Lq', 'La']);
    await phone.onTurnComplete({ conversationId: c, messages: exchange('2', 'And after the park?', 'Lunch in Campo de Ourique.') });
    await phone.sync(laptop);
    for (const m of [laptop, phone]) expect((await m.turns(c)).map((t) => t.id)).toEqual(['0q', '0a', 'Lq', 'La', '2q', '2a']);
    // Forgetting a branch removes it everywhere; the current one stays.
    await laptop.forget({ conversationId: c, branch: 'Pq' });
    await laptop.sync(phone);
    for (const m of [laptop, phone]) {
      expect((await m.branches(c)).branches.map((x) => x.start).sort()).toEqual(['0q', 'Lq']);
      expect((await m.turns(c)).map((t) => t.id)).toEqual(['0q', '0a', 'Lq', 'La', '2q', '2a']);
    }
    await laptop.close();
    await phone.close();
  });

  it('with the real encoder: recall by meaning finds the current branch, never the abandoned one', async () => {
    const { createMemory: real } = await import('../../../src/index.js');
    const memory = await real(WINDOW);
    const c = 'trip';
    await memory.onTurnComplete({ conversationId: c, messages: [{ role: 'user', content: STEPS.plan }, { role: 'assistant', content: STEPS.hostel }] });
    await memory.onTurnComplete({ conversationId: c, messages: [{ role: 'user', content: STEPS.edited }, { role: 'assistant', content: STEPS.suite }], parentId: null });
    for (let i = 0; i < 30; i++) await memory.onTurnComplete({ conversationId: c, messages: FILLER(i).map((content, k) => ({ role: k === 0 ? 'user' as const : 'assistant' as const, content })) });
    await memory.flush();
    const status = await memory.embeddingStatus(c);
    expect(status.embedded).toBe(status.total);
    // No word in common with either lodging sentence: only vectors can find them.
    const ctx = await memory.onMessageInbound({ conversationId: c, message: { role: 'user', content: 'Where did you suggest I sleep during my stay?' } });
    const text = [ctx.prependText, ...ctx.messages.map((m) => JSON.stringify(m.content))].join('\n');
    expect(text).toMatch(/palace hotel/);
    expect(text).not.toMatch(/hostel/);
    await memory.close();
  });
});

describe('the branch API', () => {
  it("searches the branches the conversation left only when asked, and says so in the manifest; ctx.head is where recall read", async () => {
    const memory = await createMemory(WINDOW);
    const c = 'trip';
    await memory.onTurnComplete({ conversationId: c, messages: [{ id: 'q0', role: 'user', content: STEPS.plan }, { id: 'a0', role: 'assistant', content: STEPS.hostel }] });
    await memory.onTurnComplete({ conversationId: c, messages: [{ id: 'q1', role: 'user', content: STEPS.edited }, { id: 'a1', role: 'assistant', content: STEPS.suite }], parentId: null });
    const asked = { conversationId: c, message: { role: 'user' as const, content: 'What did you say about the hostel in Alfama?' } };
    const current = await memory.onMessageInbound(asked);
    expect(current.head).toBe('a1');
    expect(JSON.stringify(current.messages) + current.prependText).not.toMatch(/hostel in Alfama and walk/);
    expect(current.manifest.some((e) => e.otherBranch)).toBe(false);
    const all = await memory.onMessageInbound({ ...asked, branches: 'all' });
    const entry = all.manifest.find((e) => e.otherBranch);
    expect(entry?.sourceIds).toContain('a0');
    expect(JSON.stringify(all.messages) + all.prependText).toMatch(/from a branch this conversation left[^"]*hostel in Alfama/);
    // Reading another branch does not switch to it.
    expect((await memory.turns(c, { branch: 'q0' })).map((t) => [t.id, t.seq])).toEqual([['q0', 0], ['a0', 1]]);
    expect((await memory.turns(c)).map((t) => t.id)).toEqual(['q1', 'a1']);
    await memory.close();
  });

  it('bad input is a typed error that changes nothing', async () => {
    const memory = await createMemory();
    const c = 'trip';
    await memory.onTurnComplete({ conversationId: c, messages: [{ id: 'q0', role: 'user', content: STEPS.plan }, { id: 'a0', role: 'assistant', content: STEPS.hostel }] });
    const stored = async () => JSON.stringify((await memory.export(c)).conversations);
    const before = await stored();
    const reply = [{ role: 'assistant' as const, content: 'x' }];
    await expect(memory.onTurnComplete({ conversationId: c, messages: reply, parentId: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND', path: 'parentId' });
    await expect(memory.onTurnComplete({ conversationId: c, messages: reply, parentId: 42 as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'parentId' });
    await expect(memory.onMessageInbound({ conversationId: c, message: reply[0]!, wholeHistory: 'yes' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'wholeHistory' });
    await expect(memory.onMessageInbound({ conversationId: c, message: reply[0]!, branches: 'some' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'branches' });
    await expect(memory.checkout(c, 'nope')).rejects.toMatchObject({ code: 'NOT_FOUND', path: 'messageId' });
    await expect(memory.checkout('elsewhere', 'q0')).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    await expect(memory.branches('elsewhere')).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    await expect(memory.turns(c, { branch: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(memory.forget({ conversationId: c, branch: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND', path: 'branch' });
    await expect(memory.import({ format: 'pagewise', version: 1, exportedAt: '', aliases: [], conversations: [{ id: 'x', createdAt: '', updatedAt: '', pins: [], aliases: [], turns: [
      { id: 'a', role: 'user', content: 'hi', createdAt: new Date().toISOString(), branch: { start: 'a', after: 'later' } },
      { id: 'later', role: 'user', content: 'yo', createdAt: new Date().toISOString() },
    ] }] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'data.conversations[0].turns[0].branch.after' });
    expect(await stored()).toBe(before);
    expect((await memory.conversations()).map((x) => x.id)).toEqual([c]);
    await memory.close();
  });

  it('a whole history with message ids needs no parentId: where it leaves the stored branch, it forks', async () => {
    const memory = await createMemory();
    const c = 'trip';
    await memory.onTurnComplete({ conversationId: c, messages: [{ id: 'q0', role: 'user', content: STEPS.eat }, { id: 'a0', role: 'assistant', content: STEPS.sardines }] });
    await memory.onTurnComplete({ conversationId: c, messages: [{ id: 'q0', role: 'user', content: STEPS.eat }, { id: 'a1', role: 'assistant', content: STEPS.nata }] });
    expect((await memory.turns(c)).map((t) => t.id)).toEqual(['q0', 'a1']);
    expect((await memory.branches(c)).forks).toEqual([{ after: 'q0', starts: ['a0', 'a1'] }]);
    // Re-sending the first reply's history makes it current again; nothing new is stored.
    const report = await memory.onTurnComplete({ conversationId: c, messages: [{ id: 'q0', role: 'user', content: STEPS.eat }, { id: 'a0', role: 'assistant', content: STEPS.sardines }] });
    expect(report).toMatchObject({ stored: 0, totalTurns: 2 });
    expect((await memory.turns(c)).map((t) => t.id)).toEqual(['q0', 'a0']);
    // Re-sending a stretch of the current branch is a retry: it switches nothing.
    await memory.onTurnComplete({ conversationId: c, messages: [{ id: 'q0', role: 'user', content: STEPS.eat }] });
    expect((await memory.turns(c)).map((t) => t.id)).toEqual(['q0', 'a0']);
    // A tail with ids continues the current branch, as before.
    await memory.onTurnComplete({ conversationId: c, messages: [{ id: 'a0', role: 'assistant', content: STEPS.sardines }, { id: 'q9', role: 'user', content: 'More?' }] });
    expect((await memory.turns(c)).map((t) => t.id)).toEqual(['q0', 'a0', 'q9']);
    await memory.close();
  });
});
