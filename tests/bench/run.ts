// npm run bench — replays ../shared/data through the public API and prints recall and latency figures.
// Options: --only=tokenizers,locomo,longmemeval,adversarial,synthetic,compaction,embedding  --window=8192  --reserve=1024  --memory=N
//          --only=longrun (not in the default set: minutes per 10,000 turns) --turns=10000,50000,100000 --churn=60000
//          (see tests/bench/long-run.ts; its own defaults, not --window)
//          --only=chat (chat-shaped replay, live embedding vs none)  --only=vectors (search at 10k/100k: index vs exact)
//          --only=ranking (leave-one-set-out; see tests/bench/ranking.ts)  --only=release --against=PATH (hook latency vs a release)
//          --only=stats (what recording usage and health costs each hook, with and without OpenTelemetry)
//          --only=upgrade (migrating 100,000 turns; rebuilding an older summarizer's summaries, hooks meanwhile; see tests/bench/upgrade.ts)
//          --only=sync-bulk (the largest sync batches through syncEndpoint on a Node server, another user's waits; see tests/bench/sync-bulk.ts)
//          --only=encryption (plain vs encrypted fileStorage: chat replay, opens, rekey, export; ~8 min; see tests/bench/encryption.ts)
//          --only=search (web search: trigger rate on real chat, cost per request, the search step, page reading; minutes;
//          --trigger-only: the trigger rate alone; see tests/bench/search.ts)
//          --hint=off  --tagger=keyword|embedding  --split=tune|report|holdout (see below)  --repeat=N (spread over N runs)
//          recall sets: locomo, realtalk, adversarial, longmemeval — each against BM25, vector and hybrid at equal tokens
//          --compaction=off  --embed=off|cached (default: the shipped all-MiniLM-L6-v2, live; `cached` keeps stored
//          turns' vectors on disk between recall runs — for tuning only, never for latency figures)
import { createMemory } from '../../src/index.js';
import { messageText } from '../../src/common/messages.js';
import { sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import { fileStorage } from '../../src/storage/node-file.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTokenizer } from '../../src/tokens/tokenizer.js';
import type { ChatMessage, MemoryOptions } from '../../src/contracts/types.js';
import { transformersEmbedder } from '../../src/embed/transformers.js';
import { cachedEmbedder } from './cached-embedder.js';
import { chatReplayBench } from './chat-replay.js';
import { vectorScaleBench } from './vector-scale.js';
import { embeddingBench } from './embedding.js';
import { longRunBench, parseLongRunArgs } from './long-run.js';
import { type BenchConversation, loadAdversarial, loadLocomo, loadLongMemEval, loadRealtalk } from './datasets.js';
import type { Embedder } from '../../src/contracts/types.js';
import { percentile, Table } from './metrics.js';
import { baselineCorpus, scoreAgainstBaselines } from './equal-tokens.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const only = new Set((args.get('only') ?? 'tokenizers,locomo,realtalk,longmemeval,adversarial,synthetic,compaction,chat,embedding,vectors').split(','));
const mode = args.get('embed') ?? 'live';
// The cache is keyed by the shipped model's bytes too (its SHA256SUMS line), so a rebuilt model starts a new cache.
const modelVersion = () => /^(\w{12})\S*\s+\S*model_quantized\.onnx$/m.exec(readFileSync(new URL('../../packages/model-all-minilm-l6-v2/SHA256SUMS', import.meta.url), 'utf8'))?.[1] ?? '';
const embedder = mode === 'off' ? false : mode === 'cached' ? cachedEmbedder(transformersEmbedder({ provider: 'transformers' }), modelVersion()) : { provider: 'transformers' as const };
// A cached embedder is an Embedder object: it must know its width before createMemory checks it.
if (embedder && 'load' in embedder) await embedder.load?.();
const embedderName = mode === 'off' ? 'off' : `all-MiniLM-L6-v2 8-bit${mode === 'cached' ? ' (stored vectors cached)' : ', live'}`;
const options: MemoryOptions = {
  contextWindow: Number(args.get('window') ?? 8192), reserveTokens: Number(args.get('reserve') ?? 1024),
  ...(args.has('memory') ? { memoryTokens: Number(args.get('memory')) } : {}), compaction: args.get('compaction') !== 'off',
  embedder, ...(args.get('hint') === 'off' ? { topicsHint: false } : {}), ...(args.has('tagger') ? { tagger: args.get('tagger') as 'embedding' } : {}), ...(args.has('threshold') ? { similarityThreshold: Number(args.get('threshold')) } : {}),
};
const tokenizer = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
// The baselines' question vectors: the same model pagewise runs (its stored turn vectors are read from its database).
const queryEmbedder: Embedder | null = embedder === false ? null : 'embed' in embedder ? embedder : transformersEmbedder({ provider: 'transformers' });

// --storage=file: each conversation in a database file (fileStorage, every commit synced) instead of in memory.
const benchDir = args.get('storage') === 'file' ? mkdtempSync(join(tmpdir(), 'pagewise-bench-')) : null;
if (benchDir) process.on('exit', () => rmSync(benchDir, { recursive: true, force: true }));
const openDriver = (name: string) => (benchDir ? fileStorage(join(benchDir, `${name.replace(/[^\w-]/g, '_')}.sqlite3`))() : sqliteWasm()());

async function timed<T>(list: number[], fn: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const out = await fn();
  list.push(performance.now() - t);
  return out;
}

function ms(list: number[]): string {
  return `p50 ${percentile(list, 50).toFixed(2)} ms, p95 ${percentile(list, 95).toFixed(2)} ms (n=${list.length})`;
}

async function recallBench(name: string, conversations: BenchConversation[], opts: MemoryOptions = options): Promise<void> {
  const table = new Table();
  // Where the assembled tokens went, per block kind, and how many of them were in blocks holding an evidence turn.
  const spent = new Map<string, { tokens: number; evidence: number }>();
  let asked = 0;
  const inbound: number[] = [];
  const complete: number[] = [];
  for (const conv of conversations) {
    const driver = await openDriver(conv.id);
    const memory = await createMemory({ ...opts, storage: driver });
    for (const batch of conv.batches) {
      await timed(complete, () => memory.onTurnComplete({ conversationId: conv.id, messages: batch }));
      await memory.flush();
    }
    if (embedder && 'save' in embedder) embedder.save();
    const corpus = await baselineCorpus(driver, conv, tokenizer, queryEmbedder);
    for (const q of conv.questions) {
      const message: ChatMessage = { role: 'user', content: q.question };
      const ctx = await timed(inbound, () => memory.onMessageInbound({ conversationId: conv.id, message, ...(q.now ? { now: q.now } : {}) }));
      asked++;
      const wanted = new Set(q.evidence);
      for (const e of ctx.manifest) {
        const kind = e.kind === 'recall' && e.reason.includes('turns that complete it') ? 'recall+neighbours' : e.kind;
        const row = spent.get(kind) ?? { tokens: 0, evidence: 0 };
        row.tokens += e.tokens;
        if (e.sourceIds.some((id) => wanted.has(id))) row.evidence += e.tokens;
        spent.set(kind, row);
      }
      await scoreAgainstBaselines(table, corpus, q, ctx);
    }
    await memory.close();
  }
  const turnCount = conversations.reduce((n, c) => n + c.batches.reduce((m, b) => m + b.length, 0), 0);
  table.print(`${name}: ${conversations.length} conversations, ${turnCount} turns, contextWindow ${opts.contextWindow}, reserve ${opts.reserveTokens ?? 'default'}, compaction ${opts.compaction === false ? 'off' : 'on'}, embeddings ${opts.embedder === false ? 'off' : embedderName}, storage ${benchDir ? 'fileStorage' : 'in memory'} (baselines at pagewise's token count)`,
    ['evidence', 'ev recent', 'ev bm25', 'ev vector', 'ev hybrid', 'answer', 'ans bm25', 'ans hybrid', 'tokens', 'memory'], { tokens: 0, memory: 0 });
  const all = (c: string) => table.mean('ALL', c);
  const best = Math.max(...['ev bm25', 'ev vector', 'ev hybrid'].map(all).filter((x) => !Number.isNaN(x)));
  console.log(`pagewise ${all('evidence').toFixed(3)} vs the best simple retriever ${best.toFixed(3)}: ${(all('evidence') - best >= 0 ? '+' : '')}${(all('evidence') - best).toFixed(3)}`);
  results.push({ name, evidence: all('evidence'), best });
  const order = ['prefix', 'topics', 'summary', 'recall', 'recall+neighbours', 'history', 'recent', 'message'];
  console.log(`tokens per question, mean (in blocks holding an evidence turn): ${[...spent].sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]))
    .map(([k, v]) => `${k === 'topics' ? 'hint' : k} ${(v.tokens / asked).toFixed(0)} (${(v.evidence / asked).toFixed(0)})`).join(' · ')}`);
  console.log(`onMessageInbound ${ms(inbound)}`);
  console.log(`onTurnComplete   ${ms(complete)}`);
}

async function tokenizerBench(): Promise<void> {
  console.log('\nTokenizers (o200k_base; same counts, checked by tests/node/tokens/tokenizer.test.ts)');
  const conversation = loadLocomo()[0]!.batches.flat().map(messageText).join('\n');
  for (const impl of ['gpt-tokenizer', 'js-tiktoken'] as const) {
    let t = performance.now();
    const tk = await createTokenizer({ tokenizer: impl, encoding: 'o200k_base', margin: 1 });
    tk.count('warm up');
    const load = performance.now() - t;
    const times: number[] = [];
    let n = 0;
    for (let i = 0; i < 5; i++) { t = performance.now(); n = tk.count(`${i} ${conversation}`); times.push(performance.now() - t); }
    t = performance.now();
    tk.count('='.repeat(5000));
    const run = performance.now() - t;
    console.log(`${impl.padEnd(13)} load ${load.toFixed(0)} ms · LoCoMo conv-26 (${n} tokens) ${percentile(times, 50).toFixed(1)} ms · 5,000 × "=" ${run.toFixed(0)} ms`);
  }
}

async function syntheticBench(): Promise<void> {
  const topics = ['database indexing', 'marathon training', 'tenant rights', 'sourdough baking', 'kubernetes upgrades', 'tax filing', 'guitar practice', 'garden planning', 'travel to Japan', 'react hooks'];
  const complete: number[] = [];
  const driver = await sqliteWasm()();
  const memory = await createMemory({ ...options, embedder: false, storage: driver });
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const t0 = performance.now();
  for (let i = 0; i < 5000; i++) {
    const topic = topics[Math.floor(rand() * topics.length)]!;
    await timed(complete, () => memory.onTurnComplete({ conversationId: 'synthetic', messages: [
      { role: 'user', content: `Question ${i} about ${topic}: what should I do next about item ${Math.floor(rand() * 1000)}?` },
      { role: 'assistant', content: `For ${topic}, step ${i}: check the details of item ${Math.floor(rand() * 1000)}, then write down what changed and why it matters for the plan.` },
    ] }));
  }
  const ingest = (performance.now() - t0) / 1000;
  // As in a chat: each question is followed by storing its turn, so caches see new turns between questions.
  const inbound: number[] = [];
  const later: number[] = [];
  for (let i = 0; i < 200; i++) {
    const topic = topics[i % topics.length]!;
    const message = { role: 'user' as const, content: `What did we say about ${topic} and item ${i * 7}?` };
    await timed(inbound, () => memory.onMessageInbound({ conversationId: 'synthetic', message }));
    await timed(later, () => memory.onTurnComplete({ conversationId: 'synthetic', messages: [message, { role: 'assistant', content: `About ${topic}: see item ${i * 7}.` }] }));
  }
  await memory.close();
  console.log(`\nSynthetic conversation: 10,000 turns ingested as 5,000 pairs in ${ingest.toFixed(1)} s (embeddings off here: see the embedding section)`);
  console.log(`onTurnComplete   ${ms(complete)}`);
  console.log(`onMessageInbound at 10,000 turns, window ${options.contextWindow}, each followed by onTurnComplete: ${ms(inbound)}`);
  console.log(`onTurnComplete   at 10,000 turns: ${ms(later)}`);
}

/**
 * Seed 000's stress setting: long conversations in a 3,000-token window, replayed as a chat (question, then the
 * stored turn), counting compaction events and the assembled tokens of every request.
 */
async function compactionBench(): Promise<void> {
  const window = { contextWindow: 3000, embedder: options.embedder };
  const conversations = loadLocomo();
  const totals: number[] = [];
  const inbound: number[] = [];
  const complete: number[] = [];
  const durations: number[] = [];
  let events = 0;
  let hard = 0;
  let turns = 0;
  let summaries = 0;
  for (const conv of conversations) {
    const memory = await createMemory({ ...window });
    for (const batch of conv.batches) {
      const message = batch.find((m) => m.role === 'user') ?? batch[0]!;
      const ctx = await timed(inbound, () => memory.onMessageInbound({ conversationId: conv.id, message }));
      totals.push(ctx.budget.total);
      const report = await timed(complete, () => memory.onTurnComplete({ conversationId: conv.id, messages: batch }));
      const done = [...(report.compaction ? [report.compaction] : []), ...await memory.flush()];
      if (report.compaction) hard++;
      for (const r of done) { events++; durations.push(r.durationMs); }
      turns += batch.length;
    }
    summaries += (await memory.summaries(conv.id)).length;
    await memory.close();
  }
  const mean = totals.reduce((a, b) => a + b, 0) / totals.length;
  console.log(`\nCompaction stress (seed 000's setting): LoCoMo ${conversations.length} conversations, ${turns} turns replayed as ${totals.length} requests, contextWindow 3000 (reserve 750)`);
  console.log(`compaction events ${events} (${hard} hard, ${events - hard} soft), ${summaries} summaries; compaction p50 ${percentile(durations, 50)} ms, p95 ${percentile(durations, 95)} ms`);
  console.log(`assembled tokens per request: mean ${mean.toFixed(0)}, peak ${Math.max(...totals)} (window 3000, available 2250)`);
  console.log(`onMessageInbound ${ms(inbound)}`);
  console.log(`onTurnComplete (with background compaction flushed) ${ms(complete)}`);
  await recallBench('LoCoMo at contextWindow 3000, compaction on', conversations, { ...window, compaction: true });
  await recallBench('LoCoMo at contextWindow 3000, compaction off', conversations, { ...window, compaction: false });
}

console.log(`pagewise bench · node ${process.version} · ${new Date().toISOString()}`);
if (only.has('tokenizers')) await tokenizerBench();
// --split=tune|report|holdout: constants are chosen on the tuning part and reported on the report part; the holdout
// part is looked at only when a change is done (it says how a change carries to conversations nobody tuned on):
//   LoCoMo      tune conv-26, conv-30 · report conv-41, conv-42 · holdout conv-43
//   LongMemEval question i: tune i % 3 = 0 · report i % 3 = 1 · holdout i % 3 = 2
//   REALTALK    tune Chat_1 · report Chat_5 · holdout Chat_8
//   adversarial one conversation of 30 probes, whole in every part
const split = args.get('split');
const PARTS = ['tune', 'report', 'holdout'];
if (split !== undefined && !PARTS.includes(split)) throw new Error(`--split must be one of ${PARTS.join(', ')}`);
const part = <T extends { id: string }>(all: T[], which: (c: T, i: number) => string): T[] => (split ? all.filter((c, i) => which(c, i) === split) : all);
const splitName = split ? `, ${split} part` : '';
const results: { name: string; evidence: number; best: number }[] = [];
// --repeat=N: each recall set N times from scratch (fresh memories), to print the spread of the figures.
const repeat = Number(args.get('repeat') ?? 1);
for (let r = 0; r < repeat; r++) {
  if (only.has('locomo')) await recallBench(`LoCoMo (dev: 5 conversations${splitName})`, part(loadLocomo(), (c) => ({ 'conv-26': 'tune', 'conv-30': 'tune', 'conv-41': 'report', 'conv-42': 'report' })[c.id] ?? 'holdout'));
  if (only.has('realtalk')) await recallBench(`REALTALK (real chats: 3 of 10${splitName})`, part(loadRealtalk(), (c) => ({ Chat_1_Emi_Elise: 'tune', Chat_5_Nicolas_Nebraas: 'report' })[c.id] ?? 'holdout'));
  if (only.has('adversarial')) await recallBench('Adversarial (written here: 120 turns, four domains sharing their words, 30 probes)', loadAdversarial());
  if (only.has('longmemeval')) await recallBench(`LongMemEval_S (dev: 60 questions, one haystack each${splitName})`, part(loadLongMemEval(), (_, i) => PARTS[i % 3]!));
}
if (results.length > 0) {
  console.log('\nEvidence, pagewise vs the best of BM25, vector and hybrid at equal tokens:');
  for (const name of [...new Set(results.map((x) => x.name))]) {
    const runs = results.filter((x) => x.name === name);
    const ev = runs.map((x) => x.evidence);
    const spread = runs.length > 1 ? ` (runs ${ev.map((x) => x.toFixed(3)).join(', ')}; spread ${(Math.max(...ev) - Math.min(...ev)).toFixed(3)})` : '';
    console.log(`  ${name}: ${ev[0]!.toFixed(3)} vs ${runs[0]!.best.toFixed(3)} (${(ev[0]! - runs[0]!.best >= 0 ? '+' : '')}${(ev[0]! - runs[0]!.best).toFixed(3)})${spread}`);
  }
}
if (only.has('synthetic')) await syntheticBench();
if (only.has('compaction')) await compactionBench();
if (only.has('chat')) await chatReplayBench(mode === 'off' ? false : { provider: 'transformers' });
if (only.has('embedding')) await embeddingBench();
if (only.has('vectors')) await vectorScaleBench();
if (only.has('longrun')) await longRunBench(parseLongRunArgs(args));
if (only.has('branches')) await (await import('./branches.js')).branchesBench(args);
if (only.has('sync-bulk')) await (await import('./sync-bulk.js')).syncBulkBench(args);
if (only.has('encryption')) await (await import('./encryption.js')).encryptionBench(args);
if (only.has('release')) (await import('./release-compare.js')).releaseCompare(args);
if (only.has('search')) await (await import('./search.js')).searchBench();
if (only.has('upgrade')) await (await import('./upgrade.js')).upgradeBench(args);
if (only.has('stats')) await (await import('./stats.js')).statsBench(args);
if (only.has('ranking')) await (await import('./ranking.js')).rankingBench(args, options, tokenizer, queryEmbedder);
