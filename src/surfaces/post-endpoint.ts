// What syncEndpoint and relayEndpoint share: one authenticated JSON POST route (its options, CORS, the 404/405/401/413
// answers, the body read within a cap, typed errors as JSON) — and what their clients share: one POST with no
// redirect followed, a timeout and a cap on the reply.
import { isPagewiseError } from '../contracts/errors.js';
import { describe, readArray } from '../common/messages.js';
import { errorStatus } from './proxy.js';

/** A route's options, checked: where it listens, its largest body, the origins that may call it from a page. */
export interface PostRoute<Env> {
  authenticate: (request: Request, env: Env) => string | null | undefined | Promise<string | null | undefined>;
  path: string;
  max: number;
  origins: Set<string>;
}

/** How an endpoint words its answers: `The ${name} endpoint …`, the body it takes, the client that calls it. */
export interface PostWords {
  name: string;
  body: string;
  client: string;
  /** After "failed on this request; the server log has the cause." */
  retry: string;
  /** The module in the server log's line. */
  log: string;
}

// What an over-long body is still read (and dropped) for before the answer: a client writing its whole body before it
// reads the reply (fetch does) otherwise sees the connection reset instead of the 413.
const DRAIN_BYTES = 64_000_000;

function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value.replace(/\/$/, '');
  } catch {
    return false;
  }
}

/** `path`, `maxBodyBytes` and `allowedOrigins` of an endpoint's options, checked (`invalid` throws INVALID_OPTIONS). */
export function readPostRoute<Env>(o: Record<string, unknown>, defaults: { path: string; max: number }, module: string,
  invalid: (path: string, message: string) => never): PostRoute<Env> {
  const path = o.path === undefined ? defaults.path : o.path;
  if (typeof path !== 'string' || !/^\/[^?#\s]*$/.test(path)) invalid('path', `\`path\` is the route's path, starting with / and without ? or # (got ${describe(path)}).`);
  const max = o.maxBodyBytes === undefined ? defaults.max : o.maxBodyBytes;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) invalid('maxBodyBytes', `\`maxBodyBytes\` is a whole number of bytes, at least 1 (got ${describe(max)}).`);
  const origins = o.allowedOrigins === undefined ? [] : readArray(o.allowedOrigins, 'allowedOrigins', 'INVALID_OPTIONS', module);
  if (!origins || origins.some((x) => typeof x !== 'string' || (x !== '*' && !isOrigin(x)))) {
    invalid('allowedOrigins', `\`allowedOrigins\` lists origins as scheme://host[:port] (e.g. https://app.example), or '*' (got ${describe(o.allowedOrigins)}).`);
  }
  return {
    authenticate: o.authenticate as PostRoute<Env>['authenticate'],
    path: path as string, max: max as number, origins: new Set((origins as string[]).map((x) => x.replace(/\/$/, ''))),
  };
}

function errorResponse(status: number, code: string, message: string, headers: Record<string, string> = {}, path?: string): Response {
  return Response.json({ error: { type: 'pagewise_error', code, message, ...(path !== undefined ? { path } : {}) } }, { status, headers });
}

/**
 * The fetch handler of a route: `serve(user, body, env)` answers `{ value }` for an authenticated POST; everything
 * else is a typed JSON error with the proxy's statuses. The user is decided before the body is read.
 */
export function postEndpoint<Env>(route: PostRoute<Env>, words: PostWords,
  serve: (user: string, body: Uint8Array, env: Env) => Promise<unknown>): (request: Request, env?: Env) => Promise<Response> {
  const { path, max, origins } = route;
  const corsOf = (request: Request): Record<string, string> => {
    const origin = request.headers.get('origin');
    if (origins.size === 0) return {};
    if (origin === null || (!origins.has('*') && !origins.has(origin))) return { vary: 'Origin' };
    return { 'access-control-allow-origin': origins.has('*') ? '*' : origin, vary: 'Origin' };
  };
  return async (request, env) => {
    const cors = corsOf(request);
    try {
      if (new URL(request.url).pathname !== path) return errorResponse(404, 'NOT_FOUND', `The ${words.name} endpoint serves POST ${path} only.`, cors);
      if (request.method === 'OPTIONS' && cors['access-control-allow-origin']) {
        return new Response(null, { status: 204, headers: { ...cors, 'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'authorization, content-type', 'access-control-max-age': '600' } });
      }
      if (request.method !== 'POST') return errorResponse(405, 'INVALID_ARGUMENT', `The ${words.name} endpoint takes POST ${path} with a JSON body ${words.body} (got ${request.method}).`, { ...cors, allow: 'POST' });
      const user = await route.authenticate(request, env as Env);
      if (typeof user !== 'string' || user === '') {
        return errorResponse(401, 'UNAUTHENTICATED', `The ${words.name} endpoint needs credentials it accepts: send Authorization: Bearer <token> with a token the server lists (${words.client}). Nothing was read or stored.`, { ...cors, 'www-authenticate': 'Bearer' });
      }
      const bytes = await readCapped(request, max, DRAIN_BYTES);
      if (bytes === null) return errorResponse(413, 'MESSAGE_TOO_LARGE', `The request body is over ${max} bytes, this endpoint's limit: sync with smaller batches (options.batchBytes). Nothing was stored.`, cors);
      return Response.json({ value: await serve(user, bytes, env as Env) }, { headers: cors });
    } catch (e) {
      if (isPagewiseError(e)) return errorResponse(errorStatus(e.code), e.code, e.message, cors, e.path);
      // Not the caller's doing (a Durable Object that failed, a bug): a 500 that says so, not a crashed handler.
      console.error(`[pagewise] [${words.log}] unexpected error`, e);
      return errorResponse(500, 'INTERNAL_ERROR', `The ${words.name} endpoint failed on this request; the server log has the cause. ${words.retry}`, cors);
    }
  };
}

/**
 * The body, or null when it is over `max` bytes: kept no further than that, the next `drain` bytes read and dropped,
 * then the stream cancelled (a request or a reply alike).
 */
export async function readCapped(message: Request | Response, max: number, drain: number): Promise<Uint8Array | null> {
  const declared = Number(message.headers.get('content-length') ?? NaN);
  if (!message.body) return new Uint8Array(0);
  const reader = message.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = Number.isFinite(declared) && declared > max ? declared : 0;
  if (size > max + drain) {
    await reader.cancel().catch(() => undefined);
    return null;
  }
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max + drain) {
      await reader.cancel().catch(() => undefined);
      break;
    }
    if (size <= max) chunks.push(value);
  }
  if (size > max) return null;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.byteLength; }
  return out;
}

/** How a client posts: its fetch, headers (token included), timeout and largest reply. */
export interface PostClient {
  fetch: (input: string, init: RequestInit) => Promise<Response>;
  headers: Headers;
  timeoutMs: number;
  maxReplyBytes: number;
}

/**
 * One POST of `body` to `target`: its status and reply (null when over `maxReplyBytes`, cancelled unread), or the
 * redirect it answered (never followed: it would take the token elsewhere). A failed fetch throws as fetch did.
 */
export async function postJson(o: PostClient, target: string, body: string): Promise<{ status: number; bytes: Uint8Array | null; redirect?: string | null }> {
  // 'manual': Node's fetch gives the 3xx itself, a browser's an opaque redirect (status 0).
  const response = await o.fetch(target, { method: 'POST', headers: o.headers, body, redirect: 'manual', signal: AbortSignal.timeout(o.timeoutMs) });
  if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400)) {
    const redirect = response.headers.get('location');
    await response.body?.cancel().catch(() => undefined);
    return { status: response.status, bytes: null, redirect };
  }
  return { status: response.status, bytes: await readCapped(response, o.maxReplyBytes, 0) };
}

