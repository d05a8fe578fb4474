/**
 * The engine's scheduler: a readers-writer lock with keys. A call on conversation X waits only for the calls on X
 * admitted before it; an exclusive call waits for every call admitted before it and holds back every call admitted
 * after it until it is done. Within a key, and around an exclusive call, the order is the order of admission.
 *
 * The rule (why this is safe on one SQLite connection and one set of caches):
 *
 * - Per conversation: everything whose reads and writes name one conversation: its turns, units, tags, term
 *   frequencies, summaries, compaction state, pins, recall counts, vectors, its own aliases (manual and learned),
 *   and the engine's caches of them (turn facts, unit counts, vocabularies and local aliases, measured pressure,
 *   topics hints, vector indexes: all keyed by conversation). A call that reads, computes and writes back (append's
 *   next seq, a segment's watermark check, a learned alias) assumes only that no other call on the same
 *   conversation wrote in between, which the key guarantees. What other conversations write meanwhile (their rows in
 *   the shared FTS tables, the global document counts a question's term weights read) is read, never written back.
 * - Exclusive: whatever spans conversations or changes what every conversation reads: global aliases and any alias
 *   call (its scope is read inside the call, so it cannot pick a key first), conversations(), costReport() of all,
 *   export, import and forget (data-control: several conversations, the shared FTS tables' optimize and VACUUM),
 *   exportDatabase (a consistent copy), recovery at open and close.
 * - The ledger's flush is not exclusive: it hands its pending rows over synchronously and inserts them in one batch;
 *   nothing reads llm_usage and writes back except forget of a whole conversation, which is exclusive.
 * - A batch is one transaction that must not have another call's statements inside it. The bundled drivers run it
 *   synchronously (sqlite-wasm and the Node file driver: BEGIN…COMMIT without an await; Durable Object SQL:
 *   transactionSync; the browser worker runs this engine over sqlite-wasm), so calls interleave only between
 *   statements, never inside a batch. A custom driver may answer with a promise: the engine then holds every other
 *   statement until that batch settles (see `gateBatches` in engine-support.ts).
 *
 * JavaScript runs one thing at a time: keys do not make synchronous work run in parallel, they stop a call from
 * waiting for another conversation's awaits (an LLM tagger or summarizer, the embedding model, a slow driver) and
 * for whole calls queued ahead of it (a short question no longer waits for a long compaction).
 */
export type SchedulerMode = 'keyed' | 'global';

/**
 * An internal option, read only by the concurrency bench: `{ [SCHEDULER_MODE]: 'global' }` runs every call
 * exclusively, one at a time in order (the single queue the engine had before).
 */
export const SCHEDULER_MODE: unique symbol = Symbol.for('pagewise.schedulerMode');

/** The mode an options object asks for; anything but 'global' (or an unreadable object) is 'keyed'. */
export function schedulerModeOf(options: unknown): SchedulerMode {
  try {
    return (options as { [SCHEDULER_MODE]?: unknown } | null)?.[SCHEDULER_MODE] === 'global' ? 'global' : 'keyed';
  } catch {
    return 'keyed';
  }
}

export function createScheduler(mode: SchedulerMode = 'keyed') {
  // The last exclusive call; a keyed call with no earlier call on its key runs after it.
  let barrier: Promise<void> = Promise.resolve();
  // The last call on each key admitted since the last exclusive one; a key leaves the map when its last call ends,
  // so the map holds only conversations with calls under way.
  const tails = new Map<string, Promise<void>>();
  // Calls admitted and not started, and started and not ended (memory.stats().queues): plain counters, no promise more.
  const depth = { waiting: 0, running: 0, maxWaiting: 0, maxRunning: 0 };
  const counted = <T>(fn: () => Promise<T>) => {
    depth.maxWaiting = Math.max(depth.maxWaiting, ++depth.waiting);
    return () => {
      depth.waiting--;
      depth.maxRunning = Math.max(depth.maxRunning, ++depth.running);
      return fn();
    };
  };
  const ended = (): void => { depth.running--; };

  return {
    /** Runs `fn` on `key` (a conversation), or exclusively with `null`. `fn` runs whether earlier calls failed or not. */
    run<T>(key: string | null, fn: () => Promise<T>): Promise<T> {
      if (key === null || mode === 'global') {
        // Tails and the barrier never reject: waiting on them is waiting for the calls to end, however they ended.
        const earlier = tails.size === 0 ? barrier : Promise.all([barrier, ...tails.values()]);
        tails.clear();
        const run = earlier.then(counted(fn));
        barrier = run.then(ended, ended);
        return run;
      }
      const run = (tails.get(key) ?? barrier).then(counted(fn));
      const tail = run.then(ended, ended);
      tails.set(key, tail);
      void tail.then(() => { if (tails.get(key) === tail) tails.delete(key); });
      return run;
    },

    /** Calls waiting and running now, and the most there have been. */
    depth: () => ({ ...depth }),

    /** Keys with a call admitted and not finished (for tests). */
    get busyKeys(): number {
      return tails.size;
    },
  };
}

export type Scheduler = ReturnType<typeof createScheduler>;
