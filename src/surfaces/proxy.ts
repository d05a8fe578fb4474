// memoryProxy: a drop-in OpenAI-compatible (and Anthropic) endpoint with memory. A fetch handler: Cloudflare Workers,
// Deno, Bun, Node's fetch servers. A memory is personal data: the proxy serves no caller it cannot name.
import type { Memory } from '../contracts/memory.js';
import { isPagewiseError, PagewiseError, type PagewiseErrorCode } from '../contracts/errors.js';
import { validateConversationId } from '../common/messages.js';
import { redact } from '../text/redact.js';
import { type Json, type Protocol, type ReadMessages, isObject, redactKeys } from './proxy-protocols.js';
import { claimForProxy, noteProxyUse } from './shared-memories.js';
import { openai } from './proxy-openai.js';
import { anthropic } from './proxy-anthropic.js';
import { contentText } from '../common/messages.js';
import { readSse } from '../text/sse.js';
import type { AssembledContext, ChatMessage } from '../contracts/types.js';

/** Where requests go on: the provider's base URL and key (from bindings or secrets; never sent to the client). */
export interface UpstreamOptions {
  /** e.g. `https://api.openai.com/v1` for chat completions, `https://api.anthropic.com` for messages. */
  baseUrl: string;
  apiKey?: string;
  /** Per attempt; default 120 s. */
  timeoutMs?: number;
  /** Extra headers (e.g. `anthropic-version`). */
  headers?: Record<string, string>;
}

/** Who a request's memory belongs to, once the proxy has decided (passed to `memory` when it is a function). */
export interface ProxyCaller {
  /** The user `authenticate` named; null for `conversationOf` without `authenticate`, or `allowAnonymous`. */
  user: string | null;
  /** The conversation as the client named it (the header), or as `conversationOf` gave it. */
  conversationId: string;
}

export interface MemoryProxyOptions<Env = unknown> {
  /**
   * The memory of a conversation: one engine for all, or one per conversation (e.g. `(key) => memoryStub(env.MEMORY,
   * key)`). `key` is the stored conversation id: with `authenticate`, it combines the user and the header's id
   * (`proxyConversationKey`), so two users' `c1` are two memories. One memory object holds every caller's
   * conversations, so a `syncEndpoint` may not serve that object whole (INVALID_OPTIONS, whichever is built first).
   */
  memory: Memory | ((key: string, caller: ProxyCaller) => Memory);
  /** `POST /v1/chat/completions` goes here (OpenAI-compatible). */
  openai?: UpstreamOptions;
  /** `POST /v1/messages` goes here (Anthropic). */
  anthropic?: UpstreamOptions;
  /**
   * Who is calling: a user id, or null when the request does not prove one (401; nothing forwarded, nothing stored).
   * The `x-pagewise-conversation` header then only chooses among that user's conversations.
   */
  authenticate?: (request: Request, env: Env) => string | null | undefined | Promise<string | null | undefined>;
  /**
   * The conversation of a request, decided by the app (e.g. from its own session): when given, the header is
   * ignored and the id is used as the stored conversation id as it is. null → 401.
   */
  conversationOf?: (request: Request, env: Env) => string | null | undefined | Promise<string | null | undefined>;
  /**
   * Serve callers nobody authenticated, the conversation taken from the header alone: anyone who can guess an id
   * reads that conversation and spends your provider key. For local development only; logs a warning once.
   */
  allowAnonymous?: boolean;
  /** The stored conversation id of (user, the header's id). Default `proxyConversationKey`. */
  conversationKey?: (user: string, conversationId: string) => string;
  /**
   * Forward the client's own `Authorization` / `x-api-key` instead of the configured key. Default false. Do not
   * combine with an `authenticate` that reads the same header: the client's pagewise credential would go upstream.
   */
  forwardClientKey?: boolean;
}

/** What the runtime offers to finish work after the response (Workers' `ctx`). */
export interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

const HEADER = 'x-pagewise-conversation';
/** Search the web for this request (`on`) or not (`off`); absent: the memory's trigger decides. */
const SEARCH_HEADER = 'x-pagewise-search';
const MODULE = 'proxy';

/**
 * The stored conversation id of a user's conversation as the proxy keys it: the user id URI-encoded (so it holds no
 * `:`), a `:`, then the conversation id as the client sent it. Use it to reach the same memory through the Memory API.
 */
export function proxyConversationKey(user: string, conversationId: string): string {
  return `${encodeURIComponent(user)}:${conversationId}`;
}

/**
 * An `authenticate` hook for bearer tokens: `spec` lists `token:user` pairs separated by commas (e.g. the Worker
 * secret `PAGEWISE_CLIENT_TOKENS="k8s9…:alice,p2x7…:bob"`). A request whose `Authorization: Bearer <token>` is one of
 * them is that user; any other is null (401). Tokens are compared in constant time.
 *
 * @example
 * memoryProxy({ memory: (key) => memoryStub(env.MEMORY, key), authenticate: bearerAuth(env.PAGEWISE_CLIENT_TOKENS), openai });
 */
export function bearerAuth(spec: string | undefined): (request: Request) => string | null {
  const pairs = (spec ?? '').split(',').map((p) => p.trim()).filter(Boolean).map((p) => {
    const at = p.lastIndexOf(':');
    if (at <= 0 || at === p.length - 1) throw new PagewiseError('INVALID_OPTIONS', MODULE, 'bearerAuth: each entry is "token:user" (comma-separated); got one without a token or a user.');
    return { token: p.slice(0, at), user: p.slice(at + 1) };
  });
  if (pairs.length === 0) throw new PagewiseError('INVALID_OPTIONS', MODULE, 'bearerAuth: no tokens configured. Set them as "token:user,token:user" (a secret: `wrangler secret put PAGEWISE_CLIENT_TOKENS`; `--var` for `wrangler dev`).');
  return (request) => {
    const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get('authorization') ?? '')?.[1];
    if (!given) return null;
    let user: string | null = null;
    for (const p of pairs) if (sameSecret(given, p.token)) user = p.user;
    return user;
  };
}

/** String equality whose time does not depend on where the strings differ (only on their lengths). */
export function sameSecret(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i % Math.max(1, b.length));
  return diff === 0;
}

// The HTTP status of a refusal: the caller's mistake (4xx) or the server's (5xx).
const STATUS: Partial<Record<PagewiseErrorCode, number>> = {
  MESSAGE_TOO_LARGE: 413, NOT_FOUND: 404, CONVERSATION_NOT_FOUND: 404, UNAUTHENTICATED: 401,
  ENGINE_CLOSED: 503, STORAGE_LOCKED: 503, STORAGE_UNAVAILABLE: 503, STORAGE_FULL: 507, STORAGE_ERROR: 500, WORKER_FAILED: 500,
  LLM_ERROR: 502, EMBEDDING_ERROR: 502, TAGGER_ERROR: 502, UPSTREAM_ERROR: 502, WRONG_KEY: 503, KEY_REQUIRED: 503,
  SYNC_RESYNC_REQUIRED: 409,
};

/** The HTTP status of a PagewiseError's code, as pagewise's HTTP surfaces answer it (the proxy, the sync endpoint). */
export function errorStatus(code: string): number {
  return Object.hasOwn(STATUS, code) ? STATUS[code as PagewiseErrorCode]! : 400;
}

function errorResponse(status: number, code: string, message: string, headers?: Record<string, string>): Response {
  return Response.json({ error: { type: 'pagewise_error', code, message } }, { status, ...(headers ? { headers } : {}) });
}

let warnedAnonymous = false;

const unauthenticated = (message: string) => errorResponse(401, 'UNAUTHENTICATED', message, { 'www-authenticate': 'Bearer' });

/** Who is calling and which stored conversation is theirs; a Response when the request is refused. */
type Resolved = { key: string; caller: ProxyCaller } | Response;

function resolver<Env>(options: MemoryProxyOptions<Env>): (request: Request, env: Env) => Promise<Resolved> {
  const { authenticate, conversationOf } = options;
  if (!authenticate && !conversationOf && options.allowAnonymous !== true) {
    throw new PagewiseError('INVALID_OPTIONS', MODULE, 'memoryProxy serves personal data: pass `authenticate(request, env)` (returns the user id, or null for a 401) or `conversationOf(request, env)` (the app decides the conversation). `allowAnonymous: true` serves anyone who sends a conversation id: for local development only.');
  }
  if (!authenticate && !conversationOf && !warnedAnonymous) {
    warnedAnonymous = true;
    console.warn('[pagewise] [proxy] allowAnonymous: true — any caller that names a conversation id reads its memory. For local development only.');
  }
  const keyOf = options.conversationKey ?? proxyConversationKey;
  return async (request, env) => {
    let user: string | null = null;
    if (authenticate) {
      const who = await authenticate(request, env);
      if (typeof who !== 'string' || who === '') return unauthenticated('This proxy needs credentials it accepts (see the app\'s authenticate hook); nothing was forwarded or stored.');
      user = who;
    }
    if (conversationOf) {
      const id = await conversationOf(request, env);
      if (typeof id !== 'string' || id === '') return unauthenticated('The app could not tell whose conversation this request belongs to (conversationOf returned nothing); nothing was forwarded or stored.');
      return { key: validateConversationId(id, 'conversationOf(request)'), caller: { user, conversationId: id } };
    }
    const named = request.headers.get(HEADER);
    if (named === null || named === '') {
      return errorResponse(400, 'INVALID_CONVERSATION_ID', `Send the conversation id in the ${HEADER} header (each conversation keeps its own memory).`);
    }
    const conversationId = validateConversationId(named, HEADER);
    return { key: user === null ? conversationId : validateConversationId(keyOf(user, conversationId), `${HEADER} (with the user id)`), caller: { user, conversationId } };
  };
}

/** The request's body as JSON with a messages array; a 400 otherwise. */
async function readBody(request: Request): Promise<Record<string, unknown> | Response> {
  try {
    const body = await request.json() as Record<string, unknown>;
    if (typeof body !== 'object' || body === null || Array.isArray(body) || !Array.isArray(body.messages)) throw new Error('no messages array');
    return body;
  } catch (e) {
    return errorResponse(400, 'INVALID_ARGUMENT', `The request body must be JSON with a messages array (${(e as Error).message}).`);
  }
}

/**
 * What memory added, as one text for the system prompt: the stable part first (the topics hint), then what was
 * recalled for this message; and the messages memory adds beside it (recalled images sent again).
 */
function memoryAdded(ctx: AssembledContext): { text: string; added: ChatMessage[] } {
  const own = ctx.messages.filter((_, i) => ctx.sources[i]?.kind === 'memory');
  return {
    text: [ctx.prependText, ...own.filter((m) => m.role === 'system').map((m) => contentText(m.content))].filter(Boolean).join('\n\n'),
    added: own.filter((m) => m.role !== 'system'),
  };
}

/**
 * The request's own messages that go on, unchanged: its leading system messages, then everything from the first
 * message whose every part memory kept (older ones are trimmed whole, never rewritten), moved on past a message
 * the protocol refuses to start with. Without history in the request, the stored turns memory chose, written back.
 */
function keptMessages(protocol: Protocol, raw: unknown[], read: ReadMessages, round: number, ctx: AssembledContext, withHistory: boolean): { kept: unknown[]; newAt: number } {
  const prefix = protocol.kind === 'openai' ? leadingSystem(raw) : 0;
  const newRaw = read.origins[round]!;
  if (!withHistory) {
    const stored = ctx.messages.filter((_, i) => ctx.sources[i]?.kind === 'stored').map((m) => protocol.write(m));
    return { kept: [...raw.slice(0, prefix), ...stored, ...raw.slice(prefix)], newAt: prefix + stored.length + (newRaw - prefix) };
  }
  const sent = new Set(ctx.sources.flatMap((s) => (s.kind === 'history' ? [s.index] : [])));
  let from = prefix;
  read.origins.slice(0, round).forEach((origin, i) => { if (origin >= 0 && !sent.has(i)) from = Math.max(from, origin + 1); });
  // The new message's own request message goes whatever else it holds.
  from = Math.min(from, newRaw);
  if (from > prefix) while (from < newRaw && !protocol.canStart(raw[from])) from++;
  return { kept: [...raw.slice(0, prefix), ...raw.slice(from)], newAt: prefix + (newRaw - from) };
}

const leadingSystem = (raw: unknown[]): number => {
  let n = 0;
  while (n < raw.length && isObject(raw[n]) && ((raw[n] as Json).role === 'system' || (raw[n] as Json).role === 'developer')) n++;
  return n;
};

/**
 * A fetch handler for `POST /v1/chat/completions` (OpenAI-compatible, streaming or not) and `POST /v1/messages`
 * (Anthropic, streaming or not). It first decides who is calling (`authenticate`, `conversationOf`; a 401 forwards
 * and stores nothing), then `onMessageInbound` for the last user message and the memory as the request's system
 * text; the reply goes to the client untouched while its text is collected; `onTurnComplete` runs through
 * `ctx.waitUntil`, never delaying the reply. An upstream error passes through (anything in it that looks like a key
 * redacted) and stores nothing; the upstream refusing the server's own key (401/403) is pagewise's 502 UPSTREAM_ERROR,
 * none of the upstream's body in it.
 *
 * @example
 * const tokens = new Map([['s3cret-alice', 'alice']]);
 * const proxy = memoryProxy<Env>({
 *   memory: (key) => memoryStub(env.MEMORY, key),
 *   authenticate: (request) => tokens.get(request.headers.get('authorization')?.replace(/^Bearer /, '') ?? '') ?? null,
 *   openai: { baseUrl: env.UPSTREAM_URL, apiKey: env.UPSTREAM_KEY },
 * });
 * export default { fetch: (request, env, ctx) => proxy(request, ctx, env) };
 */
export function memoryProxy<Env = unknown>(options: MemoryProxyOptions<Env>): (request: Request, ctx?: WaitUntil, env?: Env) => Promise<Response> {
  const resolve = resolver(options);
  // One memory object holds every caller's conversations: a sync endpoint must not serve it whole.
  if (typeof options.memory === 'object' && options.memory !== null) claimForProxy(options.memory);
  const memoryOf = typeof options.memory === 'function' ? options.memory : () => options.memory as Memory;
  return async (request, ctx, env) => {
    try {
      return await handle(request, ctx, env as Env);
    } catch (e) {
      if (isPagewiseError(e)) return errorResponse(errorStatus(e.code), e.code, e.message);
      // Not the caller's doing (a Durable Object that failed, a bug): a 500 that says so, not a crashed handler.
      console.error('[pagewise] [proxy] unexpected error', e);
      return errorResponse(500, 'INTERNAL_ERROR', 'The proxy failed on this request; nothing was stored. The server log has the cause.');
    }
  };

  async function handle(request: Request, ctx: WaitUntil | undefined, env: Env): Promise<Response> {
    const resolved = await resolve(request, env);
    if (resolved instanceof Response) return resolved;
    const url = new URL(request.url);
    const kind = url.pathname.endsWith('/chat/completions') ? 'openai' : url.pathname.endsWith('/messages') ? 'anthropic' : null;
    if (!kind || request.method !== 'POST') return errorResponse(404, 'NOT_FOUND', 'pagewise proxy serves POST /v1/chat/completions and POST /v1/messages.');
    const upstream = options[kind];
    if (!upstream) return errorResponse(404, 'NOT_FOUND', `No ${kind === 'openai' ? 'OpenAI-compatible' : 'Anthropic'} upstream is configured on this proxy.`);
    const protocol = kind === 'openai' ? openai : anthropic;
    const body = await readBody(request);
    if (body instanceof Response) return body;
    const raw = body.messages as unknown[];
    const read = protocol.read(body);
    const all = read.messages;
    // The round being answered: from the last user message to the end (a tool loop's calls and results follow it).
    const round = all.map((m) => m.role).lastIndexOf('user');
    if (round < 0) return errorResponse(400, 'INVALID_ARGUMENT', 'The request has no user message to answer.');
    const message = all[round]!;
    const after = all.slice(round + 1);
    const conversationId = resolved.key;
    const memory = memoryOf(conversationId, resolved.caller);
    noteProxyUse(memory, resolved.caller.user ?? null);
    const before = all.slice(0, round);
    // Only a system prompt before the new message: the conversation comes from memory.
    const withHistory = before.some((m) => m.role !== 'system');
    // An app's "search the web" switch for this request (with the memory's search option): on, off, or the trigger's choice.
    const searchHeader = request.headers.get(SEARCH_HEADER)?.trim().toLowerCase();
    if (searchHeader !== undefined && searchHeader !== 'on' && searchHeader !== 'off') return errorResponse(400, 'INVALID_ARGUMENT', `The ${SEARCH_HEADER} header must be "on" or "off" (or absent: the memory's search trigger decides).`);
    const ctxs = await memory.onMessageInbound({
      ...(searchHeader !== undefined ? { search: searchHeader === 'on' } : {}),
      // The request is the conversation as the app holds it: an edited message or a regenerated reply moves memory to that branch.
      conversationId, message, ...(after.length > 0 ? { after } : {}), ...(withHistory ? { history: before } : {}), rewriteHistory: false, wholeHistory: true, mediaTokens: protocol.mediaTokens,
    });
    const { kept, newAt } = keptMessages(protocol, raw, read, round, ctxs, withHistory);
    const added = memoryAdded(ctxs);
    // Recalled images go just before the new message; Anthropic's tool results must follow their call, so not there.
    const reattach = added.added.length > 0 && protocol.canStart(kept[newAt]) ? added.added.map((m) => protocol.write(m)) : [];
    const forwarded = protocol.assemble(body, [...kept.slice(0, newAt), ...reattach, ...kept.slice(newAt)], added.text);
    const { response, failed, clientKey } = await forward(request, kind, upstream, forwarded, options.forwardClientKey === true);
    if (failed) return response;
    if ((response.status === 401 || response.status === 403) && !clientKey) return keyRefused(response, kind);
    // What the upstream says, as it says it (status, body); only the exchange's storing is pagewise's.
    const passHeaders = new Headers(response.headers);
    passHeaders.delete('content-length');
    passHeaders.delete('content-encoding');
    if (!response.ok || !response.body) {
      // An upstream's error may quote a key (the server's, in any spelling, or one masked): none reaches the client.
      const secrets = upstream.apiKey && !clientKey ? [upstream.apiKey] : [];
      return new Response(response.body ? redactKeys(redact(await response.text(), secrets)) : null, { status: response.status, headers: passHeaders });
    }
    // The round as the request gave it, then the reply: what is stored already (the earlier steps of a tool loop) is skipped.
    const turn = all.slice(round);
    const store = (reply: ChatMessage | null) => {
      if (!reply || (contentText(reply.content).trim() === '' && !reply.toolCalls?.length)) return;
      const done = memory.onTurnComplete({ conversationId, messages: [...turn, reply] }).then(() => undefined, () => undefined);
      if (ctx) ctx.waitUntil(done);
    };
    const streaming = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    if (!streaming) {
      const text = await response.text();
      try {
        store(protocol.reply(JSON.parse(text)));
      } catch { /* a malformed reply passes to the client as it came, and is not stored */ }
      return new Response(text, { status: response.status, headers: passHeaders });
    }
    const [toClient, toMemory] = response.body.tee();
    const reader = protocol.stream();
    const collected = readSse(toMemory, (data, event) => reader.event(data, event)).then(() => store(reader.done()), () => undefined);
    if (ctx) ctx.waitUntil(collected);
    return new Response(toClient, { status: response.status, headers: passHeaders });
  }
}

/**
 * The upstream refused the server's own key (401/403): pagewise's error, with none of the upstream's body (OpenAI
 * quotes part of the refused key, `sk-PROB****6789`) and none of its headers. The client cannot fix this; a 502.
 */
async function keyRefused(response: Response, kind: 'openai' | 'anthropic'): Promise<Response> {
  await response.body?.cancel().catch(() => undefined);
  const which = kind === 'openai' ? 'OpenAI-compatible' : 'Anthropic';
  return errorResponse(502, 'UPSTREAM_ERROR', `The ${which} upstream refused this server's provider key (${response.status}); nothing was forwarded on or stored. The server's operator must fix the proxy's upstream apiKey (or its permissions): nothing in the request can.`);
}

/** The request sent on with the provider's key (or the client's, when configured); a 502/504 when it cannot be. */
async function forward(request: Request, kind: 'openai' | 'anthropic', upstream: UpstreamOptions, forwarded: Record<string, unknown>, clientKeyToo: boolean): Promise<{ response: Response; failed: boolean; clientKey: boolean }> {
  const headers = new Headers({ 'content-type': 'application/json', ...upstream.headers });
  const clientKey = kind === 'openai' ? request.headers.get('authorization') : request.headers.get('x-api-key');
  const sendsClientKey = clientKeyToo && clientKey !== null && clientKey !== '';
  if (sendsClientKey) headers.set(kind === 'openai' ? 'authorization' : 'x-api-key', clientKey);
  else if (upstream.apiKey) {
    if (kind === 'openai') headers.set('authorization', `Bearer ${upstream.apiKey}`);
    else headers.set('x-api-key', upstream.apiKey);
  }
  if (kind === 'anthropic' && !headers.has('anthropic-version')) headers.set('anthropic-version', '2023-06-01');
  const target = `${upstream.baseUrl.replace(/\/+$/, '')}${(kind === 'openai' ? openai : anthropic).path}`;
  try {
    return { response: await fetch(target, { method: 'POST', headers, body: JSON.stringify(forwarded), signal: AbortSignal.timeout(upstream.timeoutMs ?? 120_000) }), failed: false, clientKey: sendsClientKey };
  } catch (e) {
    const timedOut = (e as Error)?.name === 'TimeoutError';
    return { response: errorResponse(timedOut ? 504 : 502, 'UPSTREAM_ERROR', timedOut ? `The upstream did not answer within ${upstream.timeoutMs ?? 120_000} ms.` : `The upstream could not be reached (${(e as Error)?.message ?? e}).`), failed: true, clientKey: sendsClientKey };
  }
}
