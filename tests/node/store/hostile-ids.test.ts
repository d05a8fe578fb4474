// Ids are opaque: two ids that differ in any code unit (a leading BOM, NFC against NFD) are two conversations or two
// messages for every method, on every driver. The sqlite-wasm read path once decoded text with a TextDecoder that
// drops a leading U+FEFF, so '\uFEFFdave' read back as 'dave' and forget() of one erased the other.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Memory } from '../../../src/index.js';
import { fileStorage } from '../../../src/storage/node-file.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

let dir: string;
let n = 0;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'pagewise-hostile-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });

const drivers: [string, () => Promise<StorageDriver>][] = [
  ['sqlite-wasm in memory', () => sqliteWasm()()],
  ['fileStorage', () => fileStorage(join(dir, `hostile-${++n}.sqlite3`))()],
];

// Twins the API accepts as ids (no control characters): a leading BOM, and é precomposed against e + U+0301.
const TWINS = [
  { twins: 'dave and BOM + dave', a: 'dave', b: '\uFEFFdave' },
  { twins: 'NFC café and NFD café', a: 'caf\u00E9', b: 'cafe\u0301' },
];

let memory: Memory | undefined;
afterEach(async () => {
  await memory?.close();
  memory = undefined;
});

/** Stores a short exchange in `conversationId` whose message ids and text carry `tag`. */
async function store(m: Memory, conversationId: string, tag: string): Promise<string[]> {
  const ids = [`${tag}-q`, `${tag}-a`];
  await m.onTurnComplete({ conversationId, messages: [user(`question from ${tag}`, { id: ids[0] }), assistant(`answer for ${tag}`, { id: ids[1] })] });
  return ids;
}

describe.each(drivers)('hostile ids (%s)', (_name, open) => {
  it.each(TWINS)('$twins stay two conversations for conversations, turns, export and forget', async ({ a, b }) => {
    memory = await createMemory({ storage: await open() });
    const idsA = await store(memory, a, 'first');
    const idsB = await store(memory, b, 'second');

    expect((await memory.conversations()).map((c) => c.id).sort()).toEqual([a, b].sort());
    expect((await memory.turns(a)).map((t) => t.id)).toEqual(idsA);
    expect((await memory.turns(b)).map((t) => t.id)).toEqual(idsB);
    const exported = await memory.export(b);
    expect(exported.conversations.map((c) => c.id)).toEqual([b]);
    expect(exported.conversations[0]!.turns.map((t) => t.id)).toEqual(idsB);

    const report = await memory.forget({ conversationId: b });
    expect(report).toMatchObject({ conversationId: b, messageIds: idsB, conversationRemoved: true });
    expect((await memory.conversations()).map((c) => c.id)).toEqual([a]);
    expect((await memory.turns(a)).map((t) => t.id)).toEqual(idsA);
    await expect(memory.turns(b)).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    await expect(memory.export(b)).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
  });

  it('a message id with a leading BOM is stored as given, forgotten by that id, and stored again when sent again', async () => {
    memory = await createMemory({ storage: await open() });
    const bom = '\uFEFFm1';
    const messages = [user('plain twin', { id: 'm1' }), user('the one with a byte order mark', { id: bom }), assistant('both noted', { id: 'm2' })];
    expect((await memory.onTurnComplete({ conversationId: 'c', messages })).storedIds).toEqual(['m1', bom, 'm2']);
    expect((await memory.turns('c')).map((t) => t.id)).toEqual(['m1', bom, 'm2']);
    // Sent again: already stored, nothing new.
    expect(await memory.onTurnComplete({ conversationId: 'c', messages })).toMatchObject({ stored: 0, skipped: 3 });

    expect((await memory.forget({ conversationId: 'c', messageIds: [bom] })).messageIds).toEqual([bom]);
    expect((await memory.turns('c')).map((t) => t.id)).toEqual(['m1', 'm2']);

    const again = await memory.onTurnComplete({ conversationId: 'c', messages: [user('the one with a byte order mark', { id: bom })] });
    expect(again.storedIds).toEqual([bom]);
    expect((await memory.turns('c')).map((t) => t.id)).toEqual(['m1', 'm2', bom]);
  });
});
