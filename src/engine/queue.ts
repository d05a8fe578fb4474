import type { Atomic } from '../compaction/compactor.js';
import { PagewiseError } from '../contracts/errors.js';
import { type SchedulerMode, createScheduler } from './scheduler.js';

const MODULE = 'engine';

/**
 * The engine's queue as its calls take it. Calls on one conversation run one at a time, in order; calls on different
 * conversations interleave at their awaits; what spans conversations runs alone. The rule, and why it is safe, is at
 * createScheduler. Once shut, every new call is refused with ENGINE_CLOSED.
 */
export interface EngineQueue {
  /** An exclusive slot (waits for every earlier call, holds back every later one); refused once shut. */
  serial<T>(fn: () => Promise<T>): Promise<T>;
  /** Exclusive, also while closing: the later slots of an import already admitted. */
  resume<T>(fn: () => Promise<T>): Promise<T>;
  /** One conversation's slots (background work takes them step by step). */
  keyed(conversationId: string): Atomic;
  /** A call on the conversation `read` names: read (caller input, once) before it is queued, so it can take that key. */
  on<T>(read: () => string, fn: (conversationId: string) => Promise<T>): Promise<T>;
  /** Calls waiting and running now, and the most there have been (memory.stats().queues). */
  depth(): { waiting: number; running: number; maxWaiting: number; maxRunning: number };
  /** Refuses every later call; false when it was shut already. */
  shut(): boolean;
  /** Resolves at once while open (ENGINE_CLOSED once shut), taking no slot: for calls that read no storage. */
  check(): Promise<void>;
}

export function createEngineQueue(mode: SchedulerMode): EngineQueue {
  let closed = false;
  const scheduler = createScheduler(mode);
  const refused = () => Promise.reject(new PagewiseError('ENGINE_CLOSED', MODULE, 'This memory is closed; create a new one with createMemory() (or connect()).'));
  const resume = <T>(fn: () => Promise<T>): Promise<T> => scheduler.run(null, fn);
  return {
    serial: (fn) => (closed ? refused() : resume(fn)),
    resume,
    keyed: (conversationId) => (fn) => (closed ? refused() : scheduler.run(conversationId, fn)),
    on(read, fn) {
      if (closed) return refused();
      let conversationId: string;
      try {
        conversationId = read();
      } catch (error) {
        return Promise.reject(error);
      }
      return scheduler.run(conversationId, () => fn(conversationId));
    },
    depth: () => scheduler.depth(),
    check: () => (closed ? refused() : Promise.resolve()),
    shut() {
      if (closed) return false;
      closed = true;
      return true;
    },
  };
}
