// relayPeer's way to its relay over HTTP: each operation is one POST { op, args } to a relayEndpoint, with the
// caller's token or headers (never the key: what is sent is sealed already). Like remoteMemory: no redirects
// followed, a timeout, a cap on the reply, and the endpoint's typed errors rebuilt.
import { PagewiseError } from '../contracts/errors.js';
import { describe, readRecord } from '../common/messages.js';
import { postJson } from './post-endpoint.js';
import { replyError } from './sync-http.js';
import { RELAY_PATH, type RelayTarget } from '../storage/relay-protocol.js';

const MODULE = 'sync-relay';
const DEFAULT_MAX_REPLY = 64_000_000;
const LOOPBACK = /^(localhost|.*\.localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** How relayPeer reaches a relay over HTTP (see RelayPeerOptions). */
export interface RelayHttpOptions {
  token?: string;
  headers?: Record<string, string>;
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  timeoutMs?: number;
  allowHttp?: boolean;
  maxReplyBytes?: number;
}

function invalidOptions(path: string, message: string): never {
  throw new PagewiseError('INVALID_OPTIONS', MODULE, message, { path });
}

function readUrl(url: string, allowHttp: boolean): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return invalidOptions('url', `relayPeer's url is the relay endpoint's absolute URL, e.g. https://edge.example/v1/pagewise/relay (got ${describe(url)}).`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') invalidOptions('url', `relayPeer's url must be https:// (got ${parsed.protocol}).`);
  if (parsed.username || parsed.password) invalidOptions('url', 'relayPeer\'s url must not hold credentials: pass options.token or options.headers.');
  if (parsed.protocol === 'http:' && !LOOPBACK.test(parsed.hostname) && !allowHttp) {
    invalidOptions('url', `Plain http:// to ${parsed.hostname} would send the token unencrypted: use https://, or allowHttp: true on a network you trust.`);
  }
  parsed.hash = '';
  if (parsed.pathname === '/') parsed.pathname = RELAY_PATH;
  return parsed.href;
}

function readHttpOptions(o: Record<string, unknown>) {
  if (o.token === undefined && o.headers === undefined) invalidOptions('token', 'relayPeer(url, { key, token }) needs the credentials the relay endpoint accepts: options.token (sent as Authorization: Bearer), or options.headers.');
  if (o.token !== undefined && (typeof o.token !== 'string' || !/^[\x21-\x7e]+$/.test(o.token))) {
    invalidOptions('token', 'options.token is the bearer token the relay endpoint accepts: a non-empty string of printable ASCII without spaces.');
  }
  if (o.fetch !== undefined && typeof o.fetch !== 'function') invalidOptions('fetch', `options.fetch must be a fetch function (got ${describe(o.fetch)}).`);
  const timeoutMs = o.timeoutMs === undefined ? 60_000 : o.timeoutMs;
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1) invalidOptions('timeoutMs', `options.timeoutMs is a whole number of milliseconds, at least 1 (got ${describe(timeoutMs)}).`);
  const maxReplyBytes = o.maxReplyBytes === undefined ? DEFAULT_MAX_REPLY : o.maxReplyBytes;
  if (typeof maxReplyBytes !== 'number' || !Number.isInteger(maxReplyBytes) || maxReplyBytes < 1) invalidOptions('maxReplyBytes', `options.maxReplyBytes is a whole number of bytes, at least 1 (got ${describe(maxReplyBytes)}).`);
  let headers: Headers;
  try {
    headers = new Headers((o.headers ?? {}) as Record<string, string>);
  } catch (e) {
    return invalidOptions('headers', `options.headers must be header names and values (${(e as Error).message}).`);
  }
  if (o.token !== undefined && headers.has('authorization')) invalidOptions('headers', 'options.headers must not set authorization when options.token is given: the token goes there.');
  headers.set('content-type', 'application/json');
  if (o.token !== undefined) headers.set('authorization', `Bearer ${o.token as string}`);
  const given = o.fetch as RelayHttpOptions['fetch'];
  return { headers, timeoutMs, maxReplyBytes, allowHttp: o.allowHttp === true, fetch: given ?? ((input: string, init: RequestInit) => fetch(input, init)) };
}

/** A relay over HTTP: a relayEndpoint at `url`. Options are checked here, before anything is sent. */
export function httpRelay(url: string, options: Record<string, unknown>): RelayTarget & { url: string } {
  const o = readHttpOptions(options);
  const target = readUrl(url, o.allowHttp);
  const call = async (op: string, args: unknown): Promise<unknown> => {
    const body = JSON.stringify({ op, args });
    let posted: Awaited<ReturnType<typeof postJson>>;
    try {
      posted = await postJson(o, target, body);
    } catch (e) {
      const why = (e as Error | null)?.name === 'TimeoutError' ? `no answer within ${o.timeoutMs} ms` : ((e as Error | null)?.message ?? String(e)).slice(0, 200);
      throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `The relay endpoint ${target} could not be reached (${why}). Nothing was lost: each batch is applied whole or not at all, so the sync can simply be run again.`, { cause: e });
    }
    const { status, bytes, redirect } = posted;
    if (redirect !== undefined) {
      throw new PagewiseError('INVALID_OPTIONS', MODULE, `${target} answered ${status || 'a redirect'}. relayPeer follows no redirect (it would send the token wherever one points): configure the relay endpoint's final URL.`, { path: 'url' });
    }
    if (bytes === null) throw new PagewiseError('MESSAGE_TOO_LARGE', MODULE, `${target} answered with more than ${o.maxReplyBytes} bytes (options.maxReplyBytes), so the reply was cancelled unread. The sync stopped here; run it again, it goes on from the last batch applied.`);
    const text = new TextDecoder().decode(bytes);
    let parsed: unknown;
    try { parsed = JSON.parse(text); } catch { parsed = undefined; }
    if (status < 200 || status > 299) throw replyError(target, status, parsed, text, MODULE, `the relay endpoint's (POST ${RELAY_PATH})`);
    const reply = readRecord(parsed, 'reply');
    if (!reply || !readRecord(reply.value, 'reply.value')) {
      throw new PagewiseError('STORAGE_ERROR', MODULE, `${target} answered with something that is not the relay endpoint's reply (${JSON.stringify(text.slice(0, 120))}): check that the url is the relay endpoint's.`);
    }
    return reply.value;
  };
  return { url: target, call };
}
