import type { TurnRecord, TurnStore } from '../store/turn-store.js';
import { pacer, yieldToEventLoop, YIELD_MS } from '../common/pace.js';
import type { TagRequest, TagResult, Tagger } from '../contracts/types.js';
import { slug } from './canonicalize.js';
import { candidates } from './key-phrases.js';
import { taggableText } from '../common/parts.js';
import type { Canonicalizer } from './tag-canonicalizer.js';
import type { TagStore, UnitTags } from './tag-store.js';
import { firstSignature, signatureOf } from './tag-signatures.js';

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

/** Where a run of units goes (createTagIndex's unitRun): the stored index, or one rebuilt beside it. */
export interface UnitSink {
  /** In how many turns saved so far each term occurs. */
  termFrequencies(terms: readonly string[]): Promise<Map<string, number>>;
  canonical(raws: readonly string[]): Promise<string[]>;
  /** Saves units with the terms of their new turns; canonical() knows their tags from then on. */
  save(units: UnitTags[], terms: ReadonlyMap<string, number>): Promise<void>;
}

/** Splits turns into units: a user turn starts one, replies and tool turns join it; system turns are not tagged. */
export function group(turns: readonly TurnRecord[]): TurnRecord[][] {
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

/** Where a run starts: the turns counted before its first unit, and the known tags, most used first. */
export interface RunStart {
  turns: number;
  vocabulary: string[];
}

type RunChain = (request: TagRequest, privateText?: boolean) => Promise<{ result: TagResult; tagger: string; failures: string[] }>;

/**
 * Tags units one after another into `sink`, SAVE_TURNS turns per save: indexNew's loop, for the stored index or one
 * rebuilt beside it. `start`: the turns counted before the first unit and the known tags, most used first. Strict:
 * a unit (not a private one) that the configured tagger failed on is not taken — add() returns the failures — so a
 * rebuild never makes the fallback's tags where the old ones were the configured tagger's.
 */
/** Tagging that took this long since the last save yields before the next one. */
const SAVE_AFTER_MS = 20;

function createUnitRun(o: TagIndexOptions, runChain: RunChain, conversationId: string, sink: UnitSink, start: RunStart, strict: boolean) {
  const { vocabulary } = start;
  const known = new Set(vocabulary);
  const terms = new Map<string, number>();
  const failures: string[] = [];
  let turnTotal = start.turns;
  let saved: UnitTags[] = [];
  let units = 0;
  let pending = 0;
  let since = performance.now();
  const flush = async (): Promise<void> => {
    await sink.save(saved, terms);
    units += saved.length;
    saved = [];
    terms.clear();
    pending = 0;
    since = performance.now();
  };
  return {
    failures,
    flush,
    units: () => units,
    /** Tags one unit; `fresh`: its turns not counted yet. */
    async add(unit: readonly TurnRecord[], fresh: readonly TurnRecord[]): Promise<string[] | null> {
      const secret = unit.some((t) => t.private);
      const { result, tagger, failures: f } = await runChain({
        text: unitText(unit), kind: 'unit', conversationId, vocabulary, minTags: o.minTags, maxTags: o.maxTags,
        stats: { turns: turnTotal, termFrequencies: async (ts) => {
          const stored = await sink.termFrequencies(ts);
          return new Map(ts.map((t) => [t, (stored.get(t) ?? 0) + (terms.get(t) ?? 0)]));
        } },
      }, secret);
      if (strict && !secret && f.length > 0) return f;
      failures.push(...f);
      for (const t of fresh) for (const term of candidates(taggableText(t.text)).keys()) terms.set(term, (terms.get(term) ?? 0) + 1);
      turnTotal += fresh.length;
      const tags = await sink.canonical(result.tags);
      saved.push({ unitSeq: unit[0]!.seq, endSeq: unit[unit.length - 1]!.seq, tags, relatedTags: await sink.canonical(result.relatedTags), tagger });
      // Vocabulary feedback within a batch too: the next unit's tagger sees these (not a private unit's words).
      if (!secret) for (const t of tags) if (!known.has(t)) { known.add(t); vocabulary.push(t); }
      pending += fresh.length;
      if (pending >= SAVE_TURNS) {
        // A save after slow tagging in a slice of its own: 128 long turns take 50 ms to save (their terms), after up
        // to a slice of tagging (short turns tag fast, and a browser's nested timers cost 4 ms: no yield for them).
        // Where saves fall is kept (canonical() reads the saved tags): what is stored does not change.
        if (performance.now() - since >= SAVE_AFTER_MS) await yieldToEventLoop();
        await flush();
      }
      return null;
    },
  };
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

  const signature = signatureOf(o.taggers[0]);
  const unitRun = (conversationId: string, sink: UnitSink, start: RunStart, strict = false) => createUnitRun(o, runChain, conversationId, sink, start, strict);

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
      // Many turns at once (a sync, an import): the event loop handed back now and then (another memory's call runs).
      // The first slice counts from here: reading 2,000 long turns (7 MB) takes 30 ms of it.
      const pace = pacer();
      const began = performance.now();
      const last = await o.tags.lastUnit(conversationId);
      const from = last?.unitSeq ?? 0;
      const turns = await o.turns.range(conversationId, from, 1_000_000);
      const countedTo = last?.endSeq ?? -1;
      if (turns.length === 0 || turns[turns.length - 1]!.seq <= countedTo) return { units: 0, failures: [] };
      // Most used first, as stored (an LLM tagger's prompt takes the head of the list).
      const vocabulary = [...(await o.canonicalizer.counts(conversationId))].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([t]) => t);
      // The tags are the configured tagger's from here on: recorded for a conversation that has no record yet.
      const also = signature === null ? [] : [firstSignature(conversationId, signature)];
      const run = unitRun(conversationId, {
        termFrequencies: (ts) => o.tags.termFrequencies(conversationId, ts),
        canonical: (raws) => o.canonicalizer.canonical(conversationId, raws, nowIso),
        save: async (units, terms) => o.canonicalizer.refresh(conversationId, await o.tags.saveUnits(conversationId, units, terms, nowIso, also)),
      }, { turns: countedTo + 1, vocabulary });
      for (const unit of group(turns)) {
        const fresh = unit.filter((t) => t.seq > countedTo);
        if (fresh.length === 0) continue;
        await pace(fresh.length);
        await run.add(unit, fresh);
      }
      // A long run's last save is a slice of its own (up to 127 long turns: 50 ms): the last slice of tagging before
      // it, and what the caller runs on after it in the same task (the compaction the new turns call for), apart.
      const long = performance.now() - began >= YIELD_MS;
      if (long) await yieldToEventLoop();
      await run.flush();
      if (long) await yieldToEventLoop();
      return { units: run.units(), failures: run.failures };
    },

    /** What the configured tagger's tags are recorded as made by (null: it has no version, and is never rebuilt). */
    signature,
    unitRun,
  };
}

export type TagIndex = ReturnType<typeof createTagIndex>;
