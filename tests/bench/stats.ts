// npm run bench -- --only=stats. Overhead of recording usage and health (memory.stats(), OpenTelemetry): each hook's time through the wrapper (outer, measured here) against the engine's own
// call (inner: the latency stats() reports), on a file database, over a few hundred calls.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createMemory } from '../../src/index.js';
import { fileStorage } from '../../src/storage/node-file.js';

const pct = (xs: number[], q: number) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!; };
async function run(label: string, storage: 'file' | 'memory', n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'ovh-'));
  const m = await createMemory({ embedder: false, contextWindow: 4096, ...(storage === 'file' ? { storage: fileStorage(join(dir, 'm.sqlite3')) } : {}) });
  const outer = { onMessageInbound: [] as number[], onTurnComplete: [] as number[] };
  for (let i = 0; i < n; i++) {
    const q = { role: 'user' as const, content: `Question ${i} about the ${['postgres', 'lisbon', 'sourdough', 'rent'][i % 4]} plan, step ${i % 7}?` };
    let t = performance.now();
    await m.onMessageInbound({ conversationId: 'c', message: q });
    outer.onMessageInbound.push(performance.now() - t);
    t = performance.now();
    await m.onTurnComplete({ conversationId: 'c', messages: [q, { role: 'assistant', content: `Answer ${i}: we keep option ${i * 3}, it fits the schedule.` }] });
    outer.onTurnComplete.push(performance.now() - t);
  }
  const s = await m.stats();
  for (const k of ['onMessageInbound', 'onTurnComplete'] as const) {
    const inner = s.latencyMs[k]!;
    const o = outer[k];
    console.log(`${label} ${k}: calls ${o.length}; outer p50 ${pct(o, 0.5).toFixed(2)} p95 ${pct(o, 0.95).toFixed(2)} ms; inner p50 ${inner.p50.toFixed(2)} p95 ${inner.p95.toFixed(2)} ms; overhead p50 ${(pct(o, 0.5) - inner.p50).toFixed(2)} ms`);
  }
  await m.close();
  rmSync(dir, { recursive: true, force: true });
}
/** Each hook through the wrapper against the engine's own time, in memory, on a file, and with an OpenTelemetry SDK. */
export async function statsBench(args: Map<string, string>): Promise<void> {
  const n = Number(args.get('calls') ?? 300);
  console.log('\n## Usage and health: what recording costs a hook (outer: the call as the app sees it; inner: the engine, as stats() reports it)');
  await run('memory ', 'memory', n);
  await run('file   ', 'file', n);
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(provider);
  await run('file+otel', 'file', n);
  console.log(`spans: ${exporter.getFinishedSpans().length}`);
  trace.disable();
  await provider.shutdown();
}
