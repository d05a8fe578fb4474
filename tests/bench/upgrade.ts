// An upgrade's cost (npm run bench -- --only=upgrade): (a) migrating a 100,000-turn database from the schema before this
// release's to the current one — a migration only adds tables and indexes, so it should cost the same on 100,000 turns as on none;
// (b) rebuilding the summaries an older summarizer version made: one slice, the whole rebuild, and a hook's latency on
// the conversation being rebuilt while it runs, against the same hooks with nothing running.
// Options: --upgrade-turns=100000 (a) · --rebuild-conversations=6 --rebuild-pairs=150 (b: exchanges per conversation).
//
// (a) is built fast and honestly at the schema before this release's (SCHEMA_VERSION - 1): those migrations run on a file, then the turns go in through the
// turn store (the engine's own statements: turns, full-text index, conversations) in transactions of 2,000, without
// tags or summaries (derived data a migration does not touch). Then the file is opened again and migrate() timed.
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXTRACTIVE_VERSION, extractiveSummarizer } from '../../src/compaction/extractive.js';
import { createMemory } from '../../src/index.js';
import { fileStorage } from '../../src/storage/node-file.js';
import { MIGRATIONS, SCHEMA_VERSION, migrate } from '../../src/store/schema.js';
import { createTurnStore, type NewTurn } from '../../src/store/turn-store.js';
import { createTokenizer } from '../../src/tokens/tokenizer.js';
import type { ChatMessage, Summarizer } from '../../src/contracts/types.js';
import type { Memory } from '../../src/contracts/memory.js';
import { percentile } from './metrics.js';

const ms = (t: number) => `${t.toFixed(t < 10 ? 2 : 0)} ms`;
const WORDS = ['postgres', 'views', 'feed', 'marathon', 'Lisbon', 'sourdough', 'starter', 'tenant', 'rent', 'kubernetes', 'upgrade', 'invoice', 'Friday', 'budget', 'garden', 'hose'];

// The schema before this release's migration (the one that adds retention, usage, rebuild and sync tables).
const BEFORE = SCHEMA_VERSION - 1;

/** A file at schema BEFORE with `turns` turns in conversations of 1,000. */
async function atBefore(path: string, turns: number): Promise<void> {
  const driver = await fileStorage(path, { synchronous: 'normal' })();
  await driver.batch([{ sql: 'CREATE TABLE IF NOT EXISTS pagewise_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)' }]);
  for (let v = 0; v < BEFORE; v++) {
    await driver.batch([...MIGRATIONS[v]!.map((sql) => ({ sql })), { sql: "INSERT OR REPLACE INTO pagewise_meta (key, value) VALUES ('schema_version', ?)", params: [String(v + 1)] }]);
  }
  const store = createTurnStore(driver);
  const start = Date.UTC(2022, 0, 1);
  for (let i = 0; i < turns; i += 2_000) {
    const conversationId = `c${Math.floor(i / 1_000)}`;
    const batch: NewTurn[] = [];
    for (let k = i; k < Math.min(turns, i + 2_000); k++) {
      const text = `Turn ${k}: about ${WORDS[k % WORDS.length]} and ${WORDS[(k * 7) % WORDS.length]}, we decided to keep option ${k % 97} for ${k % 13 + 2} dollars.`;
      const message: ChatMessage = { role: k % 2 === 0 ? 'user' : 'assistant', content: text, id: `t${k}` };
      const at = start + k * 60_000;
      batch.push({ message, id: `t${k}`, text, contentHash: `h${k}`, createdAt: new Date(at).toISOString(), createdMs: at, tokens: 0 });
    }
    // Conversations of 1,000: a batch of 2,000 is two appends in a row.
    await store.append(conversationId, batch.slice(0, 1_000), null, new Date().toISOString());
    if (batch.length > 1_000) await store.append(`c${Math.floor(i / 1_000) + 1}`, batch.slice(1_000), null, new Date().toISOString());
  }
  await driver.close();
}

async function migrationBench(dir: string, turns: number): Promise<void> {
  const path = join(dir, 'before.sqlite3');
  const built = performance.now();
  await atBefore(path, turns);
  console.log(`(a) ${turns.toLocaleString('en')} turns at schema ${BEFORE} built in ${ms(performance.now() - built)} (${(statSync(path).size / 2 ** 20).toFixed(0)} MiB)`);
  const driver = await fileStorage(path)();
  const t = performance.now();
  await migrate(driver);
  const took = performance.now() - t;
  const version = (await driver.query<{ value: string }>("SELECT value FROM pagewise_meta WHERE key = 'schema_version'"))[0]!.value;
  await driver.close();
  // The same migration on an empty database, for scale.
  const empty = await fileStorage(join(dir, 'empty.sqlite3'))();
  await empty.batch([{ sql: 'CREATE TABLE IF NOT EXISTS pagewise_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)' }]);
  for (let v = 0; v < BEFORE; v++) await empty.batch([...MIGRATIONS[v]!.map((sql) => ({ sql })), { sql: "INSERT OR REPLACE INTO pagewise_meta (key, value) VALUES ('schema_version', ?)", params: [String(v + 1)] }]);
  const e = performance.now();
  await migrate(empty);
  const none = performance.now() - e;
  await empty.close();
  console.log(`    migrate() ${BEFORE} → ${version} (of ${SCHEMA_VERSION}): ${ms(took)} on ${turns.toLocaleString('en')} turns, ${ms(none)} on none`);
}

/** Older: the extractive summarizer under the previous version number. */
async function older(): Promise<Summarizer> {
  const real = extractiveSummarizer(await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 }));
  return { name: 'extractive', version: EXTRACTIVE_VERSION - 1, summarize: (r) => real.summarize(r) };
}

function exchange(c: number, i: number): ChatMessage[] {
  const w = (k: number) => WORDS[(i * 3 + c + k) % WORDS.length];
  return [
    { role: 'user', content: `About ${w(0)} and ${w(1)}: question ${i}, what should we decide for step ${i}?`, id: `c${c}u${i}` },
    { role: 'assistant', content: `For ${w(0)}, step ${i}: we decided to keep option ${i * 7} from vendor ${w(2)} because it costs ${i + 3} dollars. Check it on Friday.`, id: `c${c}a${i}` },
  ];
}

const question = (i: number): ChatMessage => ({ role: 'user', content: `What did we decide about ${WORDS[i % WORDS.length]} at the start?` });

/** Hook latencies on `conversation()`, one hook after another while `more(hooks so far)`. */
async function hooks(m: Memory, conversation: () => string, more: (n: number) => boolean): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; more(out.length); i++) {
    const t = performance.now();
    await m.onMessageInbound({ conversationId: conversation(), message: question(i) });
    out.push(performance.now() - t);
  }
  return out;
}

const figures = (xs: number[]) => `p50 ${ms(percentile(xs, 50))} · p95 ${ms(percentile(xs, 95))} · max ${ms(Math.max(...xs))} (${xs.length} hooks)`;

async function rebuildBench(dir: string, conversations: number, pairs: number): Promise<void> {
  const path = join(dir, 'older.sqlite3');
  const options = { contextWindow: 3000, embedder: false as const, maintenance: 'manual' as const };
  const t0 = performance.now();
  const w = await createMemory({ ...options, storage: fileStorage(path), summarizer: await older() });
  for (let c = 0; c < conversations; c++) {
    for (let i = 0; i < pairs; i += 10) await w.onTurnComplete({ conversationId: `c${c}`, messages: Array.from({ length: Math.min(10, pairs - i) }, (_, k) => exchange(c, i + k)).flat() });
  }
  await w.flush();
  const total = (await Promise.all(Array.from({ length: conversations }, (_, c) => w.summaries(`c${c}`)))).reduce((n, l) => n + l.length, 0);
  await w.close();
  console.log(`(b) ${conversations} conversations × ${pairs * 2} turns written by extractive v${EXTRACTIVE_VERSION - 1}: ${total} summaries (${ms(performance.now() - t0)})`);
  copyFileSync(path, join(dir, 'older-2.sqlite3'));

  // One slice, then the whole rebuild, a slice after another.
  const m = await createMemory({ ...options, storage: fileStorage(path) });
  const slices: number[] = [];
  let report = await (async () => { const t = performance.now(); const r = await m.maintain(); slices.push(performance.now() - t); return r; })();
  while (report.more) {
    const t = performance.now();
    report = await m.maintain();
    slices.push(performance.now() - t);
  }
  const all = slices.reduce((a, b) => a + b, 0);
  console.log(`    one slice ${ms(slices[0]!)} (p50 ${ms(percentile(slices, 50))}, max ${ms(Math.max(...slices))}); whole rebuild ${ms(all)} in ${slices.length} slices (${ms(all / Math.max(1, total))} per summary)`);

  // Hooks on the conversation being rebuilt while the rebuild runs, then the same hooks with nothing running.
  const b = await createMemory({ ...options, storage: fileStorage(join(dir, 'older-2.sqlite3')) });
  let current = `c${conversations - 1}`;
  // Warm (the tokenizer loaded, the conversation's caches filled), as the hooks after are.
  await hooks(b, () => current, (n) => n < 3);
  let done = false;
  const loop = (async () => {
    for (let r = await b.maintain(); ; r = await b.maintain()) {
      current = r.rebuilds.find((x) => x.kind === 'summaries')?.conversationId ?? current;
      if (!r.more) break;
    }
    done = true;
  })();
  const during = await hooks(b, () => current, (n) => !done || n === 0);
  await loop;
  const after = await hooks(b, () => current, (n) => n < during.length);
  await Promise.all([m.close(), b.close()]);
  console.log(`    hook on the conversation being rebuilt, during: ${figures(during)}`);
  console.log(`    the same hooks, nothing running:             ${figures(after)}`);
  // A hook waits for at most one summary's storage step, never for a whole slice; it shares the CPU with the slice.
  console.log(`    the longest hook during the rebuild: ${(Math.max(...during) / Math.max(...slices)).toFixed(2)}× the longest slice, ${(Math.max(...during) - Math.max(...after)).toFixed(0)} ms over the longest alone`);
}

export async function upgradeBench(args: Map<string, string>): Promise<void> {
  console.log('\n## Upgrades: migration on 100,000 turns, rebuilding an older summarizer\'s summaries');
  const dir = mkdtempSync(join(tmpdir(), 'pagewise-bench-upgrade-'));
  try {
    await migrationBench(dir, Number(args.get('upgrade-turns') ?? 100_000));
    await rebuildBench(dir, Number(args.get('rebuild-conversations') ?? 6), Number(args.get('rebuild-pairs') ?? 150));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
