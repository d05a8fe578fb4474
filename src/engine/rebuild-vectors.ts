// Vectors of the current embedding model after a change of model (engine/rebuild.ts runs it a slice at a time), and
// the wait every rebuild keeps after a failure: a summarizer or an embedder that is down is asked again after a
// minute, then two, doubling to an hour, not at every slice (an alarm's every 100 ms, the engine's loop at once).
import type { Background } from '../common/background.js';
import { Lru } from '../common/cache.js';
import type { RebuildStatus } from '../contracts/types-ops.js';
import type { Semantic } from '../embed/semantic.js';

/** The wait after a rebuild's first failure, ms; each failure that follows doubles it, up to RETRY_MAX_MS. */
export const RETRY_MIN_MS = 60_000;
export const RETRY_MAX_MS = 3_600_000;
/** Conversations looked at per slice for texts waiting for the current model's vectors (those being embedded are passed over). */
const VECTOR_CANDIDATES = 32;
/** How soon to look again while every conversation looked at is being embedded, or after a retry was handed over, ms. */
export const VECTOR_LOOK_MS = 1_000;

/** A rebuild's last failure and when to try again: a success clears it. */
export function createRetry(now: () => number = () => Date.now()) {
  let delay = 0;
  let due = 0;
  let error: string | null = null;
  return {
    /** A failure: the next try waits RETRY_MIN_MS, or twice the last wait while failures follow each other. */
    failed(message: string): void {
      error = message;
      delay = delay === 0 ? RETRY_MIN_MS : Math.min(delay * 2, RETRY_MAX_MS);
      due = now() + delay;
    },
    succeeded(): void {
      error = null;
      delay = 0;
    },
    /** The failure that stands (null: none, or a success since). */
    error: (): string | null => error,
    /** Whether a failure stands and its wait is not over. */
    waiting: (): boolean => error !== null && now() < due,
    /** When the next try is due, ms from now (null: no failure stands). */
    dueInMs: (): number | null => (error === null ? null : Math.max(0, due - now())),
  };
}

/**
 * Vectors of the current model: the embedding queue (semantic.ts) makes them a conversation at a time and drops
 * another model's once a conversation is covered. Each slice hands it the newest conversation still waiting that is
 * not already being embedded; the progress is counted over every conversation. While the queue's last batch failed
 * (or a conversation handed over came back with no new vector), nothing more is handed over and `more` is false:
 * after the wait one conversation is handed over again, and its outcome decides.
 */
export function createVectorRebuild(semantic: Semantic, background: Background) {
  const retry = createRetry();
  // Conversations handed over lately, with how many of their texts had a vector then. The newest waiting are the
  // candidates, so one that made nothing comes back within twice as many hand-overs.
  const handed = new Lru<string, number>(2 * VECTOR_CANDIDATES);
  let lookInMs: number | null = null;

  const embedded = async (conversationId: string): Promise<number> => (await semantic.status(conversationId)).embedded;
  const hand = async (conversationId: string): Promise<void> => {
    handed.set(conversationId, await embedded(conversationId));
    semantic.schedule(conversationId);
  };
  /** Handed over before and not being embedded now, yet no more of its texts have a vector than then. */
  const madeNothing = async (conversationId: string): Promise<boolean> => {
    const then = handed.get(conversationId);
    return then !== undefined && (await embedded(conversationId)) <= then;
  };
  const status = async (conversationId: string | null): Promise<RebuildStatus | null> => {
    const p = await semantic.progress();
    const error = retry.error();
    return p && { kind: 'vectors', done: Math.min(p.done, p.total), total: p.total, conversationId, ...(error ? { lastError: error } : {}) };
  };

  return {
    status: async () => status((await semantic.lacking(1))[0] ?? null),

    /** When a slice should look again by itself, ms from now (null: only when more is asked for, or never). */
    retryInMs: (): number | null => lookInMs ?? retry.dueInMs(),

    async slice(): Promise<{ status: RebuildStatus | null; more: boolean }> {
      lookInMs = null;
      if (semantic.modelId() === null) return { status: null, more: false };
      const waiting = await semantic.lacking(VECTOR_CANDIDATES);
      const next = waiting.find((id) => !background.busy(id));
      const trouble = semantic.lastFailure() ?? (next !== undefined && (await madeNothing(next)) ? `no vectors were made for conversation ${next}; it is tried again later` : null);
      let more = false;
      if (trouble === null) {
        retry.succeeded();
        if (next !== undefined) await hand(next);
        // Scheduled: the next slice hands over the next one. All are being embedded: look again soon (the queue
        // hands none back by itself).
        more = next !== undefined && background.busy(next) && waiting.length > 1;
        if (next === undefined && waiting.length > 0) lookInMs = VECTOR_LOOK_MS;
      } else if (!retry.waiting()) {
        // First sight of the failure: wait. The wait is over: one conversation again (its batch clears the failure
        // or fails again, and the next wait is twice as long), and a look soon after to see which.
        if (retry.error() !== null && next !== undefined) {
          await hand(next);
          lookInMs = VECTOR_LOOK_MS;
        }
        retry.failed(trouble);
      }
      const now = await status(next ?? waiting[0] ?? null);
      return { status: now && (now.done < now.total || more ? now : null), more };
    },
  };
}
