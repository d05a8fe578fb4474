// The MCP server's Streamable HTTP transport and what guards it. A local server is reachable by any web page the
// user opens (DNS rebinding: evil.example resolves to 127.0.0.1), so every request's Host and Origin must name this
// server; a server reachable from the network also needs a bearer token. Both are checked before the body is read.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { PagewiseError } from '../contracts/errors.js';

export interface McpHttpOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  /** Address to listen on. Default 127.0.0.1. Anything but loopback needs `token`. */
  host?: string;
  /** Bearer token every request must send (`Authorization: Bearer <token>`). Required off loopback. */
  token?: string;
  /** More Host names to accept (beyond localhost, 127.0.0.1, ::1 and the address listened on). */
  allowedHosts?: readonly string[];
  /** More Origins to accept (beyond http(s) origins on the accepted localhost names and address), e.g. `https://app.example`. */
  allowedOrigins?: readonly string[];
}

const LOCAL_NAMES = ['localhost', '127.0.0.1', '::1'];
// RFC 6750's b64token: what fits in an Authorization header as written.
const TOKEN_SYNTAX = /^[A-Za-z0-9\-._~+/]+=*$/;

/** Whether `host` (an address or name to listen on) is loopback only: 127.0.0.0/8, ::1 or localhost. */
export function isLoopback(host: string): boolean {
  const h = bare(host);
  if (h === 'localhost' || h === '::1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/** Refuses options that would serve memory unguarded: a token that cannot be sent, or no token off loopback. */
export function checkHttpOptions(options: McpHttpOptions): void {
  const host = options.host ?? '127.0.0.1';
  if (options.token !== undefined && !TOKEN_SYNTAX.test(options.token)) {
    throw new PagewiseError('INVALID_OPTIONS', 'mcp', 'The bearer token must be letters, digits and -._~+/ (e.g. the output of `openssl rand -hex 32`).');
  }
  if (options.token === undefined && !isLoopback(host)) {
    throw new PagewiseError('INVALID_OPTIONS', 'mcp', `Listening on ${host} (not loopback) exposes the memory to the network: set a bearer token (token option; CLI: --token TOKEN or the PAGEWISE_MCP_TOKEN environment variable), or listen on 127.0.0.1.`);
  }
  for (const origin of options.allowedOrigins ?? []) {
    if (origin !== 'null' && !isBareOrigin(origin)) {
      throw new PagewiseError('INVALID_OPTIONS', 'mcp', `An allowed origin is scheme://host[:port], e.g. https://app.example (got ${JSON.stringify(origin)}).`);
    }
  }
}

function bare(host: string): string {
  return host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
}

/** An Origin header (or allowed origin) normalized, or null when it is not one. */
function originOf(value: string): string | null {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin.toLowerCase() : null;
  } catch {
    return null;
  }
}

/** Whether `value` is an origin alone (scheme://host[:port], http or https), as browsers send it. */
function isBareOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return originOf(value) !== null && url.pathname === '/' && !url.search && !url.hash && !url.username;
  } catch {
    return false;
  }
}

/** The names of this machine as listened on: the localhost names, and the address listened on. */
function localHosts(host: string): Set<string> {
  const names = new Set([...LOCAL_NAMES, bare(host)]);
  // Listening on every interface: each interface's address is "the address listened on".
  if (host === '0.0.0.0' || host === '::' || host === '[::]') {
    for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) names.add(bare(a.address));
  }
  return names;
}

// A Host header as RFC 9110 writes it: a name or IPv4 address, or a bracketed IPv6 address, and a port. Nothing
// else (no `user@`, path or space) that a URL parser would read past.
const HOST_HEADER = /^(?:([a-z0-9._-]+)|\[([0-9a-f:.]+)\])(?::\d{1,5})?$/i;

/** The host name a Host header (or an allowed NAME) names, without port or brackets, or null when it is malformed. */
function hostName(header: string | undefined): string | null {
  const m = HOST_HEADER.exec(header ?? '');
  return m ? bare(m[1] ?? m[2]!) : null;
}

function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

interface Guard { hosts: Set<string>; local: Set<string>; origins: Set<string>; token: Buffer | null }

/**
 * Why a request may not reach the server (status and message), or null when it may: its Host must be one of this
 * server's names, its Origin (when a browser sends one) an http(s) origin on this machine's names or one allowed
 * (403); then the token (401), compared in constant time: digests of equal length, so neither content nor length leaks.
 */
function refusal(req: IncomingMessage, g: Guard): { status: number; message: string } | null {
  const host = hostName(req.headers.host);
  if (host === null || !g.hosts.has(host)) {
    return { status: 403, message: `Forbidden: Host ${JSON.stringify(req.headers.host ?? '')} is not this server's name (DNS rebinding protection). To accept it, start the server with --allow-host ${host ?? 'NAME'}.` };
  }
  const origin = req.headers.origin;
  if (origin !== undefined) {
    const normalized = origin === 'null' ? 'null' : originOf(origin);
    const onThisMachine = normalized !== null && normalized !== 'null' && g.local.has(bare(new URL(normalized).hostname));
    if (normalized === null || !(onThisMachine || g.origins.has(normalized))) {
      return { status: 403, message: `Forbidden: Origin ${JSON.stringify(origin)} may not use this server (DNS rebinding protection). To accept it, start the server with --allow-origin ${normalized ?? 'ORIGIN'}.` };
    }
  }
  if (g.token !== null) {
    const given = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (!timingSafeEqual(sha256(given), g.token)) {
      return { status: 401, message: 'Unauthorized: send Authorization: Bearer <token>, the token the server was started with (--token or PAGEWISE_MCP_TOKEN).' };
    }
  }
  return null;
}

/**
 * Serves MCP over Streamable HTTP at `POST /mcp`, stateless: a server and transport per request (from
 * `makeServer`), one memory for all. Listens on 127.0.0.1 unless told otherwise; see McpHttpOptions for the guards.
 */
export async function serveMcpHttpWith(makeServer: () => McpServer, options: McpHttpOptions = {}): Promise<{ url: string; close(): Promise<void> }> {
  checkHttpOptions(options);
  const host = options.host ?? '127.0.0.1';
  const local = localHosts(host);
  const g: Guard = {
    local,
    hosts: new Set([...local, ...(options.allowedHosts ?? []).map((h) => hostName(h) ?? bare(h))]),
    origins: new Set((options.allowedOrigins ?? []).map((o) => (o === 'null' ? o : originOf(o)!))),
    token: options.token === undefined ? null : sha256(options.token),
  };
  const http: Server = createServer((req, res) => {
    const no = refusal(req, g);
    if (no) { refuse(res, no.status, no.message, no.status === 401 ? { 'www-authenticate': 'Bearer realm="pagewise"' } : {}); return; }
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') { refuse(res, 404, 'Not found: the MCP endpoint is /mcp.'); return; }
    // Stateless: no server-initiated stream to open (GET) and no session to end (DELETE).
    if (req.method !== 'POST') { refuse(res, 405, 'Method not allowed: this server is stateless, send POST /mcp.', { allow: 'POST' }); return; }
    void (async () => {
      const server = makeServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => { void transport.close(); void server.close(); });
      try {
        await server.connect(transport);
        // The transport reads and parses the body itself (size limit, JSON errors as JSON-RPC errors).
        await transport.handleRequest(req, res);
      } catch (e) {
        if (!res.headersSent) refuse(res, 500, `Internal error: ${(e as Error).message}`);
      }
    })();
  });
  await new Promise<void>((ok, fail) => { http.once('error', fail); http.listen(options.port ?? 0, host, () => { http.off('error', fail); ok(); }); });
  const { port } = http.address() as AddressInfo;
  const shown = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/mcp`,
    close: () => new Promise<void>((ok) => { http.closeAllConnections(); http.close(() => ok()); }),
  };
}
