// relayEndpoint(): a relay over HTTP. `POST /v1/pagewise/relay` passes one relay operation of the authenticated user to
// that user's relay object (a PagewiseRelay Durable Object), and nothing else. What crosses is ciphertext the devices
// sealed; the endpoint, like the object, never sees a key.
import { PagewiseError, isPagewiseError } from '../contracts/errors.js';
import { describe, readArray, readRecord } from '../common/messages.js';
import { depthOver } from '../common/depth.js';
import { RELAY_OPS, RELAY_PATH, type RelayTarget } from '../storage/relay-protocol.js';
import { errorStatus } from './proxy.js';
import { readCapped } from './sync-http.js';

export { RELAY_PATH };

const MODULE = 'relay-http';
const DEFAULT_MAX_BODY = 24_000_000;
// What an over-long body is still read (and dropped) for, so that a client writing its whole body first sees the 413.
const DRAIN_BYTES = 64_000_000;
const MAX_DEPTH = 8;

export interface RelayEndpointOptions<Env = unknown> {
  /**
   * The user's relay: `(user, env) => relayStub(env.RELAY, 'user:' + encodeURIComponent(user))` on a PagewiseRelay
   * namespace. A function of the user, always: each user reaches their own relay object and no other.
   */
  relay: (user: string, env: Env) => RelayTarget | Promise<RelayTarget>;
  /**
   * Who is calling: a user id, or null when the request does not prove one (401; nothing read or stored). Required:
   * there is no anonymous relay. `bearerAuth(env.PAGEWISE_CLIENT_TOKENS)` reads `Authorization: Bearer <token>`.
   */
  authenticate: (request: Request, env: Env) => string | null | undefined | Promise<string | null | undefined>;
  /** The route: `POST {path}` (default `/v1/pagewise/relay`); any other path is 404. */
  path?: string;
  /** The largest request body (default 24,000,000 bytes); a larger one is 413 `MESSAGE_TOO_LARGE`, unread. */
  maxBodyBytes?: number;
  /** Origins whose pages may call the endpoint from a browser (CORS), or `*`. Default none. */
  allowedOrigins?: readonly string[];
}

function invalidOptions(path: string, message: string): never {
  throw new PagewiseError('INVALID_OPTIONS', MODULE, message, { path });
}

function errorResponse(status: number, code: string, message: string, headers: Record<string, string> = {}, path?: string): Response {
  return Response.json({ error: { type: 'pagewise_error', code, message, ...(path !== undefined ? { path } : {}) } }, { status, headers });
}

function isOrigin(value: unknown): boolean {
  if (value === '*') return true;
  try {
    const url = new URL(String(value));
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === String(value).replace(/\/$/, '');
  } catch {
    return false;
  }
}

function readOptions<Env>(options: RelayEndpointOptions<Env>) {
  const o = readRecord(options, 'options', 'INVALID_OPTIONS', MODULE);
  if (!o) invalidOptions('options', `relayEndpoint takes an options object { relay, authenticate } (got ${describe(options)}).`);
  if (typeof o.authenticate !== 'function') {
    invalidOptions('authenticate', 'relayEndpoint serves a person\'s relay: pass `authenticate(request, env)`, which returns the user id or null for a 401 — e.g. `bearerAuth(env.PAGEWISE_CLIENT_TOKENS)`. There is no anonymous relay.');
  }
  if (typeof o.relay !== 'function') {
    invalidOptions('relay', `\`relay\` is a function of the user that returns their relay object, e.g. (user, env) => relayStub(env.RELAY, 'user:' + encodeURIComponent(user)) (got ${describe(o.relay)}).`);
  }
  const path = o.path === undefined ? RELAY_PATH : o.path;
  if (typeof path !== 'string' || !/^\/[^?#\s]*$/.test(path)) invalidOptions('path', `\`path\` is the route's path, starting with / and without ? or # (got ${describe(path)}).`);
  const max = o.maxBodyBytes === undefined ? DEFAULT_MAX_BODY : o.maxBodyBytes;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) invalidOptions('maxBodyBytes', `\`maxBodyBytes\` is a whole number of bytes, at least 1 (got ${describe(max)}).`);
  const origins = o.allowedOrigins === undefined ? [] : readArray(o.allowedOrigins, 'allowedOrigins', 'INVALID_OPTIONS', MODULE);
  if (!origins || !origins.every(isOrigin)) invalidOptions('allowedOrigins', `\`allowedOrigins\` lists origins as scheme://host[:port], or '*' (got ${describe(o.allowedOrigins)}).`);
  return {
    relay: o.relay as RelayEndpointOptions<Env>['relay'], authenticate: o.authenticate as RelayEndpointOptions<Env>['authenticate'],
    path, max, origins: new Set((origins as string[]).map((x) => x.replace(/\/$/, ''))),
  };
}

function badRequest(message: string, path?: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, message, path === undefined ? undefined : { path });
}

/** `{ op, args }` from the body's bytes: a typed 400 for anything else. */
function parseCall(bytes: Uint8Array): { op: string; args: unknown } {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    badRequest(`The request body must be JSON (UTF-8) { "op": "state", "args": {...} } (${(e as Error).message.slice(0, 120)}).`);
  }
  const call = readRecord(body, 'body', 'INVALID_ARGUMENT', MODULE);
  if (!call) badRequest(`The request body must be a JSON object { op, args } (got ${describe(body)}).`);
  if (typeof call.op !== 'string' || !(RELAY_OPS as readonly string[]).includes(call.op)) {
    badRequest(`\`op\` must be one of ${RELAY_OPS.join(', ')}: the relay endpoint serves nothing else (got ${describe(call.op)}).`, 'op');
  }
  if (call.args !== undefined && !readRecord(call.args, 'args', 'INVALID_ARGUMENT', MODULE)) badRequest(`\`args\` must be an object (got ${describe(call.args)}).`, 'args');
  if (depthOver(call.args, MAX_DEPTH)) badRequest(`\`args\` nests deeper than ${MAX_DEPTH} levels, which no relay operation does.`, 'args');
  return { op: call.op, args: call.args ?? {} };
}

/**
 * A fetch handler for `POST /v1/pagewise/relay`: the relay operations of the authenticated user's relay object, as JSON
 * `{ op, args }` → `{ value }`, errors as `{ error: { type: 'pagewise_error', code, message, path? } }` (400 for invalid
 * input, 401, 404, 405, 413, 5xx for the server's failures). The user is decided before the body is read.
 *
 * @example
 * export { PagewiseRelay as Relay } from 'pagewise/edge';
 * const relay = relayEndpoint<Env>({
 *   relay: (user, env) => relayStub(env.RELAY, `user:${encodeURIComponent(user)}`),
 *   authenticate: (request, env) => bearerAuth(env.PAGEWISE_CLIENT_TOKENS)(request),
 * });
 * export default { fetch: (request: Request, env: Env) => relay(request, env) };
 */
export function relayEndpoint<Env = unknown>(options: RelayEndpointOptions<Env>): (request: Request, env?: Env) => Promise<Response> {
  const o = readOptions(options);
  const corsOf = (request: Request): Record<string, string> => {
    const origin = request.headers.get('origin');
    if (o.origins.size === 0) return {};
    if (origin === null || (!o.origins.has('*') && !o.origins.has(origin))) return { vary: 'Origin' };
    return { 'access-control-allow-origin': o.origins.has('*') ? '*' : origin, vary: 'Origin' };
  };
  return async (request, env) => {
    const cors = corsOf(request);
    try {
      if (new URL(request.url).pathname !== o.path) return errorResponse(404, 'NOT_FOUND', `The relay endpoint serves POST ${o.path} only.`, cors);
      if (request.method === 'OPTIONS' && cors['access-control-allow-origin']) {
        return new Response(null, { status: 204, headers: { ...cors, 'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'authorization, content-type', 'access-control-max-age': '600' } });
      }
      if (request.method !== 'POST') return errorResponse(405, 'INVALID_ARGUMENT', `The relay endpoint takes POST ${o.path} with a JSON body { op, args } (got ${request.method}).`, { ...cors, allow: 'POST' });
      const user = await o.authenticate(request, env as Env);
      if (typeof user !== 'string' || user === '') {
        return errorResponse(401, 'UNAUTHENTICATED', 'The relay endpoint needs credentials it accepts: send Authorization: Bearer <token> with a token the server lists (relayPeer(url, { key, token })). Nothing was read or stored.', { ...cors, 'www-authenticate': 'Bearer' });
      }
      const bytes = await readCapped(request, o.max, DRAIN_BYTES);
      if (bytes === null) return errorResponse(413, 'MESSAGE_TOO_LARGE', `The request body is over ${o.max} bytes, this endpoint's limit: sync with smaller batches (options.batchBytes). Nothing was stored.`, cors);
      const { op, args } = parseCall(bytes);
      const target = await o.relay(user, env as Env);
      return Response.json({ value: await target.call(op, args) }, { headers: cors });
    } catch (e) {
      if (isPagewiseError(e)) return errorResponse(errorStatus(e.code), e.code, e.message, cors, e.path);
      console.error('[pagewise] [relay-http] unexpected error', e);
      return errorResponse(500, 'INTERNAL_ERROR', 'The relay endpoint failed on this request; the server log has the cause. Nothing is lost: run the sync again.', cors);
    }
  };
}
