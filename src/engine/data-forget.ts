// memory.forget(): a whole conversation, or some of its messages (by id, or every exchange carrying a tag), removed
// with everything derived from them; what is derived from the rest is rebuilt.
import { type Remove, inListOf, marks, storedConversation, turnRows } from './data-rows.js';
import type { DataDeps, ForgetInput, ForgetReport, TurnRow } from './data-types.js';
import { checkId, checkObject } from './support.js';
import { PagewiseError } from '../contracts/errors.js';
import { describe, readArray } from '../common/messages.js';
import { candidates } from '../tags/key-phrases.js';
import { taggableText } from '../common/parts.js';
import { chunks, type TurnRecord } from '../store/turn-store.js';
import type { Statement } from '../contracts/types.js';
import type { SyncStore } from '../store/sync-store.js';
import { type HeadRegister, type TreeNode, below, headOf, pathTo } from '../store/tree.js';
import { settlePath } from './branches.js';
import { type RetagDeps, retagStatements, tagsOfUnits } from './retag.js';

const MODULE = 'data';

/**
 * Up to this many turns, forget tags the rest of the conversation again whole (at the edge, 2,000 turns took 0.25 s
 * of CPU); past it, only the exchanges that held a forgotten turn (whole, 50,000 turns took 44 s there).
 */
export const RETAG_ALL_TURNS = 4096;

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path} ${message}`, { path });
}

export type ForgetDeps = Pick<DataDeps, 'driver' | 'store' | 'canonicalizer' | 'index' | 'serial' | 'settle' | 'rebuildLater' | 'tree' | 'uncache'> & { remove: Remove; sync: SyncStore };

export function forgetApi(d: ForgetDeps): { forget(input: ForgetInput): Promise<ForgetReport> } {
  const { driver, store } = d;
  return {
    forget(input) {
      return (async () => {
        // Vectors and summaries being made from a turn must land (or be refused) before it goes.
        await d.settle();
        return d.serial(async () => {
          const o = checkObject(input, 'forget');
          const { id: conversationId } = await storedConversation(store, o.conversationId);
          const rows = await chosenRows(d, conversationId, o);
          const left = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM turns WHERE conversation_id = ?', [conversationId]);
          const whole = rows.length >= Number(left[0]?.n ?? 0);
          // A shorter conversation is tagged again whole (exactly as if the turns had never been stored: the same
          // tags whatever chunks its turns were imported in); a longer one only where the forgotten turns were.
          const retag = whole || Number(left[0]?.n ?? 0) <= RETAG_ALL_TURNS ? undefined : await retagPlan(d, conversationId, rows);
          // Tombstones for sync, in the same transaction: ids, hashes and the clock of the forget, never text.
          // Forgetting the conversation removes every turn of it written before (elsewhere too, offline); forgetting
          // messages names each (id and content hash: every copy of it written before goes).
          const nowIso = new Date().toISOString();
          const tombstones = o.messageIds === undefined && o.tag === undefined && o.branch === undefined
            ? d.sync.forgetConversationStatement(conversationId, nowIso) : d.sync.forgetTurnsStatement(conversationId, rows.map((r) => r.rowid), nowIso);
          const back = whole ? null : stayAt(await d.tree.nodes(conversationId), await d.tree.register(conversationId), new Set(rows.map((r) => r.id)));
          // Turns received stamped ahead of this clock and held aside (not stored yet) go too: no byte of them stays.
          const held = d.sync.forgetHeldStatement(conversationId, o.messageIds === undefined && o.tag === undefined && o.branch === undefined ? null : rows.map((r) => r.id));
          const summaries = await d.remove(conversationId, rows, whole, retag, [tombstones, held, ...(back === null ? [] : [d.tree.checkoutStatement(conversationId, back, nowIso)])]);
          if (!whole) {
            // The head may have gone with them: the positions follow the one the tree has now.
            await settlePath(d, conversationId);
            await d.index.indexNew(conversationId, new Date().toISOString());
            d.rebuildLater(conversationId);
          }
          return { conversationId, messageIds: rows.map((r) => r.id), summaries, conversationRemoved: whole };
        });
      })();
    },
  };
}

/**
 * Forgetting the message the conversation is at leaves it on that path, at the last message before it (not at
 * whatever another branch wrote last): the id a checkout goes to ('' : the start), or null where none is needed. A
 * checkout counts from the forget's clock on every replica, so one to the end of the branch would take off the path
 * what another device appended to that branch meanwhile (it arrives older). None is written where the head falls back
 * there by itself (the last message written): on every replica the head is then the last message written, as if the
 * forgotten one had never been — what another device appended to that branch stays on it, and a branch another device
 * wrote before the forgotten message, not heard of here yet, becomes the head if it is the later. One is where what is left falls back elsewhere (another branch written later), or where the head
 * was a checkout of a forgotten message (that checkout no longer holds: without a new one, a message another device
 * wrote on another branch before it would take over).
 */
function stayAt(nodes: readonly TreeNode[], register: HeadRegister | null, gone: ReadonlySet<string>): string | null {
  const head = headOf(nodes, register);
  if (!head || !gone.has(head.id)) return null;
  const back = pathTo(nodes, head).filter((n) => !gone.has(n.id)).pop() ?? null;
  const written = headOf(nodes, null);
  const checkedOut = register !== null && (!written || register.ord > written.ord);
  const left = nodes.filter((n) => !gone.has(n.id));
  if (!checkedOut && headOf(left, register)?.id === back?.id) return null;
  return back?.id ?? '';
}

/** The rows forget's input names (all of the conversation's when it names none), in order; NOT_FOUND for a miss. */
async function chosenRows(d: ForgetDeps, conversationId: string, o: Record<string, unknown>): Promise<TurnRow[]> {
  const { driver } = d;
  const list = o.messageIds === undefined ? undefined : readArray(o.messageIds, 'messageIds', 'INVALID_ARGUMENT', MODULE);
  if (o.messageIds !== undefined && (!list || list.length === 0)) {
    invalid('messageIds', `must be a non-empty array of stored message ids, or left out to forget the whole conversation (got ${describe(o.messageIds)}).`);
  }
  const ids = list?.map((id, i) => checkId(id, `messageIds[${i}]`));
  if (o.tag !== undefined && typeof o.tag !== 'string') invalid('tag', `must be a tag's name, as memory.tags() lists them (got ${describe(o.tag)}).`);
  const branch = o.branch === undefined ? undefined : checkId(o.branch, 'branch');
  if (ids === undefined && o.tag === undefined && branch === undefined) return turnRows(driver, conversationId);
  const chosen = new Map<number, TurnRow>();
  const add = async (wanted: readonly string[]) => {
    for (const part of chunks(wanted, inListOf(d.store))) for (const r of await turnRows(driver, conversationId, ` AND id IN (${marks(part.length)})`, part)) chosen.set(r.rowid, r);
  };
  if (branch !== undefined) {
    // The message and everything after it on any branch through it.
    const nodes = await d.tree.nodes(conversationId);
    const node = nodes.find((n) => n.id === branch);
    if (!node) throw new PagewiseError('NOT_FOUND', MODULE, `No message ${describe(branch)} is stored in conversation ${describe(conversationId)}; nothing was forgotten. Take a branch's start from memory.branches().`, { path: 'branch' });
    await add([node, ...below(nodes, node)].map((n) => n.id));
  }
  if (ids) {
    await add([...new Set(ids)]);
    const found = new Set([...chosen.values()].map((r) => r.id));
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length > 0) {
      throw new PagewiseError('NOT_FOUND', MODULE, `No message ${missing.slice(0, 3).map(describe).join(', ')}${missing.length > 3 ? ` (and ${missing.length - 3} more)` : ''} is stored in conversation ${describe(conversationId)}; nothing was forgotten. Take ids from report.storedIds or memory.turns().`, { path: 'messageIds' });
    }
  }
  if (typeof o.tag === 'string') {
    const [tag] = await d.canonicalizer.canonical(conversationId, [o.tag], new Date().toISOString());
    const units = tag ? await driver.query<{ unit_seq: number; end_seq: number }>(
      'SELECT u.unit_seq, u.end_seq FROM unit_tags t JOIN units u ON u.conversation_id = t.conversation_id AND u.unit_seq = t.unit_seq WHERE t.conversation_id = ? AND t.tag = ? AND t.related = 0',
      [conversationId, tag]) : [];
    if (units.length === 0) {
      throw new PagewiseError('NOT_FOUND', MODULE, `No exchange of conversation ${describe(conversationId)} carries the tag ${describe(o.tag)}; nothing was forgotten. List its tags with memory.tags().`, { path: 'tag' });
    }
    for (const u of units) for (const r of await turnRows(driver, conversationId, ' AND seq BETWEEN ? AND ?', [u.unit_seq, u.end_seq])) chosen.set(r.rowid, r);
  }
  return [...chosen.values()].sort((a, b) => a.seq - b.seq);
}

type Unit = { unitSeq: number; endSeq: number };

/** For each seq, the unit at or before it (the last unit starting at or before it), as JSON lists of seqs. */
async function unitsAt(d: RetagDeps, conversationId: string, seqs: readonly number[]) {
  const out = new Map<number, { unitSeq: number; endSeq: number; at: number }>();
  for (const part of chunks([...new Set(seqs)], 500)) {
    for (const r of await d.driver.query<{ at: number; unit_seq: number; end_seq: number }>(
      // CROSS JOIN: from each seq (a few) into the units (many), by their key.
      `SELECT j.value AS at, u.unit_seq, u.end_seq FROM json_each(?2) j CROSS JOIN units u ON u.conversation_id = ?1
           AND u.unit_seq = (SELECT MAX(unit_seq) FROM units WHERE conversation_id = ?1 AND unit_seq <= j.value)`, [conversationId, JSON.stringify(part)])) {
      out.set(Number(r.at), { unitSeq: Number(r.unit_seq), endSeq: Number(r.end_seq), at: Number(r.at) });
    }
  }
  return out;
}

/**
 * What a partial forget rewrites of the tag index, computed before its transaction and written in it: the units
 * holding a forgotten turn and the unit before each (a reply whose question is forgotten joins it) are tagged
 * again from what is left of them; the terms of the forgotten turns leave the term counts (a term no kept turn
 * uses is gone); every other unit keeps its tags. (Re-tagging the whole conversation took seconds per 10,000 turns.)
 */
export async function retagPlan(d: RetagDeps, conversationId: string, rows: ReadonlyArray<{ seq: number }>): Promise<Statement[]> {
  const { driver } = d;
  const forgotten = new Set(rows.map((r) => r.seq));
  const affected = [...(await unitsAt(d, conversationId, [...forgotten])).values()].filter((u) => u.endSeq >= u.at);
  const before = [...(await unitsAt(d, conversationId, affected.filter((u) => u.unitSeq > 0).map((u) => u.unitSeq - 1))).values()];
  const units: Unit[] = [...new Map([...affected, ...before].map((u) => [u.unitSeq, { unitSeq: u.unitSeq, endSeq: u.endSeq }])).values()].sort((a, b) => a.unitSeq - b.unitSeq);
  if (units.length === 0) return [];
  const last = (await driver.query<{ end_seq: number }>('SELECT MAX(end_seq) AS end_seq FROM units WHERE conversation_id = ?', [conversationId]))[0];
  const kept: TurnRecord[] = [];
  const gone = new Map<string, number>();
  let goneTurns = 0;
  for (const u of units) {
    for (const t of await d.store.range(conversationId, u.unitSeq, u.endSeq - u.unitSeq + 1)) {
      if (t.seq > u.endSeq) continue;
      if (!forgotten.has(t.seq)) kept.push(t);
      else if (t.role !== 'system') {
        // Counted when its unit was indexed (every indexed turn but a system one is in a unit).
        goneTurns++;
        for (const term of candidates(taggableText(t.text)).keys()) gone.set(term, (gone.get(term) ?? 0) + 1);
      }
    }
  }
  const seqs = units.map((u) => u.unitSeq);
  const { byTag, hidden } = await tagsOfUnits(d, conversationId, seqs);
  const per = inListOf(d.store);
  const fresh = await d.index.tagTurns(conversationId, kept, {
    turns: Math.max(0, Number(last?.end_seq ?? -1) + 1 - goneTurns),
    termFrequencies: async (ts) => {
      const stored = new Map<string, number>();
      for (const part of chunks(ts, per)) {
        for (const r of await driver.query<{ term: string; turns: number }>(`SELECT term, turns FROM term_df WHERE conversation_id = ? AND term IN (${marks(part.length)})`, [conversationId, ...part])) stored.set(r.term, Number(r.turns));
      }
      return new Map(ts.map((t) => [t, Math.max(0, (stored.get(t) ?? 0) - (gone.get(t) ?? 0))]));
    },
  }, hidden, new Date().toISOString());
  return retagStatements(conversationId, seqs, fresh, byTag, gone);
}
