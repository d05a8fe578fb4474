// What a second look at memory's parts found, each as the case that showed it: budgets that did not hold, a sync that
// could stop for good or never end, one conversation reading another's attachment, a tool result cut from its call,
// a message stored twice, a request the provider would refuse.
import { describe, expect, it } from 'vitest';
import { memoryProxy } from '../../../src/surfaces/proxy.js';
import type { SyncBatch, SyncPeer } from '../../../src/contracts/types-sync.js';
import type { ChatMessage, ContentPart } from '../../../src/contracts/types.js';
import { assistant, createMemory, user } from '../../support/helpers.js';
import { b64, png } from '../../fixtures/media.js';

const idOf = async (bytes: Uint8Array) => Buffer.from(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)).toString('hex');
const caught = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e as { code?: string; path?: string; message: string });

describe('budgets hold with parts', () => {
  it('a synced turn\'s reasoning is counted as on the replica that wrote it', async () => {
    const reasoning = Array.from({ length: 3000 }, (_, i) => `step${i}`).join(' ');
    const options = { contextWindow: 6000, reserveTokens: 500 };
    const [a, b] = [await createMemory(options), await createMemory(options)];
    try {
      await a.onTurnComplete({ conversationId: 'c', messages: [user('plan the trip'), { role: 'assistant', content: [{ type: 'reasoning', text: reasoning, signature: 'sig' }, { type: 'text', text: 'Here is the plan.' }] }] });
      await b.sync(a);
      for (const m of [a, b]) {
        const ctx = await m.onMessageInbound({ conversationId: 'c', message: user('and then?') });
        expect(ctx.budget.total).toBeLessThanOrEqual(ctx.budget.available);
        const sent = ctx.messages.some((x) => Array.isArray(x.content) && x.content.some((p) => p.type === 'reasoning'));
        // Either the turn is left out (it does not fit), or it is counted with its reasoning.
        if (sent) expect(ctx.budget.history).toBeGreaterThan(3000);
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a part naming a stored attachment is counted by the store\'s facts, not by what it says', async () => {
    const memory = await createMemory({ contextWindow: 8000, reserveTokens: 1000 });
    try {
      const text = new TextEncoder().encode('lorem ipsum dolor sit amet '.repeat(4000));
      await memory.onTurnComplete({ conversationId: 'c', messages: [user([{ type: 'text', text: 'notes' }, { type: 'file', data: text, mediaType: 'text/plain', name: 'notes.txt' }] as never)] });
      const id = await idOf(text);
      const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user([{ type: 'text', text: 'again' }, { type: 'file', attachment: id, size: 1, mediaType: 'image/gif' }] as never) }).catch((e: { code: string }) => e);
      // 108 kB of text: an estimate of 27,000 tokens, over the window.
      expect(ctx).toMatchObject({ code: 'BUDGET_EXCEEDED' });
    } finally {
      await memory.close();
    }
  });

  it('an attachment whose bytes are not here yet is sent, and counted, as a short reference', async () => {
    const [laptop, phone] = [await createMemory(), await createMemory()];
    try {
      await laptop.onTurnComplete({ conversationId: 'c', messages: [user([{ type: 'text', text: 'the scan' }, { type: 'image', data: png(64, 64, 2), mediaType: 'image/png', name: 'x'.repeat(400) }] as never), assistant('ok')] });
      // The phone takes the turns but not the bytes (a batch of turns, applied by hand).
      const [me, them] = [(await phone.syncState('')).replica, (await laptop.syncState('')).replica];
      await phone.applySync(await laptop.syncChanges({ to: me, cursor: (await phone.syncState(them)).cursor }));
      const ctx = await phone.onMessageInbound({ conversationId: 'c', message: user('what was it?') });
      const sent = ctx.messages[0]!;
      expect(sent.content).toEqual([{ type: 'text', text: 'the scan' }, { type: 'text', text: '[image not on this device yet]' }]);
      expect(ctx.budget.estimated).toBe(0);
    } finally {
      await Promise.all([laptop.close(), phone.close()]);
    }
  });
});

describe('sync of attachments never stops for good, and always ends', () => {
  it('an attachment over the receiver\'s maxAttachmentBytes is refused, and every later turn still arrives', async () => {
    const a = await createMemory({ maxAttachmentBytes: 10_000_000 });
    const b = await createMemory({ maxAttachmentBytes: 100_000 });
    try {
      await a.onTurnComplete({ conversationId: 'c', messages: [user([{ type: 'text', text: 'big pic' }, { type: 'image', data: png(400, 400, 5), mediaType: 'image/png' }] as never), assistant('nice')] });
      for (let i = 0; i < 3; i++) {
        const report = await b.sync(a);
        expect(report.attachments).toBe(0);
        await a.onTurnComplete({ conversationId: 'c', messages: [user(`later text ${i}`), assistant('ok')] });
      }
      await b.sync(a);
      expect(await b.turns('c')).toHaveLength(8);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a peer that answers with pieces nobody asked for does not keep the sync asking', async () => {
    const [a, b] = [await createMemory(), await createMemory()];
    try {
      await a.onTurnComplete({ conversationId: 'c', messages: [user([{ type: 'text', text: 'pic' }, { type: 'image', data: png(32, 32, 1), mediaType: 'image/png' }] as never)] });
      const other = png(32, 32, 2);
      let asks = 0;
      const peer: SyncPeer = {
        syncState: (p, c) => a.syncState(p, c),
        applySync: (batch) => a.applySync(batch),
        async syncChanges(request) {
          const batch: SyncBatch = await a.syncChanges(request);
          if (!request.attachments) return batch;
          asks++;
          return { ...batch, attachments: [{ id: await idOf(other), mediaType: 'image/png', size: other.length, start: 0, data: b64(other) }] };
        },
      };
      const report = await b.sync(peer);
      expect(report.pulled).toBe(1);
      expect(asks).toBeLessThanOrEqual(2);
      expect((await b.syncState('')).missing).toHaveLength(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('one conversation\'s attachments are not another\'s', () => {
  it('naming another conversation\'s attachment by id is refused in the message, the history and a stored turn', async () => {
    const memory = await createMemory();
    try {
      const scan = png(64, 64, 3);
      const id = await idOf(scan);
      await memory.onTurnComplete({ conversationId: 'alice', messages: [user([{ type: 'text', text: 'my passport scan' }, { type: 'image', data: scan, mediaType: 'image/png' }] as never), assistant('ok')] });
      const named = user([{ type: 'text', text: 'what is this' }, { type: 'image', attachment: id }] as never);
      expect(await caught(memory.onMessageInbound({ conversationId: 'bob', message: named }))).toMatchObject({ code: 'INVALID_CONTENT', path: 'message.content[1].attachment' });
      expect(await caught(memory.onMessageInbound({ conversationId: 'bob', message: user('hi'), history: [named] }))).toMatchObject({ code: 'INVALID_CONTENT', path: 'history[0].content[1].attachment' });
      expect(await caught(memory.onTurnComplete({ conversationId: 'bob', messages: [named] }))).toMatchObject({ code: 'INVALID_CONTENT', path: 'messages[0].content[1].attachment' });
      expect((await caught(memory.attachment('bob', id))).code).toBe('NOT_FOUND');
      // With its bytes, the same image is bob's too; alice's own id works for alice.
      await memory.onTurnComplete({ conversationId: 'bob', messages: [user([{ type: 'text', text: 'I have it too' }, { type: 'image', data: b64(scan), mediaType: 'image/png' }] as never)] });
      expect((await memory.attachment('bob', id)).data).toBe(b64(scan));
      const ctx = await memory.onMessageInbound({ conversationId: 'alice', message: { ...named } });
      expect((ctx.messages.at(-1)!.content as ContentPart[])[1]).toMatchObject({ type: 'image', attachment: id, width: 64, height: 64 });
      // What memory gives for sending may be passed back as history (bytes with their id, checked against it).
      const again = await memory.onMessageInbound({ conversationId: 'alice', message: user('and next') });
      await expect(memory.onMessageInbound({ conversationId: 'alice', message: user('and next'), history: again.messages.slice(0, -1) })).resolves.toBeDefined();
      const forged = { ...(again.messages[0]!), content: [{ type: 'image', data: b64(png(8, 8, 8)), attachment: id }] } as ChatMessage;
      expect((await caught(memory.onMessageInbound({ conversationId: 'alice', message: user('x'), history: [forged] }))).code).toBe('INVALID_CONTENT');
    } finally {
      await memory.close();
    }
  });
});

describe('messages in order, stored once', () => {
  it('recalled images go before the new message, not between a tool call and its result', async () => {
    const memory = await createMemory({ protectedRecentTurns: 1, contextWindow: 3000, reserveTokens: 500, targetTokens: 600 });
    try {
      await memory.onTurnComplete({ conversationId: 'c', messages: [user([{ type: 'text', text: 'The Zorbville floorplan' }, { type: 'image', data: png(64, 64, 9), mediaType: 'image/png', name: 'zorbville.png' }] as never), assistant('Nice Zorbville floorplan.')] });
      for (let i = 0; i < 60; i++) await memory.onTurnComplete({ conversationId: 'c', messages: [user(`filler talk ${i} about weather`), assistant(`ok ${i}`)] });
      const ctx = await memory.onMessageInbound({
        conversationId: 'c', recallAttachments: true, message: user('Look up the Zorbville floorplan'),
        after: [{ role: 'assistant', content: null, toolCalls: [{ id: 'call1', type: 'function', function: { name: 'lookup', arguments: '{}' } }] }, { role: 'tool', toolCallId: 'call1', content: 'result' }],
      });
      expect(ctx.sources.slice(-4).map((s) => s.kind)).toEqual(['memory', 'message', 'after', 'after']);
      expect(ctx.messages.at(-4)!.content).toContainEqual(expect.objectContaining({ type: 'image' }));
    } finally {
      await memory.close();
    }
  });

  it('a reply stored with its reasoning and sent back without it (reasoning_content) is one message', async () => {
    const memory = await createMemory();
    try {
      await memory.onTurnComplete({ conversationId: 'c', messages: [user('look up x'), { role: 'assistant', content: [{ type: 'reasoning', text: 'I should look it up' }], toolCalls: [{ id: 'call1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] }] });
      // The proxy reads an OpenAI message without content as '' (so does a reply of reasoning and tool calls, stored).
      const report = await memory.onTurnComplete({ conversationId: 'c', messages: [user('look up x'), { role: 'assistant', content: '', toolCalls: [{ id: 'call1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] }, { role: 'tool', toolCallId: 'call1', content: 'x=42' }] });
      expect(report).toMatchObject({ stored: 1, skipped: 2 });
    } finally {
      await memory.close();
    }
  });
});

describe('the proxy', () => {
  const anthropicProxy = async (contextWindow: number) => {
    const memory = await createMemory({ contextWindow, reserveTokens: 1000 });
    const received: Record<string, unknown>[] = [];
    const pending: Promise<unknown>[] = [];
    const upstream = globalThis.fetch;
    globalThis.fetch = (async (_url: unknown, init: { body: string }) => {
      received.push(JSON.parse(init.body) as Record<string, unknown>);
      return new Response(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', content: [{ type: 'text', text: 'ok' }] }), { headers: { 'content-type': 'application/json' } });
    }) as never;
    const proxy = memoryProxy({ memory, allowAnonymous: true, anthropic: { baseUrl: 'http://up.test', apiKey: 'k' } });
    const send = async (messages: unknown[]) => {
      const r = await proxy(new Request('http://p/v1/messages', { method: 'POST', headers: { 'x-pagewise-conversation': 'c', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude-x', max_tokens: 100, messages }) }), { waitUntil: (p) => pending.push(p) });
      const body = await r.text();
      await Promise.all(pending.splice(0));
      return { status: r.status, body };
    };
    return { memory, received, send, restore: () => { globalThis.fetch = upstream; } };
  };

  it('a block it does not read is counted by its size (an estimate), kept in memory, and written back as it was', async () => {
    const p = await anthropicProxy(8000);
    try {
      const big = Array.from({ length: 6000 }, (_, i) => `word${i}`).join(' ');
      const document = { type: 'document', source: { type: 'content', content: [{ type: 'text', text: big }] } };
      const res = await p.send([{ role: 'user', content: [document, { type: 'text', text: 'read this' }] }, { role: 'assistant', content: 'done' }, { role: 'user', content: 'summarize it' }]);
      // Counted by its size (~15,000 tokens), the document's message does not fit the 7,000 available: trimmed, not forwarded over the budget.
      expect(res.status).toBe(200);
      expect(JSON.stringify(p.received[0]!.messages)).not.toContain('word5999');
      expect((p.received[0]!.messages as unknown[]).length).toBeLessThan(3);
      const small = { type: 'web_search_tool_result', tool_use_id: 'srv_1', content: [{ type: 'web_search_result', url: 'https://example.com', title: 'News', encrypted_content: 'Eq…' }] };
      expect((await p.send([{ role: 'user', content: [{ type: 'text', text: 'news?' }, small] }])).status).toBe(200);
      // Stored whole; the next request, sending only its new message, gets it back as it was.
      expect((await p.send([{ role: 'user', content: 'and then?' }])).status).toBe(200);
      expect(JSON.stringify(p.received.at(-1)!.messages)).toContain(JSON.stringify(small));
    } finally {
      p.restore();
      await p.memory.close();
    }
  });

  it('a stored text document is written back as a text source, as the Messages API takes it', async () => {
    const p = await anthropicProxy(16_000);
    try {
      await p.send([{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Lease terms: rent 900 EUR' }, title: 'lease' }, { type: 'text', text: 'note this' }] }]);
      await p.send([{ role: 'user', content: 'what was the rent?' }]);
      const first = (p.received.at(-1)!.messages as { content: unknown[] }[])[0]!;
      expect(first.content).toContainEqual({ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Lease terms: rent 900 EUR' }, title: 'lease' });
    } finally {
      p.restore();
      await p.memory.close();
    }
  });
});
