// The example Worker (examples/edge/worker.ts) for the browser tests, without wrangler and without a network:
// bundled with esbuild (`pagewise/edge` is this checkout's src/edge.ts) and served by Miniflare in real workerd on
// loopback, its Durable Objects in memory (each start is empty). Started by the Playwright config (webServer);
// `npx tsx tests/browser/edge-server.ts` runs it by hand. Stops on SIGTERM / SIGINT.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { Miniflare } from 'miniflare';
import { EDGE_PORT, EDGE_TOKENS, PREVIEW_ORIGIN } from './servers.js';

const ROOT = resolve(import.meta.dirname, '../..');

// The example imports the published entry; here it is the source beside it.
const pagewiseEdge: Plugin = {
  name: 'pagewise-edge-from-source',
  setup(b) { b.onResolve({ filter: /^pagewise\/edge$/ }, () => ({ path: join(ROOT, 'src/edge.ts') })); },
};

async function bundle(): Promise<string> {
  const out = await build({
    entryPoints: [join(ROOT, 'examples/edge/worker.ts')], bundle: true, format: 'esm', platform: 'neutral', target: 'es2022',
    write: false, external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
    plugins: [pagewiseEdge], logLevel: 'warning',
  });
  return out.outputFiles[0]!.text;
}

const dir = mkdtempSync(join(tmpdir(), 'pagewise-browser-edge-'));
const mf = new Miniflare({
  host: '127.0.0.1', port: EDGE_PORT,
  // One module given whole: Miniflare does not follow the bundle's dynamic imports (models, sqlite-wasm), which the
  // edge never takes.
  modulesRoot: dir, modules: [{ type: 'ESModule', path: join(dir, 'worker.mjs'), contents: await bundle() }], compatibilityDate: '2025-09-01',
  durableObjects: { MEMORY: { className: 'Memory', useSQLite: true }, MEMORY_USERS: { className: 'UserMemory', useSQLite: true } },
  bindings: {
    // The proxy's upstream is never called by the browser tests: a closed port on loopback.
    UPSTREAM_URL: 'http://127.0.0.1:9/v1',
    PAGEWISE_CLIENT_TOKENS: `${EDGE_TOKENS.alice}:alice,${EDGE_TOKENS.bob}:bob`,
    PAGEWISE_ALLOWED_ORIGINS: PREVIEW_ORIGIN,
  },
});
const url = await mf.ready;
console.log(`[edge-server] examples/edge/worker.ts in workerd at ${url.href} (pages from ${PREVIEW_ORIGIN} allowed)`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await mf.dispose().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
};
process.on('SIGTERM', () => { void stop(); });
process.on('SIGINT', () => { void stop(); });
