// The Worker that the edge tests run in real workerd (bundled by tests/node/edge/edge.test.ts with esbuild, served by
// Miniflare): the storage conformance suite on Durable Object SQL, and the engine in PagewiseMemory objects.
import { DurableObject } from 'cloudflare:workers';
import { storageDriverCases } from '../conformance/storage-driver.js';
import { PagewiseMemory, bearerAuth, memoryProxy, memoryStub, syncEndpoint, type MemoryNamespaceLike, type PagewiseMemoryOptions, workersAiEmbedder } from '../../../src/edge.js';
import { durableObjectSql } from '../../../src/storage/durable-object.js';
import { json } from './json.js';
import { alarmAllowed, allowAlarms } from './alarm-gate.js';

interface Namespace<T> extends MemoryNamespaceLike {
  get(id: never): T;
}

interface Env {
  TEST: Namespace<TestObject>;
  MEMORY: MemoryNamespaceLike;
  USER_MEMORY: MemoryNamespaceLike;
  SLICED: Namespace<SlicedMemory>;
  /** The local upstream of the proxy tests, and its key (a secret in a real deployment). */
  UPSTREAM?: string;
  UPSTREAM_KEY?: string;
  /** The proxy's and the sync endpoint's clients: "token:user,token:user". */
  CLIENT_TOKENS?: string;
}

/**
 * The sync endpoint: under /v1/pagewise/ each user's one object of any number of conversations (`scope: 'user'`);
 * under /conversation/:id/sync the (user, conversation)'s object in the default scope, which refuses other
 * conversations.
 */
function sync(request: Request, env: Env, url: URL): Promise<Response> | null {
  if (url.pathname.startsWith('/v1/pagewise/')) {
    return syncEndpoint<Env>({
      memory: (user) => memoryStub(env.USER_MEMORY, `user:${encodeURIComponent(user)}`),
      authenticate: bearerAuth(env.CLIENT_TOKENS),
    })(request, env);
  }
  const c = /^\/conversation\/([^/]+)\/sync$/.exec(url.pathname);
  if (!c) return null;
  return syncEndpoint<Env>({
    path: url.pathname,
    memory: (user) => memoryStub(env.MEMORY, `sync:${encodeURIComponent(user)}:${c[1]!}`),
    authenticate: bearerAuth(env.CLIENT_TOKENS),
  })(request, env);
}

export class TestObject extends DurableObject<Env> {
  async conformance(index: number): Promise<{ name: string; ok: boolean; error?: string }> {
    const c = storageDriverCases[index]!;
    try {
      await c.run(durableObjectSql(this.ctx.storage));
      return { name: c.name, ok: true };
    } catch (e) {
      return { name: c.name, ok: false, error: `${(e as Error).name}: ${(e as Error).message}` };
    }
  }
}

// A local double of the Workers AI binding: a bag-of-words vector per text (the binding's shape, not its model).
const fakeAi = {
  calls: 0,
  async run(_model: string, input: { text: string[] }) {
    fakeAi.calls++;
    return { data: input.text.map((t) => {
      const v = new Array<number>(64).fill(0);
      for (const w of t.toLowerCase().match(/[a-z]+/g) ?? []) v[[...w].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 64, 7)]! += 1;
      return v;
    }) };
  },
};

/** One conversation per object (the default scope), a small window so that recall is needed. */
export class Memory extends PagewiseMemory<Env> {
  /** The alarm set (null: none), and how many have run (one that ran is no longer set). */
  async alarmState(): Promise<{ at: number | null; ran: number }> {
    return { at: await this.ctx.storage.getAlarm(), ran: this.ctx.storage.kv.get<number>('test:alarms') ?? 0 };
  }

  override async alarm(): Promise<void> {
    this.ctx.storage.kv.put('test:alarms', (this.ctx.storage.kv.get<number>('test:alarms') ?? 0) + 1);
    await super.alarm();
  }

  override options(): PagewiseMemoryOptions {
    return { contextWindow: 1500, reserveTokens: 300, embedder: workersAiEmbedder(fakeAi, { dimensions: 64 }) };
  }
}

/** One object per user, any number of conversations. */
export class UserMemory extends PagewiseMemory<Env> {
  override options(): PagewiseMemoryOptions {
    return { scope: 'user', contextWindow: 1500, reserveTokens: 300 };
  }
}

/**
 * Compaction 40 turns per event: a backlog goes on alarm after alarm (counted here). The test can let a number of
 * alarms run (`allow`): past it, an alarm does no work and comes again shortly, so the state between two alarms stays
 * still while the test reads it, however fast or slow the machine.
 */
export class SlicedMemory extends PagewiseMemory<Env> {
  override async alarm(): Promise<void> {
    if (!(await alarmAllowed(this.ctx.storage))) return;
    this.ctx.storage.kv.put('test:alarms', (this.ctx.storage.kv.get<number>('test:alarms') ?? 0) + 1);
    await super.alarm();
  }

  /** Lets `alarms` more alarms run (null: any number). */
  async allow(alarms: number | null): Promise<void> {
    allowAlarms(this.ctx.storage, alarms);
  }

  async progress(): Promise<{ alarms: number; alarmAt: number | null; unfinished: string[] }> {
    return { alarms: this.ctx.storage.kv.get<number>('test:alarms') ?? 0, alarmAt: await this.ctx.storage.getAlarm(), unfinished: this.ctx.storage.kv.get<string[]>('pagewise:unfinished') ?? [] };
  }

  override options(): PagewiseMemoryOptions {
    return { contextWindow: 1500, reserveTokens: 300, embedder: false, backgroundSliceTurns: 40 };
  }
}

export default {
  async fetch(request: Request, env: Env, ctx: { waitUntil(p: Promise<unknown>): void }): Promise<Response> {
    const url = new URL(request.url);
    const synced = sync(request, env, url);
    if (synced) return synced;
    // memoryStub(…).sync(memoryStub(…)) inside the Worker: two users' objects, the sync run here.
    const s = /^\/stub-sync\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (s) return json(() => memoryStub(env.USER_MEMORY, decodeURIComponent(s[1]!)).sync(memoryStub(env.USER_MEMORY, decodeURIComponent(s[2]!))));
    if (url.pathname.startsWith('/v1/') && env.UPSTREAM) {
      return memoryProxy({
        memory: (key) => memoryStub(env.MEMORY, key),
        authenticate: bearerAuth(env.CLIENT_TOKENS),
        openai: { baseUrl: `${env.UPSTREAM}/v1`, apiKey: env.UPSTREAM_KEY! }, anthropic: { baseUrl: env.UPSTREAM, apiKey: env.UPSTREAM_KEY! },
      })(request, ctx);
    }
    if (url.pathname === '/conformance') {
      const results = [];
      // Each case gets a fresh, empty database: its own object.
      for (let i = 0; i < storageDriverCases.length; i++) results.push(await env.TEST.get(env.TEST.idFromName(`conformance-${i}`) as never).conformance(i));
      return Response.json(results);
    }
    // POST /call/:namespace/:object/:method  body: the arguments (JSON array). Aliases: method "aliases.add".
    const m = /^\/call\/(memory|user|sliced)\/([^/]+)\/([\w.]+)$/.exec(url.pathname);
    if (m && request.method === 'POST') {
      const memory = memoryStub(m[1] === 'user' ? env.USER_MEMORY : m[1] === 'sliced' ? env.SLICED : env.MEMORY, decodeURIComponent(m[2]!));
      const args = await request.json() as unknown[];
      const [head, tail] = m[3]!.split('.');
      return json(() => (tail ? (memory.aliases as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[tail]!(...args)
        : (memory as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[head!]!(...args)));
    }
    if (url.pathname.startsWith('/progress/')) return Response.json(await env.SLICED.get(env.SLICED.idFromName(url.pathname.slice(10)) as never).progress());
    // POST /allow/:object  body: how many alarms may run from now (null: any number).
    if (url.pathname.startsWith('/allow/')) {
      await env.SLICED.get(env.SLICED.idFromName(url.pathname.slice(7)) as never).allow(await request.json() as number | null);
      return new Response(null, { status: 204 });
    }
    if (url.pathname === '/ai-calls') return Response.json(fakeAi.calls);
    if (url.pathname.startsWith('/alarm/')) return Response.json(await (env.MEMORY.get(env.MEMORY.idFromName(url.pathname.slice(7)) as never) as unknown as { alarmState(): Promise<{ at: number | null; ran: number }> }).alarmState());
    return new Response('not found', { status: 404 });
  },
};
