// Sync over HTTP: syncEndpoint() serves a person's memory as a sync peer (a fetch handler, beside the proxy), and
// remoteMemory(url, { token }) is that peer on the other side, for `memory.sync(remoteMemory(…))`. Only the three
// sync methods cross; a memory is personal data, so the endpoint serves nobody `authenticate` does not name.
import { ERROR_CODES, PagewiseError, type PagewiseErrorCode } from '../contracts/errors.js';
import type { SyncOptions, SyncPeer, SyncReport } from '../contracts/types-sync.js';
import { describe, readArray, readRecord } from '../common/messages.js';
import { withSync } from '../common/sync.js';
import { postEndpoint, postJson, readPostRoute } from './post-endpoint.js';
import { checkSyncServes, claimForSync } from './shared-memories.js';
import { depthOver } from '../common/depth.js';
import { yieldToEventLoop } from '../common/pace.js';

const MODULE = 'sync-http';
/** Where the endpoint answers unless `path` says otherwise. */
export const SYNC_PATH = '/v1/pagewise/sync';
const SYNC_METHODS = ['syncState', 'syncChanges', 'applySync'] as const;
type SyncMethod = (typeof SYNC_METHODS)[number];
const DEFAULT_MAX_BODY = 8_000_000;
// Nesting deeper than any batch has (turns → content parts → fields) is refused before it reaches the memory (a
// Durable Object's RPC would copy it recursively).
const MAX_DEPTH = 32;
const NAMED = 'syncState, syncChanges or applySync';

export interface SyncEndpointOptions<Env = unknown> {
  /**
   * The memory a user syncs with: one per user (e.g. `(user) => memoryStub(env.MEMORY_USERS, 'user:' +
   * encodeURIComponent(user))` on a PagewiseMemory with `scope: 'user'`), or a single memory, which is ONE person's
   * memory: every caller `authenticate` accepts reads and writes all of it. A memory a `memoryProxy` keeps several
   * users' conversations in is refused here (INVALID_OPTIONS), whichever is built first. Any object with the three
   * sync methods will do.
   */
  memory: SyncPeer | ((user: string, env: Env) => SyncPeer | Promise<SyncPeer>);
  /**
   * Who is calling: a user id, or null when the request does not prove one (401; nothing read or stored). Required:
   * there is no anonymous sync. `bearerAuth(env.PAGEWISE_CLIENT_TOKENS)` reads `Authorization: Bearer <token>`.
   */
  authenticate: (request: Request, env: Env) => string | null | undefined | Promise<string | null | undefined>;
  /** The route: `POST {path}` (default `/v1/pagewise/sync`); any other path is 404. */
  path?: string;
  /** The largest request body (default 8,000,000 bytes); a larger one is 413 `MESSAGE_TOO_LARGE`, unread. */
  maxBodyBytes?: number;
  /**
   * Origins whose pages may call the endpoint from a browser (CORS: `https://app.example`, or `*`). Default none:
   * only same-origin pages and non-browser clients. Tokens are still required: CORS only lets the page read replies.
   */
  allowedOrigins?: readonly string[];
}

function invalidOptions(path: string, message: string): never {
  throw new PagewiseError('INVALID_OPTIONS', MODULE, message, { path });
}

function readEndpointOptions<Env>(options: SyncEndpointOptions<Env>) {
  const o = readRecord(options, 'options', 'INVALID_OPTIONS', MODULE);
  if (!o) invalidOptions('options', `syncEndpoint takes an options object { memory, authenticate } (got ${describe(options)}).`);
  if (typeof o.authenticate !== 'function') {
    invalidOptions('authenticate', 'syncEndpoint serves a person\'s whole memory: pass `authenticate(request, env)`, which returns the user id or null for a 401 — e.g. `bearerAuth(env.PAGEWISE_CLIENT_TOKENS)`. There is no anonymous sync.');
  }
  const memory = o.memory as SyncEndpointOptions<Env>['memory'];
  const peer = memory as Partial<SyncPeer> | null;
  if (typeof memory !== 'function' && (typeof peer !== 'object' || peer === null || SYNC_METHODS.some((m) => typeof peer[m] !== 'function'))) {
    invalidOptions('memory', `\`memory\` is a Memory (or any object with ${NAMED}), or a function of the user that returns one, e.g. (user) => memoryStub(env.MEMORY_USERS, 'user:' + encodeURIComponent(user)) (got ${describe(memory)}).`);
  }
  const route = readPostRoute<Env>(o, { path: SYNC_PATH, max: DEFAULT_MAX_BODY }, MODULE, invalidOptions);
  // Last, so that options refused for another reason register nothing.
  if (typeof memory !== 'function') claimForSync(memory);
  return { memoryOf: typeof memory === 'function' ? memory : () => memory, route };
}

function badRequest(message: string, path?: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, message, path === undefined ? undefined : { path });
}

/** `{ method, args }` from the body's bytes: a typed 400 for anything else. */
function parseCall(bytes: Uint8Array): { method: SyncMethod; args: unknown[] } {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    badRequest(`The request body must be JSON (UTF-8) { "method": "${SYNC_METHODS[0]}", "args": [...] } (${(e as Error).message.slice(0, 120)}).`);
  }
  const call = readRecord(body, 'body', 'INVALID_ARGUMENT', MODULE);
  if (!call) badRequest(`The request body must be a JSON object { method, args } (got ${describe(body)}).`);
  const method = call.method;
  if (typeof method !== 'string' || !(SYNC_METHODS as readonly string[]).includes(method)) {
    badRequest(`\`method\` must be ${NAMED}: the sync endpoint serves nothing else (got ${describe(method)}).`, 'method');
  }
  const args = call.args === undefined ? [] : readArray(call.args, 'args', 'INVALID_ARGUMENT', MODULE);
  if (!args || args.length > 3) badRequest(`\`args\` must be the method's arguments as an array of at most 3 (got ${describe(call.args)}).`, 'args');
  if (depthOver(args, MAX_DEPTH)) badRequest(`\`args\` nests deeper than ${MAX_DEPTH} levels, which no sync batch does.`, 'args');
  return { method: method as SyncMethod, args };
}

/**
 * The arguments as the memory gets them: a caller over HTTP never makes the memory take a new id (`renew`), start a
 * resync or end one (`resync` of a batch it applies: what is still marked would go), nor name turns it says it
 * received from it or say it is a twin (`seenTurns`, `seenTwin`: anyone could, to make it renew at will); it may still
 * show it a receipt (`seen`), which the memory checks against its own history and its own signature, and tell it the
 * ids it left (`left`: a device that renewed must, for its copy to be found; a token holder could name another
 * device's id and make that device take a new id at its next sync — one full exchange, nothing lost). A resync's read
 * (SyncRequest.resync) passes: it is how a device resyncs with the edge, and serves only what the caller may read.
 */
function callerArgs(method: SyncMethod, args: unknown[]): unknown[] {
  if (method === 'applySync' && args.length > 0) {
    const batch = readRecord(args[0], 'args[0]', 'INVALID_ARGUMENT', MODULE);
    if (!batch) badRequest(`args[0], the batch to apply, must be an object as syncChanges() returns it (got ${describe(args[0])}).`, 'args[0]');
    const { resync: _, ...rest } = batch;
    return [rest, ...args.slice(1)];
  }
  if (method !== 'syncState' || args.length < 3) return args;
  const options = readRecord(args[2], 'args[2]', 'INVALID_ARGUMENT', MODULE);
  if (!options) badRequest(`args[2], syncState's options, must be an object { seen? } (got ${describe(args[2])}).`, 'args[2]');
  return [args[0], args[1] ?? undefined, { ...(options.seen === undefined ? {} : { seen: options.seen }), ...(options.seenElsewhere === undefined ? {} : { seenElsewhere: options.seenElsewhere }),
    ...(options.left === undefined ? {} : { left: options.left }) }];
}

/**
 * A fetch handler for `POST /v1/pagewise/sync`: the three sync methods of the authenticated user's memory, as JSON
 * `{ method, args }` → `{ value }`, errors as `{ error: { type: 'pagewise_error', code, message, path? } }` with the
 * proxy's statuses (400 for invalid input, 401, 404, 405, 413, 5xx for the server's failures). The user is decided
 * before the body is read; an unknown route is 404, another HTTP method 405.
 *
 * @example
 * const sync = syncEndpoint<Env>({
 *   memory: (user, env) => memoryStub(env.MEMORY_USERS, `user:${encodeURIComponent(user)}`),
 *   authenticate: (request, env) => bearerAuth(env.PAGEWISE_CLIENT_TOKENS)(request),
 * });
 * export default { fetch: (request: Request, env: Env) => sync(request, env) };
 */
export function syncEndpoint<Env = unknown>(options: SyncEndpointOptions<Env>): (request: Request, env?: Env) => Promise<Response> {
  const o = readEndpointOptions(options);
  return postEndpoint(o.route, {
    name: 'sync', body: '{ method, args }', client: 'remoteMemory(url, { token })', log: 'sync-http',
    retry: 'Each batch is applied whole or not at all: run the sync again.',
  }, async (user, bytes, env) => {
    const { method, args } = parseCall(bytes);
    // Parsing a large batch takes tens of ms (~10 ms a MB), and applySync reads it at once: another user's call runs
    // in between. Not for a small body: each hop waits behind whatever slice is under way.
    if (bytes.length > 500_000) await yieldToEventLoop();
    const peer = await o.memoryOf(user, env);
    checkSyncServes(peer, user);
    return (peer as unknown as Record<SyncMethod, (...a: unknown[]) => Promise<unknown>>)[method](...callerArgs(method, args));
  });
}

export interface RemoteMemoryOptions {
  /** The bearer token the endpoint accepts (sent as `Authorization: Bearer <token>`, never in a URL). */
  token: string;
  /** The fetch to use (default the global one): a test's, or one with its own agent. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** Per request; default 60,000 ms. */
  timeoutMs?: number;
  /** Extra headers on every request (not `authorization`: that is the token's). */
  headers?: Record<string, string>;
  /** Allow plain `http://` to a host that is not this machine (the token and the memory travel unencrypted). */
  allowHttp?: boolean;
  /**
   * The longest reply read, in bytes (default 64,000,000); a longer one is cancelled as it streams in, a
   * MESSAGE_TOO_LARGE. An endpoint's largest reply is a batch: about `batchBytes` of turns (default 1,000,000) but
   * one turn always whole — up to the row limit, 2 MB at the edge, which JSON's escapes make at most six times longer
   * — or attachment pieces within `batchBytes`. 64 MB is five times that worst case, and still memory a phone has.
   */
  maxReplyBytes?: number;
}

/** What `remoteMemory()` gives: a sync peer over HTTP, and `sync` from this side. */
export interface RemoteMemory extends SyncPeer {
  /** The endpoint's URL, as requests go to it. */
  readonly url: string;
  sync(other: SyncPeer, options?: SyncOptions): Promise<SyncReport>;
}

const DEFAULT_MAX_REPLY = 64_000_000;
const LOOPBACK = /^(localhost|.*\.localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

function readUrl(url: unknown, allowHttp: boolean): string {
  let parsed: URL;
  try {
    if (typeof url !== 'string') throw new Error('not a string');
    parsed = new URL(url);
  } catch {
    return invalidOptions('url', `remoteMemory's url is the sync endpoint's absolute URL, e.g. https://edge.example/v1/pagewise/sync (got ${describe(url)}).`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') invalidOptions('url', `remoteMemory's url must be https:// (got ${parsed.protocol}).`);
  if (parsed.username || parsed.password) invalidOptions('url', 'remoteMemory\'s url must not hold credentials: pass the token as options.token.');
  if (parsed.protocol === 'http:' && !LOOPBACK.test(parsed.hostname) && !allowHttp) {
    invalidOptions('url', `Plain http:// to ${parsed.hostname} would send the token and the memory unencrypted: use https://, or allowHttp: true on a network you trust.`);
  }
  parsed.hash = '';
  if (parsed.pathname === '/') parsed.pathname = SYNC_PATH;
  return parsed.href;
}

function readRemoteOptions(options: RemoteMemoryOptions) {
  const o = readRecord(options, 'options', 'INVALID_OPTIONS', MODULE);
  if (!o) invalidOptions('options', `remoteMemory(url, { token }) takes an options object (got ${describe(options)}).`);
  if (typeof o.token !== 'string' || !/^[\x21-\x7e]+$/.test(o.token)) {
    invalidOptions('token', 'options.token is the bearer token the sync endpoint accepts: a non-empty string of printable ASCII without spaces.');
  }
  if (o.fetch !== undefined && typeof o.fetch !== 'function') invalidOptions('fetch', `options.fetch must be a fetch function (got ${describe(o.fetch)}).`);
  const timeoutMs = o.timeoutMs === undefined ? 60_000 : o.timeoutMs;
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1) invalidOptions('timeoutMs', `options.timeoutMs is a whole number of milliseconds, at least 1 (got ${describe(timeoutMs)}).`);
  let headers: Headers;
  try {
    headers = new Headers((o.headers ?? {}) as Record<string, string>);
  } catch (e) {
    return invalidOptions('headers', `options.headers must be header names and values (${(e as Error).message}).`);
  }
  const maxReplyBytes = o.maxReplyBytes === undefined ? DEFAULT_MAX_REPLY : o.maxReplyBytes;
  if (typeof maxReplyBytes !== 'number' || !Number.isInteger(maxReplyBytes) || maxReplyBytes < 1) invalidOptions('maxReplyBytes', `options.maxReplyBytes is a whole number of bytes, at least 1 (got ${describe(maxReplyBytes)}).`);
  if (headers.has('authorization')) invalidOptions('headers', 'options.headers must not set authorization: the token goes in options.token.');
  headers.set('content-type', 'application/json');
  headers.set('authorization', `Bearer ${o.token}`);
  const given = o.fetch as RemoteMemoryOptions['fetch'];
  return { headers, timeoutMs, maxReplyBytes, allowHttp: o.allowHttp === true, fetch: given ?? ((input: string, init: RequestInit) => fetch(input, init)) };
}

/** The code a status stands for, when the reply carries none pagewise knows (a gateway's error page, a bug). */
function codeOfStatus(status: number): PagewiseErrorCode {
  if (status === 401 || status === 403) return 'UNAUTHENTICATED';
  if (status === 404 || status === 405) return 'NOT_FOUND';
  if (status === 413) return 'MESSAGE_TOO_LARGE';
  if (status === 507) return 'STORAGE_FULL';
  if (status === 500) return 'STORAGE_ERROR';
  return status >= 500 ? 'STORAGE_UNAVAILABLE' : 'INVALID_ARGUMENT';
}

/**
 * The error an endpoint's reply describes, rebuilt with its code, path and message; `module` and `endpoint` (what
 * the url should have been) word the message when the reply is not pagewise's.
 */
export function replyError(url: string, status: number, body: unknown, text: string, module = MODULE, endpoint = `the sync endpoint's (POST ${SYNC_PATH})`): PagewiseError {
  const e = readRecord(readRecord(body, 'reply')?.error, 'reply.error');
  const known = typeof e?.code === 'string' && (ERROR_CODES as readonly string[]).includes(e.code);
  const code = known ? e!.code as PagewiseErrorCode : codeOfStatus(status);
  const said = typeof e?.message === 'string' ? e.message.slice(0, 2000) : null;
  const error = new PagewiseError(code, module, '', typeof e?.path === 'string' ? { path: e.path } : undefined);
  const message = said !== null
    ? (said.startsWith('[pagewise]') ? said : `[pagewise] [${module}] ${said}`)
    : `[pagewise] [${module}] ${url} answered ${status} without pagewise's error JSON (${JSON.stringify(text.slice(0, 120))}): check that the url is ${endpoint}.`;
  Object.defineProperty(error, 'message', { value: message, writable: true, configurable: true });
  return error;
}

/** A redirect, refused: following it would send the token and the batch to wherever it points. */
function redirectError(url: string, status: number, location: string | null): PagewiseError {
  let where = 'an address the reply does not show';
  try {
    if (location !== null) where = ((to) => to.origin + to.pathname)(new URL(location, url));
  } catch {
    where = JSON.stringify(location!.slice(0, 200));
  }
  return new PagewiseError('INVALID_OPTIONS', MODULE, `${url} answered ${status || 'a redirect'} to ${where}. remoteMemory follows no redirect (it would send the token and the memory wherever one points) and sent nothing there: configure the sync endpoint's final URL, once you know it is the server you mean.`, { path: 'url' });
}

// What a reply's value must look like, checked lightly: the receiving side validates a batch fully.
const SHAPES: Record<SyncMethod, (v: Record<string, unknown>) => boolean> = {
  syncState: (v) => typeof v.replica === 'string' && typeof readRecord(v.cursor, 'cursor')?.turns === 'number',
  syncChanges: (v) => v.format === 'pagewise-sync' && typeof v.more === 'boolean' && Array.isArray(v.turns) && Array.isArray(v.tombstones),
  applySync: (v) => typeof v.turns === 'number' && typeof v.forgotten === 'number' && Array.isArray(v.conversations) && Array.isArray(v.conflicts),
};

/**
 * A sync peer over HTTP: the memory behind a `syncEndpoint`, reached with a bearer token. Pass it to any memory's
 * `sync` (or call its own `sync(other)`). A failed request is a PagewiseError with the endpoint's code (network
 * failures: `STORAGE_UNAVAILABLE`); nothing is lost by one: each batch is applied whole or not at all, and the next
 * sync goes on from the last one applied. A url without a path gets `/v1/pagewise/sync`.
 *
 * @example
 * import { createMemory, remoteMemory } from 'pagewise';
 * const memory = await createMemory();
 * const report = await memory.sync(remoteMemory('https://edge.example/v1/pagewise/sync', { token: process.env.PAGEWISE_TOKEN! }));
 * console.log(`${report.pulled} turns in, ${report.pushed} out`);
 */
export function remoteMemory(url: string, options: RemoteMemoryOptions): RemoteMemory {
  const o = readRemoteOptions(options);
  const target = readUrl(url, o.allowHttp);
  const unreachable = (method: string, e: unknown) => {
    const timedOut = (e as Error | null)?.name === 'TimeoutError';
    const why = timedOut ? `no answer within ${o.timeoutMs} ms` : ((e as Error | null)?.message ?? String(e)).slice(0, 200);
    return new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `The sync endpoint ${target} could not be reached for ${method} (${why}). Nothing was lost: each batch is applied whole or not at all, so the sync can simply be run again.`, { cause: e });
  };
  const post = async (method: SyncMethod, args: unknown[]): Promise<unknown> => {
    let body: string;
    try {
      body = JSON.stringify({ method, args });
    } catch (e) {
      throw new PagewiseError('INVALID_ARGUMENT', MODULE, `The arguments of ${method} cannot be sent as JSON (${(e as Error).message}): pass plain data.`, { cause: e });
    }
    let posted: Awaited<ReturnType<typeof postJson>>;
    try {
      posted = await postJson(o, target, body);
    } catch (e) {
      throw unreachable(method, e);
    }
    const { status, bytes, redirect } = posted;
    if (redirect !== undefined) throw redirectError(target, status, redirect);
    if (bytes === null) {
      throw new PagewiseError('MESSAGE_TOO_LARGE', MODULE, `${target} answered ${method} with more than ${o.maxReplyBytes} bytes (options.maxReplyBytes), so the reply was cancelled unread. A sync endpoint's batches are far smaller: check that the url is the sync endpoint's; if you raised batchBytes past that, raise maxReplyBytes with it. The sync stopped here; run again, it goes on from the last batch applied.`);
    }
    const text = new TextDecoder().decode(bytes);
    let parsed: unknown;
    try { parsed = JSON.parse(text); } catch { parsed = undefined; }
    if (status < 200 || status > 299) throw replyError(target, status, parsed, text);
    const reply = readRecord(parsed, 'reply');
    const value = readRecord(reply?.value, 'reply.value');
    if (!value || !SHAPES[method](value)) {
      throw new PagewiseError('STORAGE_ERROR', MODULE, `${target} answered ${method} with ${reply && 'value' in reply ? `a malformed value (${describe(reply.value)})` : `something that is not the sync endpoint's reply (${JSON.stringify(text.slice(0, 120))})`}: check that the url is the sync endpoint's and that both sides run the same pagewise version. The sync stopped here; run it again once they do.`);
    }
    return reply!.value;
  };
  const peer: SyncPeer & { readonly url: string } = {
    url: target,
    syncState: (peer, conversations, options) => post('syncState', options !== undefined ? [peer, conversations ?? null, options] : conversations === undefined ? [peer] : [peer, conversations]) as ReturnType<SyncPeer['syncState']>,
    syncChanges: (request) => post('syncChanges', [request]) as ReturnType<SyncPeer['syncChanges']>,
    applySync: (batch) => post('applySync', [batch]) as ReturnType<SyncPeer['applySync']>,
  };
  return withSync(peer);
}
