// `pagewise sync URL|FILE`: the database file synced with the edge (a sync endpoint, with a token) or with another
// database file, progress on stderr, what moved on stdout.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Memory } from '../contracts/memory.js';
import { PagewiseError } from '../contracts/errors.js';
import type { SyncPeer, SyncProgress, SyncReport } from '../contracts/types-sync.js';
import { remoteMemory } from './sync-http.js';
import { count, progress } from './cli-text.js';

export interface SyncCommandContext {
  json: boolean;
  /** --conversation: only that one. */
  given?: string | undefined;
  /** --token, else PAGEWISE_SYNC_TOKEN (better: a flag shows in the process list). */
  token?: string | undefined;
  /** Opens another database file (closed again after the sync). */
  openFile: (path: string) => Promise<Memory>;
}

/**
 * `path` when a database file is there, or when the command may make one (`create`); otherwise NOT_FOUND naming it:
 * a mistyped path must not become a new, empty database, nor (sync FILE) a copy of this memory. `what` names the
 * path's flag in the message. A directory and other odd paths are left to the file driver's own errors.
 *
 * @example
 * fileStorage(databaseFile(v.db ?? 'pagewise.sqlite3', v.create === true, '--db'))
 */
export function databaseFile(path: string, create: boolean, what: string): string {
  if (create || statSync(resolve(path), { throwIfNoEntry: false }) !== undefined) return path;
  const fix = what === 'sync FILE'
    ? `check the path, or add --create to make it and copy this memory into it`
    : `check the path, or add --create to start a new, empty one (pagewise import FILE --db PATH makes one from a file)`;
  throw new PagewiseError('NOT_FOUND', 'cli', `There is no database file "${resolve(path)}" (${what}); nothing was created: ${fix}.`, { path: what });
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** What moved, in words. */
function describeSync(r: SyncReport): string {
  const moved = [`pulled ${count(r.pulled, 'turn')}`, `pushed ${count(r.pushed, 'turn')}`, ...(r.forgotten ? [`removed ${r.forgotten} forgotten`] : []), ...(r.pins ? [count(r.pins, 'pin')] : []), ...(r.aliases ? [count(r.aliases, 'alias', 'aliases')] : [])];
  const conflicts = r.conflicts.length ? `; ${r.conflicts.length} not stored (${r.conflicts.map((c) => `${c.conversationId}/${c.id}: ${c.reason}`).slice(0, 3).join(', ')})` : '';
  return `${moved.join(', ')} (${count(r.conversations.length, 'conversation')}); ${count(r.batches, 'batch', 'batches')}, ${kb(r.bytes)} in ${(r.ms / 1000).toFixed(1)} s${conflicts}`;
}

export async function syncCommand(memory: Memory, target: string, c: SyncCommandContext): Promise<number> {
  const remote = /^https?:\/\//i.test(target);
  const token = c.token ?? process.env.PAGEWISE_SYNC_TOKEN;
  if (remote && !token) {
    throw new PagewiseError('UNAUTHENTICATED', 'cli', `sync with ${target} needs a token: --token TOKEN, or PAGEWISE_SYNC_TOKEN (the edge's PAGEWISE_CLIENT_TOKENS lists them).`);
  }
  const other: SyncPeer & { close?: () => Promise<void> } = remote ? remoteMemory(target, { token: token! }) : await c.openFile(target);
  // Progress on stderr: a live line on a terminal; in a log, one line per direction (pull, then push) when it is done.
  const shown = progress(process.stderr, 'sync');
  let direction: SyncProgress['direction'] | undefined;
  let last: string | undefined;
  try {
    const report = await memory.sync(other, {
      ...(c.given ? { conversations: [c.given] } : {}),
      onProgress: (p) => {
        if (direction !== undefined && p.direction !== direction) shown.end(last);
        direction = p.direction;
        last = `${p.direction} ${count(p.turns, 'turn')}, ${count(p.batches, 'batch', 'batches')}, ${kb(p.bytes)}`;
        shown.update(last);
      },
    });
    shown.end(last);
    process.stdout.write(`${c.json ? JSON.stringify(report, null, 2) : describeSync(report)}\n`);
    return 0;
  } catch (e) {
    shown.end();
    throw e;
  } finally {
    await other.close?.();
  }
}
