// The Worker of tests/node/edge/edge-search.test.ts (bundled there with esbuild, served by Miniflare in real workerd):
// PagewiseMemory objects that search the web — SearXNG and Tavily, on the test's local search servers — reached over
// RPC through memoryStub, and memoryProxy in front of them. The provider key is a binding (a secret in production).
import { PagewiseMemory, memoryProxy, memoryStub, type MemoryNamespaceLike, type PagewiseMemoryOptions } from '../../../src/edge.js';
import { searxng, tavily } from '../../../src/search/providers.js';
import { json } from './json.js';

interface Env {
  SEARCH_MEMORY: MemoryNamespaceLike;
  /** The local SearXNG instance and Tavily endpoint, and Tavily's key. */
  SEARXNG_URL: string;
  TAVILY_URL: string;
  TAVILY_KEY: string;
  /** The proxy's upstream (OpenAI-compatible) and its key. */
  UPSTREAM: string;
  UPSTREAM_KEY: string;
}

/** One conversation per object, searching both providers; the result pages are on 127.0.0.1 (allowed for the test). */
export class SearchMemory extends PagewiseMemory<Env> {
  override options(env: Env): PagewiseMemoryOptions {
    return {
      embedder: false,
      search: {
        providers: [searxng({ url: env.SEARXNG_URL }), tavily({ apiKey: env.TAVILY_KEY, baseUrl: env.TAVILY_URL })],
        fetchPages: { allowPrivateHosts: true },
        // A safety net only: the failures the test makes answer at once.
        timeoutMs: 60_000,
      },
    };
  }
}

export default {
  async fetch(request: Request, env: Env, ctx: { waitUntil(p: Promise<unknown>): void }): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname.startsWith('/v1/')) {
      return memoryProxy({
        memory: (key) => memoryStub(env.SEARCH_MEMORY, key),
        authenticate: (r) => (r.headers.get('authorization') === 'Bearer client' ? 'u1' : null),
        openai: { baseUrl: `${env.UPSTREAM}/v1`, apiKey: env.UPSTREAM_KEY },
      })(request, ctx);
    }
    // POST /call/:object/:method  body: the arguments (JSON array).
    const m = /^\/call\/([^/]+)\/(\w+)$/.exec(url.pathname);
    if (!m || request.method !== 'POST') return new Response('not found', { status: 404 });
    const memory = memoryStub(env.SEARCH_MEMORY, decodeURIComponent(m[1]!)) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    const args = await request.json() as unknown[];
    return json(() => memory[m[2]!]!(...args));
  },
};
