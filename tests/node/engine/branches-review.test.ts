// What a second look at branches found, each with the case that showed it: a compaction pass begun on one branch
// wrote roll-ups of it into the branch the user moved to; a caller's history whose messages are stored on a branch the
// conversation left lost them from the request; a move happened before the last check of the input; a forgotten
// fork point made the export unimportable and kept its branch from forget({ branch }); forgetting the message the
// conversation is at moved it to another branch; a checkout of a private turn travelled; a whole-history match was
// quadratic (checked here by its result on a long conversation, not its time).
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/index.js';
import { createMemory } from '../../support/helpers.js';

const u = (content: string, id?: string): ChatMessage => ({ role: 'user', content, ...(id ? { id } : {}) });
const a = (content: string, id?: string): ChatMessage => ({ role: 'assistant', content, ...(id ? { id } : {}) });
const SMALL = { contextWindow: 2048, reserveTokens: 256 };

describe('branches: what a second look found', () => {
  it('a compaction pass begun on a branch writes nothing of it after the conversation moved to another', async () => {
    for (const k of [0, 4, 8, 12]) {
      const m = await createMemory(SMALL);
      const c = 'c';
      await m.onTurnComplete({ conversationId: c, messages: [u('I keep zebrafish in a quokka-themed aquarium.', 'q0'), a('Zebrafish like the quokka aquarium warm water.', 'a0')] });
      for (let i = 0; i < 25; i++) await m.onTurnComplete({ conversationId: c, messages: [u(`Zebrafish question ${i}: feeding the zebrafish brine shrimp in the quokka tank number ${i}?`), a(`Zebrafish answer ${i}: feed zebrafish brine shrimp twice daily in quokka tank ${i}, rinse the quokka gravel.`)] });
      await m.onTurnComplete({ conversationId: c, messages: [u('I keep narwhal figurines on a walnut shelf.', 'q1'), a('Narwhal figurines look good on walnut.', 'a1')], parentId: null });
      for (let i = 0; i < 25; i++) await m.onTurnComplete({ conversationId: c, messages: [u(`Narwhal question ${i}: polishing the walnut shelf for narwhal ${i}?`), a(`Narwhal answer ${i}: polish the walnut shelf with beeswax for narwhal ${i}.`)] });
      await m.flush();
      await m.checkout(c, 'q0');
      for (let i = 0; i < k; i++) await m.turns(c, { limit: 1 });
      await m.checkout(c, 'q1');
      await m.flush();
      const summaries = await m.summaries(c);
      expect(summaries.filter((s) => /zebrafish|quokka/i.test(s.text + s.tags.join(' '))), `k=${k}`).toEqual([]);
      const ctx = await m.onMessageInbound({ conversationId: c, message: u('What do I keep and how do I care for it?') });
      expect(JSON.stringify(ctx.messages) + ctx.prependText).not.toMatch(/zebrafish|quokka/i);
      await m.close();
    }
  });

  it("a caller's history is sent whole even where its messages are stored on a branch the conversation left", async () => {
    const m = await createMemory(SMALL);
    const c = 'c';
    const history: ChatMessage[] = [];
    for (let i = 0; i < 30; i++) {
      const x = [u(`Question ${i} about the tram line ${i} and the hills of the old town`, `u${i}`), a(`Answer ${i}: tram ${i} climbs the hill, tickets on board, the view is worth it.`, `r${i}`)];
      history.push(...x);
      await m.onTurnComplete({ conversationId: c, messages: x });
    }
    await m.compact(c);
    await m.onTurnComplete({ conversationId: c, messages: [...history.slice(0, -1), a('Answer 29, regenerated: take the funicular instead.', 'r29b')] });
    const ctx = await m.onMessageInbound({ conversationId: c, message: u('And what about the view?', 'u30'), history });
    expect(ctx.messages.some((x) => x.id === 'r29')).toBe(true);
    await m.close();
  });

  it('a request that fails its last check moves nothing', async () => {
    const m = await createMemory({ maxMessageBytes: 4096 });
    const c = 'c';
    await m.onTurnComplete({ conversationId: c, messages: [u('q0', 'q0'), a('a0', 'a0'), u('q1', 'q1'), a('a1', 'a1')] });
    const bad = [
      { conversationId: c, message: u('again'), parentId: 'q0', now: 'not a date' },
      { conversationId: c, message: u('again'), parentId: null, now: 'not a date' },
      { conversationId: c, message: u('again'), wholeHistory: true, history: [u('q0', 'q0'), a('x'.repeat(5000))] },
    ];
    for (const input of bad) {
      await expect(m.onMessageInbound(input as never)).rejects.toMatchObject({ name: 'PagewiseError' });
      expect((await m.turns(c)).map((t) => t.id)).toEqual(['q0', 'a0', 'q1', 'a1']);
    }
    await m.close();
  });

  it('a branch whose fork point was forgotten exports, imports back, and goes with forget({ branch })', async () => {
    const m = await createMemory();
    const c = 'c';
    await m.onTurnComplete({ conversationId: c, messages: [u('q0', 'q0'), a('a0', 'a0'), u('q1', 'q1'), a('a1', 'a1')] });
    await m.onTurnComplete({ conversationId: c, messages: [u('q1b', 'q1b'), a('a1b', 'a1b')], parentId: 'a0' });
    await m.forget({ conversationId: c, messageIds: ['a0'] });
    const data = await m.export(c);
    expect(data.conversations[0]!.turns.find((t) => t.id === 'q1b')?.branch).toEqual({ start: 'q1b', after: 'q0' });
    const other = await createMemory();
    expect(await other.import(data)).toMatchObject({ turns: 5 });
    expect(await other.import(data)).toMatchObject({ turns: 0, skipped: 5 });
    expect((await other.turns(c)).map((t) => t.id)).toEqual(['q0', 'q1b', 'a1b']);
    expect((await m.branches(c)).branches.find((b) => b.start === 'q1b')?.forkAfter).toBe('q0');
    await m.forget({ conversationId: c, branch: 'q1' });
    expect((await m.export(c)).conversations[0]!.turns.map((t) => t.id)).toEqual(['q0', 'q1b', 'a1b']);
    await m.forget({ conversationId: c, branch: 'q0' });
    expect(await m.conversations()).toEqual([]);
    await m.close();
    await other.close();
  });

  it('forgetting the message the conversation is at leaves it at the one before on that path', async () => {
    const m = await createMemory();
    const c = 'c';
    await m.onTurnComplete({ conversationId: c, messages: [u('q0', 'q0'), a('a0', 'a0'), u('q1', 'q1'), a('a1', 'a1')] });
    await m.onTurnComplete({ conversationId: c, messages: [u('q0b', 'q0b'), a('a0b', 'a0b')], parentId: null });
    await m.checkout(c, 'a1');
    await m.forget({ conversationId: c, messageIds: ['a1'] });
    expect((await m.turns(c)).map((t) => t.id)).toEqual(['q0', 'a0', 'q1']);
    await m.close();
  });

  it('a forget keeps the conversation on its branch though the checkout that led there goes with it, and a checkout of the forgotten message holds against what another device wrote before it', async () => {
    const m = await createMemory();
    const c = 'c';
    await m.onTurnComplete({ conversationId: c, messages: [u('q0', 'q0'), a('a0', 'a0')] });
    await m.onTurnComplete({ conversationId: c, messages: [u('q0b', 'q0b'), a('a0b', 'a0b')], parentId: null });
    await m.checkout(c, 'a0');
    await m.onTurnComplete({ conversationId: c, messages: [u('q1', 'q1')] });
    await m.forget({ conversationId: c, messageIds: ['a0', 'q1'] });
    expect((await m.turns(c)).map((t) => t.id)).toEqual(['q0']);
    await m.close();
    const [laptop, phone] = [await createMemory(), await createMemory()];
    await laptop.onTurnComplete({ conversationId: c, messages: [u('q0', 'q0'), a('a0', 'a0')] });
    await laptop.sync(phone);
    await phone.onTurnComplete({ conversationId: c, messages: [u('q0 edited', 'q0b')], parentId: null });
    await laptop.onTurnComplete({ conversationId: c, messages: [u('q1', 'q1')] });
    await laptop.checkout(c, 'q1');
    await laptop.forget({ conversationId: c, messageIds: ['q1'] });
    await laptop.sync(phone);
    for (const x of [laptop, phone]) expect((await x.turns(c)).map((t) => t.id)).toEqual(['q0', 'a0']);
    await laptop.close();
    await phone.close();
  });

  it("a checkout of a private message does not travel; a long whole history is matched along the tree", async () => {
    const laptop = await createMemory();
    const phone = await createMemory();
    const c = 'c';
    await laptop.onTurnComplete({ conversationId: c, messages: [u('q0', 'q0'), a('a0', 'a0'), u('q1', 'q1'), a('a1', 'a1')] });
    await laptop.onTurnComplete({ conversationId: c, messages: [{ ...u('secret', 's0'), private: true }, { ...a('secret reply', 's1'), private: true }], parentId: 'a0' });
    await laptop.checkout(c, 's0');
    const batch = await laptop.syncChanges({ to: (await phone.syncState((await laptop.syncState('r0')).replica)).replica, cursor: { turns: 0, tombstones: 0 } });
    expect(batch.heads ?? []).toEqual([]);
    await laptop.sync(phone);
    expect((await phone.turns(c)).map((t) => t.id)).toEqual(['q0', 'a0', 'q1', 'a1']);
    // 2,000 turns, then an edit near the end sent as the whole history.
    const history: ChatMessage[] = [];
    for (let i = 0; i < 1000; i++) history.push(u(`question ${i}`), a(`answer ${i}`));
    await phone.onTurnComplete({ conversationId: 'long', messages: history });
    const edited = [...history.slice(0, -2), u('question 999, edited')];
    await phone.onMessageInbound({ conversationId: 'long', message: edited[edited.length - 1]!, history: edited.slice(0, -1), wholeHistory: true });
    expect((await phone.turns('long', { limit: 5000 })).length).toBe(1998);
    await laptop.close();
    await phone.close();
  });
});
