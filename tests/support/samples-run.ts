// Runs a code sample (tests/support/samples.ts finds them) in Node or in workerd, as docs/contributing/samples.md
// says, and checks its claims. The browser's runner is tests/browser/samples.spec.ts.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { build } from 'esbuild';
import { Log, LogLevel, Miniflare } from 'miniflare';
import { ROOT, SAFETY_NET_MS, checkClaims, fail, parseJsonc, slug, tail, writeSample, type ModelEnv, type Sample } from './samples.js';

export { MODEL_REPLY, ROOT, SAFETY_NET_MS, SampleFailure, checkClaims, modelEnv, parseJsonc, type ModelEnv } from './samples.js';

/** The entry run by this Node through tsx, in the sample's folder; resolves to its stdout once it exits with 0. */
export async function runNodeSample(sample: Sample, env: ModelEnv): Promise<string> {
  const dir = writeSample(sample);
  // The sample runs as a user's program would: Vitest's own variables left out.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'NODE_OPTIONS'));
  const child = spawn(process.execPath, ['--import', 'tsx', sample.entry], { cwd: dir, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
  const timer = setTimeout(() => child.kill('SIGKILL'), SAFETY_NET_MS);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((ok, no) => {
    child.once('error', no);
    child.once('close', (c, s) => ok([c, s]));
  }).finally(() => clearTimeout(timer));
  if (code !== 0) {
    const why = signal === 'SIGKILL' ? `did not exit within ${SAFETY_NET_MS / 60_000} minutes (is something left open: a server, a memory?)` : `exited with ${code ?? signal}`;
    // Line n of the entry is line (fence + n) of the page.
    fail(sample, `${why} (ran in ${dir}; ${sample.entry}:1 is ${sample.file}:${sample.line + 1})\n--- stderr ---\n${tail(stderr) || '(nothing)'}\n--- stdout ---\n${tail(stdout, 2000) || '(nothing)'}`);
  }
  return stdout;
}

interface Wrangler {
  main?: string;
  compatibility_date?: string;
  compatibility_flags?: string[];
  vars?: Record<string, unknown>;
  durable_objects?: { bindings?: { name: string; class_name: string; script_name?: string }[] };
  migrations?: { new_sqlite_classes?: string[] }[];
  kv_namespaces?: { binding: string }[];
  r2_buckets?: { binding: string }[];
  d1_databases?: { binding: string }[];
  ai?: unknown;
}

/** Miniflare's options from the sample's wrangler.jsonc (or none), the model variables added as bindings. */
export function workerOptions(sample: Sample, env: ModelEnv) {
  const file = sample.files.find((f) => /^wrangler\.jsonc?$/.test(f.name));
  let w: Wrangler = {};
  if (file) {
    try { w = parseJsonc(file.code) as Wrangler; } catch (e) { fail(sample, `has a ${file.name} that does not parse: ${(e as Error).message}`); }
  }
  if (w.ai !== undefined) fail(sample, 'binds Workers AI ("ai"), which cannot run offline: leave it out of the sample (or in a comment)');
  if (w.main && w.main.replace(/^\.\//, '') !== sample.entry) fail(sample, `has "main": "${w.main}" but its entry (the first block) is ${sample.entry}`);
  const sqlite = new Set((w.migrations ?? []).flatMap((m) => m.new_sqlite_classes ?? []));
  const durableObjects = Object.fromEntries((w.durable_objects?.bindings ?? []).map((b) => [b.name, { className: b.class_name, useSQLite: sqlite.has(b.class_name) }]));
  return {
    compatibilityDate: w.compatibility_date ?? '2025-09-01',
    compatibilityFlags: w.compatibility_flags ?? [],
    durableObjects,
    kvNamespaces: (w.kv_namespaces ?? []).map((k) => k.binding),
    r2Buckets: (w.r2_buckets ?? []).map((k) => k.binding),
    d1Databases: (w.d1_databases ?? []).map((k) => k.binding),
    // The model's address and key replace the vars of the same name: the sample's own point at the real services.
    bindings: { ...(w.vars ?? {}), ...env } as Record<string, unknown>,
  };
}

/** The entry bundled with esbuild as wrangler would, run in workerd; resolves to the request responses' bodies. */
export async function runEdgeSample(sample: Sample, env: ModelEnv): Promise<string> {
  const dir = writeSample(sample);
  const options = workerOptions(sample, env);
  let script = '';
  try {
    const out = await build({
      entryPoints: [join(dir, sample.entry)], bundle: true, format: 'esm', platform: 'neutral', target: 'es2022', write: false,
      external: ['cloudflare:*', 'node:*'], mainFields: ['module', 'main'], conditions: ['workerd', 'worker', 'import'], logLevel: 'silent',
    });
    script = out.outputFiles[0]!.text;
  } catch (e) {
    fail(sample, `does not bundle:\n${(e as Error).message}`);
  }
  let logs = '';
  const mf = new Miniflare({
    ...options, modulesRoot: dir, modules: [{ type: 'ESModule', path: join(dir, 'worker.mjs'), contents: script }],
    log: new Log(LogLevel.WARN),
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      stdout.setEncoding('utf8').on('data', (c: string) => { logs += c; });
      stderr.setEncoding('utf8').on('data', (c: string) => { logs += c; });
    },
  } as ConstructorParameters<typeof Miniflare>[0]);
  const bodies: string[] = [];
  try {
    await mf.ready.catch((e: Error) => fail(sample, `does not start in workerd: ${e.message}\n${tail(logs)}`));
    if (!sample.requests.length) fail(sample, 'is an edge sample with no <!-- request: METHOD /path body --> after it: nothing would call it');
    for (const r of sample.requests) {
      const json = /^[[{]/.test(r.body);
      const res = await mf.dispatchFetch(`http://sample.test${r.path}`, {
        method: r.method, ...(r.body ? { body: r.body, headers: { 'content-type': json ? 'application/json' : 'text/plain' } } : {}),
      });
      const body = await res.text();
      const expected = r.status === null ? res.status >= 200 && res.status < 300 : res.status === r.status;
      if (!expected) fail(sample, `answered ${r.method} ${r.path} (line ${r.line}) with ${res.status}, not ${r.status ?? 'a 2xx'}:\n${tail(body, 2000)}\n--- worker's console ---\n${tail(logs) || '(nothing)'}`);
      bodies.push(body);
    }
  } finally {
    await mf.dispose();
  }
  return bodies.join('\n');
}

/** Runs the sample where it says and checks its claims; throws a SampleFailure naming it when it fails. */
export async function runSample(sample: Sample, env: ModelEnv): Promise<string> {
  if (sample.problems.length) fail(sample, `cannot run as written:\n${sample.problems.join('\n')}`);
  if (sample.runtime === 'browser') fail(sample, 'is a browser sample: tests/browser/samples.spec.ts runs it');
  const output = sample.runtime === 'edge' ? await runEdgeSample(sample, env) : await runNodeSample(sample, env);
  checkClaims(sample, output);
  rmSync(join(ROOT, '.samples', sample.runtime, slug(sample)), { recursive: true, force: true });
  return output;
}
