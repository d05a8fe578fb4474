// The Worker of tests/node/edge/retention-edge.test.ts (bundled there with esbuild, served by Miniflare in real
// workerd): PagewiseMemory objects with a retention policy (maxAgeDays: 30, small slices). Each alarm is counted, with
// the retention log's length and the turns stored once it ended; the test lets alarms run (`allow`) only once the
// conversation is written, so that every removal is an alarm's.
import { PagewiseMemory, type MemoryNamespaceLike, type PagewiseMemoryOptions } from '../../../src/edge.js';
import { alarmAllowed, allowAlarms, gatedFetch } from './alarm-gate.js';

interface Env {
  RETENTION_MEMORY: MemoryNamespaceLike;
  /** Turns removed per slice (one alarm), as the test sets it. */
  SLICE_TURNS: number;
}

export interface AlarmLog {
  alarms: number;
  /** After each alarm: retention log entries, and turns stored. */
  after: { entries: number; turns: number }[];
}

export class RetentionMemory extends PagewiseMemory<Env> {
  override options(env: Env): PagewiseMemoryOptions {
    return { embedder: false, compaction: false, retention: { maxAgeDays: 30, sliceTurns: Number(env.SLICE_TURNS) } };
  }

  override async alarm(): Promise<void> {
    if (!(await alarmAllowed(this.ctx.storage))) return;
    await super.alarm();
    const row = this.ctx.storage.sql.exec('SELECT (SELECT COUNT(*) FROM retention_log) AS entries, (SELECT COUNT(*) FROM turns) AS turns').toArray()[0]!;
    const log = this.log();
    this.ctx.storage.kv.put('test:log', { alarms: log.alarms + 1, after: [...log.after, { entries: Number(row.entries), turns: Number(row.turns) }] });
  }

  log(): AlarmLog {
    return this.ctx.storage.kv.get<AlarmLog>('test:log') ?? { alarms: 0, after: [] };
  }

  /** Lets `alarms` more alarms run (null: any number; 0: holds them). */
  allow(alarms: number | null): void {
    allowAlarms(this.ctx.storage, alarms);
  }
}

export default {
  fetch: (request: Request, env: Env): Promise<Response> => gatedFetch<AlarmLog>(request, env.RETENTION_MEMORY),
};
