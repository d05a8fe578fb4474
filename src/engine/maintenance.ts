// Background maintenance: what a memory does by itself to stay within its policy and current after an upgrade —
// retention (engine/retention.ts) and rebuilding derived data an older summarizer, tagger or embedder made
// (engine/rebuild.ts). Each runs a slice at a time; `maintain()` is one slice of each task that has work. In Node and
// the browser the engine runs slices one after another in its background lane; at the edge (`maintenance: 'manual'`)
// each alarm of the Durable Object calls `maintain()` once.
import type { Background } from '../common/background.js';
import { yieldToEventLoop } from '../common/pace.js';
import { isPagewiseError } from '../contracts/errors.js';
import type { MaintenanceReport, RebuildStatus, RetentionReport } from '../contracts/types-ops.js';

/** One kind of maintenance, a slice at a time. */
export interface MaintenanceTasks {
  /** One slice of retention; null when there is no policy or nothing is due. */
  retention?(signal: AbortSignal): Promise<RetentionReport | null>;
  /** One slice of rebuilding, with every rebuild's progress (empty: everything is current). */
  rebuild?(signal: AbortSignal): Promise<{ statuses: RebuildStatus[]; more: boolean }>;
  /** How long after a pass with nothing left the next check falls due, ms (null: none by itself, e.g. no retention). */
  recheckMs(): number | null;
}

/**
 * The lane maintenance's own job runs in. forget and sync wait for the other lanes (work derived from the turns they
 * remove or move) but not this one: a retention pass or a rebuild takes many slices, each in its conversation's slots.
 */
// A blank name: no conversation id is blank, so no conversation's lane is this one.
export const MAINTENANCE_LANE = ' ';

export interface Maintenance {
  /** One slice of every task that has work. */
  maintain(): Promise<MaintenanceReport>;
  /** Starts the background loop (`maintenance: 'auto'`): slices until nothing is left, then again after recheckMs. */
  start(): void;
  /** Stops the loop's timer (the background itself is stopped by close). */
  stop(): void;
}

export function createMaintenance(tasks: MaintenanceTasks, background: Background): Maintenance {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  // Each task on its own: one that fails (a slice over the storage's limits, a summarizer down) neither stops the
  // other nor goes unsaid; it is tried again at the next check, not at once.
  const once = async (): Promise<MaintenanceReport> => {
    const errors: MaintenanceReport['errors'] = [];
    const failed = (task: 'retention' | 'rebuild') => (error: unknown) => {
      errors.push({ task, ...(isPagewiseError(error) ? { code: error.code } : {}), message: String((error as Error | null)?.message ?? error) });
      return null;
    };
    const retention = tasks.retention ? await tasks.retention(background.signal).catch(failed('retention')) : null;
    const rebuilt = (tasks.rebuild ? await tasks.rebuild(background.signal).catch(failed('rebuild')) : null) ?? { statuses: [], more: false };
    return { retention, rebuilds: rebuilt.statuses, more: Boolean(retention?.more) || rebuilt.more, nextInMs: tasks.recheckMs(), errors };
  };
  // One slice at a time: a maintain() called by hand while the background's slice runs waits for it.
  let last: Promise<unknown> = Promise.resolve();
  const maintain = (): Promise<MaintenanceReport> => {
    const run = last.then(once, once);
    last = run.catch(() => undefined);
    return run;
  };

  // One slice per job. While more is left the next slice is queued in the same lane at once, so flush() (which waits
  // for the lanes to empty) waits for the whole pass; each slice takes its conversation's slots step by step, so calls
  // go on between them. With nothing left, the next check is a timer that keeps no lane busy.
  const slice = async (): Promise<void> => {
    if (stopped) return;
    const report = await maintain().catch(() => null);
    if (stopped) return;
    // The event loop turns between slices: calls queued meanwhile run before the next one.
    await yieldToEventLoop();
    if (stopped) return;
    if (report?.more) background.later('maintenance', slice, MAINTENANCE_LANE);
    else {
      const recheck = tasks.recheckMs();
      if (recheck !== null) later(recheck);
    }
  };

  const later = (ms: number): void => {
    if (stopped) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      background.later('maintenance', slice, MAINTENANCE_LANE);
    }, ms);
    // A timer never keeps a Node process alive by itself.
    (timer as { unref?: () => void }).unref?.();
  };

  return {
    maintain,
    start: () => background.later('maintenance', slice, MAINTENANCE_LANE),
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}
