import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storageDriverCases } from '../conformance/storage-driver.js';

// Real workerd (Miniflare 4 drives the workerd binary): the test Worker is bundled as one ES module.
let mf: Miniflare;
const dir = mkdtempSync(join(tmpdir(), 'pagewise-edge-'));

beforeAll(async () => {
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, '../edge/test-worker.ts')], bundle: true, format: 'esm', platform: 'neutral',
    target: 'es2022', write: false, external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
  });
  const script = join(dir, 'worker.mjs');
  writeFileSync(script, out.outputFiles[0]!.text);
  mf = new Miniflare({
    modules: true, modulesRoot: dir, scriptPath: script, compatibilityDate: '2025-09-01',
    durableObjects: { TEST: { className: 'TestObject', useSQLite: true } },
    durableObjectsPersist: join(dir, 'do'),
  });
  await mf.ready;
}, 120_000);

afterAll(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('Durable Object SQL in workerd', () => {
  it('passes the storage conformance suite', async () => {
    const results = await (await mf.dispatchFetch('http://edge.test/conformance')).json() as { name: string; ok: boolean; error?: string }[];
    expect(results.map((r) => r.name)).toEqual(storageDriverCases.map((c) => c.name));
    for (const r of results) expect(r, r.name).toEqual({ name: r.name, ok: true });
  });
});
