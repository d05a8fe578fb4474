// The keyed scheduler and the background lanes, alone: ordering proved with calls held open by hand (no timings).
import { describe, expect, it } from 'vitest';
import { createBackground } from '../../../src/common/background.js';
import { createScheduler } from '../../../src/engine/scheduler.js';

/** A promise released by hand. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => { open = resolve; });
  return { open, opened };
}

/** Lets every pending promise callback run (microtasks and one macrotask turn). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A call that logs its start, waits for `g`, logs its end. */
function held(log: string[], name: string, g: { opened: Promise<void> }) {
  return async () => {
    log.push(`${name}:start`);
    await g.opened;
    log.push(`${name}:end`);
    return name;
  };
}

describe('scheduler', () => {
  it('runs calls on one key in order, one at a time', async () => {
    const s = createScheduler();
    const log: string[] = [];
    const [g1, g2] = [gate(), gate()];
    const a = s.run('x', held(log, 'x1', g1));
    const b = s.run('x', held(log, 'x2', g2));
    await settle();
    expect(log).toEqual(['x1:start']);
    g2.open();
    await settle();
    expect(log).toEqual(['x1:start']);
    g1.open();
    expect(await a).toBe('x1');
    expect(await b).toBe('x2');
    expect(log).toEqual(['x1:start', 'x1:end', 'x2:start', 'x2:end']);
  });

  it('runs a call on another key while one on x is held', async () => {
    const s = createScheduler();
    const log: string[] = [];
    const gx = gate();
    const x = s.run('x', held(log, 'x', gx));
    // y completes although x has not: it waited for nothing of x.
    expect(await s.run('y', async () => 'y')).toBe('y');
    expect(log).toEqual(['x:start']);
    gx.open();
    await x;
    await settle();
    // A key with no call under way is not kept: the map is as large as the conversations being served.
    expect(s.busyKeys).toBe(0);
  });

  it('an exclusive call waits for every earlier call, and holds back every later one until done', async () => {
    const s = createScheduler();
    const log: string[] = [];
    const [gx, gy, ge] = [gate(), gate(), gate()];
    const x = s.run('x', held(log, 'x', gx));
    const y = s.run('y', held(log, 'y', gy));
    const e = s.run(null, held(log, 'all', ge));
    const later = s.run('z', held(log, 'z', { opened: Promise.resolve() }));
    const laterX = s.run('x', held(log, 'x2', { opened: Promise.resolve() }));
    await settle();
    expect(log).toEqual(['x:start', 'y:start']);
    gx.open();
    await x;
    await settle();
    // y is still running: the exclusive call has not started.
    expect(log).toEqual(['x:start', 'y:start', 'x:end']);
    gy.open();
    await y;
    await settle();
    expect(log.slice(3)).toEqual(['y:end', 'all:start']);
    ge.open();
    await Promise.all([e, later, laterX]);
    expect(log.slice(5)).toEqual(['all:end', 'z:start', 'x2:start', 'z:end', 'x2:end']);
  });

  it('exclusive calls run one after another, in order', async () => {
    const s = createScheduler();
    const log: string[] = [];
    const [g1, g2] = [gate(), gate()];
    const a = s.run(null, held(log, 'e1', g1));
    const b = s.run(null, held(log, 'e2', g2));
    g2.open();
    await settle();
    expect(log).toEqual(['e1:start']);
    g1.open();
    await Promise.all([a, b]);
    expect(log).toEqual(['e1:start', 'e1:end', 'e2:start', 'e2:end']);
  });

  it('a failed call rejects its own promise only: the next one on its key (and an exclusive one) still runs', async () => {
    const s = createScheduler();
    const failed = s.run('x', async () => { throw new Error('boom'); });
    const next = s.run('x', async () => 'next');
    const all = s.run(null, async () => 'all');
    await expect(failed).rejects.toThrow('boom');
    expect(await next).toBe('next');
    expect(await all).toBe('all');
  });

  it("in 'global' mode every call waits for every earlier one (the single queue)", async () => {
    const s = createScheduler('global');
    const log: string[] = [];
    const gx = gate();
    const x = s.run('x', held(log, 'x', gx));
    const y = s.run('y', held(log, 'y', { opened: Promise.resolve() }));
    await settle();
    expect(log).toEqual(['x:start']);
    gx.open();
    await Promise.all([x, y]);
    expect(log).toEqual(['x:start', 'x:end', 'y:start', 'y:end']);
  });
});

/** `held`, as a background job (no result). */
function job(log: string[], name: string, g: { opened: Promise<void> }) {
  const run = held(log, name, g);
  return async () => { await run(); };
}

describe('background lanes', () => {
  it("runs another lane's job while one lane's job is held; a lane's jobs stay in order; idle waits for all", async () => {
    const bg = createBackground();
    const log: string[] = [];
    const gx = gate();
    bg.later('compact:x', job(log, 'x1', gx), 'x');
    bg.later('embed:x', job(log, 'x2', { opened: Promise.resolve() }), 'x');
    const yDone = gate();
    bg.later('compact:y', async () => { log.push('y'); yDone.open(); }, 'y');
    // y's job runs to its end although x's is held.
    await yDone.opened;
    expect(log).toEqual(['x1:start', 'y']);
    let idle = false;
    const waiting = bg.idle().then(() => { idle = true; });
    await settle();
    expect(idle).toBe(false);
    gx.open();
    await waiting;
    expect(log).toEqual(['x1:start', 'y', 'x1:end', 'x2:start', 'x2:end']);
  });

  it('runs at most lanesAtOnce lanes at a time; a key queued twice runs once', async () => {
    const bg = createBackground(2);
    const log: string[] = [];
    const gates = [gate(), gate(), gate()];
    ['a', 'b', 'c'].forEach((lane, i) => bg.later(`job:${lane}`, job(log, lane, gates[i]!), lane));
    bg.later('job:c', job(log, 'c-again', { opened: Promise.resolve() }), 'c');
    await settle();
    expect(log).toEqual(['a:start', 'b:start']);
    gates[2]!.open();
    gates[1]!.open();
    await settle();
    // b's place went to c.
    expect(log).toEqual(['a:start', 'b:start', 'b:end', 'c:start', 'c:end']);
    gates[0]!.open();
    await bg.idle();
    expect(log.filter((l) => l.startsWith('c'))).toEqual(['c:start', 'c:end']);
  });
});
