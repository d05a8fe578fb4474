// The Worker of tests/node/edge/rebuild-edge.test.ts (bundled there with esbuild, served by Miniflare in real workerd):
// PagewiseMemory objects whose summarizer is the one `env.PHASE` names — an older version ('old') or the current
// built-in one ('new') — so that the test writes a conversation under one release and opens it under the next. Each
// alarm is counted, with how many summaries the current version had made once it ended; the test lets alarms run
// one at a time (`allow`), so the state between two alarms stays still while it reads it.
import { PagewiseMemory, type MemoryNamespaceLike, type PagewiseMemoryOptions } from '../../../src/edge.js';
import { EXTRACTIVE_VERSION } from '../../../src/compaction/extractive.js';
import type { Summarizer } from '../../../src/contracts/types.js';
import { alarmAllowed, allowAlarms, gatedFetch } from './alarm-gate.js';

interface Env {
  REBUILD_MEMORY: MemoryNamespaceLike;
  PHASE: 'old' | 'new';
}

/** The extractive summarizer of an older release: each item's first sentence. */
const older: Summarizer = {
  name: 'extractive',
  version: EXTRACTIVE_VERSION - 1,
  summarize: async (r) => ({ text: r.items.map((i) => `${i.speaker}: ${i.text.split(/(?<=[.?!])\s/)[0]}`).join('\n').slice(0, 1200) }),
};

export interface AlarmLog {
  /** Alarms run (past the allowance none runs: it comes again shortly). */
  alarms: number;
  /** After each alarm: summaries the current version made, and summaries in all. */
  after: { current: number; total: number }[];
}

export class RebuildMemory extends PagewiseMemory<Env> {
  override options(env: Env): PagewiseMemoryOptions {
    return { embedder: false, contextWindow: 3000, ...(env.PHASE === 'old' ? { summarizer: older } : {}) };
  }

  override async alarm(): Promise<void> {
    if (!(await alarmAllowed(this.ctx.storage))) return;
    await super.alarm();
    const row = this.ctx.storage.sql.exec(
      "SELECT (SELECT COUNT(*) FROM summaries WHERE made_by = 'extractive' AND prompt_version = ?) AS current, (SELECT COUNT(*) FROM summaries) AS total", EXTRACTIVE_VERSION).toArray()[0]!;
    const log = this.log();
    this.ctx.storage.kv.put('test:log', { alarms: log.alarms + 1, after: [...log.after, { current: Number(row.current), total: Number(row.total) }] });
  }

  log(): AlarmLog {
    return this.ctx.storage.kv.get<AlarmLog>('test:log') ?? { alarms: 0, after: [] };
  }

  /** Lets `alarms` more alarms run (null: any number). */
  allow(alarms: number | null): void {
    allowAlarms(this.ctx.storage, alarms);
  }
}

export default {
  fetch: (request: Request, env: Env): Promise<Response> => gatedFetch<AlarmLog>(request, env.REBUILD_MEMORY),
};
