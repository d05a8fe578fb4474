// A Worker with pagewise's proxy in front of an OpenAI-compatible upstream, and one Durable Object per (user,
// conversation). Clients authenticate with a bearer token; the conversation header picks among their own.
// npx wrangler dev --var PAGEWISE_CLIENT_TOKENS:tok-alice:alice,tok-bob:bob   (see README.md here)
import { PagewiseMemory, bearerAuth, memoryProxy, memoryStub, type MemoryNamespaceLike } from 'pagewise/edge';

interface Env {
  MEMORY: MemoryNamespaceLike;
  /** e.g. https://api.openai.com/v1, or a local Ollama: http://localhost:11434/v1 */
  UPSTREAM_URL: string;
  /** A secret: `npx wrangler secret put UPSTREAM_KEY` (or .dev.vars locally). */
  UPSTREAM_KEY?: string;
  /** Who may use the proxy: "token:user,token:user". A secret: `npx wrangler secret put PAGEWISE_CLIENT_TOKENS`. */
  PAGEWISE_CLIENT_TOKENS?: string;
  /** Optional: Workers AI, for embeddings (bge-small-en-v1.5). */
  AI?: unknown;
}

/** The conversation's memory: its own SQLite, tags + BM25, and vectors when env.AI is bound. */
export class Memory extends PagewiseMemory<Env> {
  override options(env: Env) {
    return { ...super.options(env), contextWindow: 128_000 };
  }
}

export default {
  fetch(request: Request, env: Env, ctx: { waitUntil(p: Promise<unknown>): void }): Promise<Response> {
    return memoryProxy({
      // The key combines the user and the header's conversation id: one object per (user, conversation).
      memory: (key) => memoryStub(env.MEMORY, key),
      authenticate: bearerAuth(env.PAGEWISE_CLIENT_TOKENS),
      openai: { baseUrl: env.UPSTREAM_URL, ...(env.UPSTREAM_KEY ? { apiKey: env.UPSTREAM_KEY } : {}) },
    })(request, ctx);
  },
};
