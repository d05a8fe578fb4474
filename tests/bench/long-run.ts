// One long synthetic conversation replayed as a chat through the public API, with default options (contextWindow
// 128,000) and embeddings off: per 1,000-turn window the cost of both hooks, every compaction, and memory at the
// checkpoints; then a distinct-conversation-id churn check.
//
//   npx tsx --expose-gc tests/bench/long-run.ts --turns=10000,50000,100000 [--ask-every=10] [--churn=60000]
//   npm run bench -- --only=longrun --turns=10000,50000,100000
//
// --turns: checkpoints (memory is printed at each; the run stops at the last). --ask-every: an onMessageInbound
// question every N calls. --flush=window (default: background work is awaited at the end of each 1,000-turn window,
// and the wait is printed as "bg wait") or checkpoint. --churn=0 skips the churn check. --profile-from=N: prints,
// from turn N on, each slow call (over --slow=1000 ms). --save=FILE writes the database at the last checkpoint.
import sqlite3InitModule, { type Sqlite3Static } from '@sqlite.org/sqlite-wasm';
import { createMemory } from '../../src/index.js';
import { writeFileSync } from 'node:fs';
import { createSqliteDriver, sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import type { ChatMessage, CompactionReport, StorageDriver } from '../../src/contracts/types.js';
import { mean, percentile } from './metrics.js';
import { rng } from '../support/rng.js';

const CONVERSATION = 'long-run';
const WINDOW = 1000;

interface Topic {
  name: string;
  things: string[];
  verbs: string[];
  places: string[];
}

// The synthetic bench's ten topics (tests/bench/run.ts), each with its own words, so topics shift the vocabulary.
const TOPICS: Topic[] = [
  { name: 'database indexing', things: ['composite index', 'query plan', 'vacuum job', 'replica lag', 'partial index', 'buffer cache', 'slow query log', 'btree page'], verbs: ['rebuild', 'analyze', 'partition', 'benchmark', 'drop'], places: ['the staging cluster', 'the billing database', 'the analytics replica'] },
  { name: 'marathon training', things: ['tempo run', 'long run', 'interval session', 'recovery week', 'heart rate zone', 'carb loading', 'taper', 'hill repeat'], verbs: ['schedule', 'shorten', 'extend', 'log', 'skip'], places: ['the river path', 'the track in Lisbon', 'the park loop'] },
  { name: 'tenant rights', things: ['security deposit', 'lease renewal', 'rent increase', 'repair request', 'eviction notice', 'habitability claim', 'sublet clause', 'move-out inspection'], verbs: ['contest', 'document', 'negotiate', 'file', 'photograph'], places: ['the housing office', 'the landlord portal', 'small claims court'] },
  { name: 'sourdough baking', things: ['starter', 'levain', 'autolyse', 'bulk ferment', 'crumb structure', 'banneton', 'dutch oven', 'hydration ratio'], verbs: ['feed', 'shape', 'proof', 'score', 'bake'], places: ['the kitchen counter', 'the fridge', 'the bakery class'] },
  { name: 'kubernetes upgrades', things: ['control plane', 'node pool', 'ingress controller', 'pod disruption budget', 'helm chart', 'cert-manager', 'deprecated API', 'drain step'], verbs: ['upgrade', 'roll back', 'cordon', 'patch', 'pin'], places: ['the eu-west cluster', 'the dev namespace', 'the canary pool'] },
  { name: 'tax filing', things: ['receipt folder', 'deduction', 'estimated payment', 'depreciation schedule', 'home office claim', 'capital gain', 'filing extension', 'donation record'], verbs: ['itemize', 'scan', 'reconcile', 'submit', 'amend'], places: ['the accountant', 'the tax portal', 'the shoebox of receipts'] },
  { name: 'guitar practice', things: ['barre chord', 'fingerpicking pattern', 'metronome setting', 'pentatonic scale', 'capo position', 'string gauge', 'chord change', 'strumming rhythm'], verbs: ['practice', 'transcribe', 'slow down', 'record', 'restring'], places: ['the lesson studio', 'the open mic', 'the living room'] },
  { name: 'garden planning', things: ['raised bed', 'tomato seedling', 'compost bin', 'drip line', 'crop rotation', 'mulch layer', 'seed tray', 'soil test'], verbs: ['plant', 'water', 'prune', 'transplant', 'harvest'], places: ['the backyard', 'the allotment', 'the greenhouse'] },
  { name: 'travel to Japan', things: ['rail pass', 'ryokan booking', 'airport transfer', 'temple visit', 'pocket wifi', 'luggage forwarding', 'onsen day', 'night bus'], verbs: ['book', 'cancel', 'reserve', 'compare', 'pack'], places: ['Kyoto', 'Osaka', 'Hakone', 'Tokyo station'] },
  { name: 'react hooks', things: ['useEffect cleanup', 'custom hook', 'memoized selector', 'context provider', 'stale closure', 'suspense boundary', 'reducer action', 'ref callback'], verbs: ['refactor', 'memoize', 'test', 'split', 'debounce'], places: ['the settings page', 'the checkout form', 'the dashboard'] },
];
const PEOPLE = ['Maya', 'Tomás', 'Priya', 'Jonas', 'Aiko', 'Lena', 'Omar', 'Grace', 'Kofi', 'Ines', 'Ravi', 'Sofia'];
const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const MONTHS = ['January', 'March', 'May', 'July', 'September', 'November'];

/** A varied, topic-shifting chat: runs of 1–10 exchanges per topic, names, numbers, dates and codes to ask about. */
export function syntheticChat(seed = 7) {
  const rand = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  let topic = TOPICS[0]!;
  let left = 0;
  let clock = Date.UTC(2024, 0, 1, 9);
  const facts: { topic: Topic; thing: string; code: string; n: number; who: string }[] = [];
  const sentence = (t: Topic, n: number): string => {
    const thing = pick(t.things);
    const templates = [
      () => `${pick(PEOPLE)} suggested we ${pick(t.verbs)} the ${thing} at ${pick(t.places)} before ${pick(DAYS)}.`,
      () => `The ${thing} took ${n % 90 + 5} minutes last time, which is ${n % 7 + 2} more than we planned.`,
      () => `I think the ${thing} matters more than the ${pick(t.things)} right now, so let's ${pick(t.verbs)} it first.`,
      () => `On ${pick(MONTHS)} ${n % 27 + 1} we agreed to ${pick(t.verbs)} the ${thing} again and check the result.`,
      () => `It cost ${n % 400 + 20} dollars, and ${pick(PEOPLE)} thinks that is too much for the ${thing}.`,
      () => `Remember that ${pick(t.places)} closes early, so the ${thing} has to wait until ${pick(DAYS)}.`,
      () => `We could also ${pick(t.verbs)} the ${pick(t.things)} instead; it worked well for ${pick(PEOPLE)}.`,
    ];
    return pick(templates)();
  };
  return {
    /** The next user + assistant exchange (one onTurnComplete). */
    next(i: number): ChatMessage[] {
      if (left <= 0) {
        topic = rand() < 0.2 && facts.length > 0 ? pick(facts).topic : pick(TOPICS);
        left = 1 + Math.floor(rand() * 10);
      }
      left--;
      clock += 60_000 + Math.floor(rand() * 3_600_000);
      const thing = pick(topic.things);
      const question = [`About ${topic.name}: what should I do about the ${thing}?`, `Can you help me ${pick(topic.verbs)} the ${thing} this week?`,
        `Quick update on the ${thing}: ${sentence(topic, i)} What next?`, `${pick(PEOPLE)} asked about the ${thing} again. Any ideas?`][i % 4]!;
      const answer = [sentence(topic, i), sentence(topic, i * 3 + 1), ...(rand() < 0.6 ? [sentence(topic, i * 7 + 2)] : [])];
      if (rand() < 0.15) {
        const fact = { topic, thing, code: `${topic.name.slice(0, 3).toUpperCase()}-${1000 + Math.floor(rand() * 9000)}`, n: Math.floor(rand() * 500), who: pick(PEOPLE) };
        facts.push(fact);
        answer.push(`For the record: the ${thing} reference is ${fact.code}, ${fact.who} owns it, budget ${fact.n} dollars.`);
      }
      return [
        { id: `u${i}`, role: 'user', content: question, createdAt: new Date(clock).toISOString() },
        { id: `a${i}`, role: 'assistant', content: answer.join(' '), createdAt: new Date(clock + 20_000).toISOString() },
      ];
    },
    /** A question a user might ask now: mostly about a recorded fact, sometimes broad or temporal. */
    question(i: number): { message: ChatMessage; kind: string } {
      const r = rand();
      if (r < 0.1) return { kind: 'broad', message: { role: 'user', content: 'Can you give me a summary of everything we discussed so far?' } };
      if (r < 0.2) return { kind: 'temporal', message: { role: 'user', content: `Going back to the very beginning, what did we first decide about ${pick(TOPICS).name}?` } };
      const f = facts.length > 0 ? pick(facts) : null;
      if (!f) return { kind: 'specific', message: { role: 'user', content: `What did we say about the ${pick(topic.things)}?` } };
      return { kind: 'specific', message: { role: 'user', content: i % 2 === 0 ? `What was the reference for the ${f.thing} that ${f.who} owns?` : `Which budget did we set for ${f.code}?` } };
    },
  };
}

function fmt(ms: number): string {
  return ms >= 100 ? ms.toFixed(0) : ms.toFixed(1);
}

const MB = 1024 * 1024;

async function memoryFigures(sqlite3: Sqlite3Static, driver: StorageDriver) {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  const page = await driver.query<{ page_size: number }>('PRAGMA page_size');
  const count = await driver.query<{ page_count: number }>('PRAGMA page_count');
  const free = await driver.query<{ freelist_count: number }>('PRAGMA freelist_count');
  const size = Number(page[0]!.page_size);
  return {
    rss: m.rss / MB, heap: m.heapUsed / MB, external: m.external / MB, wasm: sqlite3.wasm.heap8u().byteLength / MB,
    db: (Number(count[0]!.page_count) * size) / MB, free: (Number(free[0]!.freelist_count) * size) / MB,
  };
}

async function tableSizes(driver: StorageDriver): Promise<string> {
  const rows = await driver.query<{ name: string; bytes: number }>(
    "SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC LIMIT 8");
  return rows.map((r) => `${r.name} ${(Number(r.bytes) / MB).toFixed(1)}`).join(', ');
}

export interface LongRunOptions {
  checkpoints: number[];
  askEvery: number;
  flush: 'window' | 'checkpoint';
  churn: number;
  profileFrom: number;
  slowMs: number;
  /** Where to write the database at the last checkpoint (for profiling from there). */
  save?: string;
}

export async function longRunBench(o: LongRunOptions): Promise<void> {
  const last = Math.max(...o.checkpoints);
  // Our own sqlite3 instance, so its WebAssembly memory is this engine's alone and can be read.
  const sqlite3 = await (sqlite3InitModule as unknown as (opts: object) => Promise<Sqlite3Static>)({ print: () => {}, printErr: () => {} });
  // The driver sqliteWasm() makes, on a database handle of our own (--save exports it).
  const db = new sqlite3.oo1.DB(':memory:', 'c');
  db.exec('PRAGMA foreign_keys = ON');
  const driver = createSqliteDriver(sqlite3, db, 'sqlite-wasm:memory');
  const memory = await createMemory({ embedder: false, storage: driver });
  const chat = syntheticChat();
  console.log(`\nLong run: one conversation to ${last.toLocaleString()} turns, default options (contextWindow 128,000), embeddings off, a question every ${o.askEvery} calls, background awaited per ${o.flush}`);
  console.log('turns          | onTurnComplete mean / p95 / max ms | onMessageInbound mean / p95 / max ms (n) | bg wait ms | compactions in window (trigger turns→wm ms)');
  const all: { turn: number; report: CompactionReport }[] = [];
  let complete: number[] = [];
  let inbound: number[] = [];
  let windowReports: CompactionReport[] = [];
  let maxTotal = 0;
  let overBudget = 0;
  const firstWindow = { complete: 0, inbound: 0 };
  let pendingQuestion: ChatMessage | null = null;
  let turns = 0;
  let call = 0;
  const started = performance.now();
  const collect = async (): Promise<number> => {
    const t = performance.now();
    const reports = await memory.flush();
    for (const r of reports) { all.push({ turn: turns, report: r }); windowReports.push(r); }
    return performance.now() - t;
  };
  while (turns < last) {
    if (call % o.askEvery === o.askEvery - 1) {
      const q = chat.question(call);
      const t = performance.now();
      const ctx = await memory.onMessageInbound({ conversationId: CONVERSATION, message: q.message });
      const dt = performance.now() - t;
      inbound.push(dt);
      if (turns >= o.profileFrom && dt > o.slowMs) console.log(`  slow onMessageInbound at ${turns} (${q.kind}): ${fmt(dt)} ms`);
      maxTotal = Math.max(maxTotal, ctx.budget.total);
      if (ctx.budget.total > ctx.budget.available) overBudget++;
      pendingQuestion = { ...q.message, id: `q${call}` };
    }
    const pair = chat.next(call);
    const messages = pendingQuestion ? [pendingQuestion, { ...pair[1]!, id: `qa${call}` }] : pair;
    pendingQuestion = null;
    const t = performance.now();
    const report = await memory.onTurnComplete({ conversationId: CONVERSATION, messages });
    const dt = performance.now() - t;
    complete.push(dt);
    if (turns >= o.profileFrom && dt > o.slowMs) console.log(`  slow onTurnComplete at ${turns}: ${fmt(dt)} ms${report.compaction ? ` (hard compaction ${report.compaction.durationMs} ms)` : ''}`);
    if (report.compaction) { all.push({ turn: turns, report: report.compaction }); windowReports.push(report.compaction); }
    turns = report.totalTurns;
    call++;
    const checkpoint = o.checkpoints.find((c) => turns >= c && turns - 2 < c);
    if (turns % WINDOW < 2 || checkpoint !== undefined) {
      const wait = o.flush === 'window' || checkpoint !== undefined ? await collect() : 0;
      const c = complete;
      const i = inbound;
      if (firstWindow.complete === 0) { firstWindow.complete = mean(c); firstWindow.inbound = mean(i); }
      const comp = windowReports.map((r) => `${r.trigger[0]}:${r.turnsCompacted}→${r.watermark} ${r.durationMs}`).join(', ');
      console.log(`${String(Math.floor(turns / WINDOW) * WINDOW - WINDOW).padStart(6)}–${String(turns).padEnd(7)} | ${fmt(mean(c)).padStart(6)} / ${fmt(percentile(c, 95)).padStart(6)} / ${fmt(Math.max(...c)).padStart(7)}`
        + `         | ${fmt(mean(i)).padStart(6)} / ${fmt(percentile(i, 95)).padStart(6)} / ${fmt(Math.max(...i)).padStart(6)} (${i.length})`
        + `         | ${fmt(wait).padStart(7)} | ${comp}`);
      complete = [];
      inbound = [];
      windowReports = [];
      if (checkpoint !== undefined) {
        const m = await memoryFigures(sqlite3, driver);
        const kinds = await driver.query<{ kind: string; n: number }>('SELECT kind, COUNT(*) AS n FROM summaries GROUP BY kind ORDER BY kind');
        const tags = await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM tags WHERE conversation_id = ?', [CONVERSATION]);
        console.log(`== at ${turns.toLocaleString()} turns (${((performance.now() - started) / 1000).toFixed(0)} s): summaries ${kinds.map((k) => `${k.kind} ${k.n}`).join(', ') || 'none'}; distinct tags ${tags[0]!.n}`);
        console.log(`   memory: RSS ${m.rss.toFixed(0)} MB, JS heap ${m.heap.toFixed(0)} MB, external ${m.external.toFixed(0)} MB, WebAssembly memory ${m.wasm.toFixed(0)} MB, database ${m.db.toFixed(1)} MB (${m.free.toFixed(1)} MB free pages)`);
        console.log(`   largest tables and indexes (MB): ${await tableSizes(driver)}`);
        if (o.save && turns >= last) {
          await memory.flush();
          writeFileSync(o.save, sqlite3.capi.sqlite3_js_db_export(db));
          console.log(`   database saved to ${o.save}`);
        }
      }
    }
  }
  const hard = all.filter((a) => a.report.trigger === 'hard');
  const soft = all.filter((a) => a.report.trigger !== 'hard');
  console.log(`compactions: ${hard.length} hard (in onTurnComplete) ${hard.map((a) => `${a.report.durationMs} ms`).join(', ')}`);
  console.log(`             ${soft.length} soft (background), duration p50 ${percentile(soft.map((a) => a.report.durationMs), 50)} ms, max ${Math.max(0, ...soft.map((a) => a.report.durationMs))} ms`);
  console.log(`assembled requests: peak budget.total ${maxTotal}, over budget ${overBudget}`);
  console.log(`first window: onTurnComplete mean ${fmt(firstWindow.complete)} ms, onMessageInbound mean ${fmt(firstWindow.inbound)} ms`);
  await memory.close();
  if (o.churn > 0) await churnBench(o.churn);
}

/** Distinct conversation ids: `n` asked about once (never stored), every tenth of them also stored (one exchange). */
async function churnBench(n: number): Promise<void> {
  const sqlite3 = await (sqlite3InitModule as unknown as (opts: object) => Promise<Sqlite3Static>)({ print: () => {}, printErr: () => {} });
  const driver = await sqliteWasm({ sqlite3 })();
  const memory = await createMemory({ embedder: false, storage: driver });
  // Warm up: the tokenizer, the date parser and prepared statements are loaded once, whatever the ids.
  for (let i = 0; i < 200; i++) {
    await memory.onMessageInbound({ conversationId: `warm${i}`, message: { role: 'user', content: 'What did we say about the budget?' } });
    await memory.onTurnComplete({ conversationId: `warm${i}`, messages: [{ role: 'user', content: 'Hello there' }, { role: 'assistant', content: 'Hi!' }] });
  }
  const before = await memoryFigures(sqlite3, driver);
  const t = performance.now();
  for (let i = 0; i < n; i++) {
    const conversationId = `churn-${i}`;
    await memory.onMessageInbound({ conversationId, message: { role: 'user', content: `What did we decide about item ${i}?` } });
    if (i % 10 === 0) {
      await memory.onTurnComplete({ conversationId, messages: [{ role: 'user', content: `Item ${i} needs a decision.` }, { role: 'assistant', content: `Let's keep item ${i} for now.` }] });
    }
  }
  const seconds = (performance.now() - t) / 1000;
  const after = await memoryFigures(sqlite3, driver);
  await memory.close();
  const d = (k: keyof typeof before) => (after[k] - before[k]).toFixed(1);
  console.log(`\nDistinct ids: ${n.toLocaleString()} conversation ids asked once, ${Math.ceil(n / 10).toLocaleString()} of them stored (one exchange each), ${seconds.toFixed(0)} s`);
  console.log(`   memory delta: RSS ${d('rss')} MB, JS heap ${d('heap')} MB (after GC${(globalThis as { gc?: unknown }).gc ? '' : ' unavailable: run with --expose-gc'}), WebAssembly memory ${d('wasm')} MB, database ${d('db')} MB`);
}

export function parseLongRunArgs(args: Map<string, string>): LongRunOptions {
  return {
    checkpoints: (args.get('turns') ?? '10000,50000,100000').split(',').map(Number).filter((x) => x > 0),
    askEvery: Number(args.get('ask-every') ?? 10),
    flush: args.get('flush') === 'checkpoint' ? 'checkpoint' : 'window',
    churn: Number(args.get('churn') ?? 60000),
    profileFrom: Number(args.get('profile-from') ?? Number.MAX_SAFE_INTEGER),
    slowMs: Number(args.get('slow') ?? 1000),
    ...(args.has('save') ? { save: args.get('save')! } : {}),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
  console.log(`pagewise long-run bench · node ${process.version} · ${new Date().toISOString()}`);
  await longRunBench(parseLongRunArgs(args));
}
