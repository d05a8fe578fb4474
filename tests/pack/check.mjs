#!/usr/bin/env node
// npm run check:pack — what `npm install pagewise` brings, checked from the packed tarballs as a user would get them.
//
// Builds, packs the root and every non-private workspace, then installs the tarballs into two empty apps in a
// temporary folder outside the repository (third-party packages from npm's cache or registry, --prefer-offline):
//
//   with embedding  npm install pagewise @pagewise/all-minilm-l6-v2   (transformers.js comes as the model's peer)
//                   → createMemory from 'pagewise/node', default embedder: a paraphrase with no shared word recalls
//                     the right turn by meaning.
//   minimal         npm install pagewise
//                   → no ONNX runtime installed; every entry point imports; the same memory recalls by keyword
//                     (tags + FTS5/BM25), and embeddingStatus() names the packages to install for vectors.
//
// Prints each tarball's packed and unpacked size and each app's node_modules size. Exits non-zero on any failure.
// `--keep` leaves the temporary folder in place.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const keep = process.argv.includes('--keep');
const work = mkdtempSync(join(tmpdir(), 'pagewise-pack-'));
const tarballs = join(work, 'tarballs');
mkdirSync(tarballs);

// A child npm sees none of the npm_* variables of the `npm run` that started this script (they would point it at the
// repository), only the ordinary environment a user's shell has.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'INIT_CWD'));
/** @param {string[]} args @param {string} cwd */
const npm = (args, cwd) => {
  const r = spawnSync('npm', args, { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} (in ${cwd}) failed:\n${r.stdout}\n${r.stderr}`);
  return r;
};
/** @param {number} bytes */
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
/** @type {string[]} */
const failures = [];
/** @param {boolean} ok @param {string} what */
const check = (ok, what) => {
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};

/**
 * Bytes under a folder (files only, links not followed: a folder's own size as `du -sb` would give it, roughly).
 * @param {string} dir
 * @returns {number}
 */
function bytesUnder(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) total += bytesUnder(p);
    else if (entry.isFile()) total += statSync(p).size;
  }
  return total;
}

/**
 * The installed packages of an app's node_modules, largest first.
 * @param {string} modules
 */
function packagesBySize(modules) {
  /** @type {{ name: string, bytes: number }[]} */
  const out = [];
  for (const name of readdirSync(modules)) {
    if (name.startsWith('.')) continue;
    const dirs = name.startsWith('@') ? readdirSync(join(modules, name)).map((n) => `${name}/${n}`) : [name];
    for (const d of dirs) out.push({ name: d, bytes: bytesUnder(join(modules, d)) });
  }
  return out.sort((a, b) => b.bytes - a.bytes);
}

// 1. What the project publishes: the root and every workspace not marked private.
/** @type {{ name: string, workspaces?: string[] }} */
const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const workspaces = (rootPkg.workspaces ?? []).flatMap((/** @type {string} */ pattern) => {
  if (!pattern.endsWith('/*')) return [pattern];
  const parent = pattern.slice(0, -2);
  return readdirSync(join(root, parent), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => `${parent}/${d.name}`);
}).filter((dir) => {
  const file = join(root, dir, 'package.json');
  return existsSync(file) && !JSON.parse(readFileSync(file, 'utf8')).private;
});

console.log(`pack check in ${work} (Node ${process.versions.node}, npm ${npm(['-v'], root).stdout.trim()})`);
console.log('\nbuilding (npm run build)…');
npm(['run', 'build'], root);

console.log('\ntarballs (packed / unpacked):');
/** @typedef {{ name: string, version: string, filename: string, size: number, unpackedSize: number, entryCount: number, files: { path: string }[] }} PackInfo */
/** @type {Record<string, PackInfo & { file: string }>} */
const packed = {};
for (const where of [null, ...workspaces]) {
  // Built just above: no lifecycle script, so that only the JSON report is on stdout.
  const args = ['pack', '--json', '--ignore-scripts', '--pack-destination', tarballs, ...(where ? ['--workspace', where] : [])];
  /** @type {PackInfo} */
  const info = JSON.parse(npm(args, root).stdout)[0];
  packed[info.name] = { file: join(tarballs, info.filename), ...info };
  console.log(`  ${`${info.name}@${info.version}`.padEnd(34)} ${mb(info.size).padStart(9)} / ${mb(info.unpackedSize).padStart(9)}  (${info.entryCount} files)`);
}
const pagewise = packed[rootPkg.name];
const model = packed['@pagewise/all-minilm-l6-v2'];
if (!pagewise || !model) {
  rmSync(work, { recursive: true, force: true });
  throw new Error('pagewise and @pagewise/all-minilm-l6-v2 must both be packed');
}
check(pagewise.files.every((f) => f.path === 'package.json' || /^(dist\/|README|LICENSE)/i.test(f.path)), 'pagewise\'s tarball holds dist/, package.json and README only');

// The memory both apps fill: eight unrelated topics, the turn a paraphrase must find, filler.
/** @param {'full' | 'minimal'} mode */
const script = (mode) => `
import assert from 'node:assert/strict';
const { createMemory } = await import(${JSON.stringify(mode === 'full' ? 'pagewise/node' : 'pagewise')});
const TARGET = 'We added materialized views to precompute the timeline ranking; Postgres refreshes them every five minutes.';
const TOPICS = [
  'The temperature sensors post readings to the Flask API over MQTT.', 'Route the vocal mic through the compressor before the reverb bus.',
  'The training job checkpoints the model weights every epoch.', 'We moved the login page to passkeys and dropped SMS codes.', TARGET,
  'Firmware updates are signed with an ed25519 key.', 'Mix the kick drum a little quieter under the bass.',
  'The validation loss stopped improving after ten epochs.', 'Grafana shows the sensor battery levels per room.',
];
const filler = Array.from({ length: 8 }, (_, i) => \`Okay, let us keep going with item \${i} of the checklist then.\`);
const memory = await createMemory({ contextWindow: 4096, memoryTokens: 300, protectedRecentTurns: 0, targetTokens: 400 });
let t = Date.parse('2026-03-01T10:00:00Z');
for (const [i, text] of [...TOPICS, ...filler, 'Anything else?'].entries()) {
  await memory.onTurnComplete({ conversationId: 'c', messages: [
    { id: \`u\${i}\`, role: 'user', content: text, createdAt: new Date(t).toISOString() },
    { id: \`a\${i}\`, role: 'assistant', content: 'Noted.', createdAt: new Date(t + 1000).toISOString() },
  ] });
  t += 3_600_000;
}
await memory.flush(); // the background queue: vectors of every stored turn (with an embedder)
const target = \`u\${TOPICS.indexOf(TARGET)}\`;
const ask = (content) => memory.onMessageInbound({ conversationId: 'c', message: { role: 'user', content } });
const recalls = (ctx) => ctx.manifest.some((e) => e.kind === 'recall' && e.sourceIds.includes(target));
const byMeaning = await ask('What did we do about the slow feed queries?'); // no word in common with the target
const byKeyword = await ask('How often does Postgres refresh the materialized views?');
const status = await memory.embeddingStatus('c');
await memory.close();
const out = { byMeaning: recalls(byMeaning), byKeyword: recalls(byKeyword), meaningNotes: byMeaning.notes ?? [],
  vector: byMeaning.manifest.find((e) => e.sourceIds?.includes(target))?.scores?.vector ?? null, status };
if (${JSON.stringify(mode)} === 'minimal') {
  // Every entry point Node can load, without the optional packages (pagewise/ai-sdk without ai, pagewise/vite without
  // vite). Not pagewise/edge: it imports 'cloudflare:workers', which only workerd has.
  out.entries = {};
  for (const e of ['pagewise', 'pagewise/node', 'pagewise/ai-sdk', 'pagewise/client', 'pagewise/worker', 'pagewise/vite']) {
    out.entries[e] = await import(e).then(() => 'ok', (err) => String(err?.message ?? err));
  }
}
console.log(JSON.stringify(out));
`;

/** @param {string} name @param {object} pkgExtra */
function makeApp(name, pkgExtra) {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: `pagewise-${name}`, private: true, type: 'module', ...pkgExtra }, null, 2)}\n`);
  return dir;
}

/** @param {string} dir @param {string[]} files */
function install(dir, files) {
  const started = Date.now();
  const r = npm(['install', '--prefer-offline', '--no-audit', '--no-fund', ...files], dir);
  const warnings = `${r.stdout}\n${r.stderr}`.split('\n').filter((l) => /^npm (warn|error)/i.test(l));
  console.log(`  installed in ${((Date.now() - started) / 1000).toFixed(0)} s; npm warnings: ${warnings.length === 0 ? 'none' : `\n    ${warnings.join('\n    ')}`}`);
  const modules = join(dir, 'node_modules');
  const list = packagesBySize(modules);
  const total = list.reduce((s, p) => s + p.bytes, 0);
  console.log(`  node_modules: ${mb(total)} in ${list.length} packages; largest: ${list.slice(0, 6).map((p) => `${p.name} ${mb(p.bytes)}`).join(', ')}`);
  return { total, list };
}

/** @param {string} dir @param {'full' | 'minimal'} mode */
function runScript(dir, mode) {
  writeFileSync(join(dir, 'check.mjs'), script(mode));
  const started = Date.now();
  const r = spawnSync(process.execPath, ['check.mjs'], { cwd: dir, env, encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`the ${mode} app's script failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  console.log(`  script ran in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? 'null');
}

/** @type {Record<string, number>} */
const sizes = {};
try {
  // 2. With embedding, as the README says for Node: pagewise and the model (its peer @huggingface/transformers comes
  // with it). The app denies two install scripts, as the README says (package.json "allowScripts", npm ≥ 11.16):
  // onnxruntime-node's would download CUDA files (from api.nuget.org: unreachable here, an install failure), and
  // protobufjs' only checks its dependents' version ranges. npm 12 runs neither unless approved.
  console.log('\napp with embedding: npm install pagewise @pagewise/all-minilm-l6-v2');
  const full = makeApp('app-embedding', { allowScripts: { 'onnxruntime-node': false, protobufjs: false } });
  sizes.full = install(full, [pagewise.file, model.file]).total;
  check(existsSync(join(full, 'node_modules/@huggingface/transformers/package.json')), '@huggingface/transformers installed as the model\'s peer');
  const f = runScript(full, 'full');
  check(f.byMeaning, `a paraphrase with no shared word recalls the right turn by meaning (cosine ${f.vector?.toFixed(2)})`);
  check(f.byKeyword, 'a keyword question recalls it too');
  check(f.status.lastError === null && f.status.embedded === f.status.total && f.status.total > 0, `every turn embedded (${f.status.embedded}/${f.status.total}, ${f.status.modelId})`);

  // 3. Minimal: pagewise alone — keyword and tag retrieval, nothing from the ONNX runtimes.
  console.log('\nminimal app: npm install pagewise');
  const minimal = makeApp('app-minimal', {});
  sizes.minimal = install(minimal, [pagewise.file]).total;
  check(!existsSync(join(minimal, 'node_modules/onnxruntime-node')) && !existsSync(join(minimal, 'node_modules/@huggingface/transformers')), 'no transformers.js, onnxruntime-node or -web installed');
  const m = runScript(minimal, 'minimal');
  for (const [entry, result] of Object.entries(m.entries)) check(result === 'ok', `import('${entry}')${result === 'ok' ? '' : `: ${result}`}`);
  check(m.byKeyword, 'a keyword question recalls the turn (tags + FTS5/BM25)');
  check(!m.byMeaning, 'the paraphrase does not (no vectors), and nothing crashed');
  const missing = ['@huggingface/transformers', '@pagewise/all-minilm-l6-v2'];
  check(JSON.stringify(m.status.missingPackages) === JSON.stringify(missing), `embeddingStatus().missingPackages: ${JSON.stringify(m.status.missingPackages)}`);
  check(m.meaningNotes.some((/** @type {string} */ n) => missing.every((p) => n.includes(p))), 'the answer\'s note names the packages to install');
  console.log(`  note: ${m.meaningNotes[0]}`);
  console.log(`  embeddingStatus().lastError: ${m.status.lastError}`);

  console.log(`\nsummary: pagewise ${mb(pagewise.size)} packed / ${mb(pagewise.unpackedSize)} unpacked; the model ${mb(model.size)} / ${mb(model.unpackedSize)}; `
    + `node_modules with embedding ${mb(sizes.full)}, minimal ${mb(sizes.minimal)}`);
} catch (e) {
  const message = e instanceof Error ? e.message : String(e);
  failures.push(message);
  console.error(message);
} finally {
  if (!keep) rmSync(work, { recursive: true, force: true });
  else console.log(`kept ${work}`);
}
if (failures.length > 0) {
  console.error(`\npack check: ${failures.length} failure(s)`);
  process.exit(1);
}
console.log('\npack check: ok');
