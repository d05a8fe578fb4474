// npx tsx tests/bench/topics.ts — are the topics a person sees things (people, places, objects, activities) or wording?
// Each dev conversation (LoCoMo; LongMemEval's first 10 haystacks; REALTALK's three chats) is ingested with the keyword
// tagger (no embedder, no compaction). Before: the old list, memory.tags()'s top-20 on more than one unit, background
// (a tag on over 30% of units) left out. After: memory.topics(id, { limit: 20 }). Each list's tags are judged by
// compromise's part-of-speech tagging of the tag's own text: a noun or a name (its last word tagged #Noun, not a
// pronoun), or an activity (a gerund: `hiking`). Prints each set's mean shares, two conversations' lists for a person
// to judge, and what a topics() call costs (first, then cached).
// Options: --sets=locomo,longmemeval,realtalk  --show=2  --top=20
import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import nlp from 'compromise/two';
import { createMemory } from '../../src/index.js';
import { sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import type { ChatMessage } from '../../src/contracts/types.js';
import { type BenchConversation, DATA, loadLocomo, loadLongMemEval } from './datasets.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const sets = new Set((args.get('sets') ?? 'locomo,longmemeval,realtalk').split(','));
const show = Number(args.get('show') ?? 2);
const top = Number(args.get('top') ?? 20);

/** REALTALK (../shared/data/realtalk/*.json): speaker_1 is the user, speaker_2 the assistant; a user+reply pair a batch. */
function loadRealtalk(): BenchConversation[] {
  const dir = resolve(DATA, 'realtalk');
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((file) => {
    const d = JSON.parse(readFileSync(resolve(dir, file), 'utf8')) as Record<string, unknown> & { name: { speaker_1: string; speaker_2: string } };
    const user = d.name.speaker_1.toLowerCase();
    const turns: ChatMessage[] = [];
    for (let n = 1; Array.isArray(d[`session_${n}`]); n++) {
      for (const t of d[`session_${n}`] as { clean_text: string; speaker: string; date_time: string; dia_id: string }[]) {
        const m = /(\d+)\.(\d+)\.(\d{4}),\s*(\d+):(\d+):(\d+)/.exec(t.date_time);
        if (!m || !t.clean_text?.trim()) continue;
        const createdAt = new Date(Date.UTC(Number(m[3]), Number(m[2]) - 1, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]))).toISOString();
        turns.push({ id: t.dia_id, role: t.speaker.toLowerCase() === user ? 'user' : 'assistant', name: t.speaker, content: t.clean_text, createdAt });
      }
    }
    const batches: ChatMessage[][] = [];
    for (let i = 0; i < turns.length;) {
      const end = turns[i]!.role === 'user' && turns[i + 1]?.role === 'assistant' ? i + 2 : i + 1;
      batches.push(turns.slice(i, end));
      i = end;
    }
    return { id: file.replace('.json', ''), batches, questions: [] };
  });
}

type Kind = 'noun' | 'activity' | 'other';
/** What a tag's own text is, by compromise's tagging of it (hyphens read as spaces): its last word decides. */
function kind(tag: string): Kind {
  const terms = nlp(tag.replace(/-/g, ' ')).json() as { terms: { tags: string[] }[] }[];
  const last = terms.at(-1)?.terms.at(-1)?.tags ?? [];
  if (last.includes('Noun') && !last.includes('Pronoun')) return 'noun';
  if (last.includes('Gerund')) return 'activity';
  return 'other';
}

const BACKGROUND_SHARE = 0.3;

interface Lists { before: string[]; after: string[]; firstMs: number; cachedMs: number; ingestMs: number }

async function lists(conv: BenchConversation): Promise<Lists> {
  const driver = await sqliteWasm()();
  const memory = await createMemory({ embedder: false, compaction: false, storage: driver });
  let started = performance.now();
  for (const batch of conv.batches) await memory.onTurnComplete({ conversationId: conv.id, messages: batch });
  await memory.flush();
  const ingestMs = performance.now() - started;
  const units = Number((await driver.query<{ n: number }>('SELECT COUNT(*) AS n FROM units WHERE conversation_id = ?', [conv.id]))[0]?.n ?? 0);
  const repeated = (await memory.tags(conv.id)).filter((t) => t.units > 1);
  const foreground = repeated.filter((t) => units < 10 || t.units / units <= BACKGROUND_SHARE);
  const before = (foreground.length > 0 ? foreground : repeated).slice(0, top).map((t) => t.tag);
  // onTurnComplete refreshes the topics hint every 16 units, so the hint's topics are judged during ingest: this
  // first call judges what they did not cover (more topics, the tags ranked since).
  started = performance.now();
  const after = (await memory.topics(conv.id, { limit: top })).map((t) => t.tag);
  const firstMs = performance.now() - started;
  started = performance.now();
  await memory.topics(conv.id, { limit: top });
  const cachedMs = performance.now() - started;
  await memory.close();
  return { before, after, firstMs, cachedMs, ingestMs };
}

const loaders: [string, () => BenchConversation[]][] = [
  ['locomo', loadLocomo],
  ['longmemeval', () => loadLongMemEval().slice(0, 10)],
  ['realtalk', loadRealtalk],
];
const share = (tags: readonly string[], k: Kind) => (tags.length === 0 ? 0 : tags.filter((t) => kind(t) === k).length / tags.length);
const mark = (t: string) => ({ noun: t, activity: `${t}~`, other: `${t}*` })[kind(t)];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const rows: string[] = [];
for (const [name, load] of loaders) {
  if (!sets.has(name)) continue;
  const sum = { before: 0, after: 0, beforeBoth: 0, afterBoth: 0, ingest: 0 };
  const first: number[] = [];
  const cached: number[] = [];
  let n = 0;
  const shown: string[] = [];
  for (const conv of load()) {
    const l = await lists(conv);
    sum.before += share(l.before, 'noun');
    sum.after += share(l.after, 'noun');
    sum.beforeBoth += share(l.before, 'noun') + share(l.before, 'activity');
    sum.afterBoth += share(l.after, 'noun') + share(l.after, 'activity');
    sum.ingest += l.ingestMs / 1000;
    first.push(l.firstMs);
    cached.push(l.cachedMs);
    n++;
    if (shown.length < show * 2) {
      shown.push(`  ${conv.id} before (${(share(l.before, 'noun') * 100).toFixed(0)}% nouns/names): ${l.before.map(mark).join(', ')}`);
      shown.push(`  ${conv.id} after  (${(share(l.after, 'noun') * 100).toFixed(0)}% nouns/names): ${l.after.map(mark).join(', ')}`);
    }
  }
  console.log(`\n${name}: ${n} conversations, top-${top} topics (* not a noun or name, ~ an activity)`);
  console.log(shown.join('\n'));
  const f = (x: number) => (x / n).toFixed(3);
  rows.push(`| ${name.padEnd(11)} | ${String(n).padStart(2)} | ${f(sum.before)} | ${f(sum.after)} | ${f(sum.beforeBoth)} | ${f(sum.afterBoth)} | ${median(first).toFixed(0).padStart(5)} / ${Math.max(...first).toFixed(0).padStart(5)} | ${median(cached).toFixed(1).padStart(5)} / ${Math.max(...cached).toFixed(1).padStart(5)} | ${sum.ingest.toFixed(1).padStart(6)} |`);
}
console.log(`\nShare of each conversation's top-${top} topics that are nouns or names (mean over the set), by compromise's POS tags of the tag's text`);
console.log('before: memory.tags() on >1 unit, background left out; after: memory.topics(id, { limit }). topics() ms: median / max');
console.log('| set         | n  | nouns before | nouns after | +activities before | +activities after | topics() first ms | cached ms | ingest s |');
console.log('|-------------|----|--------------|-------------|--------------------|-------------------|-------------------|-----------|----------|');
for (const r of rows) console.log(r);
