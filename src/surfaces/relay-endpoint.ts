// relayEndpoint(): a relay over HTTP. `POST /v1/pagewise/relay` passes one relay operation of the authenticated user to
// that user's relay object (a PagewiseRelay Durable Object), and nothing else. What crosses is ciphertext the devices
// sealed; the endpoint, like the object, never sees a key.
import { PagewiseError } from '../contracts/errors.js';
import { describe, readRecord } from '../common/messages.js';
import { depthOver } from '../common/depth.js';
import { RELAY_OPS, RELAY_PATH, type RelayTarget } from '../storage/relay-protocol.js';
import { postEndpoint, readPostRoute } from './post-endpoint.js';

export { RELAY_PATH };

const MODULE = 'relay-http';
const DEFAULT_MAX_BODY = 24_000_000;
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

function readOptions<Env>(options: RelayEndpointOptions<Env>) {
  const o = readRecord(options, 'options', 'INVALID_OPTIONS', MODULE);
  if (!o) invalidOptions('options', `relayEndpoint takes an options object { relay, authenticate } (got ${describe(options)}).`);
  if (typeof o.authenticate !== 'function') {
    invalidOptions('authenticate', 'relayEndpoint serves a person\'s relay: pass `authenticate(request, env)`, which returns the user id or null for a 401 — e.g. `bearerAuth(env.PAGEWISE_CLIENT_TOKENS)`. There is no anonymous relay.');
  }
  if (typeof o.relay !== 'function') {
    invalidOptions('relay', `\`relay\` is a function of the user that returns their relay object, e.g. (user, env) => relayStub(env.RELAY, 'user:' + encodeURIComponent(user)) (got ${describe(o.relay)}).`);
  }
  return { relay: o.relay as RelayEndpointOptions<Env>['relay'], route: readPostRoute<Env>(o, { path: RELAY_PATH, max: DEFAULT_MAX_BODY }, MODULE, invalidOptions) };
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
  return postEndpoint(o.route, {
    name: 'relay', body: '{ op, args }', client: 'relayPeer(url, { key, token })', log: 'relay-http', retry: 'Nothing is lost: run the sync again.',
  }, async (user, bytes, env) => {
    const { op, args } = parseCall(bytes);
    return (await o.relay(user, env)).call(op, args);
  });
}
