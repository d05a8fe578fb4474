// What the demo keeps per conversation with idb-keyval (a reload keeps them): each request's context by the id of the
// message it was assembled for (the last 40: a stored turn's "inspect" shows what was sent with it, and the branch
// recall read), and the compaction log.
import { get, set } from 'idb-keyval';
import type { AssembledContext, CompactionReport } from '../src/contracts/types.js';
import { withoutBytes } from './attachments.js';
import { $, el } from './dom.js';

/** A request's context, with the inspector's line on the branch recall read (once its message is stored). */
export type Inspected = AssembledContext & { branch?: string };

const INSPECTED = 40;
let inspections = new Map<string, Inspected>();
const inspectKey = (conversationId: string) => `pagewise-demo-inspect:${conversationId}`;

export async function loadInspections(conversationId: string): Promise<void> {
  inspections = new Map((await get<[string, Inspected][]>(inspectKey(conversationId))) ?? []);
}

export const inspection = (id: string): Inspected | undefined => inspections.get(id);

export async function keepInspection(conversationId: string, id: string, ctx: Inspected): Promise<void> {
  inspections.set(id, { ...(await withoutBytes(ctx)), ...(ctx.branch ? { branch: ctx.branch } : {}) });
  while (inspections.size > INSPECTED) inspections.delete(inspections.keys().next().value as string);
  await set(inspectKey(conversationId), [...inspections]);
}

// The compaction log: every compaction a call reported (hard, soft, manual), newest first.
const logKey = (conversationId: string) => `pagewise-demo-compactions:${conversationId}`;

export async function logCompaction(conversationId: string, report: CompactionReport | null): Promise<void> {
  if (!report) return;
  const log = (await get<(CompactionReport & { at: string })[]>(logKey(conversationId))) ?? [];
  log.unshift({ ...report, at: new Date().toISOString() });
  await set(logKey(conversationId), log.slice(0, 50));
}

export async function renderCompactionLog(conversationId: string): Promise<void> {
  const log = (await get<(CompactionReport & { at: string })[]>(logKey(conversationId))) ?? [];
  $('compaction-log').replaceChildren(...log.map((r) => el('li', {
    textContent: `${r.at.slice(11, 19)} · ${r.trigger}: ${r.turnsCompacted} turns → ${r.summariesMade} summaries, ${r.tokensFreed} tokens freed${r.tagsCovered.length ? ` (${r.tagsCovered.slice(0, 4).join(', ')})` : ''}`,
  })));
}
