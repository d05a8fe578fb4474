// The test Worker (tests/support/edge/test-worker.ts) bundled as one ES module and served by Miniflare 4 in real workerd: what
// edge.test.ts and sync-edge.test.ts both start.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';

/** Bundles the test Worker into `dir` and returns the module's path. */
export async function bundleTestWorker(dir: string): Promise<string> {
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, './edge/test-worker.ts')], bundle: true, format: 'esm', platform: 'neutral',
    target: 'es2022', write: false, external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
  });
  const script = join(dir, 'worker.mjs');
  writeFileSync(script, out.outputFiles[0]!.text);
  return script;
}

/** workerd serving the bundle, its Durable Objects persisted under `dir` (a restart on the same dir keeps them). */
export async function startTestWorker(dir: string, script: string, bindings: Record<string, string>): Promise<Miniflare> {
  const mf = new Miniflare({
    // The bundle as one module given whole: Miniflare does not follow its dynamic imports (models, sqlite-wasm), which
    // the edge never takes.
    modulesRoot: dir, modules: [{ type: 'ESModule', path: script, contents: readFileSync(script, 'utf8') }], compatibilityDate: '2025-09-01',
    durableObjects: { TEST: { className: 'TestObject', useSQLite: true }, MEMORY: { className: 'Memory', useSQLite: true }, USER_MEMORY: { className: 'UserMemory', useSQLite: true }, SLICED: { className: 'SlicedMemory', useSQLite: true } },
    durableObjectsPersist: join(dir, 'do'),
    bindings,
  });
  await mf.ready;
  return mf;
}
