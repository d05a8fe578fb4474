// `pagewise mcp [--http PORT …]`: the MCP server on the database file, over stdio or Streamable HTTP, with the guards
// of an HTTP server checked before the database opens.
import type { Memory } from '../contracts/memory.js';
import { isPagewiseError } from '../contracts/errors.js';
import type { McpHttpOptions } from './mcp-http.js';
import { UsageError } from './cli-help.js';

export type McpFlags = { http?: string | undefined; host?: string | undefined; token?: string | undefined; 'allow-host'?: string[] | undefined; 'allow-origin'?: string[] | undefined };

/** The mcp command's HTTP options (undefined: stdio), or a usage error for guards that cannot hold. */
export async function mcpFlags(v: McpFlags): Promise<McpHttpOptions | undefined> {
  if (v.http === undefined) {
    if (v.host !== undefined || v.token !== undefined || v['allow-host'] || v['allow-origin']) throw new UsageError('--host, --token, --allow-host and --allow-origin are options of mcp --http PORT.');
    return undefined;
  }
  if (!/^\d+$/.test(v.http) || Number(v.http) > 65535) throw new UsageError(`--http is a port number (got "${v.http}").`);
  const { checkHttpOptions, isLoopback } = await import('./mcp-http.js');
  // An empty variable is an unset one (`PAGEWISE_MCP_TOKEN= pagewise mcp …`).
  const token = v.token ?? (process.env.PAGEWISE_MCP_TOKEN || undefined);
  const host = v.host ?? '127.0.0.1';
  if (token === undefined && !isLoopback(host)) {
    throw new UsageError(`--host ${host} is not loopback: anyone who can reach it could read and change the memory. Set a bearer token in the environment (PAGEWISE_MCP_TOKEN=$(openssl rand -hex 32)) or with --token TOKEN, or listen on 127.0.0.1.`);
  }
  const options: McpHttpOptions = { port: Number(v.http), host, ...(token !== undefined ? { token } : {}), allowedHosts: v['allow-host'] ?? [], allowedOrigins: v['allow-origin'] ?? [] };
  try {
    checkHttpOptions(options);
  } catch (e) {
    if (isPagewiseError(e)) throw new UsageError(e.message.replace(/^\[pagewise\] \[mcp\] /, ''));
    throw e;
  }
  return options;
}

/**
 * Serves the memory over MCP until the client goes (stdio) or the process is stopped (HTTP); `webSearch` (the memory
 * has the search option: --search): the web_search tool too.
 */
export async function mcp(memory: Memory, http: McpHttpOptions | undefined, webSearch = false): Promise<number> {
  const { serveMcpHttp, serveMcpStdio } = await import('./mcp.js');
  if (http === undefined) {
    await serveMcpStdio(memory, { webSearch });
    await new Promise<void>((resolve) => { process.stdin.on('end', resolve); process.stdin.on('close', resolve); });
    return 0;
  }
  const server = await serveMcpHttp(memory, { ...http, webSearch });
  process.stderr.write(`pagewise MCP server at ${server.url}${http.token !== undefined ? ' (bearer token required)' : ''}\n`);
  await new Promise<void>((resolve) => { process.once('SIGINT', resolve); process.once('SIGTERM', resolve); });
  await server.close();
  return 0;
}
