// The limits a driver declares (StorageDriver.limits), held against the driver itself, and pagewise's statement
// builders run at them: every driver with its own limits (sqlite-wasm's build, Durable Object SQL's 100 parameters
// and 5 compound terms in workerd, and sqlite-wasm lowered to those in Node).
import { createSummaryStore, type NewSummary } from '../../../src/compaction/summary-store.js';
import { createVectorStore } from '../../../src/embed/vector-store.js';
import { jsonLists, limitsOf } from '../../../src/storage/limits.js';
import { createImportanceStore } from '../../../src/store/importance-store.js';
import { migrate } from '../../../src/store/schema.js';
import { createTurnStore, type NewTurn } from '../../../src/store/turn-store.js';
import { createTagStore, type UnitTags } from '../../../src/tags/tag-store.js';
import type { ChatMessage, StorageDriver } from '../../../src/contracts/types.js';
import { AssertionError, equal, ok, rejectsWith } from './assert.js';
import { hostileStrings, utf8Hex, visible } from './hostile-text.js';
import type { DriverCase } from './storage-driver.js';

// Past this a value is not built in a test (sqlite-wasm allows 10⁹ bytes): the case checks this much instead.
const TESTABLE_BYTES = 3_000_000;
const T0 = Date.UTC(2024, 0, 1);

/** Fails unless `fn` fails (with STORAGE_ERROR): the limit is real, not only declared. */
async function refused(fn: () => unknown, what: string): Promise<void> {
  await rejectsWith(fn, 'STORAGE_ERROR', `${what} is refused by the driver`);
}

function newTurn(i: number, message: ChatMessage, text = typeof message.content === 'string' ? message.content : ''): NewTurn {
  return {
    message, id: message.id ?? `t${i}`, text, contentHash: i.toString(16).padStart(64, '0'),
    createdAt: new Date(T0 + i * 1000).toISOString(), createdMs: T0 + i * 1000, tokens: 3,
  };
}

/** `n` short turns in one append (one batch), ids `t0…`, three content hashes in turn. */
async function turns(d: StorageDriver, n: number) {
  await migrate(d);
  const store = createTurnStore(d);
  await store.append('c', Array.from({ length: n }, (_, i) => newTurn(i, { role: i % 2 ? 'assistant' : 'user', content: `turn ${i}` })), 'enc', new Date(T0).toISOString());
  return store;
}

/** What matchUnits must return, computed here: each tag's latest `perTag` units, weights summed (related: half). */
export function expectedMatch(units: UnitTags[], weights: Map<string, number>, limit: number, perTag: number) {
  const score = new Map<number, { score: number; tags: string[] }>();
  for (const [tag, weight] of weights) {
    const carrying = units.filter((u) => u.tags.includes(tag) || u.relatedTags.includes(tag)).sort((a, b) => b.unitSeq - a.unitSeq).slice(0, perTag);
    for (const u of carrying) {
      const s = score.get(u.unitSeq) ?? { score: 0, tags: [] };
      s.score += weight * (u.tags.includes(tag) ? 1 : 0.5);
      s.tags.push(tag);
      score.set(u.unitSeq, s);
    }
  }
  return [...score].sort(([a, x], [b, y]) => y.score - x.score || b - a).slice(0, limit)
    .map(([unitSeq, s]) => ({ unitSeq, endSeq: unitSeq + 1, score: s.score, tags: s.tags }));
}

export const storageLimitCases: DriverCase[] = [
  {
    name: 'limits: declares each limit as a whole number pagewise can work within',
    async run(d) {
      const declared = d.limits ?? {};
      for (const key of ['maxParams', 'maxCompoundTerms', 'maxStatementBytes', 'maxRowBytes', 'maxFunctionArgs'] as const) {
        ok(Number.isSafeInteger(declared[key]), `${d.name} declares ${key} (got ${String(declared[key])})`);
        equal(limitsOf(d)[key], declared[key], `limitsOf gives the declared ${key}`);
      }
    },
  },
  {
    name: 'limits: binds maxParams values in one statement, and one more is refused',
    async run(d) {
      const { maxParams } = limitsOf(d);
      // An IN list: a chain of `?+?` would hit the expression depth limit (100 at the edge) before this one.
      const query = (n: number) => d.query(`SELECT count(*) AS n FROM (SELECT 1) WHERE ? IN (${Array.from({ length: n - 1 }, () => '?').join(', ')})`,
        Array.from({ length: n }, (_, i) => i % 7));
      equal(await query(maxParams), [{ n: 1 }], `${maxParams} parameters`);
      await refused(() => query(maxParams + 1), `a statement of ${maxParams + 1} parameters`);
    },
  },
  {
    name: 'limits: runs a compound SELECT of maxCompoundTerms terms, and one more is refused',
    async run(d) {
      const { maxCompoundTerms } = limitsOf(d);
      const query = (n: number) => d.query(Array.from({ length: n }, (_, i) => `SELECT ${i} AS k`).join(' UNION ALL '));
      equal((await query(maxCompoundTerms)).length, maxCompoundTerms, `${maxCompoundTerms} terms`);
      await refused(() => query(maxCompoundTerms + 1), `a compound SELECT of ${maxCompoundTerms + 1} terms`);
    },
  },
  {
    name: 'limits: runs a statement near maxStatementBytes, and one byte past it is refused',
    async run(d) {
      const { maxStatementBytes } = limitsOf(d);
      const sql = (bytes: number) => `SELECT 7 AS n${' '.repeat(bytes - 'SELECT 7 AS n'.length)}`;
      const near = Math.min(maxStatementBytes, TESTABLE_BYTES);
      equal(await d.query(sql(near)), [{ n: 7 }], `a statement of ${near} bytes`);
      if (maxStatementBytes <= TESTABLE_BYTES) await refused(() => d.query(sql(maxStatementBytes + 1)), `a statement of ${maxStatementBytes + 1} bytes`);
    },
  },
  {
    name: 'limits: calls a function with maxFunctionArgs arguments',
    async run(d) {
      const { maxFunctionArgs } = limitsOf(d);
      equal(await d.query(`SELECT max(${Array.from({ length: maxFunctionArgs }, (_, i) => i + 1).join(', ')}) AS n`), [{ n: maxFunctionArgs }], `${maxFunctionArgs} arguments`);
    },
  },
  {
    name: 'limits: stores and reads a row near maxRowBytes (3 MB where the limit is larger)',
    async run(d) {
      const size = Math.min(limitsOf(d).maxRowBytes, TESTABLE_BYTES) - 64;
      const big = `${'é'.repeat(size / 4)}${'x'.repeat(size / 2 - 3)}end`;
      await d.batch([{ sql: 'CREATE TABLE big (k INTEGER, t TEXT)' }, { sql: 'INSERT INTO big VALUES (1, ?)', params: [big] }]);
      equal(await d.query('SELECT length(t) AS n, length(CAST(t AS BLOB)) AS bytes, substr(t, -3) AS tail FROM big'), [{ n: big.length, bytes: size, tail: 'end' }], 'length, bytes and tail');
      equal((await d.query<{ t: string }>('SELECT t FROM big'))[0]!.t === big, true, 'read back whole');
    },
  },
  {
    name: 'limits: a JSON list (json_each) finds what a bound value finds, hostile strings included',
    async run(d) {
      // Well-formed strings: with a lone surrogate the drivers store different bytes (see jsonLists).
      const strings = hostileStrings;
      await d.batch([{ sql: 'CREATE TABLE h (k TEXT PRIMARY KEY)' }, ...strings.map((s) => ({ sql: 'INSERT OR IGNORE INTO h VALUES (?)', params: [s] }))]);
      for (const s of strings) {
        const [json] = jsonLists([s], limitsOf(d));
        const found = await d.query<{ hex: string }>('SELECT hex(k) AS hex FROM h WHERE k IN (SELECT value FROM json_each(?))', [json!]);
        const bound = await d.query<{ hex: string }>('SELECT hex(k) AS hex FROM h WHERE k = ?', [s]);
        equal(found, bound, `${visible(s)} (${utf8Hex(s)})`);
        ok(found.length === 1, `${visible(s)} finds its row`);
      }
    },
  },
  {
    name: 'limits: the turn store reads 101 and 1,000 turns by id, seq, hash and token count',
    async run(d) {
      const store = await turns(d, 1000);
      for (const n of [101, 1000]) {
        const ids = Array.from({ length: n }, (_, i) => `t${999 - i}`);
        equal((await store.byIds('c', ids)).map((t) => t.id).sort(), [...ids].sort(), `byIds of ${n}`);
        const seqs = Array.from({ length: n }, (_, i) => 999 - i);
        equal((await store.bySeqs('c', seqs)).map((t) => t.seq), [...seqs].reverse(), `bySeqs of ${n}, in seq order`);
        const hashes = seqs.map((s) => s.toString(16).padStart(64, '0'));
        equal((await store.byHashes('c', hashes)).map((t) => t.seq), [...seqs].reverse(), `byHashes of ${n}, in seq order`);
        const rowids = (await store.bySeqs('c', seqs)).map((t) => t.rowid);
        equal([...(await store.tokenCounts(rowids, 'enc')).values()].filter((v) => v === 3).length, n, `tokenCounts of ${n}`);
      }
    },
  },
  {
    name: 'limits: matchUnits ranks units by 6 and by 40 weighted tags',
    async run(d) {
      await migrate(d);
      const tags = createTagStore(d);
      const vocabulary = Array.from({ length: 40 }, (_, i) => `tag-${i}`);
      // Unit u (a user turn and its reply) carries tags u mod 40 and (3u) mod 40, related (7u) mod 40.
      const units: UnitTags[] = Array.from({ length: 150 }, (_, k) => ({
        unitSeq: 2 * k, endSeq: 2 * k + 1, tags: [...new Set([vocabulary[k % 40]!, vocabulary[(3 * k) % 40]!])],
        relatedTags: [vocabulary[(7 * k) % 40]!].filter((t) => t !== vocabulary[k % 40] && t !== vocabulary[(3 * k) % 40]), tagger: 'test',
      }));
      await tags.saveUnits('c', units, new Map(), new Date(T0).toISOString());
      for (const n of [6, 40]) {
        const weights = new Map(vocabulary.slice(0, n).map((t, i) => [t, 1 + (i % 5) * 0.25]));
        for (const [limit, perTag] of [[20, 128], [500, 3]]) {
          const got = await tags.matchUnits('c', weights, limit!, perTag);
          const want = expectedMatch(units, weights, limit!, perTag!);
          equal(got.map((u) => [u.unitSeq, u.endSeq, u.tags]), want.map((u) => [u.unitSeq, u.endSeq, u.tags]), `${n} tags, limit ${limit}, ${perTag} per tag`);
          for (const [i, u] of got.entries()) ok(Math.abs(u.score - want[i]!.score) < 1e-9, `score of unit ${u.unitSeq}: ${u.score}, want ${want[i]!.score}`);
        }
      }
    },
  },
  {
    name: 'limits: the tag, summary, importance and vector stores take lists of 1,000',
    async run(d) {
      await turns(d, 300);
      const tags = createTagStore(d);
      const many = Array.from({ length: 1000 }, (_, i) => `tag-${i}`);
      const units: UnitTags[] = Array.from({ length: 150 }, (_, k) => ({ unitSeq: 2 * k, endSeq: 2 * k + 1, tags: many.slice(k * 6, k * 6 + 6), relatedTags: [], tagger: 'test' }));
      await tags.saveUnits('c', units, new Map(many.map((t) => [t, 2])), new Date(T0).toISOString());
      equal((await tags.tagUnits('c', many)).size, 900, 'tagUnits of 1,000 tags');
      equal((await tags.termFrequencies('c', many)).size, 1000, 'termFrequencies of 1,000 terms');
      await tags.touch('c', many, new Date(T0 + 1).toISOString());
      equal(await d.query('SELECT count(*) AS n FROM tags WHERE last_used = ?', [new Date(T0 + 1).toISOString()]), [{ n: 900 }], 'touch of 1,000 tags');
      const seqs = Array.from({ length: 300 }, (_, i) => i);
      equal((await tags.unitOf('c', seqs)).size, 300, 'unitOf 300 seqs');
      equal((await tags.tagsOf('c', seqs)).size, 150, 'tagsOf 300 seqs');

      const summaries = createSummaryStore(d);
      const made: NewSummary[] = Array.from({ length: 120 }, (_, i) => ({
        id: `sum_${i}`, conversationId: 'c', kind: 'segment', level: 1, firstSeq: 2 * i, lastSeq: 2 * i + 1, from: new Date(T0).toISOString(), to: new Date(T0).toISOString(),
        sourceIds: [`t${2 * i}`, `t${2 * i + 1}`], text: `summary ${i}`, tags: [`tag-${i}`], relatedTags: [], tokens: 2, madeBy: 'extractive', promptVersion: 1, createdAt: new Date(T0).toISOString(),
      }));
      for (const [i, s] of made.entries()) await summaries.commitSegment(s, 2 * i + 1, new Date(T0).toISOString());
      const ids = made.map((s) => s.id);
      equal((await summaries.byIds('c', ids)).length, 120, 'summaries byIds of 120');
      const rowids = await summaries.rowids('c', ids);
      equal(rowids.size, 120, 'rowids of 120');
      equal((await summaries.byRowids('c', [...rowids.values()])).length, 120, 'byRowids of 120');
      equal(await summaries.markStale('c', ids), 120, 'markStale of 120');
      equal(await summaries.rolledUp('c', ids), false, 'rolledUp of 120');
      equal((await summaries.tagSummariesOf('c', many)).length, 0, 'tagSummariesOf 1,000 tags');
      await summaries.commitRollup({ ...made[0]!, id: 'sum_up', kind: 'rollup', level: 2, firstSeq: 0, lastSeq: 239, sourceIds: ids, tags: [] }, ids);
      equal(await summaries.rolledUp('c', ids), true, 'rolled up 120 in one commit');
      equal(await d.query("SELECT count(*) AS n FROM summaries WHERE parent_id = 'sum_up'"), [{ n: 120 }], 'every child');

      const importance = createImportanceStore(d);
      const turnIds = Array.from({ length: 300 }, (_, i) => `t${i}`);
      await importance.recalled('c', turnIds, T0);
      equal((await importance.recallCounts('c', turnIds)).size, 300, 'recall counts of 300');
      equal((await createVectorStore(d).storedSummaries('c', [...rowids.values(), ...Array.from({ length: 900 }, (_, i) => 10_000 + i)])).size, 120, 'storedSummaries of 1,020');
    },
  },
  {
    name: 'limits: a turn whose row would be over maxRowBytes is refused with MESSAGE_TOO_LARGE, nothing stored',
    async run(d) {
      await migrate(d);
      const store = createTurnStore(d);
      const { maxRowBytes } = limitsOf(d);
      const now = new Date(T0).toISOString();
      if (maxRowBytes > TESTABLE_BYTES) {
        // A driver with room: a message whose row is past the edge's 2 MB (content and text, 1.2 MB each) is stored.
        const big = 'y'.repeat(1_200_000);
        await store.append('c', [newTurn(0, { role: 'user', content: big })], null, now);
        ok((await store.byIds('c', ['t0']))[0]?.content === big, 'a 2.4 MB row round-trips');
        return;
      }
      // Plain text: the row holds it twice (content as JSON, and text). Control characters: 6 bytes of JSON each.
      const plain = 'z'.repeat(Math.ceil(maxRowBytes / 2) + 150_000);
      const escaped = '\u0001'.repeat(Math.ceil(maxRowBytes / 7) + 50_000);
      for (const content of [plain, escaped]) {
        const e = await rejectsWith(() => store.append('c', [newTurn(0, { role: 'user', content: 'fine' }), newTurn(1, { role: 'user', content })], null, now),
          'MESSAGE_TOO_LARGE', `a row over ${maxRowBytes} bytes`);
        ok(e.message.includes(String(maxRowBytes)) && /Split it/.test(e.message), `the message names the limit and the fix: ${e.message}`);
      }
      equal(await d.query('SELECT (SELECT count(*) FROM turns) AS turns, (SELECT count(*) FROM conversations) AS conversations'), [{ turns: 0, conversations: 0 }], 'nothing stored');
      // Just under: stored, and read back whole.
      const near = 'w'.repeat(Math.floor((maxRowBytes - 4096) / 2));
      await store.append('c', [newTurn(0, { role: 'user', content: near })], null, now);
      const [back] = await store.byIds('c', ['t0']);
      if (back?.content !== near) throw new AssertionError(`a row just under ${maxRowBytes} bytes reads back whole`);
    },
  },
];
