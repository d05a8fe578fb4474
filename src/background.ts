/**
 * The engine's background work (soft-threshold compaction, lazy regeneration): one chain of jobs, one per key at a
 * time, stopped (and its summaries aborted) when the engine closes.
 */
export function createBackground() {
  const controller = new AbortController();
  const scheduled = new Set<string>();
  let chain: Promise<void> = Promise.resolve();
  let stopped = false;
  return {
    /** Aborted when the engine closes: jobs pass it to summarizers. */
    signal: controller.signal,

    /** Queues `job` unless one with the same key is waiting already. */
    later(key: string, job: () => Promise<void>): void {
      if (scheduled.has(key) || stopped) return;
      scheduled.add(key);
      chain = chain.then(async () => {
        scheduled.delete(key);
        if (!stopped) await job();
      }).catch(() => undefined);
    },

    /** Resolves once the chain is empty, including jobs queued while waiting. */
    async idle(): Promise<void> {
      let seen: Promise<void>;
      do {
        seen = chain;
        await seen;
      } while (seen !== chain);
    },

    /** Refuses new jobs, aborts the running one and waits for it. */
    async stop(reason: unknown): Promise<void> {
      stopped = true;
      controller.abort(reason);
      await chain;
    },
  };
}

export type Background = ReturnType<typeof createBackground>;
