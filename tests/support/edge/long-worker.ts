// The Worker of the long-conversation edge test (tests/node/edge/edge-long.test.ts) and of the limits bench
// (tests/bench/edge-limits.ts), bundled with esbuild and served by Miniflare (real workerd). Its own file, so that
// tests/support/edge/test-worker.ts stays the other edge tests'.
//   POST /call/:namespace/:object/:method  a Memory method on an object (body: the arguments, a JSON array)
//   POST /v1/chat/completions               memoryProxy, authenticated (CLIENT_TOKENS), onto the `long` namespace
import { PagewiseMemory, bearerAuth, memoryProxy, memoryStub, type MemoryNamespaceLike, type PagewiseMemoryOptions, workersAiEmbedder } from '../../../src/edge.js';
import { LONG_CHAT_OPTIONS } from '../../fixtures/long-options.js';
import { json } from './json.js';

interface Env {
  LONG: MemoryNamespaceLike;
  PLAIN: MemoryNamespaceLike;
  VECTORS: MemoryNamespaceLike;
  UPSTREAM?: string;
  UPSTREAM_KEY?: string;
  CLIENT_TOKENS?: string;
}

/** An object whose alarm the bench runs by hand, one at a time, to time each (`POST /alarm/:namespace/:object`). */
class BenchMemory extends PagewiseMemory<Env> {
  /** The alarms workerd fires do nothing here: the bench runs each by hand, so that no two overlap or go uncounted. */
  override async alarm(): Promise<void> {}

  /** Runs the alarm now; says whether compaction is left for another. */
  async runAlarm(): Promise<{ left: number }> {
    await super.alarm();
    return { left: (this.ctx.storage.kv.get<string[]>('pagewise:unfinished') ?? []).length };
  }
}

/** The test's object: the options Node runs with too (tests/fixtures/long-options.ts). */
export class LongMemory extends BenchMemory {
  override options(): PagewiseMemoryOptions {
    return { ...LONG_CHAT_OPTIONS };
  }
}

/** The bench's object as deployed without an embedder: default options (128,000-token window), tags + BM25. */
export class PlainMemory extends BenchMemory {
  override options(): PagewiseMemoryOptions {
    // The bench measures the one-call import of 50,000 turns that the default cap (10,000) refuses.
    return { embedder: false, maxImportTurns: 1_000_000 };
  }
}

// A local double of the Workers AI binding with the default model's width (bge-small-en-v1.5: 384): hashed words.
const fakeAi = {
  async run(_model: string, input: { text: string[] }) {
    return { data: input.text.map((t) => {
      const v = new Array<number>(384).fill(0);
      for (const w of t.toLowerCase().match(/[a-z]+/g) ?? []) v[[...w].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 384, 7)]! += 1;
      v[0]! += 0.01;
      return v;
    }) };
  },
};

/** The bench's object as deployed with Workers AI: default options, the vector index of 384-wide vectors in memory. */
export class VectorMemory extends BenchMemory {
  override options(): PagewiseMemoryOptions {
    return { embedder: workersAiEmbedder(fakeAi), maxImportTurns: 1_000_000 };
  }
}

export default {
  async fetch(request: Request, env: Env, ctx: { waitUntil(p: Promise<unknown>): void }): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname.startsWith('/v1/') && env.UPSTREAM) {
      return memoryProxy({
        memory: (key) => memoryStub(env.LONG, key),
        authenticate: bearerAuth(env.CLIENT_TOKENS),
        openai: { baseUrl: `${env.UPSTREAM}/v1`, apiKey: env.UPSTREAM_KEY ?? 'none' },
      })(request, ctx);
    }
    const a = /^\/alarm\/(long|plain|vectors)\/([^/]+)$/.exec(url.pathname);
    if (a) {
      const namespace = a[1] === 'long' ? env.LONG : a[1] === 'plain' ? env.PLAIN : env.VECTORS;
      return json(() => (namespace.get(namespace.idFromName(decodeURIComponent(a[2]!)) as never) as BenchMemory).runAlarm());
    }
    const m = /^\/call\/(long|plain|vectors)\/([^/]+)\/(\w+)$/.exec(url.pathname);
    if (m && request.method === 'POST') {
      const namespace = m[1] === 'long' ? env.LONG : m[1] === 'plain' ? env.PLAIN : env.VECTORS;
      const memory = memoryStub(namespace, decodeURIComponent(m[2]!)) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
      const args = await request.json() as unknown[];
      return json(() => memory[m[3]!]!(...args));
    }
    return new Response('not found', { status: 404 });
  },
};
