// The Worker of tests/node/edge/pages-edge.test.ts and pages-edge-long.test.ts (bundled there with esbuild, served by
// Miniflare in real workerd): PagewiseMemory objects reached over Workers RPC through memoryStub, so each answer
// crosses RPC with its real 32 MiB limit. PAGE_BYTES and RESULT_BYTES (bindings) make the byte cap of a page and the
// size a list's answer is refused at small, for the test of a 2,000-turn conversation; unset, they are the defaults.
import { PagewiseMemory, memoryStub, type MemoryNamespaceLike, type PagewiseMemoryOptions } from '../../../src/edge.js';
import { pageLimits } from '../../../src/common/pages.js';
import { json } from './json.js';

interface Env {
  PAGES_MEMORY: MemoryNamespaceLike;
  PAGE_BYTES?: string;
  RESULT_BYTES?: string;
  /** Turns per segment at most (the sumWindow option): small, a 50,000-turn conversation's summaries are some 40 MB. */
  SUM_WINDOW?: string;
}

/** Any number of conversations per object (a copy imports into the same object as its source, under another id). */
export class PagesMemory extends PagewiseMemory<Env> {
  override options(env: Env): PagewiseMemoryOptions {
    if (env.PAGE_BYTES) pageLimits.pageBytes = Number(env.PAGE_BYTES);
    if (env.RESULT_BYTES) pageLimits.resultBytes = Number(env.RESULT_BYTES);
    return { embedder: false, scope: 'user', ...(env.SUM_WINDOW ? { sumWindow: Number(env.SUM_WINDOW) } : {}) };
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    // POST /call/:object/:method  body: the arguments (JSON array).
    const m = /^\/call\/([^/]+)\/(\w+)$/.exec(new URL(request.url).pathname);
    if (!m || request.method !== 'POST') return new Response('not found', { status: 404 });
    const memory = memoryStub(env.PAGES_MEMORY, decodeURIComponent(m[1]!)) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    const args = await request.json() as unknown[];
    return json(() => memory[m[2]!]!(...args));
  },
};
