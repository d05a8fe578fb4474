// No conversation waits for another: a call on y completes while a long call on x (its LLM tagger, its hard
// compaction's summarizer) is held open by hand; calls on x stay in order; what spans conversations runs alone; a
// driver whose batch spans awaits never gets another call's statements inside it. Structural: nothing is timed.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Memory } from '../../../src/index.js';
import { gateBatches } from '../../../src/engine/support.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import type { ChatMessage, StorageDriver, Summarizer } from '../../../src/contracts/types.js';
import { assistant, createMemory, user } from '../../support/helpers.js';
import { completion } from '../../support/upstream.js';

let memory: Memory | undefined;
let server: Server | undefined;
// Held replies are let go before closing (a test that fails must not leave close() waiting on them).
const releases: (() => void)[] = [];
afterEach(async () => {
  for (const r of releases.splice(0)) r();
  await memory?.close();
  memory = undefined;
  if (server) {
    server.closeAllConnections();
    await new Promise((ok) => server!.close(ok));
    server = undefined;
  }
});

/** A promise released by hand. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => { open = resolve; });
  releases.push(open);
  return { open, opened };
}

/** Whether a promise has settled, read without waiting for it. */
function watch(p: Promise<unknown>) {
  const state = { done: false };
  p.then(() => { state.done = true; }, () => { state.done = true; });
  return state;
}

/** An OpenAI-compatible LLM double that holds its reply to any request carrying `marker` until released. */
async function heldLlm(marker: string) {
  const arrived = gate();
  const release = gate();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const reply = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(completion('{"tags": ["garden"], "relatedTags": []}'));
      };
      if (Buffer.concat(chunks).toString('utf8').includes(marker)) {
        arrived.open();
        void release.opened.then(reply);
      } else {
        reply();
      }
    });
  });
  await new Promise<void>((ok) => server!.listen(0, '127.0.0.1', ok));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, arrived: arrived.opened, release: release.open };
}

/** A summarizer that holds every summary of conversation `held` until released, and tells when one is asked for. */
function heldSummarizer(held: string) {
  const asked = gate();
  const release = gate();
  const otherAsked = gate();
  const others = new Set<string>();
  const summarizer: Summarizer = {
    name: 'held', version: 1,
    async summarize(request) {
      if (request.conversationId === held) {
        asked.open();
        await release.opened;
      } else {
        others.add(request.conversationId);
        otherAsked.open();
      }
      return { text: `A summary of ${request.items.length} messages.` };
    },
  };
  return { summarizer, asked: asked.opened, release: release.open, others, otherAsked: otherAsked.opened };
}

function chat(pairs: number, topic: string): ChatMessage[] {
  return Array.from({ length: pairs }, (_, i) => [
    user(`About ${topic}: question ${i}, what should we decide for step ${i}?`),
    assistant(`For ${topic}, step ${i}: keep option ${i * 7}, it costs ${i + 3} dollars; check it on Friday.`),
  ]).flat();
}

describe('no conversation waits for another', () => {
  it("y's calls complete while x's onTurnComplete waits for its LLM tagger", async () => {
    const llm = await heldLlm('HOLD-X');
    memory = await createMemory({ tagger: 'llm', compaction: false, llm: { baseUrl: llm.baseUrl, model: 'm', maxRetries: 0 } });
    const x = memory.onTurnComplete({ conversationId: 'x', messages: [user('HOLD-X: when do I water the beans?'), assistant('In the morning.')] });
    const xState = watch(x);
    // x is inside its call, waiting for the tagger's reply.
    await llm.arrived;
    const stored = await memory.onTurnComplete({ conversationId: 'y', messages: [user('When do I plant the tomatoes?'), assistant('After the last frost.')] });
    const ctx = await memory.onMessageInbound({ conversationId: 'y', message: user('And the tomatoes, when?') });
    expect(stored.totalTurns).toBe(2);
    expect(ctx.messages.at(-1)).toEqual(user('And the tomatoes, when?'));
    expect(xState.done).toBe(false);
    llm.release();
    expect((await x).totalTurns).toBe(2);
  });

  it("y's calls complete while x's hard compaction (inside its onTurnComplete) waits for the summarizer", async () => {
    const s = heldSummarizer('x');
    memory = await createMemory({ contextWindow: 3000, summarizer: s.summarizer });
    const x = memory.onTurnComplete({ conversationId: 'x', messages: chat(100, 'sourdough starter feeding') });
    const xState = watch(x);
    await s.asked;
    const report = await memory.onTurnComplete({ conversationId: 'y', messages: chat(3, 'tenant rights') });
    const ctx = await memory.onMessageInbound({ conversationId: 'y', message: user('What did we decide about the deposit?') });
    expect(report.totalTurns).toBe(6);
    expect(ctx.budget.total).toBeGreaterThan(0);
    expect(xState.done).toBe(false);
    s.release();
    expect((await x).compaction?.trigger).toBe('hard');
  });

  it("y's background compaction runs while x's waits for the summarizer", async () => {
    const s = heldSummarizer('x');
    // A large window: compaction falls due by turn count (nSum), softly, in the background.
    memory = await createMemory({ nSum: 8, summarizer: s.summarizer });
    await memory.onTurnComplete({ conversationId: 'x', messages: chat(12, 'garden planning') });
    await s.asked;
    await memory.onTurnComplete({ conversationId: 'y', messages: chat(12, 'guitar practice') });
    // y's summaries are asked for although x's job has not ended (one chain of jobs would wait for x's first).
    await s.otherAsked;
    expect([...s.others]).toEqual(['y']);
    s.release();
    const reports = await memory.flush();
    expect(reports.map((r) => r.conversationId).sort()).toEqual(['x', 'y']);
  });

  it('calls on x stay in order, and a call that spans conversations waits for all earlier calls and holds back later ones', async () => {
    const llm = await heldLlm('HOLD-X');
    memory = await createMemory({ tagger: 'llm', compaction: false, llm: { baseUrl: llm.baseUrl, model: 'm', maxRetries: 0 } });
    const m = memory;
    const order: string[] = [];
    const track = <T>(name: string, p: Promise<T>) => p.then((v) => { order.push(name); return v; });
    const x1 = track('x1', m.onTurnComplete({ conversationId: 'x', messages: [user('HOLD-X: beans?'), assistant('Morning.')] }));
    await llm.arrived;
    const x2 = track('x2', m.turns('x'));
    const z = track('z', m.onTurnComplete({ conversationId: 'z', messages: [user('Rent?'), assistant('Due Friday.')] }));
    const all = track('all', m.conversations());
    const y = track('y', m.onTurnComplete({ conversationId: 'y', messages: [user('Tomatoes?'), assistant('After the frost.')] }));
    // z was admitted before the exclusive call, on its own key: it does not wait for x.
    await z;
    expect(order).toEqual(['z']);
    llm.release();
    expect((await x2).map((t) => t.content)).toEqual(['HOLD-X: beans?', 'Morning.']);
    // conversations() saw x and z (admitted before it), not y (admitted after it, so held back until it was done).
    expect((await all).map((c) => c.id).sort()).toEqual(['x', 'z']);
    await Promise.all([x1, y]);
    expect(order).toEqual(['z', 'x1', 'x2', 'all', 'y']);
    expect((await m.conversations()).map((c) => c.id).sort()).toEqual(['x', 'y', 'z']);
  });

  it('a driver whose batch spans awaits never gets another statement inside an open batch', async () => {
    const base = await sqliteWasm()();
    let open = 0;
    let inside = 0;
    // A transaction that spans an await (BEGIN, await, statements, COMMIT), as a driver over a remote connection may.
    const driver: StorageDriver = {
      name: 'async-batches',
      query: (sql, params) => {
        if (open > 0) inside++;
        return base.query(sql, params);
      },
      batch: async (statements) => {
        if (open > 0) inside++;
        open++;
        try {
          await new Promise((resolve) => setImmediate(resolve));
          base.batch(statements);
        } finally {
          open--;
        }
      },
      close: () => base.close(),
    };
    memory = await createMemory({ storage: driver, contextWindow: 3000 });
    const m = memory;
    await Promise.all(['a', 'b', 'c', 'd'].map(async (id) => {
      for (let i = 0; i < 6; i++) {
        await m.onTurnComplete({ conversationId: id, messages: chat(4, `topic ${id} ${i}`) });
        await m.onMessageInbound({ conversationId: id, message: user(`What did we decide about topic ${id}?`) });
      }
    }));
    await m.flush();
    expect((await m.conversations()).length).toBe(4);
    expect(inside).toBe(0);
  });

  it('the gated driver is the driver otherwise: what it says of itself reads through, a synchronous answer stays synchronous', async () => {
    const base = await sqliteWasm()();
    const own = { name: 'described', roundsLargeIntegers: true, limits: { maxParams: 7 }, query: base.query, batch: base.batch, close: base.close };
    const gated = gateBatches(own as StorageDriver);
    expect([gated.name, gated.roundsLargeIntegers, gated.limits]).toEqual(['described', true, { maxParams: 7 }]);
    expect(gated.export).toBeUndefined();
    expect(gated.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    expect(gateBatches(base).export).toBeTypeOf('function');
    base.close();
  });
});
