// Scores one assembled context against the retrievers a user would pick instead (recent turns, BM25, vector, hybrid),
// each given exactly the tokens pagewise used for memory and history: evidence share and answer-word share.
import { messageText } from '../../src/common/messages.js';
import { ftsMatch, queryTerms } from '../../src/text/fts-words.js';
import { createTurnStore, type TurnRecord } from '../../src/store/turn-store.js';
import { messageTokens } from '../../src/tokens/chat-format.js';
import { createVectorStore, normalize } from '../../src/embed/vector-store.js';
import type { AssembledContext, Embedder, StorageDriver, Tokenizer } from '../../src/contracts/types.js';
import type { BenchConversation, BenchQuestion } from './datasets.js';
import { answerShare, evidenceShare, type Table } from './metrics.js';

// Reciprocal rank fusion's textbook constant for the hybrid baseline (Cormack et al. 2009).
const HYBRID_K = 60;

/**
 * A baseline's context: turns taken in the given order while they fit `budget` tokens. A contiguous baseline stops
 * at the first turn that does not fit; a ranked one skips it and tries the next.
 */
function fill(turns: Iterable<TurnRecord>, cost: Map<number, number>, budget: number, contiguous: boolean): { ids: Set<string>; text: string } {
  const ids = new Set<string>();
  const texts: string[] = [];
  let used = 0;
  for (const t of turns) {
    const c = cost.get(t.seq)!;
    if (used + c > budget) {
      if (contiguous) break;
      continue;
    }
    used += c;
    ids.add(t.id);
    texts.push(t.text);
  }
  return { ids, text: texts.join('\n') };
}

/** One conversation's stored turns, their token costs and vectors: what the baselines rank. */
export async function baselineCorpus(driver: StorageDriver, conv: BenchConversation, tokenizer: Tokenizer, queryEmbedder: Embedder | null) {
  const store = createTurnStore(driver);
  const turns = await store.range(conv.id, 0, 1_000_000);
  const cost = new Map(turns.map((t) => [t.seq, messageTokens(tokenizer, t, tokenizer.count(t.text))]));
  // The vector baseline searches pagewise's own stored vectors (int8, one per turn) exactly, with the question's.
  const model = queryEmbedder ? (await driver.query<{ m: string }>('SELECT DISTINCT model_id AS m FROM embeddings WHERE conversation_id = ?', [conv.id]))[0]?.m : undefined;
  const stored = model ? await createVectorStore(driver).load(conv.id, model, 'turn') : [];
  return { conv, store, turns, cost, stored, queryEmbedder };
}

export type BaselineCorpus = Awaited<ReturnType<typeof baselineCorpus>>;

/** Adds the question's figures to `table`: pagewise's evidence and answer shares, and each baseline's at its tokens. */
export async function scoreAgainstBaselines(table: Table, corpus: BaselineCorpus, q: BenchQuestion, ctx: AssembledContext): Promise<void> {
  const { store, turns, cost, stored, queryEmbedder, conv } = corpus;
  const present = new Set(ctx.manifest.filter((e) => e.kind !== 'message').flatMap((e) => e.sourceIds));
  const text = [ctx.prependText, ...ctx.messages.slice(0, -1).map(messageText)].join('\n');
  const budget = ctx.budget.total - ctx.budget.message - ctx.budget.overhead - ctx.budget.prefix;
  // Baselines get exactly the tokens pagewise used for memory and history.
  const recent = fill([...turns].reverse(), cost, budget, true);
  const match = ftsMatch(queryTerms(q.question));
  const hits = match ? await store.search(conv.id, match, 400) : [];
  const bm25 = fill(hits.map((h) => turns[h.seq]!), cost, budget, false);
  let vector: ReturnType<typeof fill> | null = null;
  let hybrid: ReturnType<typeof fill> | null = null;
  if (queryEmbedder && stored.length > 0) {
    const qv = normalize(await queryEmbedder.embedQuery!(q.question));
    const scored = stored.map((v) => {
      let dot = 0;
      for (let i = 0; i < qv.length; i++) dot += qv[i]! * v.vector[i]!;
      return { seq: v.ref, score: dot * v.scale };
    }).sort((a, b) => b.score - a.score || b.seq - a.seq);
    vector = fill(scored.map((h) => turns[h.seq]!), cost, budget, false);
    // Reciprocal rank fusion of the two rankings over whole turns (k = 60), ties to the newer turn.
    const rrf = new Map<number, number>();
    hits.forEach((h, r) => rrf.set(h.seq, (rrf.get(h.seq) ?? 0) + 1 / (HYBRID_K + r + 1)));
    scored.forEach((h, r) => rrf.set(h.seq, (rrf.get(h.seq) ?? 0) + 1 / (HYBRID_K + r + 1)));
    hybrid = fill([...rrf].sort((a, b) => b[1] - a[1] || b[0] - a[0]).map(([seq]) => turns[seq]!), cost, budget, false);
  }
  // A broad question is answered by a view of every part of the conversation: the share of parts it shows.
  const share = (ids: ReadonlySet<string>) => q.groups ? q.groups.filter((g) => g.some((id) => ids.has(id))).length / q.groups.length : evidenceShare(q.evidence, ids);
  table.add(q.category, 'evidence', share(present));
  table.add(q.category, 'ev recent', share(recent.ids));
  table.add(q.category, 'ev bm25', share(bm25.ids));
  if (vector && hybrid) {
    table.add(q.category, 'ev vector', share(vector.ids));
    table.add(q.category, 'ev hybrid', share(hybrid.ids));
  }
  if (q.answer !== null) {
    table.add(q.category, 'answer', answerShare(q.answer, text));
    table.add(q.category, 'ans recent', answerShare(q.answer, recent.text));
    table.add(q.category, 'ans bm25', answerShare(q.answer, bm25.text));
    if (vector) table.add(q.category, 'ans vector', answerShare(q.answer, vector.text));
    if (hybrid) table.add(q.category, 'ans hybrid', answerShare(q.answer, hybrid.text));
  }
  table.add(q.category, 'tokens', ctx.budget.total);
  table.add(q.category, 'memory', ctx.budget.memory);
}
