// Branches: an edit or a regeneration forks the conversation, and memory follows the branch the user is on. This file
// finds where messages belong in the tree (by a parent id, by stored ids, or by a whole history matched from the
// start), moves the conversation to another branch (its positions, and what was derived from the positions that
// change), and answers memory.branches() and memory.checkout().
import { PagewiseError } from '../contracts/errors.js';
import { describe } from '../common/messages.js';
import { candidates } from '../tags/key-phrases.js';
import { taggableText } from '../common/parts.js';
import { sameMessage, type MessageKey } from '../store/reconcile.js';
import { below, childrenOf, compareKeys, forkPoint, headOf, pathTo, placeAfter, type Place, type TreeNode, type TreeStore } from '../store/tree.js';
import type { AppendAt } from '../store/turn-store.js';
import { retagStatements, tagsOfUnits, type RetagDeps } from './retag.js';
import type { ChatMessage, Statement } from '../contracts/types.js';
import type { Memory } from '../contracts/memory.js';
import type { EngineQueue } from './queue.js';
import type { TurnRecord } from '../store/turn-store.js';
import { checkId } from './support.js';
import { contentHash, validateConversationId, validateMessage } from '../common/messages.js';
import type { BranchInfo, BranchList } from '../contracts/types-branches.js';

const MODULE = 'engine';

export interface BranchDeps extends RetagDeps {
  tree: TreeStore;
  /**
   * Drops every cache of the conversation (turn facts, vector indexes, measured pressure, topics hint); `from`: the
   * first position its turns changed at (left out: anywhere; null: none moved).
   */
  uncache: (conversationId: string, from?: number | null) => void;
}

/**
 * What is derived from the positions from `from` on, removed (to be rebuilt for the turns that hold them next): the
 * tags of the exchanges there (their terms uncounted, read from the turns that hold the positions now), the
 * summaries reaching there (the watermark goes back to the first of them), the turns' vectors.
 */
async function derivedFrom(d: BranchDeps, conversationId: string, from: number): Promise<Statement[]> {
  const { driver } = d;
  const statements: Statement[] = [];
  const units = await driver.query<{ unit_seq: number; end_seq: number }>('SELECT unit_seq, end_seq FROM units WHERE conversation_id = ? AND end_seq >= ? ORDER BY unit_seq', [conversationId, from]);
  const start = units[0] ? Number(units[0].unit_seq) : null;
  if (start === 0) {
    statements.push(...['unit_tags', 'units', 'tags', 'term_df'].map((table) => ({ sql: `DELETE FROM ${table} WHERE conversation_id = ?`, params: [conversationId] })));
  } else if (start !== null) {
    const end = Math.max(...units.map((u) => Number(u.end_seq)));
    const gone = new Map<string, number>();
    for (const t of await d.store.range(conversationId, start, end - start + 1)) {
      if (t.role === 'system' || t.seq > end) continue;
      for (const term of candidates(taggableText(t.text)).keys()) gone.set(term, (gone.get(term) ?? 0) + 1);
    }
    const seqs = units.map((u) => Number(u.unit_seq));
    const { byTag } = await tagsOfUnits(d, conversationId, seqs);
    statements.push(...retagStatements(conversationId, seqs, [], byTag, gone));
  }
  const summaries = await driver.query<{ rowid: number; id: string; kind: string; first_seq: number }>('SELECT rowid, id, kind, first_seq FROM summaries WHERE conversation_id = ? AND last_seq >= ?', [conversationId, from]);
  if (summaries.length > 0) {
    const rowids = JSON.stringify(summaries.map((s) => Number(s.rowid)));
    const ids = JSON.stringify(summaries.map((s) => s.id));
    const back = Math.min(from, ...summaries.filter((s) => s.kind === 'segment').map((s) => Number(s.first_seq)));
    statements.push(
      { sql: 'DELETE FROM summaries_fts WHERE rowid IN (SELECT value FROM json_each(?))', params: [rowids] },
      { sql: 'DELETE FROM summary_tags WHERE conversation_id = ? AND summary_rowid IN (SELECT value FROM json_each(?))', params: [conversationId, rowids] },
      { sql: "DELETE FROM embeddings WHERE conversation_id = ? AND kind = 'summary' AND ref IN (SELECT value FROM json_each(?))", params: [conversationId, rowids] },
      { sql: 'UPDATE summaries SET parent_id = NULL WHERE conversation_id = ? AND parent_id IN (SELECT value FROM json_each(?))', params: [conversationId, ids] },
      { sql: 'DELETE FROM summaries WHERE rowid IN (SELECT value FROM json_each(?))', params: [rowids] },
      { sql: 'UPDATE compaction_state SET watermark = MIN(watermark, ?) WHERE conversation_id = ?', params: [back, conversationId] },
    );
  }
  statements.push({ sql: "DELETE FROM embeddings WHERE conversation_id = ? AND kind = 'turn' AND ref >= ?", params: [conversationId, from] });
  return statements;
}

/** A move to another path: its statements (derived data first, then the positions), and whether stored turns move. */
export interface Move {
  statements: Statement[];
  /** The first position that changes (null: none). */
  from: number | null;
  /** Stored turns of the path move or leave it (not only new ones joining it at its end). */
  moved: boolean;
  /** The seq a turn appended after the path gets. */
  next: number;
}

/** The statements that make the path to `head` the conversation's positions (`nodes`: the tree as it will be). */
export async function moveTo(d: BranchDeps, conversationId: string, nodes: readonly TreeNode[], head: TreeNode | null): Promise<Move> {
  const { from, moved, next, statements } = d.tree.renumber(conversationId, nodes, pathTo(nodes, head));
  if (from === null) return { statements: [], from, moved, next };
  return { statements: [...(moved ? await derivedFrom(d, conversationId, from) : []), ...statements], from, moved, next };
}

/** After turns were removed or received: the positions follow the head the tree has now. Resolves with whether stored turns moved. */
export async function settlePath(d: BranchDeps, conversationId: string): Promise<boolean> {
  const nodes = await d.tree.nodes(conversationId);
  const move = await moveTo(d, conversationId, nodes, headOf(nodes, await d.tree.register(conversationId)));
  if (move.statements.length === 0) return false;
  await d.driver.batch(move.statements);
  d.uncache(conversationId, move.moved ? move.from : null);
  return move.moved;
}

/** Of several stored turns a message matches, the one on the current path, else the one written last. */
function pick(list: readonly TreeNode[]): TreeNode | undefined {
  return list.find((n) => n.seq >= 0) ?? [...list].sort(compareKeys).pop();
}

/** From `at`, follows `keys[i…]` down the tree while each is a stored turn right after the last: where the rest goes. */
export function descend(nodes: readonly TreeNode[], at: TreeNode | null, keys: readonly MessageKey[], i: number): { at: TreeNode | null; next: number } {
  let node = at;
  let k = i;
  while (k < keys.length) {
    const next = pick(childrenOf(nodes, node).filter((n) => sameMessage({ id: n.id, contentHash: n.hash }, keys[k]!)));
    if (!next) break;
    node = next;
    k++;
  }
  return { at: node, next: k };
}

/** Where messages go in the tree: after `at` (null: the start), those before `next` being stored turns on the way. */
export interface Placement {
  nodes: TreeNode[];
  at: TreeNode | null;
  next: number;
  /** The messages began at the conversation's start (a whole history). */
  fromStart: boolean;
}

/** A stored turn named by the caller (`parentId`), or NOT_FOUND. */
function named(nodes: readonly TreeNode[], conversationId: string, id: string, path: string): TreeNode {
  const node = nodes.find((n) => n.id === id);
  if (!node) {
    throw new PagewiseError('NOT_FOUND', MODULE, `No message ${describe(id)} is stored in conversation ${describe(conversationId)}; nothing was stored. Pass the id of a stored message (memory.turns(), memory.branches()), or null for the conversation's start.`, { path });
  }
  return node;
}

/**
 * Where `keys` belong, or null to go on at the head (a tail: today's rule). `parentId` says it (null: the start);
 * else a whole history with ids anchors them at its last stored message (the messages before it are the path from the
 * start to it); else, when the
 * caller sends the whole history (`whole`; its first `history` keys are the history), the history is matched from the
 * start, or — a history the app trimmed — from where its first messages run along the current branch.
 */
export async function placeOf(d: BranchDeps, conversationId: string, keys: readonly MessageKey[], how: { parentId?: string | null; whole?: boolean; history?: number; path?: string }): Promise<Placement | null> {
  if (how.parentId !== undefined) {
    const nodes = await d.tree.nodes(conversationId);
    const start = how.parentId === null ? null : named(nodes, conversationId, how.parentId, how.path ?? 'parentId');
    return { nodes, ...descend(nodes, start, keys, 0), fromStart: how.parentId === null };
  }
  const withIds = keys.flatMap((k, i) => (k.id !== undefined ? [i] : []));
  const known = withIds.length > 0 ? new Set((await d.store.byIds(conversationId, withIds.map((i) => keys[i]!.id!))).map((t) => t.id)) : new Set<string>();
  const anchor = withIds.filter((i) => known.has(keys[i]!.id!)).pop();
  if (anchor !== undefined) {
    const nodes = await d.tree.nodes(conversationId);
    const node = nodes.find((n) => n.id === keys[anchor]!.id)!;
    const path = pathTo(nodes, node);
    // A whole history: the messages up to the anchor are the path from the conversation's start to it. A tail
    // (the caller re-sent a few messages) continues the current branch, as it always did.
    if (path.length - 1 === anchor && path.slice(0, -1).every((n, i) => sameMessage({ id: n.id, contentHash: n.hash }, keys[i]!))) {
      return { nodes, ...descend(nodes, node, keys, anchor + 1), fromStart: true };
    }
    return null;
  }
  if (!how.whole) return null;
  const history = how.history ?? 0;
  const marked = await d.tree.histories(conversationId);
  // No history: the message starts the conversation over where the app has sent whole histories before; else
  // memory supplies the conversation (an app that sends only the new message).
  if (history === 0 && !marked) return null;
  const nodes = await d.tree.nodes(conversationId);
  if (nodes.length === 0) return null;
  if (history === 0) return { nodes, ...descend(nodes, null, keys, 0), fromStart: true };
  const root = descend(nodes, null, keys, 0);
  if (root.next > 0) return { nodes, ...root, fromStart: true };
  // A history the app trimmed: its first messages run along the current branch (two at least, so that one repeated
  // "thanks" does not move the conversation).
  const path = nodes.filter((n) => n.seq >= 0).sort((a, b) => a.seq - b.seq);
  let best: { at: TreeNode | null; next: number } | null = null;
  for (let q = path.length - 1; q >= 0; q--) {
    if (!sameMessage({ id: path[q]!.id, contentHash: path[q]!.hash }, keys[0]!)) continue;
    const r = descend(nodes, q > 0 ? path[q - 1]! : null, keys, 0);
    if (r.next >= Math.min(2, history) && (!best || r.next > best.next)) best = r;
  }
  if (best) return { nodes, ...best, fromStart: false };
  return marked ? { nodes, at: null, next: 0, fromStart: true } : null;
}

/** What the hooks use of branching: the parts, and what follows a move (tags again, vectors and compaction later). */
export type Branching = BranchDeps & { after: (conversationId: string) => Promise<void> };

/** `parentId` as a caller gives it: a stored message's id, null (the start), or left out. */
export function readParent(value: unknown): string | null | undefined {
  return value === undefined || value === null ? value : checkId(value, 'parentId');
}

/**
 * Where appended turns go: at the head (its branch continued, or a new branch where something follows it), or after
 * the message a placement found — the conversation moving there first, in the append's transaction (`moved`: the
 * first position whose stored turn changed, null when none did).
 */
export async function appendAt(d: BranchDeps, conversationId: string, placed: Placement | null, firstId: string, nowIso: string): Promise<{ append: AppendAt; moved: number | null }> {
  const head = await d.tree.head(conversationId);
  if (!placed || (placed.at?.id ?? null) === (head.node?.id ?? null)) {
    const node = head.node;
    const place: Place = node
      ? (head.end ? { branch: node.branch, forkAfter: node.forkAfter, forkBranch: node.forkBranch, forkOrd: node.forkOrd } : { branch: firstId, forkAfter: node.id, forkBranch: node.branch, forkOrd: node.ord })
      : (head.end ? { branch: '', forkAfter: null, forkBranch: null, forkOrd: null } : { branch: firstId, forkAfter: '', forkBranch: null, forkOrd: null });
    return { append: { place }, moved: null };
  }
  const move = await moveTo(d, conversationId, placed.nodes, placed.at);
  const before = [...move.statements, d.tree.checkoutStatement(conversationId, placed.at?.id ?? '', nowIso)];
  return { append: { place: placeAfter(placed.nodes, placed.at, firstId), base: move.next, before }, moved: move.moved ? move.from : null };
}

/**
 * onMessageInbound's move: with `parentId`, or a history the caller says is the conversation as it holds it
 * (`wholeHistory`), the conversation moves to where the new message goes (its round: the message and what follows it
 * in the request), so that recall reads that path. A history that began at the start marks the conversation as one
 * whose app sends whole histories.
 */
export async function placeRequest(d: Branching, conversationId: string, args: Record<string, unknown>, history: readonly unknown[] | undefined, round: readonly ChatMessage[], limits: { maxMessageBytes: number; maxAttachmentBytes: number }): Promise<void> {
  const parentId = readParent(args.parentId);
  if (args.wholeHistory !== undefined && typeof args.wholeHistory !== 'boolean') {
    throw new PagewiseError('INVALID_ARGUMENT', MODULE, `wholeHistory must be true or false (got ${describe(args.wholeHistory)}).`, { path: 'wholeHistory' });
  }
  if (parentId === undefined && args.wholeHistory !== true) return;
  const said = (history ?? []).map((m, i) => validateMessage(m, `history[${i}]`, limits.maxMessageBytes, limits.maxAttachmentBytes)).filter((m) => m.role !== 'system');
  const keyOf = async (m: ChatMessage): Promise<MessageKey> => ({ id: m.id, contentHash: await contentHash(m) });
  // The common request continues the head: its last few messages tell (a long history is hashed only when they do not).
  const last = said.slice(-4);
  if (parentId === undefined && await continuesHead(d, conversationId, await Promise.all(last.map(keyOf)), await Promise.all(round.map(keyOf)))) return;
  const keys = await Promise.all([...said, ...round].map(keyOf));
  const placed = await placeOf(d, conversationId, keys, { parentId, whole: args.wholeHistory === true, history: said.length });
  if (!placed) return;
  const statements = placed.fromStart && said.length > 0 ? [d.tree.historiesStatement(conversationId)] : [];
  const head = await d.tree.head(conversationId);
  let from: number | null = null;
  if ((placed.at?.id ?? null) !== (head.node?.id ?? null)) {
    const move = await moveTo(d, conversationId, placed.nodes, placed.at);
    statements.push(...move.statements, d.tree.checkoutStatement(conversationId, placed.at?.id ?? '', new Date().toISOString()));
    if (move.moved) from = move.from;
  }
  if (statements.length > 0) await commitMove(d, conversationId, statements, from);
}

/** Writes a move (and what goes with it) in one transaction; `from`: the first position whose stored turn changed. */
async function commitMove(d: Branching, conversationId: string, statements: Statement[], from: number | null): Promise<void> {
  await d.driver.batch(statements);
  d.uncache(conversationId, from);
  if (from !== null) await d.after(conversationId);
}

/**
 * The common request, answered without reading the tree: a whole history (of an app known to send them) whose last
 * messages are the current branch's last ones, up to its head at the end of its branch, and a new message after it.
 */
async function continuesHead(d: BranchDeps, conversationId: string, said: readonly MessageKey[], round: readonly MessageKey[]): Promise<boolean> {
  if (said.length === 0) return false;
  const head = await d.tree.head(conversationId);
  if (!head.node || !head.end || !(await d.tree.histories(conversationId))) return false;
  const tail = (await d.store.before(conversationId, Number.MAX_SAFE_INTEGER, said.length)).reverse();
  if (tail.length !== said.length || tail[tail.length - 1]!.id !== head.node.id) return false;
  if (!tail.every((t, i) => sameMessage({ id: t.id, contentHash: t.contentHash }, said[i]!))) return false;
  // The new message is not a stored one (a branch forked after the head).
  const ids = round.flatMap((k) => (k.id !== undefined ? [k.id] : []));
  return ids.length === 0 || (await d.store.byIds(conversationId, ids)).length === 0;
}

/** The Memory API's branch methods, over the conversation's queue. */
export function branchApi(d: Branching & { on: EngineQueue['on'] }): Pick<Memory, 'branches' | 'checkout'> & { pathTurns: PathTurns } {
  const methods = branchMethods(d);
  const known = async (conversationId: string) => {
    if (!(await d.store.conversation(conversationId))) throw new PagewiseError('CONVERSATION_NOT_FOUND', MODULE, `No conversation ${describe(conversationId)} is stored. List them with memory.conversations().`);
  };
  return {
    branches: (id) => d.on(() => validateConversationId(id), async (conversationId) => { await known(conversationId); return methods.branches(conversationId); }),
    checkout: (id, messageId) => d.on(() => validateConversationId(id), async (conversationId) => { await known(conversationId); return methods.checkout(conversationId, checkId(messageId, 'messageId')); }),
    pathTurns: (conversationId, messageId, from, limit) => pathTurns(d, conversationId, messageId, from, limit),
  };
}

/** Turns of another branch's path (inside the caller's queue slot). */
export type PathTurns = (conversationId: string, messageId: string, from: number, limit: number) => Promise<TurnRecord[]>;

/**
 * The turns of the path through `messageId` (to the turn written last below it), from position `from`, at most
 * `limit`: another branch as memory.turns() shows the current one (seq: the position on that path).
 */
async function pathTurns(d: BranchDeps, conversationId: string, messageId: string, from: number, limit: number): Promise<TurnRecord[]> {
  const nodes = await d.tree.nodes(conversationId);
  const node = named(nodes, conversationId, messageId, 'range.branch');
  const path = pathTo(nodes, [node, ...below(nodes, node)].sort(compareKeys).pop()!).slice(from, from + limit);
  const byId = new Map((await d.store.byIds(conversationId, path.map((n) => n.id))).map((t) => [t.id, t]));
  return path.flatMap((n, i) => { const t = byId.get(n.id); return t ? [{ ...t, seq: from + i }] : []; });
}

function branchMethods(d: Branching) {
  const list = async (conversationId: string): Promise<BranchList> => {
    const nodes = await d.tree.nodes(conversationId);
    const head = headOf(nodes, await d.tree.register(conversationId));
    const onPath = new Set(pathTo(nodes, head).map((n) => n.id));
    const groups = new Map<string, TreeNode[]>();
    for (const n of [...nodes].sort(compareKeys)) groups.set(n.branch, [...(groups.get(n.branch) ?? []), n]);
    const branches: BranchInfo[] = [...groups.values()].map((turns) => {
      const first = turns[0]!;
      const tip = turns[turns.length - 1]!;
      return {
        start: first.id, forkAfter: forkPoint(nodes, first.branch)?.id ?? null, tip: tip.id, turns: turns.length,
        firstAt: first.createdAt, lastAt: tip.createdAt, current: head !== null && head.branch === first.branch, onPath: turns.filter((n) => onPath.has(n.id)).length,
      };
    });
    const forks = [null, ...[...nodes].sort(compareKeys)].map((n) => ({ after: n?.id ?? null, starts: childrenOf(nodes, n).map((c) => c.id) })).filter((f) => f.starts.length > 1);
    return { conversationId, head: head?.id ?? null, branches, forks };
  };
  return {
    branches: list,
    /**
     * Makes the branch through `messageId` current: the path to it, then on to the turn written last below it (the
     * branch's tip as the user left it).
     */
    async checkout(conversationId: string, messageId: string): Promise<BranchList> {
      const nodes = await d.tree.nodes(conversationId);
      const node = named(nodes, conversationId, messageId, 'messageId');
      const tip = [node, ...below(nodes, node)].sort(compareKeys).pop()!;
      const move = await moveTo(d, conversationId, nodes, tip);
      await commitMove(d, conversationId, [...move.statements, d.tree.checkoutStatement(conversationId, tip.id, new Date().toISOString())], move.moved ? move.from : null);
      return list(conversationId);
    },
  };
}
