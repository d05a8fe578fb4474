// pagewise inside a Cloudflare Agents SDK Agent (an Agent is a Durable Object: its SQLite holds the agent's own
// tables and pagewise's side by side). Run it: npx wrangler dev -c wrangler.agent.jsonc, then
// POST /agents/chat-agent/<conversation> {"message":"…"} (routeAgentRequest: the class's name in kebab case, then the
// agent's name, here the conversation). No authentication here: put your own in front before deploying it.
import { Agent, routeAgentRequest } from 'agents';
import { createMemory, durableObjectSql, edgeEmbedder, type Memory } from 'pagewise/edge';

interface Env {
  AI?: unknown;
  UPSTREAM_URL: string;
  /** A secret: `npx wrangler secret put UPSTREAM_KEY` (or .dev.vars locally). */
  UPSTREAM_KEY?: string;
}

export class ChatAgent extends Agent<Env> {
  #memory?: Promise<Memory>;

  memory(): Promise<Memory> {
    return (this.#memory ??= createMemory({ storage: durableObjectSql(this.ctx.storage), embedder: edgeEmbedder(this.env as never), contextWindow: 128_000 }));
  }

  /** POST { message } → the model's reply, with the conversation's memory around the call. */
  async onRequest(request: Request): Promise<Response> {
    const { message } = await request.json() as { message: string };
    const memory = await this.memory();
    const conversationId = this.name;
    const user = { role: 'user' as const, content: message };
    const ctx = await memory.onMessageInbound({ conversationId, message: user });
    const upstream = await fetch(`${this.env.UPSTREAM_URL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(this.env.UPSTREAM_KEY ? { authorization: `Bearer ${this.env.UPSTREAM_KEY}` } : {}) },
      body: JSON.stringify({ model: 'gpt-4.1-mini', messages: [{ role: 'system', content: ctx.prependText }, ...ctx.messages] }),
    });
    const reply = (await upstream.json() as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
    // Stored after the reply goes out: the agent's waitUntil keeps the object alive for it.
    this.ctx.waitUntil(memory.onTurnComplete({ conversationId, messages: [user, { role: 'assistant', content: reply }] }));
    return Response.json({ reply, recalled: ctx.manifest.filter((e) => e.kind === 'recall').map((e) => e.sourceIds) });
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeAgentRequest(request, env as never)) ?? new Response('Not found', { status: 404 });
  },
};
