// npx tsx tests/bench/sync.ts [--turns=10000] [--embed=off|on] [--batch-turns=500]
// (on Node 20: node tests/supported-node.mjs node_modules/tsx/dist/cli.mjs tests/bench/sync.ts …)
//
// memory.sync() as a user feels it, live (fresh files, a fresh workerd, nothing cached):
//  1. the first sync of N chat turns from a Node memory on a database file to a user's Durable Object, through
//     syncEndpoint over real HTTP on 127.0.0.1 (Miniflare 4, workerd; tests/bench/sync-worker.ts), and the reverse:
//     an empty Node file memory pulls them back down; then the time until its derived data is rebuilt (flush(); the
//     keyword tags and the full-text index are built inside applySync, so within the sync's own time, and compaction
//     is not due at the default 128k window; with --embed=on the shipped MiniLM too, until every turn has a vector);
//  2. 10 new turns written on the first memory, synced up (and pulled down by the second), and a sync with nothing
//     to do;
//  3. the same three between two Node file memories in one process (no HTTP).
// The turns: LoCoMo's conversations (../shared/data/locomo) in file order, each turn with its speaker as `name`, the
// conversations repeated (as new conversations, `conv-26~2` …) until N; the 10 new turns are the ones after the cut.
// Each sync is timed around `memory.sync()`; the peer is wrapped to time its three methods, so that each run splits
// into the peer's calls (HTTP + the object, or the other memory) and the rest (this memory's own syncChanges/applySync
// and the loop).
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { createMemory, remoteMemory, type Memory } from '../../src/index.js';
import { fileStorage } from '../../src/storage/node-file.js';
import type { ChatMessage } from '../../src/contracts/types.js';
import type { ExportData } from '../../src/contracts/types-data.js';
import type { SyncPeer, SyncProgress, SyncReport } from '../../src/contracts/types-sync.js';
import { loadLocomo } from './datasets.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const N = Number(args.get('turns') ?? 10_000);
const EMBED = (args.get('embed') ?? 'off') === 'on';
const BATCH_TURNS = args.has('batch-turns') ? Number(args.get('batch-turns')) : undefined;
const NEW_TURNS = 10;
if (!Number.isInteger(N) || N < 1) throw new Error('--turns must be a positive whole number');

const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const kb = (b: number) => (b >= 1e6 ? `${(b / 1e6).toFixed(2)} MB` : `${(b / 1e3).toFixed(1)} kB`);
const int = (n: number) => n.toLocaleString('en-US');

// ---- the data: LoCoMo conversations, repeated until N turns, then the 10 after the cut ----

function corpus(): { conversations: { id: string; turns: ChatMessage[] }[]; next: { conversationId: string; turns: ChatMessage[] } } {
  const locomo = loadLocomo();
  const conversations: { id: string; turns: ChatMessage[] }[] = [];
  let left = N;
  for (let round = 1; ; round++) {
    for (const c of locomo) {
      const all = c.batches.flat();
      const id = round === 1 ? c.id : `${c.id}~${round}`;
      if (left === 0) return { conversations, next: { conversationId: id, turns: all.slice(0, NEW_TURNS) } };
      const take = all.slice(0, left);
      conversations.push({ id, turns: take });
      left -= take.length;
      if (left === 0 && take.length + NEW_TURNS <= all.length) return { conversations, next: { conversationId: id, turns: all.slice(take.length, take.length + NEW_TURNS) } };
    }
  }
}

const { conversations, next } = corpus();
const exportData: ExportData = {
  format: 'pagewise', version: 1, exportedAt: '2024-06-01T00:00:00.000Z', aliases: [],
  conversations: conversations.map((c) => ({
    id: c.id, createdAt: c.turns[0]!.createdAt!, updatedAt: c.turns.at(-1)!.createdAt!, pins: [], aliases: [],
    turns: c.turns.map((t) => ({ id: t.id!, role: t.role, name: t.name, content: t.content, createdAt: t.createdAt! })),
  })),
};

// ---- the peer, timed ----

interface Timed extends SyncPeer { calls: Record<'syncState' | 'syncChanges' | 'applySync', { n: number; ms: number; max: number }> }

function timed(peer: SyncPeer): Timed {
  const calls = { syncState: { n: 0, ms: 0, max: 0 }, syncChanges: { n: 0, ms: 0, max: 0 }, applySync: { n: 0, ms: 0, max: 0 } };
  const wrap = <K extends keyof typeof calls>(k: K) => async (...a: unknown[]) => {
    const t = performance.now();
    try {
      return await (peer[k] as (...x: unknown[]) => Promise<unknown>)(...a);
    } finally {
      const d = performance.now() - t;
      calls[k].n++; calls[k].ms += d; calls[k].max = Math.max(calls[k].max, d);
    }
  };
  return { calls, syncState: wrap('syncState'), syncChanges: wrap('syncChanges'), applySync: wrap('applySync') } as unknown as Timed;
}

// ---- the figures ----

interface Dir { batches: number; bytes: number }
interface Row { what: string; report: SyncReport; wall: number; peer: Timed['calls']; pull: Dir; push: Dir; flush?: number; vectors?: number; load: string }
const rows: Row[] = [];

async function sync(what: string, self: Memory, other: SyncPeer, expect: { pushed: number; pulled: number }): Promise<Row> {
  const peer = timed(other);
  const dirs = { pull: { batches: 0, bytes: 0 }, push: { batches: 0, bytes: 0 } };
  const onProgress = (p: SyncProgress) => { dirs[p.direction] = { batches: p.batches, bytes: p.bytes }; };
  const t = performance.now();
  const report = await self.sync(peer, { onProgress, ...(BATCH_TURNS ? { batchTurns: BATCH_TURNS } : {}) });
  const wall = performance.now() - t;
  if (report.pushed !== expect.pushed || report.pulled !== expect.pulled || report.conflicts.length > 0) {
    throw new Error(`${what}: expected pushed ${expect.pushed}, pulled ${expect.pulled}; got ${JSON.stringify({ ...report, conversations: report.conversations.length })}`);
  }
  const row: Row = { what, report, wall, peer: peer.calls, ...dirs, load: load() };
  rows.push(row);
  return row;
}

const dir = mkdtempSync(join(tmpdir(), 'pagewise-sync-bench-'));
const opened: Memory[] = [];
const open = async (name: string, embed = false): Promise<Memory> => {
  const m = await createMemory({ storage: fileStorage(join(dir, `${name}.sqlite3`)), ...(embed ? {} : { embedder: false }) });
  opened.push(m);
  return m;
};
const total = async (m: Memory) => (await m.conversations()).reduce((a, c) => a + c.turns, 0);

/**
 * The source: a memory on its own file holding the corpus, written there (its own turns), outside the timings. The
 * import runs with `synchronous: 'normal'` (import() commits a chunk of ~12 ms of work at a time, and fsync makes that
 * slow: see the report), then the file is closed and opened again as every other memory here is (`full`).
 */
async function source(name: string): Promise<{ memory: Memory; ms: number }> {
  const t = performance.now();
  const path = join(dir, `${name}.sqlite3`);
  const writer = await createMemory({ storage: fileStorage(path, { synchronous: 'normal' }), embedder: false });
  const r = await writer.import(exportData);
  if (r.turns !== N) throw new Error(`imported ${r.turns} turns, not ${N}`);
  await writer.flush();
  await writer.close();
  return { memory: await open(name), ms: performance.now() - t };
}

/** The receiver's derived data: flush(), then (embedder on) until every turn of every conversation has a vector. */
async function rebuilt(row: Row, m: Memory): Promise<void> {
  let t = performance.now();
  await m.flush();
  row.flush = performance.now() - t;
  if (!EMBED) return;
  t = performance.now();
  const ids = (await m.conversations()).map((c) => c.id);
  for (;;) {
    const status = await Promise.all(ids.map((id) => m.embeddingStatus(id)));
    const failed = status.find((s) => s.lastError);
    if (failed) throw new Error(`embedding failed on ${failed.conversationId}: ${failed.lastError}`);
    if (status.every((s) => s.embedded >= s.total)) break;
    await m.flush();
    await new Promise((r) => setTimeout(r, 200));
  }
  row.vectors = row.flush + performance.now() - t;
}

/** The 10 new turns, written on `m` as a chat app would (an exchange per onTurnComplete), its background work done. */
async function write10(m: Memory): Promise<void> {
  for (let i = 0; i < next.turns.length; i += 2) await m.onTurnComplete({ conversationId: next.conversationId, messages: next.turns.slice(i, i + 2) });
  await m.flush();
}

async function sameOrder(a: Memory, b: Memory): Promise<void> {
  for (const { id } of await a.conversations()) {
    const [x, y] = [await a.turns(id, { limit: 100_000 }), await b.turns(id, { limit: 100_000 })];
    if (x.length !== y.length || x.some((t, i) => t.id !== y[i]!.id || t.text !== y[i]!.text)) throw new Error(`conversation ${id} differs between the replicas`);
  }
}

const header = [
  `machine: ${cpus()[0]?.model ?? '?'}, ${cpus().length} cores; load ${load()} (1/5/15 min); Node ${process.version}; ${new Date().toISOString()}`,
  `data: ${int(N)} LoCoMo turns in ${conversations.length} conversations (${kb(exportData.conversations.reduce((a, c) => a + c.turns.reduce((b, t) => b + Buffer.byteLength(String(t.content)), 0), 0))} of text), ` +
    `+${NEW_TURNS} new on ${next.conversationId}; batches of ${BATCH_TURNS ?? 500} turns / 1 MB; receivers' embedder: ${EMBED ? 'all-MiniLM-L6-v2 (default)' : 'off (embedder: false)'}`,
];
console.log(header.join('\n'));

let mf: Miniflare | undefined;
const notes: string[] = [];
try {
  // The Worker, bundled as one ES module (as tests/support/edge-worker.ts does for the test Worker).
  let t = performance.now();
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, 'sync-worker.ts')], bundle: true, format: 'esm', platform: 'neutral', target: 'es2022', write: false,
    external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
  });
  const script = join(dir, 'worker.mjs');
  writeFileSync(script, out.outputFiles[0]!.text);
  mf = new Miniflare({
    modulesRoot: dir, modules: [{ type: 'ESModule', path: script, contents: readFileSync(script, 'utf8') }], compatibilityDate: '2025-09-01',
    durableObjects: { USER_MEMORY: { className: 'UserMemory', useSQLite: true } }, durableObjectsPersist: join(dir, 'do'),
    bindings: { CLIENT_TOKENS: 'client:u1,bobs-token:bob' },
  });
  const url = `${(await mf.ready).href.replace(/\/$/, '')}/v1/pagewise/sync`;
  const edge = () => remoteMemory(url, { token: 'client' });
  notes.push(`workerd up in ${ms(performance.now() - t)} ms (bundle included); the endpoint at ${url}`);

  // One source memory: the corpus on a new file (outside the timings), then synced to an empty Node file in
  // this process (3.), up to the Durable Object (1.), and down from it to another empty Node file; then 10 new turns
  // written on it go everywhere (2., 3.), and a sync with nothing to do.
  const laptop = await source('laptop');
  notes.push(`source memory: ${int(N)} turns imported into a new file, derived data built, in ${ms(laptop.ms)} ms (not timed)`);
  const tablet = await open('tablet', EMBED);
  const first = await sync('in-process: first sync, Node file → empty Node file (push)', laptop.memory, tablet, { pushed: N, pulled: 0 });
  await rebuilt(first, tablet);
  await sync('edge: first sync up, Node file → DO (push)', laptop.memory, edge(), { pushed: N, pulled: 0 });
  const phone = await open('phone', EMBED);
  const down = await sync('edge: first sync down, DO → empty Node file (pull)', phone, edge(), { pushed: 0, pulled: N });
  await rebuilt(down, phone);
  for (const m of [tablet, phone]) if (await total(m) !== N) throw new Error('a receiver does not hold every turn');

  await write10(laptop.memory);
  await sync(`edge: ${NEW_TURNS} new turns up (push)`, laptop.memory, edge(), { pushed: NEW_TURNS, pulled: 0 });
  await sync(`edge: ${NEW_TURNS} new turns down (pull)`, phone, edge(), { pushed: 0, pulled: NEW_TURNS });
  await sync(`in-process: ${NEW_TURNS} new turns (push)`, laptop.memory, tablet, { pushed: NEW_TURNS, pulled: 0 });
  await sync('edge: nothing to do', laptop.memory, edge(), { pushed: 0, pulled: 0 });
  await sync('in-process: nothing to do', laptop.memory, tablet, { pushed: 0, pulled: 0 });
  await sameOrder(laptop.memory, phone);
  await sameOrder(laptop.memory, tablet);
  notes.push(`database files: laptop ${kb(statSync(join(dir, 'laptop.sqlite3')).size)}, phone ${kb(statSync(join(dir, 'phone.sqlite3')).size)}, tablet ${kb(statSync(join(dir, 'tablet.sqlite3')).size)}`);
} finally {
  for (const m of opened) await m.close().catch(() => undefined);
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
}

// ---- the table ----

const ordered = [...rows.filter((r) => r.what.startsWith('edge')), ...rows.filter((r) => !r.what.startsWith('edge'))];
const table = [
  `| sync | turns stored | batches pull + push | bytes pull + push | wall ms | turns/s | receiver's flush ms${EMBED ? ' | every turn a vector ms' : ''} | load |`,
  `|---|---|---|---|---|---|---|${EMBED ? '---|' : ''}---|`,
  ...ordered.map((r) => {
    const moved = r.report.pushed + r.report.pulled;
    const rate = moved >= 1000 ? int(Math.round(moved / (r.wall / 1000))) : '';
    return `| ${r.what} | ${int(moved)} | ${r.pull.batches} + ${r.push.batches} | ${kb(r.pull.bytes)} + ${kb(r.push.bytes)} | ${ms(r.wall)} | ${rate} | ${r.flush === undefined ? '' : ms(r.flush)}${EMBED ? ` | ${r.vectors === undefined ? '' : ms(r.vectors)}` : ''} | ${r.load.split(' ')[0]} |`;
  }),
];
console.log(`\n${table.join('\n')}\n`);
console.log('where the time goes (the peer\'s methods as seen from here: calls, total ms, slowest call ms; the rest is this memory\'s own side):');
for (const r of ordered) {
  const c = r.peer;
  const inPeer = c.syncState.ms + c.syncChanges.ms + c.applySync.ms;
  const part = (k: keyof typeof c) => `${k} ${c[k].n}× ${ms(c[k].ms)} (max ${ms(c[k].max)})`;
  console.log(`  ${r.what}: ${part('syncState')}, ${part('syncChanges')}, ${part('applySync')}; this side ${ms(r.wall - inPeer)}`);
}
console.log("receiver's flush: flush() after the sync (tags and the full-text index are built inside applySync, in the wall time; compaction is not due at the default window)" +
  (EMBED ? '; every turn a vector: until embeddingStatus() says embedded === total for every conversation (flush() included)' : ''));
for (const n of notes) console.log(n);
console.log(`load at the end: ${load()}`);
