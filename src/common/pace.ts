// Every pass hands the event loop back between its slices (a macrotask, not a microtask) after this many turns or
// milliseconds: in a Durable Object the clock stands still during synchronous work, so the count is what bounds it
// there, and another object's request (or this one's next call) runs between slices instead of waiting for the pass.
export const YIELD_TURNS = 256;
export const YIELD_MS = 50;

/** One turn of the event loop: Node's setImmediate (no 1 ms timer floor), else a zero timer (workerd, browsers). */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => {
  const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
  if (typeof immediate === 'function') immediate(resolve);
  else setTimeout(resolve, 0);
});

/** A pass's pace: `pace(work)` counts work done (turns, or their equivalent) and yields once YIELD_TURNS or `sliceMs` have passed. */
export type Pace = (work: number) => Promise<void>;

export function pacer(sliceMs = YIELD_MS): Pace {
  let work = 0;
  let since = performance.now();
  return async (n) => {
    work += n;
    if (work < YIELD_TURNS && performance.now() - since < sliceMs) return;
    await yieldToEventLoop();
    work = 0;
    since = performance.now();
  };
}
