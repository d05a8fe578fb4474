// A Worker with pagewise's proxy in front of an OpenAI-compatible upstream, one Durable Object per (user,
// conversation), and the sync endpoint: each user's own object, which their devices sync with. Clients authenticate
// with a bearer token; the conversation header picks among their own.
// npx wrangler dev --var PAGEWISE_CLIENT_TOKENS:tok-alice:alice,tok-bob:bob   (see README.md here)
import { PagewiseMemory, SYNC_PATH, bearerAuth, memoryProxy, memoryStub, syncEndpoint, type MemoryNamespaceLike } from 'pagewise/edge';

interface Env {
  MEMORY: MemoryNamespaceLike;
  /** One object per user (scope 'user'): what the user's devices sync with at /v1/pagewise/sync. */
  MEMORY_USERS: MemoryNamespaceLike;
  /** e.g. https://api.openai.com/v1, or a local Ollama: http://localhost:11434/v1 */
  UPSTREAM_URL: string;
  /** A secret: `npx wrangler secret put UPSTREAM_KEY` (or .dev.vars locally). */
  UPSTREAM_KEY?: string;
  /** Who may use the proxy and sync: "token:user,token:user". A secret: `npx wrangler secret put PAGEWISE_CLIENT_TOKENS`. */
  PAGEWISE_CLIENT_TOKENS?: string;
  /**
   * Origins whose pages may call the sync endpoint from a browser (CORS), comma-separated: e.g. the demo's
   * `http://localhost:5173`. Default none: only non-browser clients and same-origin pages. Tokens are still required.
   */
  PAGEWISE_ALLOWED_ORIGINS?: string;
  /** Optional: Workers AI, for embeddings (bge-small-en-v1.5). */
  AI?: unknown;
}

/** The conversation's memory: its own SQLite, tags + BM25, and vectors when env.AI is bound. */
export class Memory extends PagewiseMemory<Env> {
  override options(env: Env) {
    return { ...super.options(env), contextWindow: 128_000 };
  }
}

/** A user's memory, any number of conversations: the replica at the edge that their devices sync with. */
export class UserMemory extends PagewiseMemory<Env> {
  override options(env: Env) {
    return { ...super.options(env), scope: 'user' as const, contextWindow: 128_000 };
  }
}

export default {
  fetch(request: Request, env: Env, ctx: { waitUntil(p: Promise<unknown>): void }): Promise<Response> {
    const authenticate = bearerAuth(env.PAGEWISE_CLIENT_TOKENS);
    if (new URL(request.url).pathname === SYNC_PATH) {
      // POST /v1/pagewise/sync: memory.sync(remoteMemory(url, { token })) from a device.
      return syncEndpoint<Env>({
        memory: (user) => memoryStub(env.MEMORY_USERS, `user:${encodeURIComponent(user)}`),
        authenticate,
        allowedOrigins: (env.PAGEWISE_ALLOWED_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean),
      })(request, env);
    }
    return memoryProxy({
      // The key combines the user and the header's conversation id: one object per (user, conversation).
      memory: (key) => memoryStub(env.MEMORY, key),
      authenticate,
      openai: { baseUrl: env.UPSTREAM_URL, ...(env.UPSTREAM_KEY ? { apiKey: env.UPSTREAM_KEY } : {}) },
    })(request, ctx);
  },
};
