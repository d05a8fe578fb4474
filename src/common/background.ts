// Lanes whose jobs run at once: a job waits on its summarizer or the model between its short storage slots, so a few
// conversations' work overlaps, without every conversation of a busy server calling its LLM at the same moment.
export const LANES_AT_ONCE = 4;

/**
 * The engine's background work (soft-threshold compaction, lazy regeneration, embedding), stopped (and its summaries
 * aborted) when the engine closes. Jobs run in lanes, one per conversation: one job per key at a time, a lane's jobs
 * in order, and up to LANES_AT_ONCE lanes at once, so one conversation's compaction waiting on its LLM summarizer
 * does not hold back another's vectors or compaction (which would then fall due inside its requests, as a hard one).
 */
export function createBackground(lanesAtOnce = LANES_AT_ONCE) {
  const controller = new AbortController();
  const scheduled = new Set<string>();
  // The last job of each lane; a lane leaves the map when its last job ends.
  const lanes = new Map<string, Promise<void>>();
  let running = 0;
  const waiting: (() => void)[] = [];
  let stopped = false;
  // The deepest the lanes have been (memory.stats().queues): jobs queued (`scheduled`) and running at once.
  let maxQueued = 0;
  let maxRunning = 0;

  const acquire = (): Promise<void> => {
    if (running < lanesAtOnce) {
      maxRunning = Math.max(maxRunning, ++running);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => waiting.push(resolve));
  };
  // The freed place goes straight to the next waiting job (running stays the same).
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };

  // The lanes' last jobs, but `except`'s.
  const tails = (except?: string): Promise<void>[] => [...lanes].filter(([lane]) => lane !== except).map(([, tail]) => tail);
  const idle = async (except?: string): Promise<void> => {
    for (let all = tails(except); all.length > 0; all = tails(except)) await Promise.all(all);
  };

  return {
    /** Aborted when the engine closes: jobs pass it to summarizers. */
    signal: controller.signal,

    /** Queues `job` in `lane` (a conversation; '' for work of no conversation) unless one with the same key waits. */
    later(key: string, job: () => Promise<void>, lane = ''): void {
      if (scheduled.has(key) || stopped) return;
      scheduled.add(key);
      maxQueued = Math.max(maxQueued, scheduled.size);
      const next = (lanes.get(lane) ?? Promise.resolve()).then(async () => {
        await acquire();
        try {
          scheduled.delete(key);
          if (!stopped) await job();
        } finally {
          release();
        }
      }).catch(() => undefined);
      lanes.set(lane, next);
      void next.then(() => { if (lanes.get(lane) === next) lanes.delete(lane); });
    },

    /** Resolves once every lane (but `except`) is empty, including jobs queued while waiting. */
    idle,

    /** Whether a job of `lane` (a conversation) is queued or running. */
    busy: (lane: string): boolean => lanes.has(lane),

    /** Jobs queued (not started) and running now, and the most there have been. */
    depth: () => ({ queued: scheduled.size, running, maxQueued, maxRunning }),

    /** Refuses new jobs, aborts the running ones and waits for them. */
    async stop(reason: unknown): Promise<void> {
      stopped = true;
      controller.abort(reason);
      await idle();
    },
  };
}

export type Background = ReturnType<typeof createBackground>;
