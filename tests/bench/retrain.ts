// Retrains the ranking on your own labelled conversations, in the formats `pagewise import` reads (LoCoMo JSON: one
// conversation with `qa` and evidence ids; LongMemEval JSON: questions with haystacks and `has_answer` turns):
//   npx tsx tests/bench/retrain.ts --locomo=a.json,b.json --longmemeval=lme.json --out=weights.json [--window=8192]
// then createMemory({ ranking: { weights: JSON.parse(readFileSync('weights.json', 'utf8')) } }). Each file is one
// set; sets weigh the same. Embeddings are the shipped model's (as the memory you use them in should be).
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { parseLocomo, parseLongMemEval } from '../../src/surfaces/formats.js';
import { createTokenizer } from '../../src/tokens/tokenizer.js';
import { FEATURES } from '../../src/retrieval/ranking.js';
import { ingest } from './ranking.js';
import { toJson, train } from './train-ranking.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const read = (file: string) => JSON.parse((file.endsWith('.gz') ? gunzipSync(readFileSync(file)) : readFileSync(file)).toString('utf8')) as unknown;
const files = [
  ...(args.get('locomo')?.split(',') ?? []).map((f) => ({ f, convs: [parseLocomo(read(f), f)] })),
  ...(args.get('longmemeval')?.split(',') ?? []).map((f) => ({ f, convs: parseLongMemEval(read(f)) })),
];
const out = args.get('out');
if (files.length === 0 || !out) {
  console.error('usage: npx tsx tests/bench/retrain.ts --locomo=a.json[,b.json] --longmemeval=c.json --out=weights.json [--window=8192]');
  process.exit(2);
}
const tokenizer = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
const opts = { contextWindow: Number(args.get('window') ?? 8192) };
const examples = [];
for (const { f, convs } of files) {
  for (const conv of convs) examples.push(...(await ingest(f, conv, opts, tokenizer, null)).examples);
  console.error(`${f}: ${examples.filter((e) => e.set === f).length} questions with candidates`);
}
const w = train(examples);
writeFileSync(out, `${JSON.stringify(toJson(w, files.map((x) => x.f).join(', ')), null, 2)}\n`);
console.error(`wrote ${out}: ${FEATURES.map((f, j) => `${f} ${w[j]!.toFixed(2)}`).join(' · ')}`);
