// External search, as a user feels it (npm run bench -- --only=search; ~4 min on 2 shared cores, so not in the default
// set). Live throughout: cacheMs 0 (no query's answer reused), embeddings off (said in every title).
//   1. How often the keyword trigger fires on real chat (REALTALK, LoCoMo: every user message, replayed message by
//      message into a memory whose only provider records the query and finds nothing), with 15 triggered messages and
//      their queries to judge; and on LongMemEval's questions (about the user's own past: any search is a false positive).
//   2. What search costs every request when it finds nothing to do: a REALTALK chat replayed into three memories in
//      lockstep (search off, on, off again: the noise floor), rotating which goes first, pair by pair.
//   3. The search step when it runs (`search: true`), against the local SearXNG, Brave and Tavily servers of
//      tests/support/search-servers.ts (127.0.0.1: no network time), pages fetched and read or not; the first call apart.
//   4. htmlToText alone: the article page, and the ~3 MiB page cut at fetchPages' default 2 MiB.
// --trigger-only: part 1 alone (~2.5 min: no servers, no timing parts), e.g. after changing src/search/trigger.ts.
import { spawnSync } from 'node:child_process';
import { createMemory, type Memory } from '../../src/index.js';
import { braveSearch, searxng, tavily } from '../../src/search/providers.js';
import { htmlToText } from '../../src/search/pages.js';
import type { AssembledContext, ChatMessage, MemoryOptions, SearchOptions, SearchRequest } from '../../src/contracts/types.js';
import { PAGES, type SearchServers, TEST_KEY, startSearchServers } from '../support/search-servers.js';
import { type BenchConversation, loadLocomo, loadLongMemEval, loadRealtalk } from './datasets.js';
import { percentile, Table } from './metrics.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const BASE: MemoryOptions = { contextWindow: 8192, reserveTokens: 1024, embedder: false };

/** A provider that records what it is asked and finds nothing (answers at once). */
function recorder(): { queries: string[]; provider: (r: SearchRequest) => Promise<never[]> } {
  const queries: string[] = [];
  return { queries, provider: async function recorder(r: SearchRequest) { queries.push(r.query); return []; } };
}

const keywordsOnly = (provider: SearchOptions['providers'][number]): SearchOptions => ({ providers: [provider], trigger: 'keywords', cacheMs: 0 });
const oneLine = (s: string, n = 200) => { const t = s.replace(/\s+/g, ' ').trim(); return t.length > n ? `${t.slice(0, n - 1)}…` : t; };
const text = (m: ChatMessage) => (typeof m.content === 'string' ? m.content : '');

/** keyword (time/topic words), ask ("what is" about words memory does not know), name, or none. */
function kindOf(ctx: AssembledContext): 'keyword' | 'ask' | 'name' | 'none' {
  const t = ctx.search?.trigger;
  if (!t || t.by === 'none') return 'none';
  if (t.by === 'name') return 'name';
  return /about words memory does not know/.test(t.detail ?? '') ? 'ask' : 'keyword';
}
const what = (ctx: AssembledContext) => /"([^"]+)"/.exec(ctx.search?.trigger.detail ?? '')?.[1] ?? '?';

interface Fired { set: string; kind: string; detail: string; message: string; query: string }

function count(map: Map<string, number>, key: string): void { map.set(key, (map.get(key) ?? 0) + 1); }
const top = (map: Map<string, number>, n: number) => [...map].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, n).map(([k, v]) => `${k} ×${v}`).join(', ');

/** One chat replayed message by message: each user message asked (inbound), then stored; the other side stored as it comes. */
async function replayTrigger(set: string, conv: BenchConversation, table: Table, fired: Fired[], words: Map<string, Map<string, number>>): Promise<void> {
  const rec = recorder();
  const memory = await createMemory({ ...BASE, compaction: false, search: keywordsOnly(rec.provider) });
  for (const batch of conv.batches) {
    const others: ChatMessage[] = [];
    for (const m of batch) {
      if (m.role !== 'user') { others.push(m); continue; }
      if (others.length > 0) await memory.onTurnComplete({ conversationId: conv.id, messages: others.splice(0) });
      const asked = rec.queries.length;
      const ctx = await memory.onMessageInbound({ conversationId: conv.id, message: m, ...(m.createdAt ? { now: m.createdAt } : {}) });
      const kind = kindOf(ctx);
      table.add(set, 'search', kind === 'none' ? 0 : 1);
      table.add(set, 'sent', rec.queries.length > asked ? 1 : 0);
      for (const k of ['keyword', 'ask', 'name']) table.add(set, k, kind === k ? 1 : 0);
      table.add(set, 'vetoed', /about this conversation/.test(ctx.search?.trigger.detail ?? '') ? 1 : 0);
      if (kind !== 'none') {
        count(words.get(kind)!, what(ctx));
        fired.push({ set, kind, detail: ctx.search!.trigger.detail ?? '', message: text(m), query: rec.queries.length > asked ? rec.queries.at(-1)! : `(none sent: ${ctx.search!.reason})` });
      }
      await memory.onTurnComplete({ conversationId: conv.id, messages: [m] });
    }
    if (others.length > 0) await memory.onTurnComplete({ conversationId: conv.id, messages: others });
  }
  await memory.close();
}

/**
 * LongMemEval's questions. Each is first asked of an empty conversation; one that fires only because memory lacks its
 * words (a name, a "what is") is asked again after its haystack is stored (memory can only know more, so the trigger
 * can only fire less: a question that does not fire on an empty memory never fires on its haystack).
 */
async function longMemEvalTrigger(): Promise<void> {
  const rec = recorder();
  const empty = await createMemory({ ...BASE, compaction: false, search: keywordsOnly(rec.provider) });
  const table = new Table();
  const fired: string[] = [];
  let ingested = 0;
  for (const conv of loadLongMemEval()) {
    for (const q of conv.questions) {
      const message: ChatMessage = { role: 'user', content: q.question };
      let asked = rec.queries.length;
      let ctx = await empty.onMessageInbound({ conversationId: `empty-${conv.id}`, message });
      let kind = kindOf(ctx);
      if (kind === 'ask' || kind === 'name') {
        ingested++;
        const memory = await createMemory({ ...BASE, compaction: false, search: keywordsOnly(rec.provider) });
        for (const batch of conv.batches) await memory.onTurnComplete({ conversationId: conv.id, messages: batch });
        asked = rec.queries.length;
        ctx = await memory.onMessageInbound({ conversationId: conv.id, message });
        kind = kindOf(ctx);
        await memory.close();
      }
      table.add(q.category ?? 'question', 'search', kind === 'none' ? 0 : 1);
      table.add(q.category ?? 'question', 'sent', rec.queries.length > asked ? 1 : 0);
      for (const k of ['keyword', 'ask', 'name']) table.add(q.category ?? 'question', k, kind === k ? 1 : 0);
      if (kind !== 'none') fired.push(`  [${kind}: ${ctx.search!.trigger.detail}] ${oneLine(q.question, 120)}  → query "${rec.queries.length > asked ? rec.queries.at(-1) : '(none)'}"`);
    }
  }
  await empty.close();
  table.print(`LongMemEval_S dev: ${table.count('ALL', 'search')} questions about the user's own past (any search here is a false positive); keyword trigger, embeddings off, compaction off; ${ingested} haystack(s) stored to re-check a name or "what is" trigger`,
    ['search', 'sent', 'keyword', 'ask', 'name']);
  console.log(`triggered (${fired.length}):\n${fired.join('\n') || '  none'}`);
}

async function triggerBench(): Promise<void> {
  const table = new Table();
  const fired: Fired[] = [];
  const words = new Map(['keyword', 'ask', 'name'].map((k) => [k, new Map<string, number>()]));
  const started = performance.now();
  for (const conv of loadRealtalk()) await replayTrigger('REALTALK', conv, table, fired, words);
  for (const conv of loadLocomo()) await replayTrigger('LoCoMo', conv, table, fired, words);
  table.print(`1. Keyword trigger on real chat: every user message, asked with the conversation so far stored (trigger 'keywords', embeddings off, compaction off; ${((performance.now() - started) / 1000).toFixed(0)} s). Shares of messages: search = the trigger fired; sent = a query left (something remained after anonymizing); keyword = time/topic word; ask = "what is…/who is…/tell me about…" about words memory does not know; name = a name memory does not know; vetoed = a question about the conversation`,
    ['search', 'sent', 'keyword', 'ask', 'name', 'vetoed']);
  const share = (f: (x: Fired) => boolean) => `${((fired.filter(f).length / Math.max(1, fired.length)) * 100).toFixed(0)}%`;
  const noQuestion = (x: Fired) => !/\?/.test(x.message);
  const firstPerson = (x: Fired) => /\b(?:i|i'm|i've|my|we|our)\b/i.test(x.message);
  console.log(`of the ${fired.length} triggered messages: ${share(noQuestion)} hold no question mark; ${share(firstPerson)} speak in the first person (I, my, we, our); ${share((x) => noQuestion(x) && firstPerson(x))} both`);
  for (const k of ['keyword', 'ask', 'name']) {
    const mine = fired.filter((x) => x.kind === k);
    const of = (f: (x: Fired) => boolean) => `${((mine.filter(f).length / Math.max(1, mine.length)) * 100).toFixed(0)}%`;
    console.log(`  ${k.padEnd(7)} ${String(mine.length).padStart(3)} fired: ${of(noQuestion)} no question mark, ${of(firstPerson)} first person`);
  }
  console.log(`most frequent: keyword ${top(words.get('keyword')!, 14)}`);
  console.log(`               ask ${top(words.get('ask')!, 8)}`);
  console.log(`               name ${top(words.get('name')!, 20)}`);
  console.log(`15 triggered messages (every ${Math.max(1, Math.floor(fired.length / 15))}th of ${fired.length}), with the query sent:`);
  const step = Math.max(1, Math.floor(fired.length / 15));
  for (let i = 0; i < Math.min(15, fired.length); i++) {
    const f = fired[i * step]!;
    console.log(`  ${String(i + 1).padStart(2)}. ${f.set} [${f.kind}: ${f.detail}] "${oneLine(f.message)}"\n      → "${f.query}"`);
  }
  for (const set of ['REALTALK', 'LoCoMo']) {
    const mine = fired.filter((x) => x.set === set);
    const every = Math.max(1, Math.floor(mine.length / 15));
    console.log(`${set}: ${Math.min(15, mine.length)} of its ${mine.length} triggered messages (every ${every}th):`);
    for (let i = 0; i < Math.min(15, mine.length); i++) console.log(`  ${String(i + 1).padStart(2)}. [${mine[i * every]!.kind}: ${mine[i * every]!.detail}] "${oneLine(mine[i * every]!.message)}"`);
  }
  await longMemEvalTrigger();
}

/** p50 / p95 / mean of `samples` as one row of `table` (n = the samples' count). */
function row(table: Table, name: string, samples: number[], extra: Record<string, number> = {}): void {
  for (const v of samples) table.addOnly(name, 'mean ms', v);
  table.addOnly(name, 'p50 ms', percentile(samples, 50));
  table.addOnly(name, 'p95 ms', percentile(samples, 95));
  for (const [k, v] of Object.entries(extra)) table.addOnly(name, k, v);
}

/**
 * 2. One REALTALK chat into three memories in lockstep: search off, search on (a provider that finds nothing), and
 * search off again (the noise floor: what two identical memories differ by on this machine), rotating which goes first.
 */
async function everyRequestBench(): Promise<void> {
  const conv = loadRealtalk()[0]!;
  const rec = recorder();
  const memories = [await createMemory({ ...BASE }), await createMemory({ ...BASE, search: keywordsOnly(rec.provider) }), await createMemory({ ...BASE })];
  const t = { off: [] as number[], on: [] as number[], offQuiet: [] as number[], onQuiet: [] as number[], onFired: [] as number[], diff: [] as number[], noise: [] as number[], searchMs: [] as number[] };
  let i = 0;
  for (const batch of conv.batches) {
    for (const m of batch.filter((x) => x.role === 'user')) {
      const ms = [0, 0, 0];
      let ctx: AssembledContext | undefined;
      for (const k of [0, 1, 2].map((x) => (x + i) % 3)) {
        const s = performance.now();
        const got = await memories[k]!.onMessageInbound({ conversationId: conv.id, message: m });
        ms[k] = performance.now() - s;
        if (k === 1) ctx = got;
      }
      i++;
      const [o, n, o2] = ms as [number, number, number];
      t.off.push(o); t.on.push(n); t.searchMs.push(ctx!.search?.ms ?? 0); t.noise.push(o2 - o);
      if (ctx!.search?.trigger.by === 'none') { t.offQuiet.push(o); t.onQuiet.push(n); t.diff.push(n - o); } else t.onFired.push(n);
    }
    for (const memory of memories) { await memory.onTurnComplete({ conversationId: conv.id, messages: batch }); await memory.flush(); }
  }
  for (const memory of memories) await memory.close();
  const table = new Table();
  row(table, 'a search off, every request', t.off);
  row(table, 'b search on, every request', t.on);
  row(table, 'c search off, where nothing triggered', t.offQuiet);
  row(table, 'd search on, where nothing triggered', t.onQuiet);
  row(table, 'e on − off, pair by pair, nothing triggered', t.diff);
  row(table, 'f off − off (a second memory without search: noise)', t.noise);
  row(table, 'g search on, triggered (provider finds nothing, at once)', t.onFired);
  row(table, 'h ctx.search.ms (search on, every request)', t.searchMs);
  table.print(`2. Cost on every request: REALTALK ${conv.id}, ${t.off.length} user messages, each asked of three memories in lockstep (search off; search on: trigger 'keywords', one in-process provider that finds nothing; search off again), rotating which goes first; each exchange stored and the background queue flushed between messages; embeddings off, compaction on; the search step runs beside understanding the question, so its ms overlap the request's`,
    ['p50 ms', 'p95 ms', 'mean ms'], { 'p50 ms': 2, 'p95 ms': 2, 'mean ms': 2 });
}

const QUESTIONS = [
  'What changed in the latest Node.js release?', 'Is the Node.js 24.3.0 permission model stable now?',
  'How do I cancel fsPromises.readFile with an AbortSignal?', 'Any news on Node.js 24 startup speed?',
];

interface Variant { name: string; memory: Memory; search: number[]; inbound: number[]; results: number[]; pages: number[] }

/** A memory holding the start of a REALTALK chat, with `search` (or none). */
async function seeded(search: SearchOptions | undefined, conv: BenchConversation): Promise<Memory> {
  const memory = await createMemory({ ...BASE, ...(search ? { search } : {}) });
  for (const batch of conv.batches.slice(0, 40)) await memory.onTurnComplete({ conversationId: 'seeded', messages: batch });
  await memory.flush();
  return memory;
}

async function ask(memory: Memory, i: number, search = true): Promise<{ ms: number; ctx: AssembledContext }> {
  const s = performance.now();
  const ctx = await memory.onMessageInbound({ conversationId: 'seeded', message: { role: 'user', content: QUESTIONS[i % QUESTIONS.length]! }, search });
  return { ms: performance.now() - s, ctx };
}

/** Cold imports of what search loads on first use, each in a fresh node process (plain JS: no tsx). */
function coldImports(): string {
  const script = `const t=performance.now();await import(process.argv[1]);console.log((performance.now()-t).toFixed(0))`;
  return ['compromise/two', 'linkedom/worker', '@mozilla/readability'].map((m) => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, m], { cwd: ROOT, encoding: 'utf8' });
    return `${m} ${r.status === 0 ? `${r.stdout.trim()} ms` : `failed (${oneLine(r.stderr, 80)})`}`;
  }).join(' · ');
}

/** In a fresh node process: linkedom and Readability imported, then the article parsed and read three times (ms each). */
function coldParse(html: string): string {
  const script = [
    'let html="";for await (const c of process.stdin) html+=c;',
    'let t=performance.now();const {parseHTML}=await import("linkedom/worker");const {Readability}=await import("@mozilla/readability");const out=[performance.now()-t];',
    'for (let i=0;i<3;i++){t=performance.now();new Readability(parseHTML(html).document).parse();out.push(performance.now()-t);}',
    'console.log(out.map((x)=>x.toFixed(1)).join(" "))',
  ].join('');
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', input: html });
  if (r.status !== 0) return `failed (${oneLine(r.stderr, 80)})`;
  const [load, ...parses] = r.stdout.trim().split(' ');
  return `import ${load} ms, then the article parsed + read ${parses.join(' / ')} ms (1st / 2nd / 3rd)`;
}

/** 3, first calls: before anything of search is loaded in this process (a plain request first: sqlite, tokenizer). */
async function firstCalls(servers: SearchServers): Promise<string[]> {
  const conv = loadRealtalk()[1]!;
  const firsts: string[] = [];
  for (const which of ['first', 'second']) {
    const plain = await seeded(undefined, conv);
    const { ms } = await ask(plain, 0, false);
    firsts.push(`first request of the ${which} memory without search (stored 40 exchanges first): onMessageInbound ${ms.toFixed(0)} ms`);
    await plain.close();
  }
  for (const [name, fetchPages] of [['fetchPages off (loads compromise, unless tagging has)', false], ['fetchPages on (loads readability + linkedom)', { allowPrivateHosts: true }]] as const) {
    const memory = await seeded({ providers: [searxng({ url: servers.searxngUrl })], cacheMs: 0, fetchPages }, conv);
    const { ms, ctx } = await ask(memory, 0);
    firsts.push(`first call, SearXNG, ${name}: ctx.search.ms ${ctx.search?.ms} ms, onMessageInbound ${ms.toFixed(0)} ms (${ctx.search?.outcome}, ${ctx.search?.results.length} results)`);
    await memory.close();
  }
  return firsts;
}

/** 3: the search step against the local servers, four settings in rotating order, beside the same memory without it. */
async function stepBench(servers: SearchServers, firsts: string[]): Promise<void> {
  const conv = loadRealtalk()[1]!;
  const pagesOn = { allowPrivateHosts: true };
  const sx = searxng({ url: servers.searxngUrl });
  const all = [sx, braveSearch({ apiKey: TEST_KEY, baseUrl: servers.braveUrl }), tavily({ apiKey: TEST_KEY, baseUrl: servers.tavilyUrl })];
  const plain = await seeded(undefined, conv);
  const variants: Variant[] = [];
  for (const [name, providers, fetchPages] of [['SearXNG, fetchPages off', [sx], false], ['SearXNG, fetchPages on', [sx], pagesOn], ['3 providers at once, fetchPages off', all, false], ['3 providers at once, fetchPages on', all, pagesOn]] as const) {
    variants.push({ name, memory: await seeded({ providers: [...providers], cacheMs: 0, fetchPages }, conv), search: [], inbound: [], results: [], pages: [] });
  }
  const off: number[] = [];
  const rounds = 40;
  for (let r = 0; r < rounds; r++) {
    for (const k of [...variants.keys()].map((x) => (x + r) % variants.length)) {
      const v = variants[k]!;
      const { ms, ctx } = await ask(v.memory, r);
      if (ctx.search?.outcome !== 'searched') throw new Error(`${v.name}: ${ctx.search?.outcome} (${ctx.search?.reason})`);
      v.search.push(ctx.search.ms); v.inbound.push(ms); v.results.push(ctx.search.results.filter((x) => x.included).length); v.pages.push(ctx.search.results.filter((x) => x.text === 'page').length);
    }
    off.push((await ask(plain, r, false)).ms);
  }
  const table = new Table();
  row(table, 'a search off (same memory, same questions)', off);
  variants.forEach((v, k) => {
    row(table, `${String.fromCharCode(98 + k)} ${v.name}: whole request`, v.inbound, { placed: percentile(v.results, 50), pages: percentile(v.pages, 50) });
    row(table, `${String.fromCharCode(98 + k)} ${v.name}: ctx.search.ms`, v.search);
  });
  table.print(`3. The search step when it runs (search: true on each request; cacheMs 0): the local SearXNG / Brave / Tavily servers on 127.0.0.1 (no network time) and their real-shaped pages, ${rounds} requests per row in rotating order, a memory holding 40 exchanges of REALTALK ${conv.id}, embeddings off; placed = results placed, pages = results read from their fetched page (p50)`,
    ['p50 ms', 'p95 ms', 'mean ms', 'placed', 'pages'], { 'p50 ms': 1, 'p95 ms': 1, 'mean ms': 1, placed: 0, pages: 0 });
  for (const f of firsts) console.log(f);
  console.log(`cold imports, each in a fresh node process: ${coldImports()}`);
  console.log(`linkedom + Readability in a fresh node process: ${coldParse(await (await fetch(`${servers.pagesUrl}${PAGES.article.path}`)).text())}`);
  for (const v of variants) await v.memory.close();
  await plain.close();
}

async function htmlBench(pagesUrl: string): Promise<void> {
  const article = await (await fetch(`${pagesUrl}${PAGES.article.path}`)).text();
  const bigBytes = new Uint8Array(await (await fetch(`${pagesUrl}${PAGES.big.path}`)).arrayBuffer());
  const cap = 2 * 1024 * 1024;
  const big = new TextDecoder().decode(bigBytes.subarray(0, cap));
  const table = new Table();
  for (const [name, html, n] of [[`article page (${(article.length / 1024).toFixed(1)} KiB)`, article, 100], [`big page, first ${cap / 1024 / 1024} MiB of ${(bigBytes.length / 1024 / 1024).toFixed(1)} MiB`, big, 6]] as const) {
    await htmlToText(html, pagesUrl);
    const times: number[] = [];
    let chars = 0;
    for (let i = 0; i < n; i++) { const s = performance.now(); chars = (await htmlToText(html, pagesUrl)).text.length; times.push(performance.now() - s); }
    row(table, name, times, { 'text chars': chars });
  }
  table.print('4. htmlToText alone (readability over linkedom), ms per page, warm (one call before timing)', ['p50 ms', 'p95 ms', 'mean ms', 'text chars'], { 'p50 ms': 1, 'p95 ms': 1, 'mean ms': 1, 'text chars': 0 });
}

export async function searchBench(): Promise<void> {
  const started = performance.now();
  console.log('\nWeb search (tests/bench/search.ts)');
  if (process.argv.includes('--trigger-only')) {
    await triggerBench();
    console.log(`\nsearch bench (--trigger-only): ${((performance.now() - started) / 1000).toFixed(0)} s`);
    return;
  }
  const servers = await startSearchServers();
  try {
    // Before the other parts: the first calls must find compromise, readability and linkedom not yet loaded.
    const firsts = await firstCalls(servers);
    await triggerBench();
    await everyRequestBench();
    await stepBench(servers, firsts);
    await htmlBench(servers.pagesUrl);
  } finally {
    await servers.close();
  }
  console.log(`\nsearch bench: ${((performance.now() - started) / 1000).toFixed(0)} s`);
}
