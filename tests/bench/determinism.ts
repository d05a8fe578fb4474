// npx tsx tests/bench/determinism.ts --runs=3 [--twice=off] [--window=8192 --reserve=1024 --memory=N] [--flush=each|end|alternate] [--embed=off|broken] [--slow=K] [--tagger=embedding]
// Ingests the adversarial conversation into a fresh memory N times (as recallBench does: onTurnComplete per batch, then
// flush) and asks every probe; prints the probes whose context differs between runs (first differing manifest entry)
// and, asking each probe twice against the same memory, whether the same state gave two contexts.
import { createMemory } from '../../src/index.js';
import { messageText } from '../../src/common/messages.js';
import { sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import type { ChatMessage, ManifestEntry, MemoryOptions } from '../../src/contracts/types.js';
import { loadAdversarial } from './datasets.js';
import { evidenceShare } from './metrics.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const runs = Number(args.get('runs') ?? 3);
const twice = args.get('twice') !== 'off';
// --flush=end: one flush after the whole conversation instead of one per batch (the background runs as it can);
// --flush=alternate: runs 1, 3, … flush per batch, runs 2, 4, … at the end (the same turns, background at other moments).
const flushMode = args.get('flush') ?? 'each';
let flushEach = flushMode !== 'end';
const options: MemoryOptions = { contextWindow: Number(args.get('window') ?? 8192), reserveTokens: Number(args.get('reserve') ?? 1024), ...(args.has('memory') ? { memoryTokens: Number(args.get('memory')) } : {}), compaction: true, embedder: args.get('embed') === 'off' ? false : args.get('embed') === 'broken' ? { provider: 'transformers', model: 'no-such-model', localModelPath: '/nonexistent' } : { provider: 'transformers' }, ...(args.has('tagger') ? { tagger: args.get('tagger') as 'embedding' } : {}) };
const [conv] = loadAdversarial();
// --slow=K: the clock runs K times faster, as it would on a machine K times slower (or busy with other work).
const slow = Number(args.get('slow') ?? 1);
if (slow !== 1) {
  const now = performance.now.bind(performance);
  const t0 = now();
  performance.now = () => t0 + (now() - t0) * slow;
}
let hard = 0;

interface Answer { manifest: string[]; text: string; notes: string[]; evidence: number | null }
// Summary ids are random (sum_<uuid>): a summary is named by its level and the turns it covers instead.
const entry = (e: ManifestEntry) => `${e.kind}:${e.sourceIds.join(',')}${e.covers ? `#L${e.level}:${e.covers.fromSeq}-${e.covers.toSeq}` : ''}`;
const stripIds = (text: string) => text.replace(/sum_[0-9a-f-]{36}/g, 'sum_*');

async function once(): Promise<{ first: Answer[]; second: Answer[]; state: string }> {
  const memory = await createMemory({ ...options, storage: sqliteWasm() });
  for (const batch of conv!.batches) {
    const report = await memory.onTurnComplete({ conversationId: conv!.id, messages: batch });
    if (report.compaction) hard++;
    if (flushEach) await memory.flush();
  }
  await memory.flush();
  const status = await memory.embeddingStatus(conv!.id);
  const ask = async () => {
    const out: Answer[] = [];
    for (const q of conv!.questions) {
      const message: ChatMessage = { role: 'user', content: q.question };
      const ctx = await memory.onMessageInbound({ conversationId: conv!.id, message, ...(q.now ? { now: q.now } : {}) });
      const present = new Set(ctx.manifest.filter((e) => e.kind !== 'message').flatMap((e) => e.sourceIds));
      const share = q.groups ? q.groups.filter((g) => g.some((id) => present.has(id))).length / q.groups.length : evidenceShare(q.evidence, present);
      out.push({ manifest: ctx.manifest.map(entry), text: stripIds([ctx.prependText, ...ctx.messages.map(messageText)].join('\n')), notes: ctx.notes ?? [], evidence: share });
    }
    return out;
  };
  const first = await ask();
  const second = twice ? await ask() : first;
  await memory.close();
  return { first, second, state: `embedded ${status.embedded}/${status.total}, ${hard} hard compactions` };
}

function diff(a: Answer, b: Answer): string | null {
  const n = Math.max(a.manifest.length, b.manifest.length);
  for (let i = 0; i < n; i++) if (a.manifest[i] !== b.manifest[i]) return `manifest[${i}]: ${a.manifest[i] ?? '(none)'}  vs  ${b.manifest[i] ?? '(none)'}`;
  if (a.text !== b.text) {
    let i = 0;
    while (a.text[i] === b.text[i]) i++;
    return `same manifest, text differs at ${i}: …${JSON.stringify(a.text.slice(Math.max(0, i - 40), i + 60))}  vs  …${JSON.stringify(b.text.slice(Math.max(0, i - 40), i + 60))}`;
  }
  return null;
}

const results: Awaited<ReturnType<typeof once>>[] = [];
for (let r = 0; r < runs; r++) {
  hard = 0;
  if (flushMode === 'alternate') flushEach = r % 2 === 0;
  const t = performance.now();
  const res = await once();
  results.push(res);
  const scored = res.first.flatMap((a) => (a.evidence === null ? [] : [a.evidence]));
  const mean = scored.reduce((s, x) => s + x, 0) / scored.length;
  console.log(`run ${r + 1}: evidence ${mean.toFixed(3)}, ${res.state}, ${((performance.now() - t) / 1000).toFixed(1)} s`);
  res.first.forEach((a, i) => { if (a.notes.length) console.log(`  probe ${i} notes: ${a.notes.join(' | ')}`); });
  if (twice) res.first.forEach((a, i) => { const d = diff(a, res.second[i]!); if (d) console.log(`  same state, probe ${i} asked twice differs: ${d}`); });
}
let differing = 0;
conv!.questions.forEach((q, i) => {
  for (let r = 1; r < runs; r++) {
    const d = diff(results[0]!.first[i]!, results[r]!.first[i]!);
    if (d) {
      differing++;
      console.log(`probe ${i} (${q.category}: ${q.question.slice(0, 60)}) run 1 vs run ${r + 1}: ${d}  (evidence ${results[0]!.first[i]!.evidence?.toFixed(2)} vs ${results[r]!.first[i]!.evidence?.toFixed(2)})`);
      break;
    }
  }
});
console.log(`${differing} of ${conv!.questions.length} probes differ between runs`);
