// Chat-shaped latency: each LoCoMo exchange replayed as a chat does it — onMessageInbound with the user's message,
// then onTurnComplete with the exchange — back to back, with the background queue (embedding, compaction) running
// live behind them. The same replay with embeddings off gives the baseline.
import { createMemory } from '../../src/index.js';
import type { EmbedderOptions } from '../../src/contracts/types.js';
import { loadLocomo } from './datasets.js';
import { percentile } from './metrics.js';

interface Run { inbound: number[]; complete: number[]; drain: number; turns: number }

async function replay(embedder: EmbedderOptions): Promise<Run> {
  const run: Run = { inbound: [], complete: [], drain: 0, turns: 0 };
  for (const conv of loadLocomo()) {
    const memory = await createMemory({ contextWindow: 8192, reserveTokens: 1024, embedder });
    // The model loads once per process, before the first chat (as an app does at start); not a request's cost.
    await memory.embeddingStatus(conv.id).catch(() => undefined);
    for (const batch of conv.batches) {
      const message = batch.find((m) => m.role === 'user') ?? batch[0]!;
      let t = performance.now();
      await memory.onMessageInbound({ conversationId: conv.id, message });
      run.inbound.push(performance.now() - t);
      t = performance.now();
      await memory.onTurnComplete({ conversationId: conv.id, messages: batch });
      run.complete.push(performance.now() - t);
      run.turns += batch.length;
    }
    const t = performance.now();
    await memory.flush();
    run.drain += performance.now() - t;
    await memory.close();
  }
  return run;
}

const fmt = (l: number[]) => `p50 ${percentile(l, 50).toFixed(1)} ms, p95 ${percentile(l, 95).toFixed(1)} ms, max ${Math.max(...l).toFixed(0)} ms`;

export async function chatReplayBench(embedder: EmbedderOptions): Promise<void> {
  // Warm the model so that its one-time load is not inside the first request.
  if (embedder !== false) {
    const warm = await createMemory({ embedder });
    await warm.onMessageInbound({ conversationId: 'warm', message: { role: 'user', content: 'hello' } });
    await warm.close();
  }
  const off = await replay(false);
  const on = await replay(embedder);
  console.log(`\nChat replay: LoCoMo ${loadLocomo().length} conversations, ${on.turns} turns as ${on.inbound.length} exchanges (question, then the exchange stored), back to back, background queue live`);
  console.log(`embeddings off   onMessageInbound ${fmt(off.inbound)} · onTurnComplete ${fmt(off.complete)}`);
  console.log(`embeddings live  onMessageInbound ${fmt(on.inbound)} · onTurnComplete ${fmt(on.complete)} · queue drained ${(on.drain / 1000).toFixed(1)} s after the last exchange`);
  console.log(`ratio (live / off, p95): onMessageInbound ${(percentile(on.inbound, 95) / percentile(off.inbound, 95)).toFixed(2)}× (aim ≤ 2.5×), onTurnComplete ${(percentile(on.complete, 95) / percentile(off.complete, 95)).toFixed(2)}× (aim ≤ 1.5×)`);
}
