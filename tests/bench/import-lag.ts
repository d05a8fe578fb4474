// npx tsx tests/bench/import-lag.ts [--turns=100000,1000000] [--valid=20000] [--compaction=off]
// How long memory.import() holds the event loop and other calls. For each --turns count: an import whose last turn
// is invalid (refused, nothing stored), while a 5 ms timer records the event loop's longest lag and another
// conversation is read (memory.turns) in a loop, each read's wait recorded. Then a valid import of --valid turns
// (stored, tagged), measured the same way, then the background work it leaves (flush()). Embeddings off, in-memory
// sqlite-wasm; --compaction=off turns compaction off.
import { createMemory } from '../../src/index.js';
import type { ExportData, Memory } from '../../src/index.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const COUNTS = (args.get('turns') ?? '100000').split(',').map(Number);
const VALID = Number(args.get('valid') ?? 20_000);
const TICK = 5;

function data(n: number, lastInvalid: boolean): ExportData {
  const start = Date.UTC(2026, 0, 1);
  const turns = Array.from({ length: n }, (_, i) => ({
    id: `t${i}`, role: (i % 2 ? 'assistant' : 'user') as 'user' | 'assistant',
    content: `Message ${i}: when should I water the beans in bed ${i % 13}, given the clay soil and the heat this week?`,
    createdAt: new Date(start + i * 1000).toISOString(),
  }));
  if (lastInvalid) (turns[n - 1] as { role: string }).role = 'robot';
  return { format: 'pagewise', version: 1, exportedAt: new Date().toISOString(), aliases: [], conversations: [{ id: `big-${n}`, createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', pins: [], aliases: [], turns }] };
}

// One timer for the whole run: a lag is counted in the phase during which the timer saw it.
let maxLag = 0;
let last = performance.now();
const timer = setInterval(() => {
  const now = performance.now();
  maxLag = Math.max(maxLag, now - last - TICK);
  last = now;
}, TICK);

type Step = [label: string, work: () => Promise<string>];

/**
 * The steps in turn while another conversation is read in a loop: per step, the event loop's longest lag and the
 * longest wait of a read asked during it (the last step also counts what it left, until the reader stops).
 */
async function measure(memory: Memory, steps: Step[]) {
  let finished = false;
  let step = 0;
  const waits: number[][] = steps.map(() => []);
  const reader = (async () => {
    while (!finished) {
      const asked = performance.now();
      const mine = waits[step]!;
      await memory.turns('other', { limit: 2 });
      mine.push(performance.now() - asked);
      await new Promise((ok) => setTimeout(ok, 10));
    }
  })();
  const rows: { label: string; outcome: string; took: number; maxLag: number }[] = [];
  // From here: the time spent making the input is not a lag.
  last = performance.now();
  for (const [label, work] of steps) {
    maxLag = 0;
    const started = performance.now();
    const outcome = await work();
    rows.push({ label, outcome, took: performance.now() - started, maxLag });
    if (step < steps.length - 1) step++;
  }
  maxLag = 0;
  finished = true;
  await reader;
  rows[rows.length - 1]!.maxLag = Math.max(rows[rows.length - 1]!.maxLag, maxLag);
  for (const [i, r] of rows.entries()) {
    console.log(`${r.label.padEnd(26)} ${r.outcome.padEnd(22)} ${(r.took / 1000).toFixed(1).padStart(6)} s   max loop lag ${r.maxLag.toFixed(0).padStart(5)} ms   `
      + `other reads ${String(waits[i]!.length).padStart(4)}, longest wait ${Math.max(0, ...waits[i]!).toFixed(0).padStart(5)} ms`);
  }
}

const memory = await createMemory({ embedder: false, compaction: args.get('compaction') !== 'off' });
try {
  await memory.onTurnComplete({ conversationId: 'other', messages: [{ role: 'user', content: 'Another conversation.' }, { role: 'assistant', content: 'Read while the import runs.' }] });
  const importing = (input: ExportData) => () => memory.import(input).then((r) => `stored ${r.turns}`, (e: { code?: string }) => `refused ${e.code}`);
  for (const n of COUNTS) await measure(memory, [[`${n} turns, last invalid`, importing(data(n, true))]]);
  // What a valid import leaves to the background (compaction when due, vectors when on), measured apart.
  if (VALID > 0) await measure(memory, [[`${VALID} turns, valid`, importing(data(VALID, false))], ['  then flush()', async () => { await memory.flush(); return 'background work'; }]]);
  console.log(`rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`);
} finally {
  clearInterval(timer);
  await memory.close();
}
