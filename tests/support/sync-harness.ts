// What the sync tests about devices share: memories on files in a folder of their own, closed after each test, a
// file closed and changed (copied, restored) and opened again, a device whose clock says another time, a forged cursor.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, vi } from 'vitest';
import { fileStorage } from '../../src/storage/node-file.js';
import { remoteMemory, syncEndpoint, type Memory } from '../../src/index.js';
import type { SyncBatch } from '../../src/contracts/types-sync.js';
import { createMemory, user } from './helpers.js';

export const YEAR = 365 * 24 * 3600 * 1000;

/** Stores the user message `id` ("<id> says something") in conversation `c`. */
export const say = (m: Memory, id: string, c = 'c') => m.onTurnComplete({ conversationId: c, messages: [user(`${id} says something`, { id })] });
/** The ids of conversation `c`'s turns, sorted; none when it is not stored. */
export const ids = async (m: Memory, c = 'c'): Promise<string[]> => (await m.turns(c).catch(() => [])).map((t) => t.id!).sort();
/** A memory's replica id. */
export const replicaOf = async (m: Memory): Promise<string> => (await m.syncState('')).replica;

/** Where httpEdge's endpoint answers. */
export const SYNC_URL = 'https://edge.test/v1/pagewise/sync';

/**
 * `edgeMemory` served by syncEndpoint (every caller authenticated as one user), its fetch handler (for a token holder's
 * own requests), and remoteMemory reaching it through that handler (the HTTP protocol, without a socket).
 */
export function httpEdge(edgeMemory: Memory) {
  const handler = syncEndpoint({ memory: edgeMemory, authenticate: () => 'me' });
  const edge = remoteMemory(SYNC_URL, { token: 't', fetch: (url, init) => handler(new Request(url, init)) });
  return { handler, edge };
}

/** A folder for this file's databases and the memories opened in a test, closed after it (call at the top level). */
export function deviceHarness(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let open: Memory[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    for (const m of open) await m.close().catch(() => undefined);
    open = [];
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  /** A memory on the file at `path` (in memory without one), closed after the test. */
  const memory = async (path?: string): Promise<Memory> => {
    const m = await createMemory(path ? { storage: fileStorage(path) } : {});
    open.push(m);
    return m;
  };
  const close = async (m: Memory): Promise<void> => {
    await m.close();
    open = open.filter((x) => x !== m);
  };
  /** Closes the memory on `file`, runs `fn` on the closed file (copy it, restore a backup), opens it again. */
  const reopen = async (m: Memory, file: string, fn: () => void): Promise<Memory> => {
    await close(m);
    fn();
    return memory(file);
  };
  return { dir, memory, close, reopen };
}

/** `fn` with Date frozen at `ms`, as on a device whose clock says so; real timers right after. */
export async function at<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(ms);
  try {
    return await fn();
  } finally {
    vi.useRealTimers();
  }
}

/** An empty batch "from" `from` that says `to` has read it up to a billion (no receipt): what a token holder can send. */
export async function forgeCursor(to: Memory, from: Memory): Promise<void> {
  const batch: SyncBatch = {
    format: 'pagewise-sync', version: 1, from: (await from.syncState('')).replica, to: (await to.syncState('')).replica, conversations: null,
    cursor: { turns: 1e9, tombstones: 1e9 }, more: false, tombstones: [], turns: [], pins: [], aliases: [],
  };
  await to.applySync(batch);
}
