// Conversation trees across sync, as a property: two in-process replicas A and B write to one or two conversations —
// exchanges appended at the head, regenerated replies (parentId: the user message before the head's reply), edited
// user messages (parentId: the message before one on the current path, null at the start), checkouts of any stored
// message — and sync now and then. A model keeps the tree (every turn's branch and the turn its branch forks after),
// each replica's order of the turns it holds (the converged order by order key), and each replica's head (the last
// turn written, or the target of a later checkout). After every step the replica touched must show the model's path
// (turns()), head and tree (branches()); after every sync both replicas must show the same turns, the same tree, the
// same head and the same export, and nothing written may be missing from either export.
//
// Order keys are hybrid logical clocks (the time in ms, or one past the largest key the replica holds). Three clocks:
// - 'strict': the real clock, and the test waits after each write or checkout until the clock has passed every key
//   given: every key is later than every key before it in the run, so the model predicts everything (which of two
//   offline writes wins too).
// - 'loose': the real clock, no waits: offline writes on A and B are ordered by keys the test cannot know.
// - 'frozen': Date stands still, so keys are counters and A's and B's offline keys collide (ties by origin and id).
// In the last two, after a sync the model learns the converged order of the turns from the export (checked to keep
// each replica's own order, which the model knows) and, where the last events of A and B were concurrent, which one
// the merged head followed (checked to be one of them; between two turns, the later one in the order). Replica ids
// are random, so on those two clocks which of two tied keys sorts first (and so a run's later steps) varies from run
// to run; the failure message lists the steps taken. Two scripted sequences on the frozen clock run first.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChatMessage, Memory } from '../../../src/index.js';
import type { BranchList } from '../../../src/contracts/types-branches.js';
import type { ExportData } from '../../../src/contracts/types-data.js';
import { createMemory, rng } from '../../support/helpers.js';

type R = 'A' | 'B';
type Clock = 'strict' | 'loose' | 'frozen';
const REPLICAS: readonly R[] = ['A', 'B'];
const other = (r: R): R => (r === 'A' ? 'B' : 'A');

/** Seeds, clocks and steps per run (about 420 steps in all). */
const RUNS: { seed: number; clock: Clock; steps: number; conversations: string[] }[] = [
  { seed: 20260801, clock: 'strict', steps: 60, conversations: ['c1'] },
  { seed: 20260802, clock: 'strict', steps: 60, conversations: ['c1', 'c2'] },
  { seed: 20260803, clock: 'strict', steps: 60, conversations: ['c1'] },
  { seed: 20260804, clock: 'loose', steps: 60, conversations: ['c1'] },
  { seed: 20260805, clock: 'loose', steps: 60, conversations: ['c1', 'c2'] },
  { seed: 20260806, clock: 'frozen', steps: 60, conversations: ['c1'] },
  { seed: 20260807, clock: 'frozen', steps: 60, conversations: ['c1', 'c2'] },
];
// PAGEWISE_BRANCH_SEED=n: that seed of RUNS only. PAGEWISE_BRANCH_SWEEP=n: n more seeds per clock (a longer hunt).
const ONLY = process.env.PAGEWISE_BRANCH_SEED ? Number(process.env.PAGEWISE_BRANCH_SEED) : undefined;
for (let k = 0; k < Number(process.env.PAGEWISE_BRANCH_SWEEP ?? 0); k++) {
  for (const clock of ['strict', 'loose', 'frozen'] as const) RUNS.push({ seed: 1000 + k, clock, steps: 60, conversations: k % 2 === 0 ? ['c1'] : ['c1', 'c2'] });
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

interface MTurn {
  id: string;
  c: string;
  role: 'user' | 'assistant';
  content: string;
  /** '' : the conversation's first branch; else the id of its branch's first turn. */
  branch: string;
  /** The turn its branch follows ('' : the conversation's start); null on the first branch. */
  forkAfter: string | null;
  writer: R;
  /** When it was written, in the run. */
  tick: number;
}

/** The latest write or checkout a replica knows of, in a conversation: the head it makes. */
interface Event { kind: 'turn' | 'checkout'; head: string; tick: number; replica: R }

interface ConvState {
  /** The turns held, in the converged order (order key, origin, id). */
  order: string[];
  head: string | null;
  last: Event | null;
  /** Written to or checked out since the last sync (its last event is later than anything the other one knows). */
  dirty: boolean;
}

class Model {
  readonly turns = new Map<string, MTurn>();
  readonly state: Record<R, Map<string, ConvState>> = { A: new Map(), B: new Map() };
  tick = 0;

  conv(r: R, c: string): ConvState {
    let s = this.state[r].get(c);
    if (!s) this.state[r].set(c, (s = { order: [], head: null, last: null, dirty: false }));
    return s;
  }

  t(id: string): MTurn {
    const t = this.turns.get(id);
    if (!t) throw new Error(`model: no turn ${id}`);
    return t;
  }

  /** The turns of a branch, in r's order. */
  branchOf(r: R, c: string, branch: string): string[] {
    return this.conv(r, c).order.filter((id) => this.t(id).branch === branch);
  }

  /** The path from the start to `head`: its branch up to it, after the branch it forks from up to the fork, and so on. */
  path(r: R, c: string, head: string | null = this.conv(r, c).head): string[] {
    const out: string[][] = [];
    let at = head;
    const seen = new Set<string>();
    while (at !== null) {
      const t = this.t(at);
      if (seen.has(t.branch)) throw new Error(`model: a loop at ${at}`);
      seen.add(t.branch);
      const list = this.branchOf(r, c, t.branch);
      out.unshift(list.slice(0, list.indexOf(at) + 1));
      at = t.forkAfter === null || t.forkAfter === '' ? null : t.forkAfter;
    }
    return out.flat();
  }

  /** A turn follows `id` on its branch (in r's view). */
  hasLater(r: R, c: string, id: string): boolean {
    const list = this.branchOf(r, c, this.t(id).branch);
    return list.indexOf(id) < list.length - 1;
  }

  /** Where turns written after `after` (null: the start) go: its branch when nothing follows it there, else a new one. */
  place(r: R, c: string, after: string | null, firstId: string): { branch: string; forkAfter: string | null } {
    if (after === null) return this.conv(r, c).order.length === 0 ? { branch: '', forkAfter: null } : { branch: firstId, forkAfter: '' };
    if (!this.hasLater(r, c, after)) return { branch: this.t(after).branch, forkAfter: this.t(after).forkAfter };
    return { branch: firstId, forkAfter: after };
  }

  /** Messages written on r after `after` ('head': the head). */
  write(r: R, c: string, messages: { id: string; role: 'user' | 'assistant'; content: string }[], after: string | null | 'head'): void {
    const s = this.conv(r, c);
    const where = this.place(r, c, after === 'head' ? s.head : after, messages[0]!.id);
    for (const m of messages) {
      this.turns.set(m.id, { ...m, c, ...where, writer: r, tick: ++this.tick });
      s.order.push(m.id);
    }
    const last = messages[messages.length - 1]!.id;
    s.head = last;
    s.last = { kind: 'turn', head: last, tick: this.tick, replica: r };
    s.dirty = true;
  }

  /** The turns after `id` on a branch through it: the rest of its branch, and every branch forked from those, in r's order. */
  below(r: R, c: string, id: string): string[] {
    const found = new Set<string>();
    const queue = [id];
    const order = this.conv(r, c).order;
    while (queue.length > 0) {
      const x = this.t(queue.shift()!);
      const list = this.branchOf(r, c, x.branch);
      const next = [...list.slice(list.indexOf(x.id) + 1), ...order.filter((n) => this.t(n).forkAfter === x.id && this.t(n).branch !== x.branch)];
      for (const n of next) if (!found.has(n) && n !== id) { found.add(n); queue.push(n); }
    }
    return order.filter((n) => found.has(n));
  }

  /** What a checkout of `id` on r goes to: the turn written last below it (itself when nothing is). */
  checkoutTarget(r: R, c: string, id: string): string {
    return this.below(r, c, id).pop() ?? id;
  }

  checkout(r: R, c: string, id: string): void {
    const s = this.conv(r, c);
    s.head = this.checkoutTarget(r, c, id);
    s.last = { kind: 'checkout', head: s.head, tick: ++this.tick, replica: r };
    s.dirty = true;
  }

  /** The alternatives after `id` (null: the start), in r's order. */
  children(r: R, c: string, id: string | null): string[] {
    const order = this.conv(r, c).order;
    const out = new Set<string>();
    if (id === null) {
      const first = this.branchOf(r, c, '')[0];
      if (first) out.add(first);
    } else {
      const list = this.branchOf(r, c, this.t(id).branch);
      const next = list[list.indexOf(id) + 1];
      if (next) out.add(next);
    }
    for (const n of order) {
      const t = this.t(n);
      if (t.branch !== '' && t.forkAfter === (id ?? '') && (id === null || t.branch !== this.t(id).branch) && this.branchOf(r, c, t.branch)[0] === n) out.add(n);
    }
    return order.filter((n) => out.has(n));
  }

  /** What branches() must say on r (times left out; forks in a stable order). */
  tree(r: R, c: string): unknown {
    const s = this.conv(r, c);
    const onPath = new Set(this.path(r, c));
    const groups = new Map<string, string[]>();
    for (const id of s.order) groups.set(this.t(id).branch, [...(groups.get(this.t(id).branch) ?? []), id]);
    const head = s.head === null ? null : this.t(s.head);
    const branches = [...groups.entries()].map(([branch, ids]) => {
      const fa = this.t(ids[0]!).forkAfter;
      return { start: ids[0]!, forkAfter: fa === null || fa === '' ? null : fa, tip: ids[ids.length - 1]!, turns: ids.length, current: head !== null && head.branch === branch, onPath: ids.filter((id) => onPath.has(id)).length };
    });
    const forks = [null, ...s.order].map((id) => ({ after: id, starts: this.children(r, c, id) })).filter((f) => f.starts.length > 1);
    return { conversationId: c, head: s.head, branches, forks: sortForks(forks) };
  }
}

const sortForks = (forks: { after: string | null; starts: string[] }[]) => [...forks].sort((x, y) => ((x.after ?? '') < (y.after ?? '') ? -1 : (x.after ?? '') > (y.after ?? '') ? 1 : 0));

/** branches() as the model states it: times left out, forks in a stable order. */
const comparable = (b: BranchList) => ({
  conversationId: b.conversationId, head: b.head,
  branches: b.branches.map(({ start, forkAfter, tip, turns, current, onPath }) => ({ start, forkAfter, tip, turns, current, onPath })),
  forks: sortForks(b.forks),
});

/** Whether `sub` is a subsequence of `all`. */
function subsequence(sub: readonly string[], all: readonly string[]): boolean {
  let k = 0;
  for (const x of all) if (k < sub.length && sub[k] === x) k++;
  return k === sub.length;
}

// ---------------------------------------------------------------------------------------------
// The replicas
// ---------------------------------------------------------------------------------------------

async function turnIds(m: Memory, c: string): Promise<string[]> {
  try {
    return (await m.turns(c, { limit: 1000 })).map((t) => t.id);
  } catch (e) {
    if ((e as { code?: string }).code === 'CONVERSATION_NOT_FOUND') return [];
    throw e;
  }
}

async function exported(m: Memory, c: string): Promise<ExportData['conversations'][number] | null> {
  try {
    return (await m.export(c)).conversations[0] ?? null;
  } catch (e) {
    if ((e as { code?: string }).code === 'CONVERSATION_NOT_FOUND') return null;
    throw e;
  }
}

/** What a turn is in an export, wherever it is exported. */
const exportedTurns = (x: ExportData['conversations'][number] | null) => (x?.turns ?? []).map((t) => JSON.stringify([t.id, t.role, t.content, t.createdAt, t.branch ?? null]));

/** Waits until the clock has passed `ms`. */
async function until(ms: number): Promise<void> {
  while (Date.now() <= ms) await new Promise((ok) => setTimeout(ok, 1));
}

/** A step. `reply`: an assistant reply after a named message (a regeneration whose parent a script chooses). */
type Op =
  | { kind: 'append'; r: R; c: string }
  | { kind: 'regenerate'; r: R; c: string }
  | { kind: 'reply'; r: R; c: string; parent: string }
  | { kind: 'edit'; r: R; c: string; user: number }
  | { kind: 'checkout'; r: R; c: string; id: string }
  | { kind: 'sync'; r: R; batchTurns?: number };

/** The next step: random (from the seed), or the next of a script (null: done). */
type Source = (model: Model, step: number) => Op | null;

function randomSteps(seed: number, steps: number, conversations: readonly string[]): Source {
  const random = rng(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pickOf = <T>(list: readonly T[]): T => list[int(list.length)]!;
  return (model, step) => {
    if (step >= steps) return null;
    const r = pickOf(REPLICAS);
    const c = pickOf(conversations);
    const roll = random();
    const users = model.path(r, c).filter((id) => model.t(id).role === 'user').length;
    const order = model.conv(r, c).order;
    if (roll < 0.22 && step > 0) {
      const batch = int(4);
      return batch < 2 ? { kind: 'sync', r, batchTurns: batch + 1 } : { kind: 'sync', r };
    }
    if (roll < 0.42 && users > 0) return { kind: 'regenerate', r, c };
    if (roll < 0.6 && users > 0) return { kind: 'edit', r, c, user: int(users) };
    if (roll < 0.75 && order.length > 0) return { kind: 'checkout', r, c, id: pickOf(order) };
    return { kind: 'append', r, c };
  };
}

const script = (ops: Op[]): Source => (_model, step) => ops[step] ?? null;

async function runCase(source: Source, clock: Clock, conversations: readonly string[], label: string): Promise<void> {
  if (clock === 'frozen') {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-08-01T12:00:00.000Z'));
  }
  const memories: Record<R, Memory> = { A: await createMemory(), B: await createMemory() };
  const model = new Model();
  const log: string[] = [];
  let n = 0;
  const id = (r: R) => `${r}-${++n}`;

  /** After a write or checkout (strict): the clock passes every key given so far. */
  const settle = async (keys: number) => {
    if (clock === 'strict') await until(Date.now() + keys + 1);
  };

  /** The touched replica against the model: its path, head and tree. */
  const checkReplica = async (r: R, where: string) => {
    for (const c of conversations) {
      const s = model.conv(r, c);
      expect(await turnIds(memories[r], c), `${where}: ${r}.turns(${c})`).toEqual(model.path(r, c));
      if (s.order.length === 0) continue;
      expect(comparable(await memories[r].branches(c)), `${where}: ${r}.branches(${c})`).toEqual(model.tree(r, c));
    }
  };

  const write = async (r: R, c: string, messages: ChatMessage[], parentId: string | null | undefined) => {
    model.write(r, c, messages as { id: string; role: 'user' | 'assistant'; content: string }[], parentId === undefined ? 'head' : parentId);
    const report = await memories[r].onTurnComplete({ conversationId: c, messages, ...(parentId !== undefined ? { parentId } : {}) });
    expect(report.storedIds, `${r} stored what it was given`).toEqual(messages.map((m) => m.id));
    await settle(messages.length);
  };

  const exchange = (r: R, c: string): ChatMessage[] => {
    const u = id(r);
    const a = id(r);
    return [
      { id: u, role: 'user', content: `Question ${u} in ${c}: what about the topic numbered ${u}?` },
      { id: a, role: 'assistant', content: `Answer ${a} in ${c}: the topic numbered ${u} is fine.` },
    ];
  };

  const reply = (r: R, c: string, parent: string): ChatMessage => {
    const a = id(r);
    return { id: a, role: 'assistant', content: `Answer ${a} in ${c}, regenerated after ${parent}.` };
  };

  const sync = async (i: R, batchTurns?: number) => {
    const j = other(i);
    await memories[i].sync(memories[j], batchTurns === undefined ? undefined : { batchTurns });
    for (const c of conversations) {
      const sa = model.conv('A', c);
      const sb = model.conv('B', c);
      const held = new Set([...sa.order, ...sb.order]);
      const [xa, xb] = [await exported(memories.A, c), await exported(memories.B, c)];
      // Nothing lost, on either side: every turn either held, with its branch.
      for (const [r, x] of [['A', xa], ['B', xb]] as const) {
        expect(new Set((x?.turns ?? []).map((t) => t.id)), `${log.length}: ${r}'s export of ${c} holds every turn`).toEqual(held);
        for (const t of x?.turns ?? []) {
          const m = model.t(t.id);
          expect(t.branch ?? null, `${log.length}: ${r}'s export of ${c}: the branch of ${t.id}`).toEqual(m.branch === '' ? null : { start: m.branch, after: m.forkAfter ?? '' });
        }
      }
      // The same export (in the same converged order) on both.
      expect(exportedTurns(xb), `${log.length}: B's export of ${c} against A's`).toEqual(exportedTurns(xa));
      expect(xb?.head, `${log.length}: the export's head of ${c}, B against A`).toEqual(xa?.head);
      if (held.size === 0) continue;
      // The converged order: the model's (strict), or the export's, which must keep each replica's own order.
      const order = (xa?.turns ?? []).map((t) => t.id);
      expect(subsequence(sa.order, order) && subsequence(sb.order, order), `${log.length}: the merged order of ${c} keeps A's (${sa.order.join(' ')}) and B's (${sb.order.join(' ')}): ${order.join(' ')}`).toBe(true);
      if (clock === 'strict') expect(order, `${log.length}: the merged order of ${c}`).toEqual([...held].sort((x, y) => model.t(x).tick - model.t(y).tick));
      // The merged head: the later of the two replicas' last events (a replica that did nothing since the last sync
      // knows nothing later than the other one).
      const observed = (await memories.A.branches(c)).head;
      let last: Event | null;
      if (!sb.last || (sa.last && !sb.dirty)) last = sa.last;
      else if (!sa.last || !sa.dirty) last = sb.last;
      else if (clock === 'strict') last = sa.last.tick > sb.last.tick ? sa.last : sb.last;
      else if (sa.last.kind === 'turn' && sb.last.kind === 'turn') last = order.indexOf(sa.last.head) > order.indexOf(sb.last.head) ? sa.last : sb.last;
      else {
        // Concurrent, a checkout on one side at least: either may be later by the keys.
        expect([sa.last.head, sb.last.head], `${log.length}: the merged head of ${c} is A's (${sa.last.kind}) or B's (${sb.last.kind})`).toContain(observed);
        last = observed === sa.last.head ? sa.last : sb.last;
      }
      for (const s of [sa, sb]) {
        s.order = [...order];
        s.head = last?.head ?? null;
        s.last = last;
        s.dirty = false;
      }
    }
    await checkReplica('A', `${log.length}: after the sync`);
    await checkReplica('B', `${log.length}: after the sync`);
    for (const c of conversations) {
      expect(await turnIds(memories.B, c), `${log.length}: B.turns(${c}) against A's`).toEqual(await turnIds(memories.A, c));
      if (model.conv('A', c).order.length > 0) expect(await memories.B.branches(c), `${log.length}: B.branches(${c}) against A's`).toEqual(await memories.A.branches(c));
    }
  };

  try {
    for (let step = 0; ; step++) {
      const o = source(model, step);
      if (!o) break;
      if (o.kind === 'sync') {
        log.push(`${o.r}.sync(${other(o.r)}${o.batchTurns ? `, { batchTurns: ${o.batchTurns} }` : ''})`);
        await sync(o.r, o.batchTurns);
        continue;
      }
      const { r, c } = o;
      const path = model.path(r, c);
      const users = path.map((p, k) => [p, k] as const).filter(([p]) => model.t(p).role === 'user');
      if (o.kind === 'regenerate' || o.kind === 'reply') {
        // Regenerate: a new reply to the user message before the head's reply.
        const parent = o.kind === 'reply' ? o.parent : users[users.length - 1]![0];
        const m = reply(r, c, parent);
        log.push(`${r} ${o.kind} ${m.id} after ${parent} in ${c}`);
        await write(r, c, [m], parent);
      } else if (o.kind === 'edit') {
        // Edit: a new user message in place of one on the path, and its reply.
        const k = users[o.user]![1];
        const parent = k === 0 ? null : path[k - 1]!;
        const messages = exchange(r, c);
        log.push(`${r} edit ${messages[0]!.id},${messages[1]!.id} after ${parent ?? 'the start'} in ${c}`);
        await write(r, c, messages, parent);
      } else if (o.kind === 'checkout') {
        log.push(`${r} checkout ${o.id} in ${c} (to ${model.checkoutTarget(r, c, o.id)})`);
        model.checkout(r, c, o.id);
        const list = await memories[r].checkout(c, o.id);
        expect(list.head, `checkout's answer on ${r}`).toBe(model.conv(r, c).head);
        await settle(1);
      } else {
        const messages = exchange(r, c);
        log.push(`${r} append ${messages[0]!.id},${messages[1]!.id} in ${c}`);
        await write(r, c, messages, undefined);
      }
      await checkReplica(r, `${log.length}: after ${log[log.length - 1]}`);
    }
    // The end: one more sync, then both the same, and the model's set of turns on both.
    log.push('A.sync(B) (final)');
    await sync('A');
    for (const c of conversations) {
      const [xa, xb] = [await exported(memories.A, c), await exported(memories.B, c)];
      expect(new Set(exportedTurns(xb)), `final: the exports of ${c} as sets`).toEqual(new Set(exportedTurns(xa)));
      expect(new Set((xa?.turns ?? []).map((t) => t.id)), `final: every turn of ${c} written`).toEqual(new Set([...model.turns.values()].filter((t) => t.c === c).map((t) => t.id)));
    }
    // Once more: nothing moves.
    const quiet = await memories.B.sync(memories.A);
    expect({ pushed: quiet.pushed, pulled: quiet.pulled }, 'a sync after the last one').toEqual({ pushed: 0, pulled: 0 });
  } catch (e) {
    (e as Error).message = `${(e as Error).message}\n  ${label} (${clock} clock), operations:\n  ${log.map((l, k) => `${k + 1}. ${l}`).join('\n  ')}`;
    throw e;
  } finally {
    await memories.A.close().catch(() => undefined);
    await memories.B.close().catch(() => undefined);
    if (clock === 'frozen') vi.useRealTimers();
  }
}

/**
 * Sequences every run starts with, each on a frozen clock (the order keys of A's and B's offline writes tie; which
 * replica's sorts first varies from run to run, with their random replica ids, and either way the check holds):
 * - a checkout to the tip of a branch where the other replica's concurrent turn has the same order key, then an
 *   exchange appended at the head: nothing follows the tip on its branch, so the exchange continues that branch;
 * - regenerations after two turns whose order keys tie, written on A and on B: branches() lists the two forks in the
 *   same order on both replicas.
 */
const EXAMPLES: { name: string; ops: Op[] }[] = [
  {
    name: 'an exchange appended after a checked-out tip that ties with a concurrent turn continues its branch',
    ops: [
      { kind: 'append', r: 'A', c: 'c1' }, { kind: 'sync', r: 'A' },
      { kind: 'append', r: 'A', c: 'c1' }, { kind: 'append', r: 'B', c: 'c1' }, { kind: 'sync', r: 'A' },
      { kind: 'checkout', r: 'A', c: 'c1', id: 'A-1' }, { kind: 'append', r: 'A', c: 'c1' },
    ],
  },
  {
    name: 'forks after two turns with tied order keys are listed in the same order on both replicas',
    ops: [
      { kind: 'append', r: 'A', c: 'c1' }, { kind: 'append', r: 'B', c: 'c1' }, { kind: 'sync', r: 'A' },
      { kind: 'reply', r: 'A', c: 'c1', parent: 'A-1' }, { kind: 'reply', r: 'A', c: 'c1', parent: 'B-3' }, { kind: 'sync', r: 'A' },
    ],
  },
];

afterEach(() => { vi.useRealTimers(); });

describe('conversation trees across two replicas: random appends, regenerations, edits, checkouts and syncs', () => {
  for (const example of EXAMPLES) {
    it.skipIf(ONLY !== undefined)(`example: ${example.name}`, async () => {
      await runCase(script(example.ops), 'frozen', ['c1'], `example "${example.name}"`);
    });
  }
  for (const run of RUNS) {
    it.skipIf(ONLY !== undefined && ONLY !== run.seed)(`seed ${run.seed}, ${run.clock} clock, ${run.steps} steps, ${run.conversations.join('+')}`, async () => {
      await runCase(randomSteps(run.seed, run.steps, run.conversations), run.clock, run.conversations, `seed ${run.seed}`);
    });
  }
});
