// Sync through an edge that cannot read, in real workerd: devices seal every batch with a key the relay never sees
// (relayPeer), a PagewiseRelay object per user stores ciphertext and opaque cursors (relayEndpoint), and the devices
// converge as when they sync with each other. The object's files on disk are scanned for every word written.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Memory } from '../../../src/index.js';
import type { RelayTarget } from '../../../src/storage/relay-protocol.js';
import { relayPeer } from '../../../src/surfaces/sync-relay.js';
import { relayKeys } from '../../../src/surfaces/relay-crypto.js';
import { relayDevice, scanFiles, startRelayWorker } from '../../support/edge/relay-harness.js';
import { assistant, user } from '../../support/helpers.js';
import { png } from '../../fixtures/media.js';

let mf: Miniflare;
let base = '';
const dir = mkdtempSync(join(tmpdir(), 'pagewise-sync-relay-'));
const TOKENS = 'alice-token:alice,bob-token:bob,carol-token:carol,dave-token:dave,erin-token:erin';
const opened: Memory[] = [];
const KEY = crypto.getRandomValues(new Uint8Array(32));

beforeAll(async () => {
  mf = await startRelayWorker(dir, { CLIENT_TOKENS: TOKENS });
  base = (await mf.ready).href.replace(/\/$/, '');
}, 120_000);

afterAll(async () => {
  for (const m of opened) await m.close().catch(() => undefined);
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const device = async (path?: string) => {
  const m = await relayDevice(path);
  opened.push(m);
  return m;
};
const url = () => `${base}/v1/pagewise/relay`;
const relay = (token = 'alice-token', key = KEY, fetch?: (input: string, init: RequestInit) => Promise<Response>) => relayPeer(url(), { key, token, ...(fetch ? { fetch } : {}) });
/** A relay object by name, over Workers RPC (relayStub inside the Worker). */
const stub = (object: string): RelayTarget => ({
  call: async (op, args) => {
    const out = await (await mf.dispatchFetch(`http://relay.test/rpc/${encodeURIComponent(object)}`, { method: 'POST', body: JSON.stringify({ op, args }) })).json() as { value?: unknown; error?: { message: string } };
    if (out.error) throw Object.assign(new Error(out.error.message), out.error);
    return out.value;
  },
});
const caught = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e as { name?: string; code?: string; path?: string; message: string });
const ALL = { limit: 100_000 };

/** What the sync tests compare between replicas: every conversation's export (turns, branches, head, pins, aliases), attachments, the path and the tree. */
async function snapshot(m: Memory) {
  const data = await m.export();
  const conversations = [...data.conversations].sort((a, b) => (a.id < b.id ? -1 : 1));
  return {
    conversations: await Promise.all(conversations.map(async (c) => ({
      id: c.id, head: c.head ?? null, pins: c.pins, aliases: c.aliases,
      turns: c.turns.map((t) => JSON.stringify([t.id, t.role, t.name ?? null, t.content, t.createdAt, t.branch ?? null])),
      path: (await m.turns(c.id, ALL)).map((t) => t.id),
      branches: await m.branches(c.id),
    }))),
    aliases: data.aliases,
    attachments: [...(data.attachments ?? [])].sort((a, b) => (a.id < b.id ? -1 : 1)),
  };
}

// Distinctive words and ids, none of which may reach the relay's storage in any form.
const WORDS = ['Quetzalcoatl', 'Zanzibarite', 'Marzipanova', 'Okapiwise', 'Narwhalberg', 'Xylophagous', 'Pangolinade', 'Tamarindo'];
const PLAN = png(96, 64, 5, 'Xylophagous floor plan');
const NOTE = new TextEncoder().encode('Pangolinade recipe: two cups of Tamarindo syrup.');

describe('relayPeer ↔ relayEndpoint ↔ PagewiseRelay in workerd', () => {
  let a: Memory;
  let b: Memory;

  it('two devices converge through the relay (turns, a forget, pins, attachments, a second branch, an alias); a third from the relay alone; again moves nothing', async () => {
    [a, b] = [await device(), await device()];
    await a.onTurnComplete({ conversationId: 'conv-quetzal', messages: [user('Book the Quetzalcoatl ferry to the Zanzibarite coast.', { id: 'msg-quetzal-1' }), assistant('The Marzipanova line sails at nine.', { id: 'msg-quetzal-2' })] });
    await a.onTurnComplete({ conversationId: 'conv-quetzal', messages: [user([{ type: 'text', text: 'The floor plan of the flat.' }, { type: 'image', data: PLAN, mediaType: 'image/png', name: 'plan.png' }] as never, { id: 'msg-quetzal-3' }), assistant('Two bedrooms.', { id: 'msg-quetzal-4' })] });
    await a.pin('conv-quetzal', 'msg-quetzal-2');
    await new Promise((ok) => setTimeout(ok, 5));
    await b.onTurnComplete({ conversationId: 'conv-okapi', messages: [user('The Okapiwise report and the Narwhalberg budget.', { id: 'msg-okapi-1' }), assistant('Due Friday.', { id: 'msg-okapi-2' })] });
    await b.onTurnComplete({ conversationId: 'conv-okapi', messages: [user([{ type: 'text', text: 'My notes.' }, { type: 'file', data: NOTE, mediaType: 'text/plain', name: 'notes.txt' }] as never, { id: 'msg-okapi-3' })] });
    await b.aliases.add('narwhal', 'narwhalberg', { conversationId: 'conv-okapi' });

    const first = await a.sync(relay());
    expect(first).toMatchObject({ pushed: 4, pulled: 0, attachments: 1 });
    const second = await b.sync(relay());
    expect(second).toMatchObject({ pushed: 3, pulled: 4, attachments: 2 });
    expect(await a.sync(relay())).toMatchObject({ pushed: 0, pulled: 3, attachments: 1 });
    expect(await snapshot(b)).toEqual(await snapshot(a));
    expect(await b.pins('conv-quetzal')).toEqual(['msg-quetzal-2']);

    // Then: a forget on B of what A wrote, a pin on A of what B wrote, a second branch on A, an unpin on B.
    await b.forget({ conversationId: 'conv-quetzal', messageIds: ['msg-quetzal-1'] });
    await b.unpin('conv-quetzal', 'msg-quetzal-2');
    await a.pin('conv-okapi', 'msg-okapi-1');
    await a.onTurnComplete({ conversationId: 'conv-quetzal', parentId: 'msg-quetzal-2', messages: [user('Rather the Tamarindo night train.', { id: 'msg-quetzal-5' }), assistant('Sleeper at ten.', { id: 'msg-quetzal-6' })] });
    for (const m of [a, b, a]) await m.sync(relay());
    const [sa, sb] = [await snapshot(a), await snapshot(b)];
    expect(sb).toEqual(sa);
    const quetzal = sa.conversations.find((c) => c.id === 'conv-quetzal')!;
    expect(quetzal.path).toEqual(['msg-quetzal-2', 'msg-quetzal-5', 'msg-quetzal-6']);
    expect(quetzal.branches.branches.length).toBe(2);
    expect(quetzal.pins).toEqual([]);
    expect(sa.conversations.find((c) => c.id === 'conv-okapi')!.pins.map((p) => p.messageId)).toEqual(['msg-okapi-1']);
    expect(sa.attachments.map((x) => x.mediaType).sort()).toEqual(['image/png', 'text/plain']);
    for (const m of [a, b]) expect((await m.turns('conv-quetzal', ALL)).map((t) => t.text).join(' ')).not.toContain('Quetzalcoatl');

    // B goes back to the first branch: after B, A, A is there too (a checkout travels with the last batch).
    await b.checkout('conv-quetzal', 'msg-quetzal-4');
    for (const m of [b, a]) await m.sync(relay());
    expect((await a.turns('conv-quetzal', ALL)).map((t) => t.id)).toEqual(['msg-quetzal-2', 'msg-quetzal-3', 'msg-quetzal-4']);
    expect(await snapshot(a)).toEqual(await snapshot(b));

    // A third device, from the relay alone, ends the same; a sync again moves nothing anywhere.
    const c = await device();
    expect(await c.sync(relay())).toMatchObject({ pushed: 0, attachments: 2 });
    expect(await snapshot(c)).toEqual(await snapshot(a));
    for (const m of [a, b, c]) expect(await m.sync(relay())).toMatchObject({ pushed: 0, pulled: 0, forgotten: 0, attachments: 0 });
  });

  it('entries cut or joined to any batch size, blobs over a row, a conversation filter, a push that lost the race, a log rewound', async () => {
    const [x, y] = [await device(), await device()];
    const token = 'carol-token';
    const say = (m: Memory, c: string, id: string, text = `note ${id} about the carol garden`) => m.onTurnComplete({ conversationId: c, messages: [user(text, { id })] });
    for (let i = 0; i < 7; i++) await say(x, 'k1', `x${i}`);
    // Three turns of 360 kB in one pushed batch: an entry of 1.1 MB, in two rows of the relay's table.
    for (let i = 0; i < 3; i++) await say(x, 'k2', `big${i}`, `${i} ${'carol bulk words '.repeat(21_000)}`);
    expect(await x.sync(relay(token), { batchTurns: 3, batchBytes: 4_000_000 })).toMatchObject({ pushed: 10 });
    // Pulled two turns at a time (entries cut), then five (joined), then only k1.
    expect(await y.sync(relay(token), { batchTurns: 2 })).toMatchObject({ pulled: 10 });
    expect(await snapshot(y)).toEqual(await snapshot(x));
    const z = await device();
    expect(await z.sync(relay(token), { batchTurns: 5, conversations: ['k1'] })).toMatchObject({ pulled: 7 });
    expect((await z.conversations()).map((c) => c.id)).toEqual(['k1']);

    // Y pushes while X's push is on its way: X's entry is sealed again for the next place, and both converge.
    await say(x, 'k1', 'x-race');
    await say(y, 'k1', 'y-race');
    const real = stub('user:carol');
    let raced = false;
    const racing: RelayTarget = {
      call: async (op, args) => {
        if (op === 'push' && (args as { entry?: unknown }).entry && !raced) {
          raced = true;
          expect(await y.sync(relay(token))).toMatchObject({ pushed: 1 });
        }
        return real.call(op, args);
      },
    };
    expect(await x.sync(relayPeer(racing, { key: KEY }))).toMatchObject({ pushed: 1 });
    expect(raced).toBe(true);
    expect(await y.sync(relay(token))).toMatchObject({ pulled: 1, pushed: 0 });
    expect(await x.sync(relay(token))).toMatchObject({ pulled: 1, pushed: 0 });
    expect(await snapshot(y)).toEqual(await snapshot(x));

    // A log that no longer holds the entry a cursor names (rewound, replaced): read from the start, nothing doubled.
    const reads: number[] = [];
    const rewound: RelayTarget = {
      call: async (op, args) => {
        const out = await real.call(op, args) as { mark?: string | null };
        if (op !== 'read') return out;
        reads.push((args as { after: number }).after);
        return reads.length === 1 ? { ...out, mark: null } : out;
      },
    };
    const before = await snapshot(y);
    expect(await y.sync(relayPeer(rewound, { key: KEY }))).toMatchObject({ pulled: 0, pushed: 0, conflicts: [] });
    expect([reads[0]! > 0, reads[1]]).toEqual([true, 0]);
    expect(await snapshot(y)).toEqual(before);
  });

  it('the relay\'s files hold no word, conversation id, message id or attachment id of any of it, and do hold what it may see', async () => {
    const data = await a.export();
    const ids = [...data.conversations.map((c) => c.id), ...data.conversations.flatMap((c) => c.turns.map((t) => t.id)), ...(data.attachments ?? []).map((x) => x.id), 'msg-quetzal-1'];
    const scan = scanFiles(join(dir, 'do'), [...WORDS, ...ids]);
    expect(scan.files).toBeGreaterThan(0);
    expect(scan.found).toEqual([]);
    // The scan reads what the object stores: the devices' replica ids are there in the clear (metadata it needs).
    const devices = [(await a.syncState('')).replica, (await b.syncState('')).replica];
    expect(scanFiles(join(dir, 'do'), devices).found).toEqual(devices);
  });

  it('a wrong key is WRONG_KEY before anything is applied, on a device that synced and on a new one; the relay is unchanged', async () => {
    const before = await snapshot(a);
    const state = await stub('user:alice').call('state', {}) as { end: number };
    const other = crypto.getRandomValues(new Uint8Array(32));
    const e = await caught(a.sync(relay('alice-token', other)));
    expect(e).toMatchObject({ name: 'PagewiseError', code: 'WRONG_KEY' });
    expect(e.message).toMatch(/another key/);
    expect(await snapshot(a)).toEqual(before);
    const fresh = await device();
    expect(await caught(fresh.sync(relay('alice-token', other)))).toMatchObject({ code: 'WRONG_KEY' });
    expect(await fresh.conversations()).toEqual([]);
    expect((await stub('user:alice').call('state', {}) as { end: number }).end).toBe(state.end);
    // A new relay takes the key it is first used with, and then refuses another.
    const d = await device();
    await d.onTurnComplete({ conversationId: 'c', messages: [user('first')] });
    expect(await d.sync(relay('dave-token', other))).toMatchObject({ pushed: 1 });
    expect(await caught(d.sync(relay('dave-token', KEY)))).toMatchObject({ code: 'WRONG_KEY' });
  });

  it('a blob the server moves to another place, or changes, does not open: WRONG_KEY, nothing applied', async () => {
    const real = stub('user:alice');
    const swapped: RelayTarget = {
      call: async (op, args) => {
        const out = await real.call(op, args) as { entries?: { blob: string }[] };
        if (op === 'read' && out.entries && out.entries.length > 1) [out.entries[0]!.blob, out.entries[1]!.blob] = [out.entries[1]!.blob, out.entries[0]!.blob];
        return out;
      },
    };
    const fresh = await device();
    expect(await caught(fresh.sync(relayPeer(swapped, { key: KEY })))).toMatchObject({ code: 'WRONG_KEY' });
    expect(await fresh.conversations()).toEqual([]);
    // The same object over RPC, honest: the same memory as over HTTP.
    expect(await fresh.sync(relayPeer(real, { key: KEY }))).toMatchObject({ pushed: 0, attachments: 2 });
    expect(await snapshot(fresh)).toEqual(await snapshot(a));
    // Sealed for one place, opened at another: refused.
    const keys = relayKeys(KEY, () => 'relay-x');
    const sealed = keys.seal(new TextEncoder().encode('x'), 'log:1:e:dev');
    expect(new TextDecoder().decode(keys.open(sealed, 'log:1:e:dev'))).toBe('x');
    expect(() => keys.open(sealed, 'log:2:e:dev')).toThrow(expect.objectContaining({ code: 'WRONG_KEY' }));
  });

  it('no request carries the key; a request without credentials is 401; each user reaches only their own relay', async () => {
    const sent: string[] = [];
    const spy = async (input: string, init: RequestInit) => {
      sent.push(`${JSON.stringify([...new Headers(init.headers).entries()])}\n${String(init.body)}`);
      return fetch(input, init);
    };
    const m = await device();
    await m.sync(relay('alice-token', KEY, spy));
    expect(sent.length).toBeGreaterThan(3);
    const forms = [Buffer.from(KEY).toString('hex'), Buffer.from(KEY).toString('base64'), Buffer.from(KEY).toString('base64url'), JSON.stringify(Array.from(KEY))];
    for (const s of sent) for (const f of forms) expect(s.includes(f)).toBe(false);

    const bare = await fetch(url(), { method: 'POST', body: JSON.stringify({ op: 'state', args: {} }) });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe('Bearer');
    expect(await bare.json()).toMatchObject({ error: { type: 'pagewise_error', code: 'UNAUTHENTICATED' } });
    expect(await caught(m.sync(relay('not-a-token')))).toMatchObject({ code: 'UNAUTHENTICATED' });

    // Bob, even with Alice's key, reaches his own relay: another id, nothing of hers.
    const bobs = await device();
    expect(await bobs.sync(relay('bob-token'))).toMatchObject({ pulled: 0 });
    expect(await bobs.conversations()).toEqual([]);
    expect((await relay('bob-token').syncState('')).replica).not.toBe((await relay().syncState('')).replica);
  });

  it('a database file copied to another device finds itself through the relay: it takes a new id, and everything meets', async () => {
    const [file, copy] = [join(dir, 'laptop.sqlite3'), join(dir, 'laptop-copy.sqlite3')];
    const token = 'erin-token';
    const say = (m: Memory, id: string) => m.onTurnComplete({ conversationId: 'c', messages: [user(`${id} says something`, { id })] });
    let laptop = await device(file);
    for (const id of ['m1', 'm2']) await say(laptop, id);
    await laptop.sync(relay(token));
    await laptop.close();
    copyFileSync(file, copy);
    laptop = await device(file);
    const twin = await device(copy);
    const before = (await laptop.syncState('')).replica;
    expect((await twin.syncState('')).replica).toBe(before);
    await say(laptop, 'a1');
    expect((await laptop.sync(relay(token))).renewed).toEqual([]);
    await say(twin, 'b1');
    await twin.forget({ conversationId: 'c', messageIds: ['m1'] });
    // The relay shows the copy the cursor the original left (its receipt names a row the copy never held).
    const report = await twin.sync(relay(token));
    expect(report.renewed).toEqual([{ previous: before, replica: expect.any(String), reason: 'copy' }]);
    // Pushed: b1, and m2 again (a relay cannot tell what it holds; the other devices skip it).
    expect(report).toMatchObject({ pulled: 1, pushed: 2 });
    expect(await laptop.sync(relay(token))).toMatchObject({ pulled: 1, forgotten: 1, conflicts: [] });
    expect(await snapshot(twin)).toEqual(await snapshot(laptop));
    expect((await laptop.turns('c')).map((t) => t.id).sort()).toEqual(['a1', 'b1', 'm2']);
  });

  it('checks its options, and the endpoint answers hostile requests with typed errors', async () => {
    const bad = (f: () => unknown) => { try { f(); } catch (e) { return e as { code?: string; path?: string; message: string }; } throw new Error('expected a throw'); };
    const secret = 'correct horse battery staple, a passphrase not a key';
    for (const key of [new Uint8Array(31), secret, undefined, Array.from(KEY)]) {
      const e = bad(() => relayPeer(url(), { key, token: 't' } as never));
      expect(e).toMatchObject({ code: 'INVALID_OPTIONS', path: 'key' });
      expect(e.message).not.toContain(secret);
    }
    expect(bad(() => relayPeer(url(), { key: KEY } as never))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'token' });
    expect(bad(() => relayPeer('http://relay.example/x', { key: KEY, token: 't' }))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'url' });
    const post = (body: string, path = '/v1/pagewise/relay', method = 'POST') => fetch(`${base}${path}`, { method, headers: { authorization: 'Bearer alice-token' }, ...(method === 'POST' ? { body } : {}) });
    const refusal = async (res: Response, status: number, code: string) => {
      expect(res.status).toBe(status);
      expect(await res.json()).toMatchObject({ error: { type: 'pagewise_error', code } });
    };
    await refusal(await post('{"op":'), 400, 'INVALID_ARGUMENT');
    await refusal(await post('{"op":"drop","args":{}}'), 400, 'INVALID_ARGUMENT');
    await refusal(await post('{"op":"read","args":{"device":"x","after":-1,"mark":0,"maxBytes":1}}'), 400, 'INVALID_ARGUMENT');
    await refusal(await post('{"op":"push","args":{"device":"x","slot":"00","cursor":"AAAA"}}'), 400, 'INVALID_ARGUMENT');
    await refusal(await post('', '/v1/other'), 404, 'NOT_FOUND');
    await refusal(await post('', '/v1/pagewise/relay', 'GET'), 405, 'INVALID_ARGUMENT');
    await refusal(await post(`{"op":"state","args":{"x":"${'y'.repeat(25_000_000)}"}}`), 413, 'MESSAGE_TOO_LARGE');
  });
});
