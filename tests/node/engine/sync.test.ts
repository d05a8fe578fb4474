// memory.sync(other): one memory across a person's devices. The acceptance check of issue 28 on two database files
// and a third memory, then each rule on its own: order, forget as tombstones, private turns, conflicts, pins and
// aliases, conversation filters, bad batches, stopping midway.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fileStorage } from '../../../src/storage/node-file.js';
import type { Memory } from '../../../src/index.js';
import type { ChatMessage } from '../../../src/contracts/types.js';
import type { SyncBatch } from '../../../src/contracts/types-sync.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

let dir: string;
let n = 0;
const open: Memory[] = [];
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'pagewise-sync-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close().catch(() => undefined)));
});

async function memory(path?: string, options: Parameters<typeof createMemory>[0] = {}): Promise<Memory> {
  const m = await createMemory({ ...(path ? { storage: fileStorage(path) } : {}), ...options });
  open.push(m);
  return m;
}
const file = () => join(dir, `replica-${++n}.sqlite3`);
const ids = async (m: Memory, conversationId: string) => (await m.turns(conversationId)).map((t) => t.id);
const contents = async (m: Memory, conversationId: string) => (await m.turns(conversationId)).map((t) => [t.id, t.role, t.name, t.content, t.createdAt]);
const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 9, minute)).toISOString();
const quiet = (r: { pushed: number; pulled: number; forgotten: number; pins: number; aliases: number }) => r.pushed + r.pulled + r.forgotten + r.pins + r.aliases;
const has = (bytes: Uint8Array, word: string) => Buffer.from(bytes).toString('latin1').toLowerCase().includes(word.toLowerCase());
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

describe('sync: the acceptance check', () => {
  it('two files write offline, sync to the union in one order, a third ends equal, a forget reaches all, recall crosses devices', async () => {
    const laptopPath = file();
    const phonePath = file();
    // The real encoder (all-MiniLM-L6-v2, shipped in the repository): each replica embeds what it receives itself.
    // A small window, so that an old turn reaches a request only by recall.
    const options = { embedder: undefined, contextWindow: 1500, reserveTokens: 300 };
    const laptop = await memory(laptopPath, options);
    const phone = await memory(phonePath, options);
    // Offline: the same conversation on both, and one of each's own. The phone writes later (its order keys are later).
    await laptop.onTurnComplete({ conversationId: 'trip', messages: [user('We should book the Lisbon flights for March.', { id: 'l1', createdAt: at(0) }), assistant('I will look at fares on Tuesday.', { id: 'l2', createdAt: at(1) })] });
    await laptop.onTurnComplete({ conversationId: 'work', messages: [user('The Quillfeather report is due Friday.', { id: 'w1' }), assistant('Noted.', { id: 'w2' })] });
    await sleep(5);
    await phone.onTurnComplete({ conversationId: 'trip', messages: [user('My sister Marisol lives in Alfama, we can stay with her.', { id: 'p1', createdAt: at(2) }), assistant('That saves the hotel.', { id: 'p2', createdAt: at(3) })] });
    await phone.onTurnComplete({ conversationId: 'secret-santa', messages: [user('I drew Zorblatt for secret santa, get him a kite.', { id: 's1' }), assistant('A kite it is.', { id: 's2' })] });

    const first = await laptop.sync(phone);
    expect(first.pulled).toBe(4);
    expect(first.pushed).toBe(4);
    expect(first.conversations).toEqual(['secret-santa', 'trip', 'work']);
    for (const m of [laptop, phone]) {
      expect(await ids(m, 'trip')).toEqual(['l1', 'l2', 'p1', 'p2']);
      expect(await ids(m, 'work')).toEqual(['w1', 'w2']);
      expect(await ids(m, 'secret-santa')).toEqual(['s1', 's2']);
    }
    expect(await contents(laptop, 'trip')).toEqual(await contents(phone, 'trip'));
    // Seqs are local positions in the converged order: the phone's own turns moved after the laptop's.
    expect((await phone.turns('trip')).map((t) => t.seq)).toEqual([0, 1, 2, 3]);

    const again = await laptop.sync(phone);
    expect(quiet(again)).toBe(0);
    expect(again.conversations).toEqual([]);

    // A third memory, synced from one of them, ends equal.
    const tablet = await memory();
    const third = await tablet.sync(phone);
    expect(third.pulled).toBe(8);
    for (const c of ['trip', 'work', 'secret-santa']) expect(await contents(tablet, c)).toEqual(await contents(laptop, c));

    // Recall on one finds what was said on the other: the laptop talks on, and the phone's turn is recalled (by tags,
    // words and the vectors the laptop made for it itself), not sent as recent history.
    const filler = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? user(`Packing list item ${i}: socks, a phone charger, a rain jacket, walking shoes, sunscreen, a paperback for the train, snacks for day ${i}, the museum tickets, a travel adapter and the printed bookings, all checked twice before we leave.`, { id: `f${i}` }) : assistant(`Added item ${i} to the packing list.`, { id: `f${i}` })));
    await laptop.onTurnComplete({ conversationId: 'trip', messages: filler });
    await laptop.flush();
    const status = await laptop.embeddingStatus('trip');
    expect(status.embedded).toBe(status.total);
    const ctx = await laptop.onMessageInbound({ conversationId: 'trip', message: user('Where does my sister live?') });
    const recalled = ctx.manifest.filter((e) => e.kind !== 'history').flatMap((e) => e.sourceIds);
    expect(recalled).toContain('p1');
    expect(ctx.manifest.filter((e) => e.kind === 'history').flatMap((e) => e.sourceIds)).not.toContain('p1');

    // Forgotten on the phone: gone everywhere after the next syncs, with no byte of its text, and never back.
    await phone.forget({ conversationId: 'secret-santa' });
    const spread = await laptop.sync(phone);
    expect(spread.forgotten).toBe(2);
    await tablet.sync(laptop);
    for (const m of [laptop, phone, tablet]) expect((await m.conversations()).map((c) => c.id).sort()).toEqual(['trip', 'work']);
    // The tablet had not heard yet when it last synced with the phone; syncing with it again brings nothing back.
    expect(quiet(await tablet.sync(phone))).toBe(0);
    expect(quiet(await phone.sync(tablet))).toBe(0);
    expect(await phone.conversations().then((c) => c.map((x) => x.id).sort())).toEqual(['trip', 'work']);
    for (const m of [laptop, phone, tablet]) expect(has(await m.exportDatabase(), 'Zorblatt')).toBe(false);
    await laptop.close();
    await phone.close();
    for (const path of [laptopPath, phonePath]) {
      expect(has(readFileSync(path), 'Zorblatt')).toBe(false);
      expect(has(readFileSync(path), 'Marisol')).toBe(true);
    }
  });
});

describe('sync: order', () => {
  it('turns written on two devices while offline interleave by their order keys, the same on both', async () => {
    const a = await memory();
    const b = await memory();
    await a.onTurnComplete({ conversationId: 'c', messages: [user('shared start', { id: 's0' })] });
    await a.sync(b);
    // Offline: a, then b, then a again — each device's own turns keep their order; the interleaving follows the keys.
    await sleep(3);
    await a.onTurnComplete({ conversationId: 'c', messages: [user('a first', { id: 'a1' }), assistant('a reply', { id: 'a2' })] });
    await sleep(3);
    await b.onTurnComplete({ conversationId: 'c', messages: [user('b first', { id: 'b1' }), assistant('b reply', { id: 'b2' })] });
    await sleep(3);
    await a.onTurnComplete({ conversationId: 'c', messages: [user('a again', { id: 'a3' })] });
    await b.sync(a);
    expect(await ids(a, 'c')).toEqual(['s0', 'a1', 'a2', 'b1', 'b2', 'a3']);
    expect(await ids(b, 'c')).toEqual(['s0', 'a1', 'a2', 'b1', 'b2', 'a3']);
    // What the engine treats as recent follows the converged order: a write now comes after all of them.
    await b.onTurnComplete({ conversationId: 'c', messages: [user('b after', { id: 'b3' })] });
    await a.sync(b);
    expect(await ids(a, 'c')).toEqual(['s0', 'a1', 'a2', 'b1', 'b2', 'a3', 'b3']);
    const ctx = await a.onMessageInbound({ conversationId: 'c', message: user('and now?') });
    expect(ctx.messages.at(-2)?.content).toBe('b after');
  });

  it('a turn stored here with a caller createdAt out of order keeps its place: the order key is the time of writing', async () => {
    const a = await memory();
    const b = await memory();
    await a.onTurnComplete({ conversationId: 'c', messages: [user('written first, dated later', { id: 'x', createdAt: at(30) }), user('written second, dated earlier', { id: 'y', createdAt: at(10) })] });
    await b.sync(a);
    expect(await ids(b, 'c')).toEqual(['x', 'y']);
  });

  it('what is derived is rebuilt where turns moved: tags and summaries follow the new positions', async () => {
    const a = await memory(undefined, { contextWindow: 1500, reserveTokens: 300 });
    const b = await memory(undefined, { contextWindow: 1500, reserveTokens: 300 });
    const chat = (prefix: string, topic: string): ChatMessage[] => Array.from({ length: 30 }, (_, i) => (i % 2 === 0
      ? user(`${prefix} question ${i} about ${topic}: what should I plan for week ${i}?`, { id: `${prefix}${i}` })
      : assistant(`${prefix} answer ${i}: for ${topic} in week ${i}, plan two sessions and rest.`, { id: `${prefix}${i}` })));
    await b.onTurnComplete({ conversationId: 'c', messages: chat('b', 'marathon') });
    // 30 turns in one call take 30 consecutive order keys (ms): a writes after they have passed.
    await sleep(60);
    await a.onTurnComplete({ conversationId: 'c', messages: chat('a', 'sourdough') });
    await a.compact('c');
    await a.flush();
    expect((await a.summaries('c')).length).toBeGreaterThan(0);
    // b's turns are older: they go first on a, and every a turn moves down.
    await a.sync(b);
    await a.flush();
    const turns = await a.turns('c');
    expect(turns.map((t) => t.id)).toEqual([...chat('b', '').map((m) => m.id), ...chat('a', '').map((m) => m.id)]);
    await a.compact('c');
    await a.flush();
    const segments = (await a.summaries('c')).filter((x) => x.kind === 'segment');
    expect(segments.length).toBeGreaterThan(0);
    for (const s of segments) {
      // Every summary's sources are the turns at its positions now.
      const at = turns.filter((t) => t.seq >= s.firstSeq && t.seq <= s.lastSeq).map((t) => t.id);
      expect(s.sourceIds.every((id) => at.includes(id))).toBe(true);
    }
    const tags = await a.tags('c');
    expect(tags.map((t) => t.tag)).toEqual(expect.arrayContaining(['marathon', 'sourdough']));
  });
});

describe('sync: forget', () => {
  it('messages forgotten on one replica are removed from the other, and a stale replica cannot bring them back', async () => {
    const a = await memory();
    const b = await memory();
    const c = await memory();
    await a.onTurnComplete({ conversationId: 'c', messages: [user('keep this', { id: 'k' }), user('my locker code is Vexmorrow 4471', { id: 'x' }), assistant('ok', { id: 'y' })] });
    await b.sync(a);
    await c.sync(a);
    await a.forget({ conversationId: 'c', messageIds: ['x'] });
    expect((await b.sync(a)).forgotten).toBe(1);
    expect(await ids(b, 'c')).toEqual(['k', 'y']);
    // c still holds x; syncing with b (which heard of the forget) removes it there, and b does not take it back.
    const r = await b.sync(c);
    expect(r.pulled).toBe(0);
    expect(await ids(c, 'c')).toEqual(['k', 'y']);
    for (const m of [a, b, c]) expect(has(await m.exportDatabase(), 'Vexmorrow')).toBe(false);
  });

  it('a message stored on two replicas on its own (the device and the edge both stored it) is forgotten on both', async () => {
    const device = await memory();
    const edge = await memory();
    const said = [user('my passport number is Krellwick 0042', { id: 'm1' }), assistant('Saved.', { id: 'm2' })];
    await device.onTurnComplete({ conversationId: 'c', messages: said });
    await edge.onTurnComplete({ conversationId: 'c', messages: said });
    await device.sync(edge);
    expect(await ids(device, 'c')).toEqual(['m1', 'm2']);
    await device.forget({ conversationId: 'c', messageIds: ['m1'] });
    expect((await edge.sync(device)).forgotten).toBe(1);
    expect(quiet(await device.sync(edge))).toBe(0);
    for (const m of [device, edge]) {
      expect(await ids(m, 'c')).toEqual(['m2']);
      expect(has(await m.exportDatabase(), 'Krellwick')).toBe(false);
    }
    // Sent again after the forget (an app re-sending its history): a new message, stored and synced like any other.
    await device.onTurnComplete({ conversationId: 'c', messages: [said[0]!] });
    await edge.sync(device);
    expect(await ids(edge, 'c')).toEqual(['m2', 'm1']);
    expect(quiet(await edge.sync(device))).toBe(0);
  });

  it('two replicas that forget one conversation without hearing of each other: every turn written before either goes', async () => {
    const a = await memory();
    const b = await memory();
    await a.onTurnComplete({ conversationId: 'c', messages: [user('first', { id: 't0' })] });
    await a.forget({ conversationId: 'c' });
    await sleep(2);
    await a.onTurnComplete({ conversationId: 'c', messages: [user('written on a after its forget', { id: 't1' })] });
    await sleep(2);
    await b.onTurnComplete({ conversationId: 'c', messages: [user('written on b', { id: 't2' })] });
    await sleep(2);
    await b.forget({ conversationId: 'c' });
    await sleep(2);
    await b.onTurnComplete({ conversationId: 'c', messages: [user('written on b after its forget', { id: 't3' })] });
    await a.sync(b);
    // t1 was written before b's forget, t3 after both: the same on both replicas.
    expect(await ids(a, 'c')).toEqual(['t3']);
    expect(await ids(b, 'c')).toEqual(['t3']);
    expect(quiet(await b.sync(a))).toBe(0);
  });

  it('forgetting a conversation also removes what another device wrote to it offline before it heard', async () => {
    const a = await memory();
    const b = await memory();
    await a.onTurnComplete({ conversationId: 'c', messages: [user('old words about Trembleford', { id: 'o1' })] });
    await b.sync(a);
    await b.onTurnComplete({ conversationId: 'c', messages: [user('offline on b about Trembleford', { id: 'b1' })] });
    await sleep(2);
    await a.forget({ conversationId: 'c' });
    await a.sync(b);
    for (const m of [a, b]) expect(await m.conversations()).toEqual([]);
    // Written after hearing: a new epoch, kept and synced.
    await b.onTurnComplete({ conversationId: 'c', messages: [user('a fresh start', { id: 'n1' })] });
    await a.sync(b);
    expect(await ids(a, 'c')).toEqual(['n1']);
  });
});

describe('sync: what never moves, and conflicts', () => {
  it('private turns stay on the replica that wrote them', async () => {
    const a = await memory();
    const b = await memory();
    await a.onTurnComplete({ conversationId: 'c', messages: [user('public words', { id: 'p' }), user('my diagnosis is Glimmerpox', { id: 'q', private: true })] });
    await a.pin('c', 'q');
    await a.forget({ conversationId: 'c', messageIds: ['q'] });
    await a.onTurnComplete({ conversationId: 'c', messages: [user('my diagnosis is Glimmerpox again', { id: 'q2', private: true })] });
    await a.pin('c', 'q2');
    const { replica } = await b.syncState('');
    const batch = await a.syncChanges({ to: replica, cursor: { turns: 0, tombstones: 0 } });
    // Nothing of them leaves: not the turn, not a tombstone of one, not a pin naming one.
    expect(JSON.stringify(batch)).not.toMatch(/q2?"|Glimmerpox/);
    await b.sync(a);
    expect(await ids(b, 'c')).toEqual(['p']);
    expect(has(await b.exportDatabase(), 'Glimmerpox')).toBe(false);
  });

  it('the same id with other content on two replicas is reported, not merged; the rest syncs', async () => {
    const a = await memory();
    const b = await memory();
    await a.onTurnComplete({ conversationId: 'c', messages: [user('hello from a', { id: '1' }), user('more from a', { id: 'a2' })] });
    await b.onTurnComplete({ conversationId: 'c', messages: [user('hello from b', { id: '1' })] });
    const r = await a.sync(b);
    expect(r.conflicts).toEqual([{ conversationId: 'c', id: '1', reason: 'id' }, { conversationId: 'c', id: '1', reason: 'id' }]);
    expect((await a.turns('c')).find((t) => t.id === '1')?.content).toBe('hello from a');
    expect((await b.turns('c')).find((t) => t.id === '1')?.content).toBe('hello from b');
    expect(await ids(b, 'c')).toContain('a2');
  });
});

describe('sync: pins, aliases, filters', () => {
  it('pins merge by time (the later of pin and unpin wins); manual aliases travel', async () => {
    const a = await memory();
    const b = await memory();
    await a.onTurnComplete({ conversationId: 'c', messages: [user('pin me', { id: 'm1' }), user('and me', { id: 'm2' })] });
    await a.pin('c', 'm1');
    await a.pin('c', 'm2');
    await a.aliases.add('js', 'javascript', { conversationId: 'c' });
    await b.sync(a);
    expect(await b.pins('c')).toEqual(['m1', 'm2']);
    expect((await b.aliases.list({ conversationId: 'c' })).filter((x) => x.conversationId === 'c').map((x) => [x.alias, x.tag])).toEqual([['js', 'javascript']]);
    await sleep(3);
    await b.unpin('c', 'm1');
    const r = await a.sync(b);
    expect(r.pins).toBe(1);
    expect(await a.pins('c')).toEqual(['m2']);
    expect(quiet(await a.sync(b))).toBe(0);
    // An alias removed on one replica is removed on the other, and is not brought back by it.
    const own = async (m: Memory) => (await m.aliases.list({ conversationId: 'c' })).filter((x) => x.conversationId === 'c').map((x) => [x.alias, x.tag]);
    await sleep(3);
    expect(await a.aliases.remove('js', { conversationId: 'c' })).toBe(true);
    expect((await b.sync(a)).aliases).toBe(1);
    expect(await own(b)).toEqual([]);
    expect(quiet(await a.sync(b))).toBe(0);
    expect(await own(a)).toEqual([]);
    // Added again later, on the other: the add is later than the removal, and travels.
    await sleep(3);
    await b.aliases.add('js', 'javascript', { conversationId: 'c' });
    expect((await a.sync(b)).aliases).toBe(1);
    expect(await own(a)).toEqual([['js', 'javascript']]);
    expect(quiet(await a.sync(b))).toBe(0);
  });

  it('an alias removal that arrives before an older add of it wins over that add', async () => {
    const a = await memory();
    const b = await memory();
    const c = await memory();
    await a.onTurnComplete({ conversationId: 'c', messages: [user('hello', { id: 'h' })] });
    await b.sync(a);
    await c.sync(a);
    await a.aliases.add('ts', 'typescript', { conversationId: 'c' });
    await c.sync(a);
    await sleep(3);
    await c.aliases.remove('ts', { conversationId: 'c' });
    await b.sync(c);
    // b never had the alias; a's older add reaches it afterwards and loses to the removal b holds.
    await b.sync(a);
    expect((await b.aliases.list({ conversationId: 'c' })).filter((x) => x.conversationId === 'c')).toEqual([]);
    await a.sync(b);
    expect((await a.aliases.list({ conversationId: 'c' })).filter((x) => x.conversationId === 'c')).toEqual([]);
  });

  it('turns are not offered back to the replica they came from; the one that wrote them, reached by another path, skips them', async () => {
    const laptop = await memory();
    const edge = await memory();
    const phone = await memory();
    await laptop.onTurnComplete({ conversationId: 'c', messages: Array.from({ length: 30 }, (_, i) => user(`message ${i}`, { id: `m${i}` })) });
    await laptop.sync(edge);
    const pushes: number[] = [];
    await phone.sync(edge, { onProgress: (p) => { if (p.direction === 'push') pushes.push(p.bytes); } });
    const { replica: edgeId } = await edge.syncState('');
    const { replica: laptopId } = await laptop.syncState('');
    const zero = { turns: 0, tombstones: 0 };
    expect((await phone.syncChanges({ to: edgeId, cursor: zero })).turns).toEqual([]);
    expect((await edge.syncChanges({ to: laptopId, cursor: zero })).turns).toEqual([]);
    // Not filtered by who wrote them (a copy of the laptop that took a new id must get them): offered, and skipped.
    expect((await phone.syncChanges({ to: laptopId, cursor: zero })).turns).toHaveLength(30);
    const direct = await laptop.sync(phone);
    expect([direct.pulled, direct.pushed]).toEqual([0, 0]);
    // A third replica still gets them from whoever has them.
    const { replica: tabletId } = await (await memory()).syncState('');
    expect((await phone.syncChanges({ to: tabletId, cursor: zero })).turns).toHaveLength(30);
    expect(pushes).toHaveLength(1);
    expect(pushes[0]!).toBeLessThan(1000);
  });

  it('a sync limited to some conversations moves only those, and keeps its own cursor', async () => {
    const a = await memory();
    const b = await memory();
    await a.onTurnComplete({ conversationId: 'one', messages: [user('first', { id: '1' })] });
    await a.onTurnComplete({ conversationId: 'two', messages: [user('second', { id: '2' })] });
    const r = await b.sync(a, { conversations: ['one'] });
    expect(r.pulled).toBe(1);
    expect((await b.conversations()).map((c) => c.id)).toEqual(['one']);
    expect((await b.sync(a)).pulled).toBe(1);
    expect((await b.conversations()).map((c) => c.id).sort()).toEqual(['one', 'two']);
  });
});

describe('sync: batches, bad input, stopping', () => {
  it('moves a long conversation in batches, resumes after a stop, and moves nothing the second time', async () => {
    const a = await memory();
    const b = await memory();
    const messages = Array.from({ length: 130 }, (_, i) => user(`message ${i} about the harbour`, { id: `m${i}` }));
    await a.onTurnComplete({ conversationId: 'c', messages });
    const stop = new AbortController();
    const seen: number[] = [];
    await expect(b.sync(a, { batchTurns: 25, signal: stop.signal, onProgress: (p) => { seen.push(p.turns); if (p.batches === 2) stop.abort(); } })).rejects.toMatchObject({ code: 'ABORTED' });
    expect(seen).toEqual([25, 50]);
    expect(await ids(b, 'c')).toEqual(messages.slice(0, 50).map((m) => m.id));
    const rest = await b.sync(a, { batchTurns: 25 });
    expect(rest.pulled).toBe(80);
    expect(await ids(b, 'c')).toEqual(messages.map((m) => m.id));
    expect(quiet(await b.sync(a))).toBe(0);
  });

  it('a bad batch is a typed error and changes nothing', async () => {
    const a = await memory();
    const b = await memory();
    await a.onTurnComplete({ conversationId: 'c', messages: [user('hello', { id: 'h' })] });
    const { replica } = await b.syncState('');
    const good = await a.syncChanges({ to: replica, cursor: { turns: 0, tombstones: 0 } });
    const bad = (patch: (b: SyncBatch) => unknown) => b.applySync(patch(structuredClone(good)) as SyncBatch);
    await expect(bad((x) => ({ ...x, format: 'nope' }))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'batch' });
    await expect(bad((x) => { x.turns[0]!.content = 'changed on the way'; return x; })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'batch.turns[0].contentHash' });
    await expect(bad((x) => { (x.turns[0] as unknown as Record<string, unknown>).role = 'wizard'; return x; })).rejects.toMatchObject({ code: 'INVALID_ROLE' });
    await expect(bad((x) => ({ ...x, to: 'someone-else' }))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'batch.to' });
    await expect(bad((x) => { (x.turns[0] as unknown as Record<string, unknown>).private = true; return x; })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(bad(() => 'not a batch')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(a.sync({} as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'other' });
    await expect(a.sync(a)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'other' });
    await expect(a.sync(b, { batchTurns: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'options.batchTurns' });
    expect(await b.conversations()).toEqual([]);
    expect(await b.syncState(good.from)).toMatchObject({ cursor: { turns: 0, tombstones: 0 } });
    await expect(b.applySync(good)).resolves.toMatchObject({ turns: 1 });
  });
});
