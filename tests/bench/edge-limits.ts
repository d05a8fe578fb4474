// npx tsx tests/bench/edge-limits.ts [--turns=1000,10000,50000] [--variants=plain,vectors] [--questions=30]
//
// pagewise against the Workers platform's limits, in real workerd (Miniflare 4): 128 MB of memory per isolate and
// 30 s of CPU per request (the default; configurable up to 5 min). For each size, a fresh workerd with ONE
// PagewiseMemory object (tests/support/edge/long-worker.ts) holding that many turns, in two deployments:
//   plain    default options (128,000-token window), no embedder: tags + BM25
//   vectors  default options, the Workers AI embedder (a local double of the binding, 384-wide vectors as
//            bge-small-en-v1.5's): the in-memory vector index too
//
// Memory, measured two ways:
//   heap  the isolate's V8 heap through workerd's inspector (Runtime.getHeapUsage), after a full GC (forced by a
//         heap snapshot): used = live JS objects (engine, tokenizer ranks, caches, the vector index's typed arrays'
//         wrappers), ext = ArrayBuffer backing stores (the vector index's bytes) + embedder (workerd's C++) heap.
//         The isolate holds the Worker and its one object and nothing else. "peak" is the largest used+ext seen by
//         sampling every 100 ms during the run (garbage included; samples land between the isolate's tasks only).
//         This is what counts against the 128 MB.
//   rss   the resident memory of this run's workerd process (Linux /proc): the whole runtime — V8, SQLite's page
//         cache, workerd itself — an upper bound, not what Cloudflare limits.
// CPU: timers do not advance during synchronous work inside workerd (not on Cloudflare), so calls are timed from
// outside: "wall" is the dispatchFetch round trip (it bounds the call's CPU from above; it includes the local HTTP
// hop and JSON), "cpu" is the user+system time the workerd process spent meanwhile (/proc, 10 ms ticks; SQLite's
// work included, as Cloudflare counts it). Background work (compaction, embedding) runs after a call returns, under
// waitUntil/alarm: `flush` waits for it, so "flush after X" is the CPU of X's background work in X's own event (one
// slice of compaction, PagewiseMemory's backgroundSliceTurns); the alarms that take the rest are run one at a time
// and each timed ("alarms after X": the heaviest, and all of them together).
//
// Data: LoCoMo (../shared/data/locomo, 10 conversations of ~400-700 turns, concatenated and repeated with new ids
// and shifted dates to reach each size) when present, else the generated LoCoMo-shaped chat of
// tests/fixtures/locomo-like.ts. Questions: LoCoMo's own (or the generated ones).
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import type { ChatMessage } from '../../src/contracts/types.js';
import { type LongTurn, locomoLikeChat, toExportData } from '../fixtures/locomo-like.js';
import { DATA, loadLocomo } from './datasets.js';
import { percentile } from './metrics.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const sizes = (args.get('turns') ?? '1000,10000,50000').split(',').map(Number);
const variants = (args.get('variants') ?? 'plain,vectors').split(',') as ('plain' | 'vectors')[];
const questionCount = Number(args.get('questions') ?? 30);
const LIMIT_MB = 128;
const LIMIT_CPU_S = 30;

// ---- data ---------------------------------------------------------------------------------------------------------

const locomoDir = resolve(DATA, 'locomo');
const useLocomo = existsSync(locomoDir) && readdirSync(locomoDir).some((f) => f.endsWith('.json'));
let source: { turns: LongTurn[]; questions: string[] };
if (useLocomo) {
  const convs = loadLocomo();
  const base = convs.map((c) => c.batches.flat() as LongTurn[]);
  const need = Math.max(...sizes) + 2500;
  const turns: LongTurn[] = [];
  let cursor = Date.parse(base[0]![0]!.createdAt);
  for (let rep = 0; turns.length < need; rep++) {
    base.forEach((conv, c) => {
      const delta = cursor - Date.parse(conv[0]!.createdAt);
      for (const t of conv) turns.push({ ...t, id: `r${rep}.c${c}.${t.id}`, createdAt: new Date(Date.parse(t.createdAt) + delta).toISOString() });
      cursor = Date.parse(turns.at(-1)!.createdAt) + 86_400_000;
    });
  }
  source = { turns, questions: convs.flatMap((c) => c.questions.map((q) => q.question)) };
  console.log(`data: LoCoMo (${locomoDir}): ${convs.length} conversations, ${base.reduce((n, c) => n + c.length, 0)} turns, concatenated and repeated to ${turns.length} turns`);
} else {
  const chat = locomoLikeChat({ turns: Math.max(...sizes) + 2500, facts: 300 });
  source = { turns: chat.turns, questions: chat.questions.map((q) => q.question) };
  console.log(`data: ${locomoDir} is missing; the generated LoCoMo-shaped chat (tests/fixtures/locomo-like.ts), ${chat.turns.length} turns`);
}
// A tail that no size reaches: the turns added after each fill ("compact() after 200 more turns").
const extra = source.turns.slice(source.turns.length - 200);

// ---- workerd ------------------------------------------------------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), 'pagewise-edge-limits-'));
const script = join(dir, 'worker.mjs');
writeFileSync(script, (await build({
  entryPoints: [resolve(import.meta.dirname, '../support/edge/long-worker.ts')], bundle: true, format: 'esm', platform: 'neutral', target: 'es2022', write: false,
  external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
})).outputFiles[0]!.text);

/** workerd processes started under this one (Miniflare spawns it), by walking /proc. */
function workerdPids(): number[] {
  const children = new Map<number, number[]>();
  const names = new Map<number, string>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      names.set(Number(e), stat.slice(stat.indexOf('(') + 1, close));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(e)]);
    } catch { /* gone */ }
  }
  const out: number[] = [];
  const walk = (pid: number) => { for (const c of children.get(pid) ?? []) { if (names.get(c) === 'workerd') out.push(c); walk(c); } };
  walk(process.pid);
  return out;
}
const procStat = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return { cpuTicks: Number(fields[11]) + Number(fields[12]) };
};
const rssMb = (pids: number[]) => pids.reduce((n, p) => n + Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0), 0) / 1024;
const cpuMs = (pids: number[]) => pids.reduce((n, p) => n + procStat(p).cpuTicks, 0) * 10;

interface Inspector { heap(gc: boolean): Promise<{ used: number; ext: number }>; close(): void }

async function inspector(mf: Miniflare): Promise<Inspector | null> {
  try {
    const url = new URL(String(await mf.getInspectorURL()));
    url.protocol = 'http:';
    url.pathname = '/json';
    const targets = await (await fetch(url)).json() as { id: string; webSocketDebuggerUrl: string }[];
    const target = targets.find((t) => t.id === 'core:user:');
    if (!target) return null;
    // Node 22 has WebSocket; Node 20 takes the `ws` package Miniflare depends on (the same DOM-style API).
    const module = 'ws';
    const Socket: typeof WebSocket = globalThis.WebSocket ?? ((await import(module)) as { default: typeof WebSocket }).default;
    const ws = new Socket(target.webSocketDebuggerUrl);
    await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = fail; });
    let id = 0;
    const pending = new Map<number, (r: unknown) => void>();
    ws.onmessage = (m) => { const d = JSON.parse(String(m.data)) as { id?: number; result?: unknown }; if (d.id !== undefined) { pending.get(d.id)?.(d.result); pending.delete(d.id); } };
    const send = <T>(method: string, params = {}) => new Promise<T>((ok) => { pending.set(++id, ok as (r: unknown) => void); ws.send(JSON.stringify({ id, method, params })); });
    await send('HeapProfiler.enable');
    return {
      async heap(gc) {
        // workerd's inspector has no HeapProfiler.collectGarbage; a heap snapshot collects first (its chunks are dropped).
        if (gc) await send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
        const u = await send<{ usedSize: number; embedderHeapUsedSize?: number; backingStorageSize?: number }>('Runtime.getHeapUsage');
        return { used: u.usedSize / 2 ** 20, ext: ((u.backingStorageSize ?? 0) + (u.embedderHeapUsedSize ?? 0)) / 2 ** 20 };
      },
      close: () => ws.close(),
    };
  } catch {
    return null;
  }
}

// ---- one run: a fresh workerd, one object, N turns ----------------------------------------------------------------

interface Timing { wall: number; cpu: number; held: number }
interface Row {
  variant: string; turns: number; idle: number | null; opened: number | null; heapUsed: number | null; heapExt: number | null; peak: number | null; rss: number;
  summaries: number; calls: Record<string, Timing>; inbound: { p50: number; p95: number; max: number; cold: number };
}

async function run(variant: 'plain' | 'vectors', n: number): Promise<Row> {
  const mf = new Miniflare({
    modulesRoot: dir, modules: [{ type: 'ESModule', path: script, contents: readFileSync(script, 'utf8') }], compatibilityDate: '2025-09-01',
    durableObjects: { LONG: { className: 'LongMemory', useSQLite: true }, PLAIN: { className: 'PlainMemory', useSQLite: true }, VECTORS: { className: 'VectorMemory', useSQLite: true } },
    durableObjectsPersist: join(dir, `do-${variant}-${n}`), inspectorPort: 0,
  });
  await mf.ready;
  const pids = workerdPids();
  const insp = await inspector(mf);
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling && insp) {
      const h = await insp.heap(false);
      peak = Math.max(peak, h.used + h.ext);
      await new Promise((ok) => setTimeout(ok, 100));
    }
  })();
  const ns = variant === 'plain' ? 'plain' : 'vectors';
  const request = async (object: string, method: string, a: unknown[]) =>
    await (await mf.dispatchFetch(`http://edge.test/call/${ns}/${encodeURIComponent(object)}/${method}`, { method: 'POST', body: JSON.stringify(a) })).json() as { value?: unknown; error?: { code?: string; message?: string } };
  // While a heavy call runs, another object of the same isolate is asked every 250 ms: the longest wait is how long
  // the call held the isolate's event loop (every object it serves, and the call's own reply).
  const timed = (object: string, method: string, ...a: unknown[]): Promise<{ value: unknown; t: Timing }> => measured(method, () => request(object, method, a));
  const measured = async (method: string, send: () => Promise<{ value?: unknown; error?: { code?: string; message?: string } }>): Promise<{ value: unknown; t: Timing }> => {
    const c0 = cpuMs(pids);
    const t0 = performance.now();
    let done = false;
    let held = 0;
    const prober = (async () => {
      while (!done) {
        await new Promise((ok) => setTimeout(ok, 250));
        if (done) break;
        const p0 = performance.now();
        await request('probe', 'conversations', []);
        held = Math.max(held, performance.now() - p0);
      }
    })();
    const r = await send().finally(() => { done = true; });
    const wall = performance.now() - t0;
    const cpu = cpuMs(pids) - c0;
    // A probe made while the call ran may come back only after it: its wait counts.
    await prober;
    const t = { wall, cpu, held };
    if (r.error) throw new Error(`${variant} ${n}: ${method} failed: ${r.error.code} ${r.error.message}`);
    return { value: r.value, t };
  };
  const calls: Record<string, Timing> = {};
  // The compaction a call left beyond its event's slice goes on alarm after alarm: each run here by hand and timed.
  const alarms = async (object: string, after: string): Promise<void> => {
    const each: Timing[] = [];
    for (let left = 1; left > 0 && each.length < 1000;) {
      const { value, t } = await measured('alarm', async () => await (await mf.dispatchFetch(`http://edge.test/alarm/${ns}/${encodeURIComponent(object)}`, { method: 'POST' })).json() as { value?: unknown });
      each.push(t);
      left = (value as { left: number }).left;
    }
    const heaviest = each.reduce((a, b) => (b.cpu > a.cpu ? b : a));
    calls[`alarms after ${after}: heaviest of ${each.length}`] = heaviest;
    calls[`alarms after ${after}: all ${each.length}`] = each.reduce((a, b) => ({ wall: a.wall + b.wall, cpu: a.cpu + b.cpu, held: Math.max(a.held, b.held) }));
  };
  try {
    const id = `big-${n}`;
    const turns = source.turns.slice(0, n);
    const sum = (h: { used: number; ext: number } | undefined) => (h ? h.used + h.ext : null);
    const idle = sum(await insp?.heap(true));
    await timed(id, 'conversations');
    const opened = sum(await insp?.heap(true));
    await request('probe', 'conversations', []);
    calls[`import ${n} (one call)`] = (await timed(id, 'import', toExportData({ turns }, id))).t;
    calls[`flush after import ${n}`] = (await timed(id, 'flush')).t;
    await alarms(id, `import ${n}`);
    // Segments only: the whole list at 50,000 turns (41 MB) is over Workers RPC's 32 MiB per value.
    const summaries = ((await timed(id, 'summaries', id, { kind: 'segment' })).value as unknown[]).length;
    const times: number[] = [];
    let cold = 0;
    for (let q = 0; q < questionCount; q++) {
      const { t } = await timed(id, 'onMessageInbound', { conversationId: id, message: { role: 'user', content: source.questions[(q * 7) % source.questions.length]! } });
      if (q === 0) cold = t.wall;
      else times.push(t.wall);
    }
    const heap = insp ? await insp.heap(true) : null;
    const rss = rssMb(pids);
    // More turns, then an explicit compaction of them.
    for (let i = 0; i < extra.length; i += 100) await timed(id, 'onTurnComplete', { conversationId: id, messages: extra.slice(i, i + 100) as ChatMessage[] });
    calls['onTurnComplete ×2 (200 turns), flush'] = (await timed(id, 'flush')).t;
    calls['compact() after 200 more turns'] = (await timed(id, 'compact', id)).t;
    // Forget 300 turns spread over the conversation, then the rebuild of what is derived.
    const ids = Array.from({ length: 300 }, (_, k) => turns[Math.floor(((k + 0.5) * n) / 300)]!.id);
    calls[`forget 300 of ${n}`] = (await timed(id, 'forget', { conversationId: id, messageIds: ids })).t;
    calls[`flush after forget (rebuild at ${n})`] = (await timed(id, 'flush')).t;
    await alarms(id, `forget at ${n}`);
    calls[`onMessageInbound at ${n}, after the rebuild`] = (await timed(id, 'onMessageInbound', { conversationId: id, message: { role: 'user', content: source.questions[3]! } })).t;
    if (n === sizes[0]) {
      // The import of 2,000 turns into a fresh object (and its background work), and a forget of 300 of them.
      const fresh = source.turns.slice(0, 2000);
      calls['import 2000 (fresh object)'] = (await timed('import-2000', 'import', toExportData({ turns: fresh }, 'import-2000'))).t;
      calls['flush after import 2000'] = (await timed('import-2000', 'flush')).t;
      await alarms('import-2000', 'import 2000');
      calls['forget 300 of 2000'] = (await timed('import-2000', 'forget', { conversationId: 'import-2000', messageIds: fresh.filter((_, i) => i % 6 === 5).slice(0, 300).map((t) => t.id) })).t;
      calls['flush after forget 300 of 2000'] = (await timed('import-2000', 'flush')).t;
    }
    return {
      variant, turns: n, idle, opened, heapUsed: heap?.used ?? null, heapExt: heap?.ext ?? null, peak: insp ? peak : null, rss, summaries, calls,
      inbound: { p50: percentile(times, 50), p95: percentile(times, 95), max: Math.max(...times), cold },
    };
  } finally {
    sampling = false;
    await sampler;
    insp?.close();
    await mf.dispose();
  }
}

// ---- the runs and the tables ---------------------------------------------------------------------------------------

const rows: Row[] = [];
try {
  for (const variant of variants) {
    for (const n of sizes) {
      const t = performance.now();
      rows.push(await run(variant, n));
      console.log(`  ran ${variant} at ${n} turns in ${((performance.now() - t) / 1000).toFixed(0)} s`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const mb = (x: number | null) => (x === null ? 'n/a' : x.toFixed(1));
const flag = (x: number | null, limit: number) => (x === null ? '' : x >= limit ? '  OVER' : x >= 0.5 * limit ? `  ${((100 * x) / limit).toFixed(0)}% of limit` : '');
console.log(`\nMemory of one object (MB; Cloudflare: ${LIMIT_MB} MB per isolate). heap = V8 heap after GC via the inspector; ext = ArrayBuffers + workerd's C++ heap; peak = largest used+ext sampled during the run (garbage included); rss = the workerd process`);
console.log('(idle = the Worker before any call; opened = the object\'s engine open on an empty database, before the tokenizer loads with the first turn)');
console.log('| deployment | turns | idle | opened | heap used | ext | heap+ext | peak sampled | workerd rss | onMessageInbound p50 / p95 / max (cold) ms |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---|');
for (const r of rows) {
  const total = r.heapUsed === null ? null : r.heapUsed + r.heapExt!;
  console.log(`| ${r.variant} | ${r.turns} | ${mb(r.idle)} | ${mb(r.opened)} | ${mb(r.heapUsed)} | ${mb(r.heapExt)} | ${mb(total)}${flag(total, LIMIT_MB)} | ${mb(r.peak)}${flag(r.peak, LIMIT_MB)} | ${r.rss.toFixed(0)} | ${r.inbound.p50.toFixed(0)} / ${r.inbound.p95.toFixed(0)} / ${r.inbound.max.toFixed(0)} (${r.inbound.cold.toFixed(0)}) |`);
}
console.log(`\nThe heaviest calls (wall ms of the dispatchFetch / workerd process CPU ms over it; Cloudflare: ${LIMIT_CPU_S} s CPU per request by default)`);
console.log('(in workerd the compaction an import makes due runs between the import\'s own slices, so "import N" includes some of it; "flush after" is the slice its event took, "alarms after" the rest)');
for (const r of rows) console.log(`  ${r.variant} ${r.turns}: ${r.summaries} segment summaries once the import's alarms were done`);
console.log('("held": the longest another object of the same isolate waited for a call made meanwhile, probed every 250 ms; 0 for calls shorter than that)');
console.log('| deployment | turns | call | wall ms | cpu ms | of 30 s | held ms |');
console.log('|---|---:|---|---:|---:|---:|---:|');
for (const r of rows) {
  for (const [name, t] of Object.entries(r.calls)) {
    const share = t.cpu / (LIMIT_CPU_S * 1000);
    // A sum over several events is against no one event's limit.
    const flagged = name.includes(': all ') ? ' (sum of events)' : share >= 1 ? ' OVER' : share >= 0.5 ? ' NEAR' : '';
    console.log(`| ${r.variant} | ${r.turns} | ${name} | ${t.wall.toFixed(0)} | ${t.cpu.toFixed(0)} | ${(100 * share).toFixed(1)}%${flagged} | ${t.held.toFixed(0)} |`);
  }
}
