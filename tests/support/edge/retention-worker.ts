// The Worker of tests/node/edge/retention-edge.test.ts (bundled there with esbuild, served by Miniflare in real
// workerd): PagewiseMemory objects with a retention policy (maxAgeDays: 30, small slices). Each alarm is counted, with
// the retention log's length and the turns stored once it ended; the test lets alarms run (`allow`) only once the
// conversation is written, so that every removal is an alarm's.
import { PagewiseMemory, memoryStub, type MemoryNamespaceLike, type PagewiseMemoryOptions } from '../../../src/edge.js';
import { json } from './json.js';

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
    const left = this.ctx.storage.kv.get<number>('test:allowed');
    if (left !== undefined && left <= 0) {
      await this.ctx.storage.setAlarm(Date.now() + 100);
      return;
    }
    await super.alarm();
    const row = this.ctx.storage.sql.exec('SELECT (SELECT COUNT(*) FROM retention_log) AS entries, (SELECT COUNT(*) FROM turns) AS turns').toArray()[0]!;
    const log = this.log();
    this.ctx.storage.kv.put('test:log', { alarms: log.alarms + 1, after: [...log.after, { entries: Number(row.entries), turns: Number(row.turns) }] });
  }

  log(): AlarmLog {
    return this.ctx.storage.kv.get<AlarmLog>('test:log') ?? { alarms: 0, after: [] };
  }

  /** Lets alarms run (true) or holds them (false). */
  allow(yes: boolean): void {
    if (yes) this.ctx.storage.kv.delete('test:allowed');
    else this.ctx.storage.kv.put('test:allowed', 0);
  }
}

type Test = { log(): Promise<AlarmLog>; allow(yes: boolean): Promise<void> };

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const object = (name: string) => env.RETENTION_MEMORY.get(env.RETENTION_MEMORY.idFromName(name) as never) as unknown as Test;
    // POST /call/:object/:method  body: the arguments (JSON array).
    const m = /^\/call\/([^/]+)\/(\w+)$/.exec(url.pathname);
    if (m && request.method === 'POST') {
      const memory = memoryStub(env.RETENTION_MEMORY, decodeURIComponent(m[1]!)) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
      const args = await request.json() as unknown[];
      return json(() => memory[m[2]!]!(...args));
    }
    const log = /^\/log\/([^/]+)$/.exec(url.pathname);
    if (log) return Response.json(await object(decodeURIComponent(log[1]!)).log());
    // POST /allow/:object  body: true (alarms run) or false (held).
    const allow = /^\/allow\/([^/]+)$/.exec(url.pathname);
    if (allow && request.method === 'POST') {
      await object(decodeURIComponent(allow[1]!)).allow(await request.json() as boolean);
      return new Response(null, { status: 204 });
    }
    return new Response('not found', { status: 404 });
  },
};
