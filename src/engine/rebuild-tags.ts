// The tag index of a conversation rebuilt after the configured tagger (or its version) changed: engine/rebuild.ts runs
// it a slice at a time, newest conversation first. The new units are made beside the stored index, in memory, exactly
// as indexNew makes them for a conversation imported whole; recall reads the old tags until the new index is complete,
// then it replaces the old one in one transaction and the turns appended meanwhile are tagged on top of it.
import { pacer } from '../common/pace.js';
import type { Atomic } from '../compaction/compactor.js';
import type { RebuildStatus } from '../contracts/types-ops.js';
import type { TurnRecord } from '../store/turn-store.js';
import { group, type TagIndex } from '../tags/tag-index.js';
import type { Fingerprint } from '../tags/tag-signatures.js';
import type { UnitTags } from '../tags/tag-store.js';
import type { Stores } from './parts.js';
import { createRetry } from './rebuild-vectors.js';

/** Turns tagged per slice at most (a unit is not split: one longer than this is read whole). */
export const SLICE_TURNS = 256;
/** A slice also ends after the unit that takes it past this long (an LLM tagger answers in seconds), as the summaries' do. */
const SLICE_MS = 2_000;

export interface TagRebuildDeps extends Pick<Stores, 'store' | 'tagStore' | 'canonicalizer' | 'thingJudge' | 'ledger'> {
  /** The rebuild's own tag index: the configured taggers, an LLM's calls recorded as the rebuild's. */
  index: TagIndex;
  /** The topics hints made from a conversation's tags. */
  hints?: { delete(conversationId: string): void };
  /** A conversation's slots: each read and the replacement take its slot, the tagging between them does not. */
  keyed(conversationId: string): Atomic;
}

/** One conversation's rebuild under way: the units made so far, and the turns read as they stood when read. */
interface Run {
  conversationId: string;
  /** The last position read, and the fingerprint of the turns up to it when they were read. */
  readTo: number;
  print: Fingerprint;
  /** The first position not tagged yet (a unit's start); null once every turn there was has been tagged. */
  next: number | null;
  units: UnitTags[];
  terms: Map<string, number>;
  staged: ReturnType<Stores['canonicalizer']['staged']>;
  tagger: ReturnType<TagIndex['unitRun']>;
}

const same = (a: Fingerprint, b: Fingerprint): boolean => a.turns === b.turns && a.maxRowid === b.maxRowid && a.head === b.head;

/** A run from the conversation's first turn, into a tag index of its own. */
function begin(d: TagRebuildDeps, conversationId: string): Run {
  const units: UnitTags[] = [];
  const terms = new Map<string, number>();
  const staged = d.canonicalizer.staged(conversationId);
  // The sink of a conversation imported whole: nothing counted before it, its own vocabulary, aliases it learns.
  const tagger = d.index.unitRun(conversationId, {
    termFrequencies: async (ts) => new Map(ts.map((t) => [t, terms.get(t) ?? 0])),
    canonical: staged.canonical,
    async save(saved, batch) {
      units.push(...saved);
      for (const [t, n] of batch) terms.set(t, (terms.get(t) ?? 0) + n);
      for (const u of saved) for (const t of new Set([...u.tags, ...u.relatedTags])) staged.know(t, staged.units(t) + 1);
    },
  }, { turns: 0, vocabulary: [] }, true);
  return { conversationId, readTo: -1, print: { turns: 0, maxRowid: 0, head: null }, next: 0, units, terms, staged, tagger };
}

/**
 * The whole units from `from` on, up to about SLICE_TURNS turns (a longer unit is read whole), where the next read
 * starts (null: none is left), and the fingerprint of the turns up to the last one read. In the conversation's slot.
 */
async function read(d: TagRebuildDeps, r: Run, from: number): Promise<{ units: TurnRecord[][]; next: number | null; readTo: number; print: Fingerprint }> {
  const done = async (units: TurnRecord[][], next: number | null, readTo: number) => ({ units, next, readTo, print: await d.tagStore.fingerprint(r.conversationId, readTo) });
  for (let limit = SLICE_TURNS; ; limit *= 2) {
    const got = await d.store.range(r.conversationId, from, limit);
    const units = group(got);
    const last = got[got.length - 1]?.seq ?? Math.max(r.readTo, from - 1);
    if (got.length < limit) return done(units, null, last);
    // Only turns no unit holds (system turns): the next slice reads on after them.
    if (units.length === 0) return done(units, last + 1, last);
    // The last unit may go on past what was read: it is read again, whole, by the next slice.
    if (units.length > 1) return done(units.slice(0, -1), units[units.length - 1]![0]!.seq, last);
  }
}

export function createTagRebuild(d: TagRebuildDeps) {
  const { signature } = d.index;
  let run: Run | null = null;
  // Conversations with no record are recorded as the configured tagger's once, on the first slice.
  let recorded = false;
  // The configured tagger's last failure: slices wait before trying again, as the summaries' and vectors' do.
  const retry = createRetry();

  /**
   * Whether the turns read so far are where they were: a forget or a move to another branch among them starts the run
   * over; turns appended after them (or changed beyond them) are read as they are now.
   */
  const unchanged = async (r: Run): Promise<boolean> => same(await d.tagStore.fingerprint(r.conversationId, r.readTo), r.print);

  const status = async (conversationId: string | null): Promise<RebuildStatus | null> => {
    if (signature === null) return null;
    const { total, done } = await d.tagStore.signedBy(signature);
    const lastError = retry.error();
    return { kind: 'tags', done, total, conversationId: done < total ? conversationId : null, ...(lastError ? { lastError } : {}) };
  };

  /** The new index in place of the old, and what was appended meanwhile tagged on top of it; false: start over. */
  const replace = (r: Run, nowIso: string): Promise<boolean> => d.keyed(r.conversationId)(async () => {
    if (!(await unchanged(r))) return false;
    await d.tagStore.replaceIndex(r.conversationId, { units: r.units, terms: r.terms, aliases: r.staged.learned }, signature!, nowIso);
    for (const part of [d.tagStore, d.canonicalizer, d.thingJudge]) part.uncache(r.conversationId);
    // The topics hint is made from the tags: the next request makes it again from the new ones.
    d.hints?.delete(r.conversationId);
    await d.index.indexNew(r.conversationId, nowIso);
    return true;
  });

  /** Tags the units read, one after another; stops at the signal, the slice's time, or a failure of the tagger. */
  const tagSlice = async (r: Run, units: TurnRecord[][], signal: AbortSignal): Promise<'done' | 'stopped' | 'failed'> => {
    const started = performance.now();
    const pace = pacer();
    for (const unit of units) {
      if (signal.aborted || performance.now() - started > SLICE_MS) return 'stopped';
      r.next = unit[0]!.seq;
      await pace(unit.length);
      const failed = await r.tagger.add(unit, unit);
      if (failed) {
        // The configured tagger failed (its fallback would have answered): the old tags stay; a slice after the wait tries again.
        retry.failed(`The tagger failed; the tags made by the earlier version are kept: ${failed.join('; ')}`);
        return 'failed';
      }
    }
    return 'done';
  };

  return {
    /** When a slice is due again after the tagger failed, ms from now (null: no failure stands). */
    retryInMs: retry.dueInMs,

    /** Progress, from counts only: null when every conversation's tags are the configured tagger's. */
    async status(): Promise<RebuildStatus | null> {
      if (signature === null) return null;
      const now = await status(run?.conversationId ?? await d.tagStore.unsignedBy(signature));
      return now && now.done < now.total ? now : null;
    },

    async slice(signal: AbortSignal): Promise<{ status: RebuildStatus | null; more: boolean }> {
      if (signature === null) return { status: null, more: false };
      if (!recorded) {
        await d.tagStore.recordUnsigned(signature);
        recorded = true;
      }
      if (retry.waiting()) return { status: await status(run?.conversationId ?? await d.tagStore.unsignedBy(signature)), more: false };
      if (run === null) {
        const next = await d.tagStore.unsignedBy(signature);
        if (next === null) return { status: null, more: false };
        run = begin(d, next);
      }
      const r = run;
      let outcome: 'done' | 'stopped' | 'failed' | 'restart' = 'done';
      if (r.next !== null) {
        const from = r.next;
        const got = await d.keyed(r.conversationId)(async () => ((await unchanged(r)) ? read(d, r, from) : null));
        if (got === null) outcome = 'restart';
        else {
          // From here on the turns up to the last one read must stay as they are (those not tagged yet included).
          r.readTo = got.readTo;
          r.print = got.print;
          outcome = await tagSlice(r, got.units, signal);
          if (outcome === 'done') r.next = got.next;
        }
      }
      if (outcome === 'done' && r.next === null) {
        await r.tagger.flush();
        outcome = (await replace(r, new Date().toISOString())) ? 'done' : 'restart';
        if (outcome === 'done') run = null;
      }
      if (outcome !== 'failed') retry.succeeded();
      // An LLM tagger's calls go to the ledger.
      await d.keyed(r.conversationId)(() => d.ledger.flush()).catch(() => undefined);
      // Turns gone or moved under the run: it starts over with them as they are now.
      if (outcome === 'restart') run = null;
      // The conversation the next slice works on.
      const now = await status(run?.conversationId ?? await d.tagStore.unsignedBy(signature));
      return { status: now, more: outcome !== 'failed' && !signal.aborted && now !== null && now.done < now.total };
    },
  };
}

export type TagRebuild = ReturnType<typeof createTagRebuild>;
