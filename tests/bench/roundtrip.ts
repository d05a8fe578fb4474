// npx tsx tests/bench/roundtrip.ts [--compaction=off]
// Export and import round trip on LoCoMo (5 conversations, embeddings off): time and size, every turn compared, and
// each question asked of the original and the imported memory (same recalled turns; evidence share of each). The
// imported memory rebuilds tags and summaries in one pass, not turn by turn as the original did.
import { createMemory } from '../../src/index.js';
import { loadLocomo } from './datasets.js';
const convs = loadLocomo();
const a = await createMemory({ embedder: false, contextWindow: 8192, compaction: !process.argv.includes('--compaction=off') });
for (const c of convs) for (const b of c.batches) await a.onTurnComplete({ conversationId: c.id, messages: b });
await a.flush();
let t = performance.now();
const data = await a.export();
const exportMs = performance.now() - t;
const json = JSON.stringify(data);
const b = await createMemory({ embedder: false, contextWindow: 8192, compaction: !process.argv.includes('--compaction=off') });
t = performance.now();
const report = await b.import(JSON.parse(json));
const importMs = performance.now() - t;
await b.flush();
let turnsEqual = 0, turnsTotal = 0, same = 0, asked = 0, evA = 0, evB = 0, evN = 0;
for (const c of convs) {
  const x = await a.turns(c.id, { limit: 100000 }), y = await b.turns(c.id, { limit: 100000 });
  turnsTotal += x.length;
  x.forEach((t, i) => { if (JSON.stringify(t) === JSON.stringify(y[i])) turnsEqual++; });
  for (const q of c.questions) {
    const m = { role: 'user' as const, content: q.question };
    const ra = await a.onMessageInbound({ conversationId: c.id, message: m, now: '2026-01-01T00:00:00Z' });
    const rb = await b.onMessageInbound({ conversationId: c.id, message: m, now: '2026-01-01T00:00:00Z' });
    asked++;
    if (q.evidence.length > 0) {
      const share = (r: typeof ra) => { const p = new Set(r.manifest.filter((e) => e.kind !== 'message').flatMap((e) => e.sourceIds)); return q.evidence.filter((e) => p.has(e)).length / q.evidence.length; };
      evA += share(ra); evB += share(rb); evN++;
    }
    const ids = (r: typeof ra) => JSON.stringify(r.manifest.filter((e) => e.kind === 'recall').flatMap((e) => e.sourceIds).sort()); if (ids(ra) === ids(rb)) same++;
  }
}
const again = await b.import(JSON.parse(json));
console.log(`LoCoMo (5 conversations): export ${exportMs.toFixed(0)} ms, ${(json.length / 1e6).toFixed(2)} MB JSON; import ${importMs.toFixed(0)} ms (${report.turns} turns); turns equal ${turnsEqual}/${turnsTotal}; questions recalling the same turns ${same}/${asked}; evidence share original ${(evA / evN).toFixed(3)} vs imported ${(evB / evN).toFixed(3)}; import again: ${JSON.stringify(again)}`);
await a.close(); await b.close();
