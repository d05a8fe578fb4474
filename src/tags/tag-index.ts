import type { TurnRecord, TurnStore } from '../store/turn-store.js';
import { pacer } from '../common/pace.js';
import type { TagRequest, TagResult, Tagger } from '../contracts/types.js';
import { slug } from './canonicalize.js';
import { candidates } from './key-phrases.js';
import { taggableText } from '../common/parts.js';
import type { Canonicalizer } from './tag-canonicalizer.js';
import type { TagStore, UnitTags } from './tag-store.js';

/** New turns tagged per transaction when many arrive at once (a sync, an import): about 50 ms of work. */
const SAVE_TURNS = 128;

export interface TagIndexOptions {
  turns: TurnStore;
  tags: TagStore;
  canonicalizer: Canonicalizer;
  /** Tried in order; the last is the keyword tagger (never fails; local: the only one a private text goes to). */
  taggers: readonly Tagger[];
  minTags: number;
  maxTags: number;
}

/** The text a tagger sees for turns: each prefixed with its speaker. */
function unitText(turns: readonly TurnRecord[]): string {
  return turns.map((t) => `${t.name ?? t.role}: ${taggableText(t.text)}`).join('\n');
}

/** Splits turns into units: a user turn starts one, replies and tool turns join it; system turns are not tagged. */
function group(turns: readonly TurnRecord[]): TurnRecord[][] {
  const units: TurnRecord[][] = [];
  for (const t of turns) {
    if (t.role === 'system') continue;
    const last = units[units.length - 1];
    if (t.role === 'user' || !last) units.push([t]);
    else last.push(t);
  }
  return units;
}

/** The request without `hidden` among its known tags. */
function withoutTags(request: TagRequest, hidden: ReadonlySet<string>): TagRequest {
  if (hidden.size === 0) return request;
  const out: TagRequest = { ...request, vocabulary: request.vocabulary.filter((t) => !hidden.has(t)) };
  if (request.stored) out.stored = new Map([...request.stored].filter(([t]) => !hidden.has(t)));
  return out;
}

/** The turn tag index: tags every unit once its turns are stored, and tags questions for retrieval. */
export function createTagIndex(o: TagIndexOptions) {
  /** Tags with the first tagger that succeeds; a private text only with the last (the local keyword tagger). */
  const runChain = async (request: TagRequest, privateText = false): Promise<{ result: TagResult; tagger: string; failures: string[] }> => {
    const failures: string[] = [];
    const chain = privateText ? o.taggers.slice(-1) : o.taggers;
    // The others are not told private messages' words as known tags either.
    let shared: TagRequest | undefined;
    for (const [i, tagger] of chain.entries()) {
      const local = i === chain.length - 1;
      if (!local && !shared) shared = request.conversationId ? withoutTags(request, await o.tags.privateTags(request.conversationId)) : request;
      try {
        return { result: await tagger.tag(local ? request : shared!), tagger: tagger.name, failures };
      } catch (e) {
        failures.push(`${tagger.name}: ${(e as Error).message}`);
      }
    }
    return { result: { tags: [], relatedTags: [] }, tagger: 'none', failures };
  };

  return {
    runChain,

    /**
     * Tags `turns` again, grouped into units as indexNew groups them, without saving (forget re-tags the units it
     * changed and writes them in its own transaction). Their terms are counted already: `stats` gives the counts.
     * `hidden` are tags leaving with the forgotten turns: not offered as known tags, and kept only where the tagger
     * named them itself (not reached through a learned alias).
     */
    async tagTurns(conversationId: string, turns: readonly TurnRecord[], stats: NonNullable<TagRequest['stats']>, hidden: ReadonlySet<string>, nowIso: string): Promise<UnitTags[]> {
      const vocabulary = [...(await o.canonicalizer.counts(conversationId))].filter(([t]) => !hidden.has(t))
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([t]) => t);
      const out: UnitTags[] = [];
      for (const unit of group(turns)) {
        const { result, tagger } = await runChain({
          text: unitText(unit), kind: 'unit', conversationId, vocabulary, minTags: o.minTags, maxTags: o.maxTags, stats,
        }, unit.some((t) => t.private));
        const own = (raws: readonly string[]) => new Set(raws.map(slug));
        const keep = async (raws: readonly string[]) => {
          const named = own(raws);
          return (await o.canonicalizer.canonical(conversationId, raws, nowIso)).filter((t) => !hidden.has(t) || named.has(t));
        };
        out.push({ unitSeq: unit[0]!.seq, endSeq: unit[unit.length - 1]!.seq, tags: await keep(result.tags), relatedTags: await keep(result.relatedTags), tagger });
      }
      return out;
    },

    /**
     * Tags what is not tagged yet: new units, and the last unit again when new replies joined it. Resumable: a
     * failure before the write leaves the turns stored and untagged, and the next call picks them up.
     */
    async indexNew(conversationId: string, nowIso: string): Promise<{ units: number; failures: string[] }> {
      const last = await o.tags.lastUnit(conversationId);
      const from = last?.unitSeq ?? 0;
      const turns = await o.turns.range(conversationId, from, 1_000_000);
      const countedTo = last?.endSeq ?? -1;
      if (turns.length === 0 || turns[turns.length - 1]!.seq <= countedTo) return { units: 0, failures: [] };
      const terms = new Map<string, number>();
      let turnTotal = countedTo + 1;
      let saved: UnitTags[] = [];
      let units = 0;
      let pending = 0;
      const failures: string[] = [];
      // Saved every SAVE_TURNS turns (each save a step of its own: the next call goes on after the last unit saved).
      const save = async () => {
        await o.canonicalizer.refresh(conversationId, await o.tags.saveUnits(conversationId, saved, terms, nowIso));
        units += saved.length;
        saved = [];
        terms.clear();
        pending = 0;
      };
      // Most used first, as stored (an LLM tagger's prompt takes the head of the list).
      const vocabulary = [...(await o.canonicalizer.counts(conversationId))].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([t]) => t);
      const known = new Set(vocabulary);
      // Many turns at once (a sync, an import): the event loop handed back now and then (another memory's call runs).
      const pace = pacer();
      for (const unit of group(turns)) {
        const fresh = unit.filter((t) => t.seq > countedTo);
        if (fresh.length === 0) continue;
        await pace(fresh.length);
        const secret = unit.some((t) => t.private);
        const { result, tagger, failures: f } = await runChain({
          text: unitText(unit), kind: 'unit', conversationId, vocabulary, minTags: o.minTags, maxTags: o.maxTags,
          stats: { turns: turnTotal, termFrequencies: async (ts) => {
            const stored = await o.tags.termFrequencies(conversationId, ts);
            return new Map(ts.map((t) => [t, (stored.get(t) ?? 0) + (terms.get(t) ?? 0)]));
          } },
        }, secret);
        failures.push(...f);
        for (const t of fresh) for (const term of candidates(taggableText(t.text)).keys()) terms.set(term, (terms.get(term) ?? 0) + 1);
        turnTotal += fresh.length;
        const tags = await o.canonicalizer.canonical(conversationId, result.tags, nowIso);
        saved.push({
          unitSeq: unit[0]!.seq,
          endSeq: unit[unit.length - 1]!.seq,
          tags,
          relatedTags: await o.canonicalizer.canonical(conversationId, result.relatedTags, nowIso),
          tagger,
        });
        // Vocabulary feedback within a batch too: the next unit's tagger sees these (not a private unit's words).
        if (!secret) for (const t of tags) if (!known.has(t)) { known.add(t); vocabulary.push(t); }
        pending += fresh.length;
        if (pending >= SAVE_TURNS) await save();
      }
      await save();
      return { units, failures };
    },
  };
}

export type TagIndex = ReturnType<typeof createTagIndex>;
