// npx tsx tests/bench/edge.ts [--turns=1000,10000]
// pagewise in real workerd (Miniflare 4): the edge bundle's size, the Worker's cold start, and onMessageInbound
// p50/p95 in a PagewiseMemory object at 1,000 and 10,000 turns — timed from outside (timers do not advance during
// synchronous work inside workerd), so each figure includes the local HTTP hop into the Worker and the RPC to the object.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { percentile } from './metrics.js';

/** Resident memory of the workerd processes Miniflare started, in MB (Linux ps). */
const workerdRss = (): string => {
  try {
    const kb = execFileSync('ps', ['-C', 'workerd', '-o', 'rss='], { encoding: 'utf8' }).trim().split(/\s+/).map(Number).reduce((a, b) => a + b, 0);
    return `${(kb / 1024).toFixed(0)} MB`;
  } catch {
    return 'n/a';
  }
};

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const sizes = (args.get('turns') ?? '1000,10000').split(',').map(Number);
const dir = mkdtempSync(join(tmpdir(), 'pagewise-edge-bench-'));
const bundle = async (entry: string, minify: boolean) => (await build({
  entryPoints: [resolve(import.meta.dirname, entry)], bundle: true, format: 'esm', platform: 'neutral', target: 'es2022', write: false, minify,
  external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
})).outputFiles[0]!.text;

try {
  const edge = await bundle('../../src/edge.ts', true);
  console.log(`pagewise/edge bundle (esbuild, minified): ${(edge.length / 1024).toFixed(0)} KiB, ${(gzipSync(edge).length / 1024).toFixed(0)} KiB gzip`);
  const script = join(dir, 'worker.mjs');
  writeFileSync(script, await bundle('../support/edge/test-worker.ts', false));
  const options = {
    modulesRoot: dir, modules: [{ type: 'ESModule' as const, path: script, contents: readFileSync(script, 'utf8') }], compatibilityDate: '2025-09-01',
    durableObjects: { TEST: { className: 'TestObject', useSQLite: true }, MEMORY: { className: 'Memory', useSQLite: true }, USER_MEMORY: { className: 'UserMemory', useSQLite: true } },
  };
  let t = performance.now();
  const mf = new Miniflare(options);
  await mf.ready;
  const ready = performance.now() - t;
  const rssReady = workerdRss();
  const call = async (object: string, method: string, ...a: unknown[]) => {
    const r = await (await mf.dispatchFetch(`http://edge.test/call/user/${object}/${method}`, { method: 'POST', body: JSON.stringify(a) })).json() as { value?: unknown; error?: { message: string } };
    if (r.error) throw new Error(r.error.message);
    return r.value;
  };
  t = performance.now();
  await call('cold', 'conversations');
  const first = performance.now() - t;
  t = performance.now();
  await call('cold', 'onTurnComplete', { conversationId: 'c', messages: [{ role: 'user', content: 'First message: the tokenizer loads here.' }] });
  const firstTurn = performance.now() - t;
  console.log(`cold start: workerd up in ${ready.toFixed(0)} ms; first call to a new object (engine, schema) ${first.toFixed(0)} ms; first stored turn (tokenizer) ${firstTurn.toFixed(0)} ms`);
  console.log(`workerd resident memory (the whole runtime process, not one isolate): ${rssReady} when up, ${workerdRss()} with the engine and the tokenizer loaded`);
  const topics = ['database indexing', 'marathon training', 'tenant rights', 'sourdough baking', 'kubernetes upgrades', 'tax filing', 'guitar practice', 'garden planning', 'travel to Japan', 'react hooks'];
  for (const n of sizes) {
    const object = `bench-${n}`;
    t = performance.now();
    for (let i = 0; i < n; i += 100) {
      const messages = [];
      for (let k = i; k < Math.min(n, i + 100); k += 2) {
        const topic = topics[k % topics.length]!;
        messages.push({ role: 'user', content: `Question ${k} about ${topic}: what should I do next about item ${(k * 7919) % 1000}?` },
          { role: 'assistant', content: `For ${topic}, step ${k}: check item ${(k * 104729) % 1000}, then write down what changed and why it matters.` });
      }
      await call(object, 'onTurnComplete', { conversationId: 'c', messages });
    }
    await call(object, 'flush');
    const ingest = performance.now() - t;
    const times: number[] = [];
    for (let q = 0; q < 120; q++) {
      const topic = topics[q % topics.length]!;
      const s = performance.now();
      await call(object, 'onMessageInbound', { conversationId: 'c', message: { role: 'user', content: `What did we say about ${topic} and item ${(q * 37) % 1000}?` } });
      if (q >= 20) times.push(performance.now() - s);
    }
    console.log(`workerd resident memory at ${n} turns: ${workerdRss()}`);
    console.log(`${n} turns (stored in ${(ingest / 1000).toFixed(1)} s, 100 a call): onMessageInbound p50 ${percentile(times, 50).toFixed(1)} ms, p95 ${percentile(times, 95).toFixed(1)} ms (n=${times.length}, after 20 warm-up questions)`);
  }
  await mf.dispose();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
