// One memory serving several conversations at once: the latency of each call when the conversations' calls are
// interleaved (each conversation a client that awaits its own calls, all of them at once, as users of one MCP server
// or proxy) against the same calls run alone (one conversation after another), with the old single queue
// ('global': every call waits for every earlier one) and with the keyed scheduler ('keyed': a call waits only for
// earlier calls on its conversation). Each conversation: an exchange stored (onTurnComplete), then a question
// (onMessageInbound), --turns stored turns in all; compaction on, in a window small enough that it happens (soft in
// the background, hard inside onTurnComplete); the extractive summarizer; no embedder unless --embedder (the bundled
// one, USE-Lite in a worker thread).
//
//   npx tsx tests/bench/concurrency.ts [--conversations=4] [--turns=500] [--window=4096] [--summarizer-ms=0] [--embedder]
//
// --summarizer-ms=N: a summarizer that answers after N ms (an LLM's wait), in place of the extractive one.
import { createMemory } from '../../src/index.js';
import { SCHEDULER_MODE, type SchedulerMode } from '../../src/engine/scheduler.js';
import type { ChatMessage, MemoryOptions, Summarizer } from '../../src/contracts/types.js';
import { syntheticChat } from './long-run.js';
import { percentile } from './metrics.js';

interface Step {
  exchange: ChatMessage[];
  question: ChatMessage;
}

interface Figures {
  label: string;
  calls: number[];
  inbound: number[];
  complete: number[];
  wallMs: number;
  flushMs: number;
  compactions: number;
}

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const CONVERSATIONS = Number(args.get('conversations') ?? 4);
const TURNS = Number(args.get('turns') ?? 500);
const WINDOW = Number(args.get('window') ?? 4096);
const SUMMARIZER_MS = Number(args.get('summarizer-ms') ?? 0);
const EMBEDDER = args.has('embedder');

/** Each conversation's calls, made once: every run replays the same ones. */
function script(): Map<string, Step[]> {
  const out = new Map<string, Step[]>();
  for (let c = 0; c < CONVERSATIONS; c++) {
    const chat = syntheticChat(101 + c);
    out.set(`conversation-${c}`, Array.from({ length: Math.ceil(TURNS / 2) }, (_, i) => ({ exchange: chat.next(i), question: chat.question(i).message })));
  }
  return out;
}

/** An LLM-like summarizer: the first sentence of each item, after a wait. */
function waitingSummarizer(ms: number): Summarizer {
  return {
    name: `waits-${ms}ms`, version: 1,
    async summarize(request) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return { text: request.items.map((i) => `${i.speaker}: ${i.text.split(/(?<=[.?!])\s/)[0]}`).join(' ').slice(0, 600) };
    },
  };
}

async function run(label: string, mode: SchedulerMode, interleaved: boolean, steps: Map<string, Step[]>): Promise<Figures> {
  const options = {
    contextWindow: WINDOW,
    ...(EMBEDDER ? {} : { embedder: false }),
    ...(SUMMARIZER_MS > 0 ? { summarizer: waitingSummarizer(SUMMARIZER_MS) } : {}),
    [SCHEDULER_MODE]: mode,
  } as MemoryOptions;
  const memory = await createMemory(options);
  const f: Figures = { label, calls: [], inbound: [], complete: [], wallMs: 0, flushMs: 0, compactions: 0 };
  const timed = async <T>(list: number[], call: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await call();
    const ms = performance.now() - started;
    list.push(ms);
    f.calls.push(ms);
    return result;
  };
  // The tokenizer and the date parser load on first use: not a figure of either scheduler.
  await memory.onMessageInbound({ conversationId: 'warm-up', message: { role: 'user', content: 'Hello, what did we decide on Friday?' } });
  const conversation = async (id: string) => {
    for (const step of steps.get(id)!) {
      const report = await timed(f.complete, () => memory.onTurnComplete({ conversationId: id, messages: step.exchange }));
      if (report.compaction) f.compactions++;
      await timed(f.inbound, () => memory.onMessageInbound({ conversationId: id, message: step.question }));
    }
  };
  const started = performance.now();
  if (interleaved) await Promise.all([...steps.keys()].map(conversation));
  else for (const id of steps.keys()) await conversation(id);
  f.wallMs = performance.now() - started;
  const flushing = performance.now();
  f.compactions += (await memory.flush()).length;
  f.flushMs = performance.now() - flushing;
  await memory.close();
  return f;
}

const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1)).padStart(6);

function print(f: Figures): void {
  const row = (name: string, xs: number[]) =>
    `${name.padEnd(16)} n ${String(xs.length).padStart(5)}  p50 ${fmt(percentile(xs, 50))}  p95 ${fmt(percentile(xs, 95))}  max ${fmt(Math.max(...xs))}  >100ms ${String(xs.filter((x) => x > 100).length).padStart(4)}`;
  console.log(`\n${f.label}: calls ${(f.wallMs / 1000).toFixed(1)} s, then background ${(f.flushMs / 1000).toFixed(1)} s; ${f.compactions} compactions`);
  console.log(`  ${row('all calls', f.calls)}`);
  console.log(`  ${row('onTurnComplete', f.complete)}`);
  console.log(`  ${row('onMessageInbound', f.inbound)}`);
}

const steps = script();
console.log(`pagewise concurrency bench · node ${process.version} · ${new Date().toISOString()}`);
console.log(`${CONVERSATIONS} conversations × ${TURNS} turns (${Math.ceil(TURNS / 2)} exchanges, each onTurnComplete then onMessageInbound), contextWindow ${WINDOW}, ` +
  `summarizer ${SUMMARIZER_MS > 0 ? `answering after ${SUMMARIZER_MS} ms` : 'extractive'}, ${EMBEDDER ? 'the bundled embedder' : 'no embedder'}; times per call in ms`);
for (const [label, mode, interleaved] of [
  ['before (single queue), alone', 'global', false],
  ['before (single queue), interleaved', 'global', true],
  ['after (keyed), alone', 'keyed', false],
  ['after (keyed), interleaved', 'keyed', true],
] as const) {
  print(await run(label, mode, interleaved, steps));
}
