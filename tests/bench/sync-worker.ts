// The Worker of tests/bench/sync.ts, bundled there with esbuild and served by Miniflare (real workerd): each user's
// one Durable Object (scope 'user', the default window, no embedder: tags and full-text search) behind syncEndpoint at
// /v1/pagewise/sync, bearer tokens from CLIENT_TOKENS ("token:user,…"), as a deployment would serve it. POST
// /call/:object/:method (body: the arguments) reaches an object's Memory API directly, for the bench's checks only.
import { PagewiseMemory, bearerAuth, memoryStub, syncEndpoint, type MemoryNamespaceLike, type PagewiseMemoryOptions } from '../../src/edge.js';
import { json } from '../support/edge/json.js';

interface Env {
  USER_MEMORY: MemoryNamespaceLike;
  CLIENT_TOKENS?: string;
}

export class UserMemory extends PagewiseMemory<Env> {
  override options(): PagewiseMemoryOptions {
    return { scope: 'user', embedder: false };
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname.startsWith('/v1/pagewise/')) {
      return syncEndpoint<Env>({ memory: (user) => memoryStub(env.USER_MEMORY, `user:${encodeURIComponent(user)}`), authenticate: bearerAuth(env.CLIENT_TOKENS) })(request, env);
    }
    const m = /^\/call\/([^/]+)\/(\w+)$/.exec(url.pathname);
    if (!m || request.method !== 'POST') return new Response('not found', { status: 404 });
    const memory = memoryStub(env.USER_MEMORY, decodeURIComponent(m[1]!)) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    const args = await request.json() as unknown[];
    const method = memory[m[2]!];
    if (typeof method !== 'function') return Response.json({ error: { code: 'NO_METHOD', message: `no method ${m[2]!}` } });
    return json(() => method(...args));
  },
};
