// What tests/node/edge/sync-relay.test.ts starts: the relay Worker (relay-worker.ts) bundled as one ES module and
// served by Miniflare in real workerd, its Durable Objects persisted under a folder of the test's (so that the test
// can read every byte the relay stored); the devices that sync through it; and the scan of that folder.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import type { Memory } from '../../../src/index.js';
import { fileStorage } from '../../../src/storage/node-file.js';
import { createMemory } from '../helpers.js';

/** Bundles the relay Worker into `dir` and serves it; its objects are kept under `dir/do`. */
export async function startRelayWorker(dir: string, bindings: Record<string, string>): Promise<Miniflare> {
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, './relay-worker.ts')], bundle: true, format: 'esm', platform: 'neutral',
    target: 'es2022', write: false, external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
  });
  const script = join(dir, 'relay-worker.mjs');
  writeFileSync(script, out.outputFiles[0]!.text);
  const mf = new Miniflare({
    modulesRoot: dir, modules: [{ type: 'ESModule', path: script, contents: out.outputFiles[0]!.text }], compatibilityDate: '2025-09-01',
    durableObjects: { RELAY: { className: 'Relay', useSQLite: true } },
    durableObjectsPersist: join(dir, 'do'),
    bindings,
  });
  await mf.ready;
  return mf;
}

/** Where devices keep their databases: files encrypted at rest, removed when the test process ends. */
const devices = mkdtempSync(join(tmpdir(), 'pagewise-relay-devices-'));
process.once('exit', () => rmSync(devices, { recursive: true, force: true }));
let made = 0;
/** The devices' at-rest key (not the relay's: the relay's key seals batches in transit). */
export const DEVICE_KEY = randomBytes(32);

/**
 * A device: a memory of its own on a database file encrypted at rest — at `path` when given (a copy of another
 * device's file, with the same key), else a new one. The one place a test's devices are made.
 */
export function relayDevice(path?: string): Promise<Memory> {
  return createMemory({ storage: fileStorage(path ?? join(devices, `device-${++made}.sqlite3`), { encryption: { key: Uint8Array.from(DEVICE_KEY) } }) });
}

/** Every file under `dir`, as bytes. */
function filesUnder(dir: string): { path: string; bytes: Buffer }[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [{ path, bytes: readFileSync(path) }];
  });
}

/**
 * Which of `needles` occur in any file under `dir` (case-insensitive, as bytes: UTF-8, UTF-16LE, and base64 at each
 * of the three alignments a string can take in base64), with the files scanned.
 */
export function scanFiles(dir: string, needles: readonly string[]): { found: string[]; files: number; bytes: number } {
  const files = filesUnder(dir);
  const haystacks = files.map((f) => f.bytes.toString('latin1').toLowerCase());
  const raw = files.map((f) => f.bytes.toString('latin1'));
  const forms = (s: string): { text: string; exact: boolean }[] => {
    const b = Buffer.from(s, 'utf8');
    // Base64 of the string at offsets 0, 1, 2 (its middle characters do not depend on what precedes it).
    const b64 = [0, 1, 2].map((k) => Buffer.concat([Buffer.alloc(k), b]).toString('base64').slice(Math.ceil((k * 4) / 3) + 1, -3)).filter((x) => x.length >= 8);
    return [{ text: s.toLowerCase(), exact: false }, { text: Buffer.from(s, 'utf16le').toString('latin1').toLowerCase(), exact: false }, ...b64.map((text) => ({ text, exact: true }))];
  };
  const found = needles.filter((n) => forms(n).some((f) => (f.exact ? raw : haystacks).some((h) => h.includes(f.text))));
  return { found, files: files.length, bytes: files.reduce((s, f) => s + f.bytes.length, 0) };
}
