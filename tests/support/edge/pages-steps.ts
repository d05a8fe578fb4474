// What pages-edge.test.ts and pages-edge-long.test.ts share: the pages Worker in real workerd (Miniflare 4), a long
// conversation built there the cheap way (export pages of up to 10,000 turns, imported in order: an object takes at
// most that many per call; then compact() a slice per call), and a list read a page at a time over RPC.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { expect } from 'vitest';
import type { CompactionReport } from '../../../src/contracts/types.js';
import type { ExportData } from '../../../src/contracts/types-data.js';

export type Outcome<T = unknown> = { value?: T; error?: { name?: string; code?: string; path?: string; message?: string } };

export interface PagesEdge {
  call<T = unknown>(object: string, method: string, ...args: unknown[]): Promise<Outcome<T>>;
  ok<T = unknown>(object: string, method: string, ...args: unknown[]): Promise<T>;
  dispose(): Promise<void>;
}

export async function startPagesEdge(bindings: Record<string, string> = {}): Promise<PagesEdge> {
  const dir = mkdtempSync(join(tmpdir(), 'pagewise-edge-pages-'));
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, 'pages-worker.ts')], bundle: true, format: 'esm', platform: 'neutral',
    target: 'es2022', write: false, external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
  });
  const script = join(dir, 'pages-worker.mjs');
  writeFileSync(script, out.outputFiles[0]!.text);
  const mf = new Miniflare({
    modulesRoot: dir, modules: [{ type: 'ESModule', path: script, contents: out.outputFiles[0]!.text }], compatibilityDate: '2025-09-01',
    durableObjects: { PAGES_MEMORY: { className: 'PagesMemory', useSQLite: true } }, durableObjectsPersist: join(dir, 'do'), bindings,
  });
  await mf.ready;
  const call = async <T>(object: string, method: string, ...args: unknown[]): Promise<Outcome<T>> =>
    (await mf.dispatchFetch(`http://edge.test/call/${encodeURIComponent(object)}/${method}`, { method: 'POST', body: JSON.stringify(args) })).json() as Promise<Outcome<T>>;
  return {
    call,
    async ok<T>(object: string, method: string, ...args: unknown[]): Promise<T> {
      const r = await call<T>(object, method, ...args);
      expect(r.error, `${method}: ${JSON.stringify(r.error)}`).toBeUndefined();
      return r.value as T;
    },
    async dispose() {
      await mf.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const WORDS = ['harbour', 'ledger', 'violin', 'compost', 'glacier', 'lantern', 'orchard', 'satchel', 'meadow', 'quartz', 'falcon', 'tundra', 'saffron', 'pylon', 'ferret', 'cobalt', 'marble', 'walnut', 'beacon', 'thimble'];
const THINGS = Array.from({ length: 400 }, (_, k) => `${WORDS[k % 20]}${WORDS[Math.floor(k / 20) % 20]}`);

/** Turn `i`'s id: as long as an app's message ids (a UUID's length), the same on every run. */
export const idOf = (i: number): string => `m-${String(i).padStart(6, '0')}-7d3e-4c1a-9b2f-5e8a1c7d3b90`;

/** Turn `i` of the generated conversation: `sentences` sentences about a project that changes every 20 turns (a minute apart). */
export function turnAt(i: number, sentences: number) {
  const sentence = (j: number) => `The ${WORDS[(i * 7 + j) % 20]} ${WORDS[(i * 3 + j * 5) % 20]}s near ${THINGS[(i * 11 + j * 13) % 400]} needed ${THINGS[(i * 17 + j * 7) % 400]} and ${THINGS[(i * 5 + j * 19) % 400]} before ${THINGS[(i * 23 + j) % 400]}.`;
  return {
    id: idOf(i), role: i % 2 === 0 ? 'user' as const : 'assistant' as const, createdAt: new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString(),
    content: `Turn ${i} on the ${WORDS[Math.floor(i / 20) % 20]} project. ${Array.from({ length: sentences }, (_, j) => sentence(j)).join(' ')}`,
  };
}

/** Turns [from, from + n) as an export page (it carries a cursor, and after the first the turn it follows). */
export function importPage(conversationId: string, from: number, n: number, sentences: number): ExportData & { cursor: null } {
  const turns = Array.from({ length: n }, (_, k) => turnAt(from + k, sentences));
  const at = turns[0]!.createdAt;
  return {
    format: 'pagewise', version: 1, exportedAt: at, aliases: [], cursor: null,
    conversations: [{ id: conversationId, createdAt: at, updatedAt: at, turns, pins: [], aliases: [], ...(from > 0 ? { after: idOf(from - 1) } : {}) }],
  };
}

/** Builds a conversation of `turns` turns in `object`: imports of `perImport` turns, then compaction to the end. */
export async function buildConversation(edge: PagesEdge, object: string, conversationId: string, turns: number, perImport: number, sentences: number): Promise<void> {
  for (let from = 0; from < turns; from += perImport) {
    const report = await edge.ok<{ turns: number }>(object, 'import', importPage(conversationId, from, Math.min(perImport, turns - from), sentences));
    expect(report.turns).toBe(Math.min(perImport, turns - from));
  }
  for (let i = 0; i < 100; i++) {
    const report = await edge.ok<CompactionReport | null>(object, 'compact', conversationId);
    if (!report?.more) break;
  }
  await edge.ok(object, 'flush');
}

/** Every page of a list over RPC: the items, the pages' sizes (items, JSON bytes). `args(cursor)`: the call's arguments. */
export async function readPages<T>(edge: PagesEdge, object: string, method: string, args: (cursor: string | null) => unknown[], itemsOf: (page: unknown) => T[] = (p) => (p as { items: T[] }).items): Promise<{ items: T[]; sizes: { items: number; bytes: number }[] }> {
  const items: T[] = [];
  const sizes: { items: number; bytes: number }[] = [];
  let cursor: string | null = null;
  do {
    const page: { cursor: string | null } = await edge.ok<{ cursor: string | null }>(object, method, ...args(cursor));
    const got = itemsOf(page);
    items.push(...got);
    sizes.push({ items: got.length, bytes: Buffer.byteLength(JSON.stringify(page)) });
    cursor = page.cursor;
    expect(sizes.length).toBeLessThan(100_000);
  } while (cursor !== null);
  return { items, sizes };
}
