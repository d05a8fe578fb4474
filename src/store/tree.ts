// A conversation as a tree (schema 11). Edits and regenerations fork it: each turn is on a branch, a branch starts
// after a turn of another one (or at the conversation's start), and the conversation is at a head — the last turn
// written, unless a checkout came later. The path to the head is what every read by position sees (seq 0, 1, …);
// the rest keeps its rows off the path. This file reads the tree and computes paths; it decides nothing.
import type { SqlValue, Statement, StorageDriver } from '../contracts/types.js';
import { NEXT_ORD, OFF_PATH, ORIGIN, nextOrdParams } from './order.js';

/** One turn as the tree sees it. */
export interface TreeNode {
  rowid: number;
  id: string;
  /** '' : the conversation's first branch; otherwise the id of its branch's first turn. */
  branch: string;
  /** Where its branch starts: the turn it follows ('' the conversation's start); null on the first branch. */
  forkAfter: string | null;
  forkBranch: string | null;
  forkOrd: number | null;
  ord: number;
  /** The replica it was first written on (resolved: never ''). */
  origin: string;
  seq: number;
  createdAt: string;
  hash: string;
}

/** Where turns appended after a node go: its branch (continued) or a new one. */
export interface Place {
  branch: string;
  forkAfter: string | null;
  forkBranch: string | null;
  forkOrd: number | null;
}

/** The checkout register: the head a user chose, ordered by the conversation's clock against the turns written. */
export interface HeadRegister {
  /** '' : the conversation's start (nothing before the next message). */
  turnId: string;
  ord: number;
  origin: string;
  at: string;
}

type Key = Pick<TreeNode, 'ord' | 'origin' | 'id'>;

/** The converged order: by order key, then origin, then id (the same on every replica). */
export function compareKeys(a: Key, b: Key): number {
  return a.ord - b.ord || (a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

const latestOf = (nodes: readonly TreeNode[]): TreeNode | null => nodes.reduce<TreeNode | null>((m, n) => (!m || compareKeys(n, m) > 0 ? n : m), null);

/**
 * The head: the register's turn when the checkout is later than every turn written (a turn written at the same clock
 * wins), else the last turn written. null: the conversation's start (an empty path).
 */
export function headOf(nodes: readonly TreeNode[], register: HeadRegister | null): TreeNode | null {
  const latest = latestOf(nodes);
  if (register && (!latest || register.ord > latest.ord)) {
    if (register.turnId === '') return null;
    const chosen = nodes.find((n) => n.id === register.turnId);
    if (chosen) return chosen;
  }
  return latest;
}

/** The tree read once per list of nodes: each branch in order, where each node stands on it, what each branch follows. */
interface TreeIndex {
  branches: Map<string, TreeNode[]>;
  position: Map<string, number>;
  byId: Map<string, TreeNode>;
  /** Branch → the node it follows (null: the start). A forgotten fork point is found by its branch and order key. */
  parent: Map<string, TreeNode | null>;
  /** The id of the node branches follow ('' : the start) → their first nodes. */
  forks: Map<string, TreeNode[]>;
}

const indexes = new WeakMap<readonly TreeNode[], TreeIndex>();

function indexOf(nodes: readonly TreeNode[]): TreeIndex {
  const known = indexes.get(nodes);
  if (known) return known;
  const branches = new Map<string, TreeNode[]>();
  for (const n of nodes) {
    const list = branches.get(n.branch);
    if (list) list.push(n);
    else branches.set(n.branch, [n]);
  }
  const position = new Map<string, number>();
  for (const list of branches.values()) {
    list.sort(compareKeys);
    list.forEach((n, i) => position.set(n.id, i));
  }
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parent = new Map<string, TreeNode | null>();
  const forks = new Map<string, TreeNode[]>();
  for (const [branch, list] of branches) {
    if (branch === '') continue;
    const info = list[0]!;
    let p: TreeNode | null = null;
    if (info.forkAfter) p = byId.get(info.forkAfter) ?? null;
    if (!p && info.forkAfter && info.forkBranch !== null) {
      const limit = { ord: info.forkOrd ?? 0, origin: '\uffff', id: '\uffff' };
      p = (branches.get(info.forkBranch) ?? []).filter((n) => compareKeys(n, limit) <= 0).pop() ?? null;
    }
    parent.set(branch, p);
    const at = p?.id ?? '';
    forks.set(at, [...(forks.get(at) ?? []), info]);
  }
  const index = { branches, position, byId, parent, forks };
  indexes.set(nodes, index);
  return index;
}

/** The node a branch follows (null: the conversation's start, or the first branch). */
export const forkPoint = (nodes: readonly TreeNode[], branch: string): TreeNode | null => indexOf(nodes).parent.get(branch) ?? null;

/**
 * The turns from the conversation's start to `head`, in order: its branch up to it, then the branch that one forks
 * from up to the fork, and so on. A loop (hostile sync input) ends the walk.
 */
export function pathTo(nodes: readonly TreeNode[], head: TreeNode | null): TreeNode[] {
  const t = indexOf(nodes);
  const parts: TreeNode[][] = [];
  const seen = new Set<string>();
  for (let cut = head; cut && !seen.has(cut.branch); cut = cut.branch === '' ? null : t.parent.get(cut.branch) ?? null) {
    seen.add(cut.branch);
    parts.unshift(t.branches.get(cut.branch)!.slice(0, t.position.get(cut.id)! + 1));
  }
  return parts.flat();
}

/** Whether a later turn follows `node` on its own branch. */
function hasLater(nodes: readonly TreeNode[], node: TreeNode): boolean {
  const t = indexOf(nodes);
  return t.position.get(node.id)! < t.branches.get(node.branch)!.length - 1;
}

/** Where turns written after `after` (null: the conversation's start) go: its branch when it ends there, else a new branch named by `firstId`. */
export function placeAfter(nodes: readonly TreeNode[], after: TreeNode | null, firstId: string): Place {
  if (!after) return nodes.length === 0 ? { branch: '', forkAfter: null, forkBranch: null, forkOrd: null } : { branch: firstId, forkAfter: '', forkBranch: null, forkOrd: null };
  if (!hasLater(nodes, after)) return { branch: after.branch, forkAfter: after.forkAfter, forkBranch: after.forkBranch, forkOrd: after.forkOrd };
  return { branch: firstId, forkAfter: after.id, forkBranch: after.branch, forkOrd: after.ord };
}

/** The turns that come after `node` on some branch through it: the rest of its branch and every branch forked from those. */
export function below(nodes: readonly TreeNode[], node: TreeNode): TreeNode[] {
  const t = indexOf(nodes);
  const out: TreeNode[] = [];
  const seen = new Set<string>();
  const stack: { branch: string; from: number }[] = [{ branch: node.branch, from: t.position.get(node.id)! }];
  while (stack.length > 0) {
    const { branch, from } = stack.pop()!;
    const list = t.branches.get(branch) ?? [];
    for (let i = from; i < list.length; i++) {
      const n = list[i]!;
      if (i > from || n.id !== node.id) {
        if (seen.has(n.id)) continue;
        seen.add(n.id);
        out.push(n);
      }
      for (const f of t.forks.get(n.id) ?? []) if (f.branch !== branch && !seen.has(f.id)) stack.push({ branch: f.branch, from: 0 });
    }
  }
  return out;
}

/** The turns that may come right after `node` (null: the start), first written first: the alternatives at that place. */
export function childrenOf(nodes: readonly TreeNode[], node: TreeNode | null): TreeNode[] {
  const t = indexOf(nodes);
  const out: TreeNode[] = [];
  const next = node ? t.branches.get(node.branch)![t.position.get(node.id)! + 1] : t.branches.get('')?.[0];
  if (next) out.push(next);
  for (const f of t.forks.get(node?.id ?? '') ?? []) if (!node || f.branch !== node.branch) out.push(f);
  return out.sort(compareKeys);
}

type NodeRow = { rowid: number; id: string; branch: string; fork_after: string | null; fork_branch: string | null; fork_ord: number | null; ord: number; origin: string; seq: number; created_at: string; content_hash: string };

const NODE_COLUMNS = `rowid, id, branch, fork_after, fork_branch, fork_ord, origin_ord AS ord, ${ORIGIN} AS origin, seq, created_at, content_hash`;

const toNode = (r: NodeRow): TreeNode => ({
  rowid: Number(r.rowid), id: r.id, branch: r.branch, forkAfter: r.fork_after, forkBranch: r.fork_branch, forkOrd: r.fork_ord === null ? null : Number(r.fork_ord),
  ord: Number(r.ord), origin: r.origin, seq: Number(r.seq), createdAt: r.created_at, hash: r.content_hash,
});

/** Statements per JSON list of moves (a statement's size stays far below the edge's 100 KB). */
const MOVES_PER_STATEMENT = 500;
/** Where a moved turn waits between the two steps of a renumbering (below every off-path seq). */
const PARKED = -(2 ** 50);

export function createTreeStore(driver: StorageDriver) {
  const register = async (conversationId: string): Promise<HeadRegister | null> => {
    const rows = await driver.query<{ turn_id: string; ord: number; origin: string; at: string }>(`SELECT turn_id, ord, ${ORIGIN} AS origin, at FROM branch_heads WHERE conversation_id = ?`, [conversationId]);
    const r = rows[0];
    return r ? { turnId: r.turn_id, ord: Number(r.ord), origin: r.origin, at: r.at } : null;
  };
  return {
    /** Every turn of the conversation as the tree sees it (no text). */
    async nodes(conversationId: string): Promise<TreeNode[]> {
      return (await driver.query<NodeRow>(`SELECT ${NODE_COLUMNS} FROM turns WHERE conversation_id = ?`, [conversationId])).map(toNode);
    },

    register,

    /**
     * The head without reading the tree: the last turn written, or the register's turn when a checkout came later;
     * null: the start. `end`: no later turn follows it on its branch (so a turn after it continues that branch).
     */
    async head(conversationId: string): Promise<{ node: TreeNode | null; end: boolean }> {
      // The turns at the conversation's largest order key (one index seek; ties are ordered here, by the whole key).
      const last = (await driver.query<NodeRow>(`SELECT ${NODE_COLUMNS} FROM turns WHERE conversation_id = ?1 AND origin_ord = (SELECT MAX(origin_ord) FROM turns WHERE conversation_id = ?1)`, [conversationId])).map(toNode);
      const latest = latestOf(last);
      const reg = await register(conversationId);
      if (!reg || (latest && reg.ord <= latest.ord)) return { node: latest, end: true };
      if (reg.turnId === '') return { node: null, end: false };
      const rows = (await driver.query<NodeRow>(`SELECT ${NODE_COLUMNS} FROM turns WHERE conversation_id = ? AND id = ?`, [conversationId, reg.turnId])).map(toNode);
      const node = rows[0];
      if (!node) return { node: latest, end: true };
      // A later turn on its branch, by the whole key (a turn at the same clock may sort before or after it).
      const same = (await driver.query<NodeRow>(`SELECT ${NODE_COLUMNS} FROM turns WHERE conversation_id = ? AND branch = ? AND origin_ord >= ? AND id <> ?`, [conversationId, node.branch, node.ord, node.id])).map(toNode);
      return { node, end: !same.some((n) => compareKeys(n, node) > 0) };
    },

    /** Whether a caller's history began at the conversation's start before (an app that sends whole histories). */
    async histories(conversationId: string): Promise<boolean> {
      const rows = await driver.query<{ histories: number }>('SELECT histories FROM conversations WHERE id = ?', [conversationId]);
      return Number(rows[0]?.histories ?? 0) === 1;
    },

    /** The statement that records that a caller's history began at the conversation's start. */
    historiesStatement(conversationId: string): Statement {
      return { sql: 'UPDATE conversations SET histories = 1 WHERE id = ? AND histories = 0', params: [conversationId] };
    },

    /** The statement that makes `turnId` ('' : the start) the head, at the conversation's next clock. */
    checkoutStatement(conversationId: string, turnId: string, nowIso: string): Statement {
      return {
        sql: `INSERT INTO branch_heads (conversation_id, turn_id, ord, origin, at) VALUES (?, ?, ${NEXT_ORD}, '', ?)
              ON CONFLICT (conversation_id) DO UPDATE SET turn_id = excluded.turn_id, ord = excluded.ord, origin = excluded.origin, at = excluded.at`,
        params: [conversationId, turnId, ...nextOrdParams(Date.parse(nowIso), conversationId), nowIso],
      };
    },

    /** A register received from another replica (the caller checked that it is later than this one's). */
    receivedHeadStatement(conversationId: string, head: HeadRegister): Statement {
      return {
        sql: `INSERT INTO branch_heads (conversation_id, turn_id, ord, origin, at) VALUES (?, ?, ?, ?, ?)
              ON CONFLICT (conversation_id) DO UPDATE SET turn_id = excluded.turn_id, ord = excluded.ord, origin = excluded.origin, at = excluded.at`,
        params: [conversationId, head.turnId, head.ord, head.origin, head.at],
      };
    },

    /** Every register of the conversations (all: null), with origins resolved: what sync sends (not a checkout of a private turn: its id stays where it was written). */
    async registers(conversations: readonly string[] | null): Promise<(HeadRegister & { conversationId: string })[]> {
      const rows = await driver.query<{ conversation_id: string; turn_id: string; ord: number; origin: string; at: string }>(
        `SELECT conversation_id, turn_id, ord, ${ORIGIN} AS origin, at FROM branch_heads b
         WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = b.conversation_id AND t.id = b.turn_id AND t.private = 1)${conversations ? ' AND conversation_id IN (SELECT value FROM json_each(?))' : ''} ORDER BY conversation_id`,
        conversations ? [JSON.stringify(conversations)] : []);
      return rows.map((r) => ({ conversationId: r.conversation_id, turnId: r.turn_id, ord: Number(r.ord), origin: r.origin, at: r.at }));
    },

    /**
     * The statements that make `path` the conversation's positions: turns that leave it go off the path, turns that
     * join it (or move on it) take their place, from the first place where it differs from the stored one — in two
     * steps, so that seq stays unique at every statement. Resolves with that first place (null: nothing moves).
     */
    renumber(conversationId: string, nodes: readonly TreeNode[], path: readonly TreeNode[]): { from: number | null; moved: boolean; next: number; statements: Statement[] } {
      const stored = nodes.filter((n) => n.seq >= 0).sort((a, b) => a.seq - b.seq);
      let p = 0;
      while (p < stored.length && p < path.length && stored[p]!.id === path[p]!.id) p++;
      const base = p === 0 ? 0 : stored[p - 1]!.seq + 1;
      // The seq a turn appended after the path gets.
      const next = path.length > p ? base + path.length - p : base;
      if (p === stored.length && p === path.length) return { from: null, moved: false, next, statements: [] };
      const on = new Set(path.map((n) => n.id));
      const moves: [string, number | null][] = [];
      for (const n of stored.slice(p)) if (!on.has(n.id)) moves.push([n.id, null]);
      path.slice(p).forEach((n, k) => { if (n.seq !== base + k) moves.push([n.id, base + k]); });
      const statements: Statement[] = [];
      const each = (sql: string) => {
        for (let i = 0; i < moves.length; i += MOVES_PER_STATEMENT) {
          statements.push({ sql, params: [JSON.stringify(moves.slice(i, i + MOVES_PER_STATEMENT).map((m, k) => [...m, i + k])), conversationId] as SqlValue[] });
        }
      };
      each(`UPDATE turns SET seq = ${PARKED} - (SELECT j.value ->> 2 FROM json_each(?1) j WHERE j.value ->> 0 = turns.id) WHERE conversation_id = ?2 AND id IN (SELECT j.value ->> 0 FROM json_each(?1) j)`);
      each(`UPDATE turns SET seq = COALESCE((SELECT j.value ->> 1 FROM json_each(?1) j WHERE j.value ->> 0 = turns.id), ${OFF_PATH}) WHERE conversation_id = ?2 AND id IN (SELECT j.value ->> 0 FROM json_each(?1) j)`);
      // Stored turns move (not only new ones placed after the path): what was derived from their positions is stale.
      return { from: base, moved: p < stored.length, next, statements };
    },
  };
}

export type TreeStore = ReturnType<typeof createTreeStore>;
