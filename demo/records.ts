// What the demo keeps per conversation with idb-keyval (a reload keeps them): each request's context by the id of the
// message it was assembled for (the last 40: a stored turn's "inspect" shows what was sent with it, and the branch
// recall read), and the compaction log. Both hold the conversation's words, so while the memory is encrypted they are
// kept in this page only (sealRecords): never in IndexedDB, gone on a reload or a lock.
import { delMany, entries, get, set, setMany } from 'idb-keyval';
import type { AssembledContext, CompactionReport } from '../src/contracts/types.js';
import { withoutBytes } from './attachments.js';
import { $, el } from './dom.js';

/** A request's context, with the inspector's line on the branch recall read (once its message is stored). */
export type Inspected = AssembledContext & { branch?: string };

const INSPECTED = 40;
let inspections = new Map<string, Inspected>();
const inspectKey = (conversationId: string) => `pagewise-demo-inspect:${conversationId}`;
const logKey = (conversationId: string) => `pagewise-demo-compactions:${conversationId}`;
const isRecord = (key: IDBValidKey) => typeof key === 'string' && (key.startsWith('pagewise-demo-inspect:') || key.startsWith('pagewise-demo-compactions:'));

// The records while the memory is encrypted (null: they are in IndexedDB).
let sealed: Map<string, unknown> | null = null;
const read = async <T>(key: string): Promise<T | undefined> => (sealed ? sealed.get(key) as T | undefined : get<T>(key));
const write = async (key: string, value: unknown): Promise<void> => { if (sealed) sealed.set(key, value); else await set(key, value); };

/**
 * Encrypted (`true`): the records in IndexedDB move into this page for the session and are deleted there, and new ones
 * stay here. Plain again (`false`): the ones of this session are written back.
 */
export async function sealRecords(encrypted: boolean): Promise<void> {
  if (encrypted && !sealed) {
    const stored = (await entries<IDBValidKey, unknown>()).filter(([k]) => isRecord(k)) as [string, unknown][];
    sealed = new Map(stored);
    await delMany(stored.map(([k]) => k));
  } else if (!encrypted && sealed) {
    const held = [...sealed];
    sealed = null;
    await setMany(held);
  }
}

/** The lock: what this page held of the records is dropped. */
export function forgetRecords(): void {
  sealed?.clear();
  inspections = new Map();
}

export async function loadInspections(conversationId: string): Promise<void> {
  inspections = new Map((await read<[string, Inspected][]>(inspectKey(conversationId))) ?? []);
}

export const inspection = (id: string): Inspected | undefined => inspections.get(id);

export async function keepInspection(conversationId: string, id: string, ctx: Inspected): Promise<void> {
  inspections.set(id, { ...(await withoutBytes(ctx)), ...(ctx.branch ? { branch: ctx.branch } : {}) });
  while (inspections.size > INSPECTED) inspections.delete(inspections.keys().next().value as string);
  await write(inspectKey(conversationId), [...inspections]);
}

// The compaction log: every compaction a call reported (hard, soft, manual), newest first.
export async function logCompaction(conversationId: string, report: CompactionReport | null): Promise<void> {
  if (!report) return;
  const log = (await read<(CompactionReport & { at: string })[]>(logKey(conversationId))) ?? [];
  log.unshift({ ...report, at: new Date().toISOString() });
  await write(logKey(conversationId), log.slice(0, 50));
}

export async function renderCompactionLog(conversationId: string): Promise<void> {
  const log = (await read<(CompactionReport & { at: string })[]>(logKey(conversationId))) ?? [];
  $('compaction-log').replaceChildren(...log.map((r) => el('li', {
    textContent: `${r.at.slice(11, 19)} · ${r.trigger}: ${r.turnsCompacted} turns → ${r.summariesMade} summaries, ${r.tokensFreed} tokens freed${r.tagsCovered.length ? ` (${r.tagsCovered.slice(0, 4).join(', ')})` : ''}`,
  })));
}
