// npm run bench -- --only=ranking — the learned ranking, judged on data it was not fitted on.
// Every dev set is ingested once; each question's candidates and features are collected through the engine
// (`ranking.onCandidates`). Then, for each set in turn, weights are trained on the other sets only and the set is
// asked again through the public API with those weights: leave one set out, against BM25, vector and hybrid at
// pagewise's token count. `--write` trains on all dev sets and writes src/retrieval/ranking-weights.json;
// `--holdout` then asks the held-out part (never trained or tuned on) once, with the weights written.
//   sets: locomo (conv-26, 30, 41, 42) · realtalk (Chat_1, Chat_5) · adversarial · lme (LongMemEval_S train, --lme=N)
//   held out: LoCoMo conv-43 · REALTALK Chat_8 · LongMemEval_S dev60
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { resolve } from 'node:path';
import { createMemory } from '../../src/index.js';
import { sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import { parseLongMemEval } from '../../src/surfaces/formats.js';
import type { Embedder, MemoryOptions, RankingCandidates, RankingWeights, StorageDriver, Tokenizer } from '../../src/contracts/types.js';
import { FEATURES } from '../../src/retrieval/ranking.js';
import { type BenchConversation, DATA, loadAdversarial, loadLocomo, loadLongMemEval, loadRealtalk } from './datasets.js';
import { type BaselineCorpus, baselineCorpus, scoreAgainstBaselines } from './equal-tokens.js';
import { Table } from './metrics.js';
import { type Example, loss, toJson, train } from './train-ranking.js';

interface Loaded { set: string; conv: BenchConversation; driver: StorageDriver; corpus: BaselineCorpus; examples: Example[] }

const BASELINES = ['ev bm25', 'ev vector', 'ev hybrid'];

/** The sets: dev ones by name (leave-one-set-out), and the held-out part. */
function sets(lme: number, holdout: boolean): Record<string, BenchConversation[]> {
  const locomo = loadLocomo();
  const realtalk = loadRealtalk();
  if (holdout) {
    return {
      'locomo-holdout': locomo.filter((c) => c.id === 'conv-43'),
      'realtalk-holdout': realtalk.filter((c) => c.id === 'Chat_8_Akib_Muhhamed'),
      'lme-dev60-holdout': loadLongMemEval(),
    };
  }
  const train = parseLongMemEval(JSON.parse(gunzipSync(readFileSync(resolve(DATA, 'longmemeval/longmemeval_s_train.json.gz'))).toString('utf8')));
  // Every k-th question of the 337, so each type keeps its share.
  const step = train.length / Math.min(lme, train.length);
  return {
    locomo: locomo.filter((c) => c.id !== 'conv-43'),
    realtalk: realtalk.filter((c) => c.id !== 'Chat_8_Akib_Muhhamed'),
    adversarial: loadAdversarial(),
    lme: Array.from({ length: Math.min(lme, train.length) }, (_, i) => train[Math.floor(i * step)]!),
  };
}

/**
 * One conversation stored (flushed after each batch, as a chat would be), then each question asked once: its
 * candidates' features with the evidence as labels. The memory stays open on `driver` for asking again.
 */
export async function ingest(set: string, conv: BenchConversation, opts: MemoryOptions, tokenizer: Tokenizer, queryEmbedder: Embedder | null): Promise<Loaded> {
  const driver = await sqliteWasm()();
  let last: RankingCandidates | null = null;
  const memory = await createMemory({ ...opts, storage: driver, ranking: { onCandidates: (c) => { last = c; } } });
  for (const batch of conv.batches) {
    await memory.onTurnComplete({ conversationId: conv.id, messages: batch });
    await memory.flush();
  }
  // --embed=cached: keep the stored turns' vectors for the next run.
  const e = opts.embedder as { save?: () => void } | undefined;
  if (e && typeof e.save === 'function') e.save();
  const examples: Example[] = [];
  for (const q of conv.questions) {
    last = null;
    await memory.onMessageInbound({ conversationId: conv.id, message: { role: 'user', content: q.question }, ...(q.now ? { now: q.now } : {}) });
    const seen = last as RankingCandidates | null;
    if (!seen || q.evidence.length === 0) continue;
    const wanted = new Set(q.evidence);
    examples.push({ set, rows: seen.candidates.map((c) => c.features), labels: seen.candidates.map((c) => wanted.has(c.id)) });
  }
  return { set, conv, driver, corpus: await baselineCorpus(driver, conv, tokenizer, queryEmbedder), examples };
}

/** Asks every question of the loaded conversations again with `weights`, into `table`. */
async function evaluate(loaded: readonly Loaded[], weights: RankingWeights, opts: MemoryOptions, table: Table): Promise<void> {
  for (const l of loaded) {
    const memory = await createMemory({ ...opts, storage: l.driver, ranking: { weights } });
    for (const q of l.conv.questions) {
      const ctx = await memory.onMessageInbound({ conversationId: l.conv.id, message: { role: 'user', content: q.question }, ...(q.now ? { now: q.now } : {}) });
      await scoreAgainstBaselines(table, l.corpus, q, ctx);
      for (const kind of new Set(ctx.manifest.map((e) => e.kind))) table.addOnly('ALL', `tokens ${kind}`, ctx.manifest.filter((e) => e.kind === kind).reduce((n, e) => n + e.tokens, 0));
    }
  }
}

/** --l2=x, --drop=feature,feature (trained without them). */
function trainOptions(args: Map<string, string>) {
  const drop = new Set(args.get('drop')?.split(',') ?? []);
  return { ...(args.has('l2') ? { l2: Number(args.get('l2')) } : {}), features: FEATURES.filter((f) => !drop.has(f)) };
}

/** The aim per set: the best baseline + 0.05, or half its misses closed where that is less. */
function aim(best: number): number {
  return Math.min(best + 0.05, best + (1 - best) / 2);
}

function report(name: string, table: Table, floor?: Table): void {
  table.print(name, ['evidence', 'ev recent', 'ev bm25', 'ev vector', 'ev hybrid', 'answer', 'ans bm25', 'ans vector', 'ans hybrid', 'tokens'], { tokens: 0 });
  const all = (c: string) => table.mean('ALL', c);
  const best = Math.max(...BASELINES.map(all).filter((x) => !Number.isNaN(x)));
  const bestAnswer = Math.max(...['ans bm25', 'ans vector', 'ans hybrid'].map(all).filter((x) => !Number.isNaN(x)));
  const floorText = floor ? ` · hybrid floor (bm25Rrf = vecRrf only) ${floor.mean('ALL', 'evidence').toFixed(3)}` : '';
  console.log(`tokens per question by kind: ${['recall', 'summary', 'topics', 'history', 'recent', 'message'].map((k) => `${k} ${(table.sum('ALL', `tokens ${k}`) / table.count('ALL', 'evidence')).toFixed(0)}`).join(' · ')}`);
  console.log(`${name}: pagewise ${all('evidence').toFixed(3)} vs best baseline ${best.toFixed(3)} (aim ${aim(best).toFixed(3)}: ${all('evidence') >= aim(best) ? 'met' : 'not met'})${floorText} · answer ${all('answer').toFixed(3)} vs ${bestAnswer.toFixed(3)} · tokens ${all('tokens').toFixed(0)}`);
}

export async function rankingBench(args: Map<string, string>, opts: MemoryOptions, tokenizer: Tokenizer, queryEmbedder: Embedder | null): Promise<void> {
  const lme = Number(args.get('lme') ?? 60);
  const dev = sets(lme, false);
  const chosen = (args.get('sets') ?? 'locomo,realtalk,adversarial,lme').split(',');
  const loaded: Loaded[] = [];
  for (const name of chosen) {
    const t = performance.now();
    for (const conv of dev[name] ?? []) loaded.push(await ingest(name, conv, opts, tokenizer, queryEmbedder));
    console.log(`ingested ${name}: ${dev[name]?.length ?? 0} conversations, ${loaded.filter((l) => l.set === name).reduce((n, l) => n + l.examples.length, 0)} questions with candidates, ${((performance.now() - t) / 1000).toFixed(0)} s`);
  }
  const examples = loaded.flatMap((l) => l.examples);
  const recallAt = (name: string) => {
    const ex = examples.filter((e) => e.set === name);
    return ex.filter((e) => e.labels.some(Boolean)).length / Math.max(1, ex.length);
  };
  for (const name of chosen) console.log(`${name}: evidence among the candidates in ${(100 * recallAt(name)).toFixed(1)}% of questions`);
  // --write: the shipped weights, trained on every dev set (written first, so that they can be tested while the
  // left-out figures are computed).
  let shipped: RankingWeights | null = null;
  if (args.has('write')) {
    const w = train(examples, trainOptions(args));
    shipped = toJson(w, `dev sets: ${chosen.map((n) => `${n} (${examples.filter((e) => e.set === n).length} questions)`).join(', ')}; l2 ${trainOptions(args).l2 ?? 0.01}`);
    writeFileSync(new URL('../../src/retrieval/ranking-weights.json', import.meta.url), `${JSON.stringify(shipped, null, 2)}\n`);
    console.log(`\nwrote src/retrieval/ranking-weights.json: ${JSON.stringify(shipped.weights)}`);
  }
  const floorWeights: RankingWeights = { format: 'pagewise-ranking/1', weights: { bm25Rrf: 20, vecRrf: 20 } };
  // --l2s=a,b,c: leave-one-set-out for each penalty, one line per set (choosing it by left-out figures only).
  for (const l2 of args.get('l2s')?.split(',').map(Number) ?? []) {
    const line: string[] = [];
    for (const name of chosen) {
      const w = train(examples.filter((e) => e.set !== name), { ...trainOptions(args), l2 });
      const table = new Table();
      await evaluate(loaded.filter((l) => l.set === name), toJson(w, ''), opts, table);
      const best = Math.max(...BASELINES.map((c) => table.mean('ALL', c)).filter((x) => !Number.isNaN(x)));
      line.push(`${name} ${table.mean('ALL', 'evidence').toFixed(3)} (best baseline ${best.toFixed(3)})`);
    }
    console.log(`l2 ${l2}: ${line.join(' · ')}`);
  }
  if (args.has('l2s')) return;
  for (const name of chosen) {
    const rest = examples.filter((e) => e.set !== name);
    const t = performance.now();
    const w = train(rest, trainOptions(args));
    console.log(`(trained in ${((performance.now() - t) / 1000).toFixed(1)} s)`);
    console.log(`\nleave out ${name}: trained on ${[...new Set(rest.map((e) => e.set))].join(', ')} (${rest.length} questions); loss on ${name} ${loss(examples.filter((e) => e.set === name), w).toFixed(3)}`);
    console.log(`weights: ${FEATURES.map((f, j) => `${f} ${w[j]!.toFixed(2)}`).join(' · ')}`);
    const table = new Table();
    await evaluate(loaded.filter((l) => l.set === name), toJson(w, `all dev sets but ${name}`), opts, table);
    let floor: Table | undefined;
    if (args.has('floor')) { floor = new Table(); await evaluate(loaded.filter((l) => l.set === name), floorWeights, opts, floor); }
    report(`${name}, left out (weights never saw it)`, table, floor);
  }
  if (shipped && args.has('holdout')) {
    const held = sets(lme, true);
    for (const [name, convs] of Object.entries(held)) {
      const table = new Table();
      const part: Loaded[] = [];
      for (const conv of convs) part.push(await ingest(name, conv, opts, tokenizer, queryEmbedder));
      await evaluate(part, shipped, opts, table);
      report(`${name} (held out: never trained or tuned on)`, table);
    }
  }
}
