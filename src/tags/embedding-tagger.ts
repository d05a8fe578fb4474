import { Lru } from '../common/cache.js';
import { normalize } from '../embed/vector-store.js';
import type { TagRequest, TagResult, Tagger } from '../contracts/types.js';

export interface EmbeddingTaggerOptions {
  /** Embeds tag names (background work: the engine passes its embedder's background path). */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /** Runs a job in the engine's background queue (one per key at a time). */
  later(key: string, job: () => Promise<void>): void;
  /** Aborts background embedding (the engine closing). */
  signal?: AbortSignal;
  /** The engine's keyword tagger: its tags are this tagger's tags. */
  keyword: Tagger;
  /** Cosine between the question and a stored tag's name at which the tag joins the question's related tags. */
  querySimilarity?: number;
  /** Cosine between two stored tags' names at which one is related to the other. */
  tagSimilarity?: number;
}

// Tag names kept with their vectors (1.5 KB each at 384-d): beyond this, the least recently used are embedded again.
const MAX_VECTORS = 20_000;
// Tag names per background model call.
const BATCH = 32;
// Neighbours taken per matched tag.
const NEIGHBOURS = 3;

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/**
 * Seed 000's embedding tagger: the keyword tagger's tags, and for a question the stored tags whose names lie near the
 * question's vector or near a tag it matched (`postgres` → `database`), as related tags (half weight in retrieval).
 * Cross-vocabulary recall without an LLM. Tag names are embedded in the background (as units are tagged, and for a
 * question's vocabulary that has no vectors yet); a question uses the vectors that are ready and its own vector, the
 * one vector retrieval computes anyway, so it adds no model work to a request. Units keep the keyword tagger's tags:
 * a unit's vector is computed after `onTurnComplete` returns.
 *
 * @example
 * const memory = await createMemory({ tagger: 'embedding' });
 */
export function embeddingTagger(options: EmbeddingTaggerOptions): Tagger {
  const { keyword } = options;
  const vectors = new Lru<string, Float32Array>(MAX_VECTORS);
  const pending = new Set<string>();
  const querySimilarity = options.querySimilarity ?? 0.4;
  const tagSimilarity = options.tagSimilarity ?? 0.6;

  const job = async (): Promise<void> => {
    while (pending.size > 0 && !options.signal?.aborted) {
      const names = [...pending].slice(0, BATCH);
      let out: Float32Array[];
      try {
        out = await options.embed(names.map((t) => t.replace(/-/g, ' ')), options.signal);
      } catch {
        return; // the embedder's failure is reported by the semantic queue; these names stay pending
      }
      names.forEach((t, i) => { pending.delete(t); vectors.set(t, normalize(out[i]!)); });
    }
  };
  const want = (names: Iterable<string>): void => {
    let added = false;
    for (const t of names) if (!vectors.get(t) && !pending.has(t)) { pending.add(t); added = true; }
    if (added) options.later('tag-vectors', job);
  };

  return {
    name: 'embedding',
    // A unit's tags are the keyword tagger's: so is the version they are rebuilt by.
    ...(keyword.version !== undefined ? { version: keyword.version } : {}),
    async tag(request: TagRequest): Promise<TagResult> {
      const base = await keyword.tag(request);
      if (request.kind === 'unit') {
        want(base.tags);
        return base;
      }
      // The stored tags whose names have vectors; the others are embedded in the background for later questions.
      const ready: [string, Float32Array][] = [];
      const missing: string[] = [];
      for (const t of request.stored?.keys() ?? request.vocabulary) {
        const v = vectors.get(t);
        if (v) ready.push([t, v]);
        else missing.push(t);
      }
      want(missing);
      // Unit length already (TagRequest.embedding).
      const q = request.embedding ? await request.embedding() : null;
      if (!q) return base;
      const related = new Map<string, number>();
      for (const [t, v] of ready) {
        const s = dot(q, v);
        if (s >= querySimilarity) related.set(t, s);
      }
      const matched = new Set(base.tags);
      for (const [c, cv] of ready) {
        if (!matched.has(c)) continue;
        const near = ready.filter(([t]) => t !== c).map(([t, v]) => [t, dot(cv, v)] as const)
          .filter(([, s]) => s >= tagSimilarity).sort((a, b) => b[1] - a[1]).slice(0, NEIGHBOURS);
        for (const [t, s] of near) related.set(t, Math.max(related.get(t) ?? 0, s));
      }
      const relatedTags = [...related].filter(([t]) => !matched.has(t)).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, request.maxTags).map(([t]) => t);
      return { tags: base.tags, relatedTags };
    },
  };
}
