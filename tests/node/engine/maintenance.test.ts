// Background maintenance's loop (engine/maintenance.ts): one slice per job, the next queued at once while more is
// left (so the background lanes stay busy and flush() waits for the whole pass), a re-check after the interval when
// nothing is left, one slice at a time when maintain() is also called by hand, and nothing after stop.
import { describe, expect, it } from 'vitest';
import { createBackground } from '../../../src/common/background.js';
import { createMaintenance } from '../../../src/engine/maintenance.js';
import { createMemory } from '../../../src/index.js';
import type { RebuildStatus } from '../../../src/contracts/types-ops.js';
import { PagewiseError } from '../../../src/contracts/errors.js';

/** A rebuild task with `slices` slices of work, recording each slice and how many ran at once. */
function rebuildOf(slices: number) {
  const state = { left: slices, ran: 0, running: 0, most: 0 };
  const status = (): RebuildStatus[] => [{ kind: 'summaries', done: slices - state.left, total: slices, conversationId: state.left > 0 ? 'c1' : null }];
  return {
    state,
    rebuild: async () => {
      state.running++;
      state.most = Math.max(state.most, state.running);
      // A slice does its work across awaits, as a real one does between its storage slots.
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      if (state.left > 0) state.left--;
      state.ran++;
      state.running--;
      return { statuses: status(), more: state.left > 0 };
    },
  };
}

describe('maintenance loop', () => {
  it('runs slices one after another until nothing is left, and idle() (flush) waits for all of them', async () => {
    const background = createBackground();
    const task = rebuildOf(5);
    const m = createMaintenance({ rebuild: task.rebuild, recheckMs: () => null }, background);
    m.start();
    await background.idle();
    expect(task.state.left).toBe(0);
    // Five slices with work, none after the last said nothing is left.
    expect(task.state.ran).toBe(5);
    m.stop();
  });

  it('maintain() by hand runs one slice, never two at once with the background loop', async () => {
    const background = createBackground();
    const task = rebuildOf(6);
    const m = createMaintenance({ rebuild: task.rebuild, recheckMs: () => null }, background);
    m.start();
    const byHand = await Promise.all([m.maintain(), m.maintain()]);
    await background.idle();
    expect(task.state.most).toBe(1);
    expect(byHand.every((r) => r.rebuilds[0]!.kind === 'summaries')).toBe(true);
    expect(task.state.left).toBe(0);
    m.stop();
  });

  it('a task whose slice fails neither stops the other nor goes unsaid', async () => {
    const background = createBackground();
    const task = rebuildOf(2);
    const m = createMaintenance({
      retention: async () => { throw new PagewiseError('STORAGE_ERROR', 'test', 'the slice did not fit'); },
      rebuild: task.rebuild,
      recheckMs: () => null,
    }, background);
    const report = await m.maintain();
    expect(report.errors).toEqual([{ task: 'retention', code: 'STORAGE_ERROR', message: '[pagewise] [test] the slice did not fit' }]);
    expect(report.rebuilds[0]!.done).toBe(1);
    expect(report.more).toBe(true);
    m.stop();
  });

  it('re-checks after recheckMs when nothing is left, and stops with stop()', async () => {
    const background = createBackground();
    let checks = 0;
    let resolveSecond!: () => void;
    const second = new Promise<void>((r) => { resolveSecond = r; });
    const m = createMaintenance({
      retention: async () => {
        checks++;
        if (checks === 2) resolveSecond();
        return null;
      },
      recheckMs: () => 1,
    }, background);
    m.start();
    await second;
    m.stop();
    const after = checks;
    await background.idle();
    // A timer set before stop() fires no more slices.
    await new Promise((r) => setTimeout(r, 20));
    expect(checks).toBe(after);
  });

  it('an engine runs it by itself (auto), not with maintenance: manual, and refuses maintain() once closed', async () => {
    const auto = await createMemory({ embedder: false });
    expect(await auto.maintain()).toEqual({ retention: null, rebuilds: [], more: false, nextInMs: null, errors: [] });
    await auto.close();
    await expect(auto.maintain()).rejects.toMatchObject({ code: 'ENGINE_CLOSED' });
    await expect(createMemory({ embedder: false, maintenance: 'sometimes' as never })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', path: 'maintenance' });
    const manual = await createMemory({ embedder: false, maintenance: 'manual' });
    expect((await manual.maintain()).more).toBe(false);
    await manual.close();
  });
});
