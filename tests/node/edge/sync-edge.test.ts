// Sync with the edge over HTTP, in real workerd: Node memories (createMemory, in memory) sync through
// remoteMemory(url, { token }) with the test Worker's syncEndpoint, which serves each user's PagewiseMemory object.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPagewiseError, remoteMemory, syncEndpoint, type Memory } from '../../../src/index.js';
import type { SyncBatch, SyncPeer } from '../../../src/contracts/types-sync.js';
import { bundleTestWorker, startTestWorker } from '../../support/edge-worker.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

let mf: Miniflare;
let base = '';
const dir = mkdtempSync(join(tmpdir(), 'pagewise-sync-edge-'));
const TOKENS = 'client:u1,bobs-token:bob,big-token:big,stub-token:stubs,two-token:two';
const opened: Memory[] = [];

beforeAll(async () => {
  mf = await startTestWorker(dir, await bundleTestWorker(dir), { CLIENT_TOKENS: TOKENS });
  base = (await mf.ready).href.replace(/\/$/, '');
}, 120_000);

afterAll(async () => {
  for (const m of opened) await m.close().catch(() => undefined);
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const memory = async () => {
  const m = await createMemory();
  opened.push(m);
  return m;
};
const edge = (token = 'client', path = '/v1/pagewise/sync') => remoteMemory(`${base}${path}`, { token });
type Outcome = { value?: unknown; error?: { name?: string; code?: string; path?: string; message?: string } };
/** A Memory method on a user's object, straight over RPC (the test Worker's /call route). */
const onObject = async (object: string, method: string, ...args: unknown[]): Promise<Outcome> =>
  (await mf.dispatchFetch(`http://edge.test/call/user/${encodeURIComponent(object)}/${method}`, { method: 'POST', body: JSON.stringify(args) })).json() as Promise<Outcome>;
// Every turn: turns() gives 1,000 unless asked for more.
const ALL = { limit: 100_000 };
const edgeIds = async (object: string, conversationId: string) => ((await onObject(object, 'turns', conversationId, ALL)).value as { id: string }[] | undefined)?.map((t) => t.id);
const ids = async (m: Memory, conversationId: string) => (await m.turns(conversationId, ALL)).map((t) => t.id);
const caught = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e as { name?: string; code?: string; path?: string; message: string });
const exchange = (i: number, topic = 'garden') => [user(`${topic} question ${i}: when should the beans be watered in this heat?`), assistant(`${topic} answer ${i}: early, deeply, and mulch the clay.`)];
const at = (k: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, k)).toISOString();

describe('remoteMemory ↔ syncEndpoint in workerd (a user-scope PagewiseMemory)', () => {
  it('a Node memory syncs up, a second syncs down: the same turns in the same order everywhere; again moves nothing', async () => {
    const laptop = await memory();
    for (let i = 0; i < 3; i++) await laptop.onTurnComplete({ conversationId: 'c1', messages: exchange(i) });
    await laptop.onTurnComplete({ conversationId: 'c2', messages: exchange(9, 'bike') });
    const up = await laptop.sync(edge());
    expect(up).toMatchObject({ pushed: 8, pulled: 0, conversations: ['c1', 'c2'], conflicts: [] });
    expect(await edgeIds('user:u1', 'c1')).toEqual(await ids(laptop, 'c1'));
    expect(await edgeIds('user:u1', 'c2')).toEqual(await ids(laptop, 'c2'));

    // The edge's own write (onTurnComplete on the object), then a phone that has never synced.
    expect((await onObject('user:u1', 'onTurnComplete', { conversationId: 'c1', messages: exchange(5) })).error).toBeUndefined();
    const phone = await memory();
    const down = await phone.sync(edge());
    expect(down).toMatchObject({ pushed: 0, pulled: 10 });
    expect(await laptop.sync(edge())).toMatchObject({ pushed: 0, pulled: 2 });
    const order = await edgeIds('user:u1', 'c1');
    expect(order).toHaveLength(8);
    expect(await ids(laptop, 'c1')).toEqual(order);
    expect(await ids(phone, 'c1')).toEqual(order);
    expect((await phone.turns('c1')).map((t) => t.text)).toEqual((await laptop.turns('c1')).map((t) => t.text));
    for (const m of [laptop, phone]) {
      const again = await m.sync(edge());
      expect([again.pushed, again.pulled, again.forgotten]).toEqual([0, 0, 0]);
    }
    // remoteMemory's own sync runs the same way from this side.
    const again = await edge().sync(phone);
    expect([again.pushed, again.pulled]).toEqual([0, 0]);
  });

  it('writes made offline on two devices to one conversation end in the same order on both and at the edge', async () => {
    const [laptop, phone] = [await memory(), await memory()];
    const say = (m: Memory, id: string, k: number) => m.onTurnComplete({ conversationId: 'c3', messages: [user(`offline note ${id}`, { id, createdAt: at(k) })] });
    await say(laptop, 'l1', 10); await say(phone, 'p1', 11); await say(laptop, 'l2', 12); await say(phone, 'p2', 13);
    await laptop.sync(edge('two-token'));
    expect(await phone.sync(edge('two-token'))).toMatchObject({ pulled: 2, pushed: 2 });
    expect(await laptop.sync(edge('two-token'))).toMatchObject({ pulled: 2, pushed: 0 });
    const order = await edgeIds('user:two', 'c3');
    expect(order).toEqual(['l1', 'p1', 'l2', 'p2']);
    expect(await ids(laptop, 'c3')).toEqual(order);
    expect(await ids(phone, 'c3')).toEqual(order);
  });

  it('a wrong or missing token is UNAUTHENTICATED and stores nothing; bob reaches his own object only', async () => {
    const mallory = await memory();
    await mallory.onTurnComplete({ conversationId: 'planted', messages: exchange(1, 'planted') });
    for (const token of ['wrong', 'client-not', 'bobs']) {
      const e = await caught(mallory.sync(edge(token)));
      expect(isPagewiseError(e) && e.code).toBe('UNAUTHENTICATED');
      expect(e.message).toMatch(/Authorization: Bearer/);
    }
    const bare = await fetch(`${base}/v1/pagewise/sync`, { method: 'POST', body: JSON.stringify({ method: 'syncState', args: ['x'] }) });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe('Bearer');
    expect(await bare.json()).toMatchObject({ error: { type: 'pagewise_error', code: 'UNAUTHENTICATED' } });
    expect(((await onObject('user:u1', 'conversations')).value as { id: string }[]).map((c) => c.id)).not.toContain('planted');

    // bob: his own object; nothing of u1's comes down, and what he sends up stays his.
    const bobs = await memory();
    await bobs.onTurnComplete({ conversationId: 'c1', messages: exchange(1, 'bob') });
    const report = await bobs.sync(edge('bobs-token'));
    expect(report).toMatchObject({ pushed: 2, pulled: 0 });
    expect(await ids(bobs, 'c1')).toHaveLength(2);
    expect(await edgeIds('user:bob', 'c1')).toEqual(await ids(bobs, 'c1'));
    expect(await edgeIds('user:u1', 'c1')).not.toContain((await ids(bobs, 'c1'))[0]);
  });

  it('an object in conversation scope refuses a batch that names another conversation, and takes its own', async () => {
    const laptop = await memory();
    await laptop.onTurnComplete({ conversationId: 'c9', messages: exchange(1) });
    await laptop.onTurnComplete({ conversationId: 'c10', messages: exchange(2) });
    const c9 = edge('client', '/conversation/c9/sync');
    const refused = await caught(laptop.sync(c9));
    expect(refused).toMatchObject({ name: 'PagewiseError', code: 'INVALID_CONVERSATION_ID' });
    expect(refused.message).toMatch(/conversations: \[conversationId\]|scope: 'user'/);
    expect(await laptop.sync(c9, { conversations: ['c9'] })).toMatchObject({ pushed: 2, conversations: ['c9'] });
    // A batch made by hand for c10, sent to c9's object: refused whole, nothing of it stored.
    const state = await c9.syncState('hand');
    const batch: SyncBatch = { ...await laptop.syncChanges({ to: state.replica, cursor: { turns: 0, tombstones: 0 }, conversations: ['c10'] }), from: 'hand' };
    expect(batch.turns.length).toBe(2);
    expect(await caught(c9.applySync(batch))).toMatchObject({ code: 'INVALID_CONVERSATION_ID' });
    const onlyC9 = await fetch(`${base}/conversation/c9/sync`, { method: 'POST', headers: { authorization: 'Bearer client' }, body: JSON.stringify({ method: 'syncChanges', args: [{ to: 'hand', cursor: { turns: 0, tombstones: 0 } }] }) });
    const changes = (await onlyC9.json() as { value: SyncBatch }).value;
    expect([...new Set(changes.turns.map((t) => t.conversationId))]).toEqual(['c9']);
  });

  it('memoryStub(…).sync(memoryStub(…)) runs inside the Worker', async () => {
    const m = await memory();
    await m.onTurnComplete({ conversationId: 's1', messages: exchange(3) });
    await m.sync(edge('stub-token'));
    const outcome = await (await mf.dispatchFetch(`http://edge.test/stub-sync/${encodeURIComponent('user:stubs')}/${encodeURIComponent('user:stubs-copy')}`)).json() as Outcome;
    expect(outcome.value).toMatchObject({ pushed: 2, pulled: 0 });
    expect(await edgeIds('user:stubs-copy', 's1')).toEqual(await ids(m, 's1'));
  });
});

describe('the endpoint answers hostile bodies with typed 4xx errors', () => {
  const post = (body: BodyInit | null, headers: Record<string, string> = {}, path = '/v1/pagewise/sync', method = 'POST') =>
    fetch(`${base}${path}`, { method, headers: { authorization: 'Bearer client', ...headers }, body, ...(body instanceof ReadableStream ? { duplex: 'half' } : {}) } as RequestInit);
  const expectRefusal = async (res: Response, status: number, code: string | RegExp) => {
    expect(res.status).toBe(status);
    const body = await res.json() as { error: { type: string; code: string; message: string } };
    expect(body.error.type).toBe('pagewise_error');
    expect(body.error.code).toMatch(code);
    expect(body.error.message.length).toBeGreaterThan(20);
    return body.error;
  };

  it('not JSON, not UTF-8, another method, bad args, deep nesting, another route or HTTP method', async () => {
    await expectRefusal(await post('{"method":"syncState",'), 400, 'INVALID_ARGUMENT');
    await expectRefusal(await post(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])), 400, 'INVALID_ARGUMENT');
    for (const body of ['null', '[]', '"syncState"', '{}', '{"method":"turns","args":["c1"]}', '{"method":"forget","args":[{"conversationId":"c1"}]}',
      '{"method":"constructor","args":[]}', '{"method":"__proto__","args":[]}', '{"method":"syncState","args":"x"}', '{"method":"syncState","args":["a",null,3]}', '{"method":"syncState","args":["a",null,{},3]}']) {
      const e = await expectRefusal(await post(body), 400, 'INVALID_ARGUMENT');
      expect(e.message, body).toMatch(/syncState, syncChanges or applySync|args|JSON object/);
    }
    await expectRefusal(await post(`{"method":"applySync","args":[${'['.repeat(5000)}${']'.repeat(5000)}]}`), 400, 'INVALID_ARGUMENT');
    // The memory's own validation, typed, through the endpoint.
    for (const args of [[null], [{ format: 'pagewise-sync', version: 1, turns: 'x' }], [{ format: 'pagewise-sync', version: 1, from: 'a', to: 'b', conversations: null, cursor: { turns: 0, tombstones: 0 }, more: false, tombstones: [], pins: [], aliases: [], turns: [{ conversationId: 'c1', id: 'x', role: 'bogus', content: 'hi' }] }]]) {
      await expectRefusal(await post(JSON.stringify({ method: 'applySync', args })), 400, /^INVALID_/);
    }
    await expectRefusal(await post(JSON.stringify({ method: 'syncChanges', args: [{ to: 'x', cursor: { turns: -1, tombstones: 0 } }] })), 400, /^INVALID_/);
    await expectRefusal(await post(JSON.stringify({ method: 'syncState', args: [{ not: 'a string' }] })), 400, /^INVALID_/);
    await expectRefusal(await post(null, {}, '/v1/pagewise/other'), 404, 'NOT_FOUND');
    const get = await post(null, {}, '/v1/pagewise/sync', 'GET');
    await expectRefusal(get, 405, 'INVALID_ARGUMENT');
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('a body over 8 MB is 413 MESSAGE_TOO_LARGE, declared or streamed, and the endpoint serves on', async () => {
    const huge = `{"method":"applySync","args":["${'x'.repeat(8_100_000)}"]}`;
    await expectRefusal(await post(huge), 413, 'MESSAGE_TOO_LARGE');
    const chunk = new Uint8Array(1_000_000).fill(0x20);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({ pull(c) { if (sent++ < 9) c.enqueue(chunk); else c.close(); } });
    await expectRefusal(await post(stream), 413, 'MESSAGE_TOO_LARGE');
    const ok = await post(JSON.stringify({ method: 'syncState', args: ['someone'] }));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ value: { replica: expect.any(String), cursor: { turns: 0, tombstones: 0 } } });
  });
});

describe('remoteMemory and syncEndpoint in Node, without workerd', () => {
  it('the endpoint serves any Memory, and answers CORS for the origins allowed only', async () => {
    const [server, laptop] = [await memory(), await memory()];
    await laptop.onTurnComplete({ conversationId: 'c1', messages: exchange(1) });
    const endpoint = syncEndpoint({ memory: server, authenticate: (r) => (r.headers.get('authorization') === 'Bearer t' ? 'me' : null), allowedOrigins: ['https://app.example'] });
    const remote = remoteMemory('https://sync.example', { token: 't', fetch: (url, init) => endpoint(new Request(url, init)) });
    expect(await laptop.sync(remote)).toMatchObject({ pushed: 2, pulled: 0 });
    expect(await ids(server, 'c1')).toEqual(await ids(laptop, 'c1'));
    const url = 'https://sync.example/v1/pagewise/sync';
    const preflight = await endpoint(new Request(url, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } }));
    expect(preflight.status).toBe(204);
    expect(Object.fromEntries(['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers'].map((h) => [h, preflight.headers.get(h)])))
      .toEqual({ 'access-control-allow-origin': 'https://app.example', 'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'authorization, content-type' });
    const from = (origin: string, token?: string) => endpoint(new Request(url, { method: 'POST', headers: { origin, ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify({ method: 'syncState', args: ['x'] }) }));
    expect((await from('https://app.example', 't')).headers.get('access-control-allow-origin')).toBe('https://app.example');
    const refused = await from('https://app.example');
    expect([refused.status, refused.headers.get('access-control-allow-origin')]).toEqual([401, 'https://app.example']);
    const other = await from('https://evil.example', 't');
    expect([other.status, other.headers.get('access-control-allow-origin')]).toEqual([200, null]);
    expect((await endpoint(new Request(url, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } }))).status).toBe(405);
  });


  it('checks its options and the endpoint\'s at construction', () => {
    const bad = (f: () => unknown) => { try { f(); } catch (e) { return e as { code?: string; path?: string }; } throw new Error('expected a throw'); };
    expect(bad(() => remoteMemory('not a url', { token: 't' }))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'url' });
    expect(bad(() => remoteMemory('ftp://edge.example/sync', { token: 't' }))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'url' });
    expect(bad(() => remoteMemory('http://edge.example/sync', { token: 't' }))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'url' });
    expect(bad(() => remoteMemory('https://me:pw@edge.example/sync', { token: 't' }))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'url' });
    for (const token of ['', 'has space', undefined, 7]) expect(bad(() => remoteMemory('https://edge.example', { token } as never))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'token' });
    expect(bad(() => remoteMemory('https://edge.example', { token: 't', timeoutMs: 0 }))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'timeoutMs' });
    expect(bad(() => remoteMemory('https://edge.example', { token: 't', headers: { Authorization: 'x' } }))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'headers' });
    expect(remoteMemory('https://edge.example', { token: 't' }).url).toBe('https://edge.example/v1/pagewise/sync');
    expect(remoteMemory('http://192.168.1.5:8787/v1/pagewise/sync', { token: 't', allowHttp: true }).url).toBe('http://192.168.1.5:8787/v1/pagewise/sync');
    const peer: SyncPeer = { syncState: async () => ({ replica: 'r', cursor: { turns: 0, tombstones: 0 } }), syncChanges: async () => { throw new Error('unused'); }, applySync: async () => { throw new Error('unused'); } };
    expect(bad(() => syncEndpoint({ memory: peer } as never))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'authenticate' });
    expect(bad(() => syncEndpoint({ memory: {} as never, authenticate: () => 'u' }))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'memory' });
    expect(bad(() => syncEndpoint({ memory: peer, authenticate: () => 'u', maxBodyBytes: -1 }))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'maxBodyBytes' });
    expect(bad(() => syncEndpoint({ memory: peer, authenticate: () => 'u', allowedOrigins: ['app.example'] }))).toMatchObject({ code: 'INVALID_OPTIONS', path: 'allowedOrigins' });
  });

  it('an endpoint that cannot be reached, or does not answer in time, is STORAGE_UNAVAILABLE naming the URL; nothing is lost', async () => {
    const m = await memory();
    await m.onTurnComplete({ conversationId: 'c1', messages: exchange(1) });
    const down = await caught(m.sync(remoteMemory('http://127.0.0.1:9/v1/pagewise/sync', { token: 't' })));
    expect(down).toMatchObject({ name: 'PagewiseError', code: 'STORAGE_UNAVAILABLE' });
    expect(down.message).toContain('http://127.0.0.1:9/v1/pagewise/sync');
    expect(down.message).toMatch(/run again/);
    const hanging = (_: string, init: RequestInit) => new Promise<Response>((_, reject) => init.signal!.addEventListener('abort', () => reject(init.signal!.reason)));
    const slow = await caught(remoteMemory('https://edge.example', { token: 't', fetch: hanging, timeoutMs: 50 }).syncState('x'));
    expect(slow).toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    expect(slow.message).toMatch(/no answer within 50 ms/);
    // Something that is not the endpoint: a gateway's HTML page, a JSON API of another kind.
    const page = (status: number, body: string) => async () => new Response(body, { status });
    expect(await caught(remoteMemory('https://edge.example', { token: 't', fetch: page(502, '<html>Bad gateway</html>') }).syncState('x'))).toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    expect(await caught(remoteMemory('https://edge.example', { token: 't', fetch: page(404, 'Not found') }).syncState('x'))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await caught(remoteMemory('https://edge.example', { token: 't', fetch: page(200, '{"ok":true}') }).syncState('x'))).toMatchObject({ code: 'STORAGE_ERROR' });
    expect(await caught(remoteMemory('https://edge.example', { token: 't', fetch: page(200, '{"value":{"replica":5}}') }).syncState('x'))).toMatchObject({ code: 'STORAGE_ERROR' });
    // An endpoint's error keeps its code and path; one of a code pagewise does not know falls back to the status.
    const said = page(400, JSON.stringify({ error: { type: 'pagewise_error', code: 'INVALID_ARGUMENT', message: '[pagewise] [sync] request.cursor.turns must be…', path: 'request.cursor.turns' } }));
    expect(await caught(remoteMemory('https://edge.example', { token: 't', fetch: said }).syncState('x'))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'request.cursor.turns', message: '[pagewise] [sync] request.cursor.turns must be…' });
    const internal = page(500, JSON.stringify({ error: { type: 'pagewise_error', code: 'INTERNAL_ERROR', message: 'The sync endpoint failed' } }));
    expect(await caught(remoteMemory('https://edge.example', { token: 't', fetch: internal }).syncState('x'))).toMatchObject({ code: 'STORAGE_ERROR' });
    expect(await ids(m, 'c1')).toHaveLength(2);
  });
});

describe('the edge\'s limits, through the endpoint', () => {
  it('2,500 turns and one near the row limit arrive in several batches and come back down in order; one over it is reported', async () => {
    const laptop = await memory();
    const turns = Array.from({ length: 2_500 }, (_, k) => ({ id: `t${k}`, role: k % 2 ? 'assistant' : 'user', content: `Note ${k} about the ${['garden', 'bike', 'bread', 'budget'][k % 4]}: ${'steady progress, nothing unusual. '.repeat(3)}`, createdAt: at(k) }));
    const data = { format: 'pagewise', version: 1, exportedAt: at(9_999), aliases: [], conversations: [{ id: 'long', turns }] };
    await laptop.import(data as never);
    // A turn's row holds its content and its text: 950,000 bytes of UTF-8 (in 700,000 characters, so that a batch
    // sized by characters would misjudge it) is a row of ~1.9 MB, under Durable Object SQL's 2 MB. 1,040,000 bytes
    // (under maxMessageBytes, 1 MiB, so Node stores it) is over it at the edge.
    const big = `${'ü'.repeat(250_000)}${'x'.repeat(450_000)}`;
    const huge = 'y'.repeat(1_040_000);
    await laptop.onTurnComplete({ conversationId: 'long', messages: [{ id: 'big', role: 'user', content: big, createdAt: at(2_500) }] });
    await laptop.onTurnComplete({ conversationId: 'long', messages: [{ id: 'huge', role: 'assistant', content: huge, createdAt: at(2_501) }] });
    const pushes: number[] = [];
    const up = await laptop.sync(edge('big-token'), { onProgress: (p) => { if (p.direction === 'push') pushes.push(p.turns); } });
    expect(up).toMatchObject({ pushed: 2_501, pulled: 0, conflicts: [{ conversationId: 'long', id: 'huge' }] });
    expect(pushes.length).toBeGreaterThanOrEqual(6);
    const stored = (await onObject('user:big', 'turns', 'long', ALL)).value as { id: string; text: string }[];
    expect(stored.map((t) => t.id)).toEqual((await ids(laptop, 'long')).filter((id) => id !== 'huge'));
    const bigAtEdge = stored.find((t) => t.id === 'big');
    expect({ found: !!bigAtEdge, same: bigAtEdge?.text === big, length: bigAtEdge?.text.length, last: stored.at(-1)?.id, n: stored.length }).toEqual({ found: true, same: true, length: big.length, last: 'big', n: 2_501 });
    expect(await laptop.sync(edge('big-token'))).toMatchObject({ pushed: 0, pulled: 0 });
    const phone = await memory();
    expect(await phone.sync(edge('big-token'))).toMatchObject({ pulled: 2_501, pushed: 0 });
    expect(await ids(phone, 'long')).toEqual(stored.map((t) => t.id));
    expect((await phone.turns('long', ALL)).find((t) => t.id === 'big')?.text === big).toBe(true);
  }, 180_000);
});
