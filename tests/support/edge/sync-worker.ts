// The Worker of tests/node/engine/sync-property.test.ts, bundled there with esbuild and served by Miniflare (real workerd): one
// Durable Object per user (scope 'user', any number of conversations), reached by the test's SyncPeer over plain JSON.
import { PagewiseMemory, memoryStub, type MemoryNamespaceLike, type PagewiseMemoryOptions } from '../../../src/edge.js';
import { json } from './json.js';

interface Env {
  SYNC_MEMORY: MemoryNamespaceLike;
}

/** A user's memory: every conversation in one object, tags and full-text search only. */
export class SyncMemory extends PagewiseMemory<Env> {
  override options(): PagewiseMemoryOptions {
    return { scope: 'user', embedder: false };
  }
}

export default {
  // POST /call/:object/:method  body: the arguments (JSON array); answers { value } or { error: { code, message } }.
  async fetch(request: Request, env: Env): Promise<Response> {
    const m = /^\/call\/([^/]+)\/(\w+)$/.exec(new URL(request.url).pathname);
    if (!m || request.method !== 'POST') return new Response('not found', { status: 404 });
    const memory = memoryStub(env.SYNC_MEMORY, decodeURIComponent(m[1]!)) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    const args = await request.json() as unknown[];
    const method = memory[m[2]!];
    if (typeof method !== 'function') return Response.json({ error: { code: 'NO_METHOD', message: `no method ${m[2]!}` } });
    return json(() => method(...args));
  },
};
