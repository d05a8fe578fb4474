import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { isLoopback, serveMcpHttp } from '../../../src/surfaces/mcp.js';
import { createMemory } from '../../support/helpers.js';

// The HTTP transport's guards, with real HTTP on 127.0.0.1: node:http requests (they may set any Host header) and
// the SDK's own client.
const dir = mkdtempSync(join(tmpdir(), 'pagewise-mcp-http-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cliPath = resolve(import.meta.dirname, '../../../src/surfaces/cli.ts');

const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
const REMEMBER = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'remember', arguments: { conversationId: 'c1', messages: [{ role: 'user', content: 'stored?' }] } } };

/** One POST to the server's port, with the headers given (Host included) and status and body back. */
function post(url: string, headers: Record<string, string>, body: unknown = INIT): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const { port } = new URL(url);
  return new Promise((ok, fail) => {
    const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => { text += c; });
      res.on('end', () => ok({ status: res.statusCode!, body: text, headers: res.headers }));
    });
    req.on('error', fail);
    req.end(JSON.stringify(body));
  });
}

describe('the MCP server over HTTP: Host and Origin (DNS rebinding)', () => {
  it('refuses a foreign Host or Origin with 403 before the request runs, and accepts localhost names and the ones allowed', async () => {
    const memory = await createMemory();
    const server = await serveMcpHttp(memory, { allowedHosts: ['mybox.lan'], allowedOrigins: ['https://app.example'] });
    const port = new URL(server.url).port;
    try {
      // A web page on evil.example.com whose name resolves to 127.0.0.1: refused, and nothing was stored.
      const rebinding = await post(server.url, { host: `evil.example.com:${port}` }, REMEMBER);
      expect(rebinding.status).toBe(403);
      expect(JSON.parse(rebinding.body).error.message).toContain('--allow-host evil.example.com');
      expect((await post(server.url, { host: `127.0.0.1:${port}`, origin: 'http://evil.example.com' }, REMEMBER)).status).toBe(403);
      expect((await post(server.url, { host: `127.0.0.1:${port}`, origin: 'null' }, REMEMBER)).status).toBe(403);
      // A Host a URL parser would read as 127.0.0.1 (user info before it) is malformed, not local.
      expect((await post(server.url, { host: `evil.example.com@127.0.0.1:${port}` }, REMEMBER)).status).toBe(403);
      expect(await memory.conversations()).toEqual([]);

      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'mybox.lan']) {
        expect((await post(server.url, { host })).status, host).toBe(200);
      }
      expect((await post(server.url, { host: 'localhost', origin: 'http://localhost:5173' })).status).toBe(200);
      expect((await post(server.url, { host: 'localhost', origin: 'https://app.example' })).status).toBe(200);
      expect((await post(server.url, { host: 'localhost', origin: 'https://other.example' })).status).toBe(403);
    } finally {
      await server.close();
      await memory.close();
    }
  });
});

describe('the MCP server over HTTP: the bearer token', () => {
  it('answers 401 without the token or with a wrong one, and works with the right one', async () => {
    const memory = await createMemory();
    const token = 'Zm9vYmFyLXRva2VuLTEyMw';
    const server = await serveMcpHttp(memory, { token });
    try {
      const none = await post(server.url, { host: 'localhost' });
      expect(none.status).toBe(401);
      expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
      expect((await post(server.url, { host: 'localhost', authorization: `Bearer ${token}x` }, REMEMBER)).status).toBe(401);
      expect((await post(server.url, { host: 'localhost', authorization: `Basic ${token}` }, REMEMBER)).status).toBe(401);
      expect(await memory.conversations()).toEqual([]);
      // The SDK's client, refused without the header, served with it.
      const refused = new Client({ name: 't', version: '1' });
      await expect(refused.connect(new StreamableHTTPClientTransport(new URL(server.url)))).rejects.toThrow(/Unauthorized/);
      const client = new Client({ name: 't', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      await client.close();
    } finally {
      await server.close();
      await memory.close();
    }
  });

  it('is required off loopback: the library refuses to listen, the CLI exits 2 saying how to set one', async () => {
    expect([isLoopback('127.0.0.1'), isLoopback('127.8.0.1'), isLoopback('::1'), isLoopback('[::1]'), isLoopback('localhost'), isLoopback('::ffff:127.0.0.1')]).toEqual([true, true, true, true, true, true]);
    expect([isLoopback('0.0.0.0'), isLoopback('::'), isLoopback('10.0.0.1'), isLoopback('example.com'), isLoopback('128.0.0.1')]).toEqual([false, false, false, false, false]);
    const memory = await createMemory();
    await expect(serveMcpHttp(memory, { host: '0.0.0.0' })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringContaining('PAGEWISE_MCP_TOKEN') });
    await memory.close();

    const db = join(dir, 'refused.sqlite3');
    const env = { ...process.env, PAGEWISE_MCP_TOKEN: '' };
    const run = spawnSync(process.execPath, ['--import', 'tsx', cliPath, 'mcp', '--db', db, '--http', '0', '--host', '0.0.0.0'], { encoding: 'utf8', env, timeout: 60_000 });
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/PAGEWISE_MCP_TOKEN=.*--token TOKEN/);
    expect(existsSync(db)).toBe(false);
    const help = spawnSync(process.execPath, ['--import', 'tsx', cliPath, '--help'], { encoding: 'utf8', timeout: 60_000 });
    for (const flag of ['--host ADDR', '--token TOKEN', 'PAGEWISE_MCP_TOKEN', '--allow-host NAME', '--allow-origin']) expect(help.stdout).toContain(flag);
  });

  it('comes from PAGEWISE_MCP_TOKEN for the CLI', async () => {
    const token = 'c2VjcmV0LWZyb20tZW52';
    const child = spawn(process.execPath, ['--import', 'tsx', cliPath, 'mcp', '--db', join(dir, 'env.sqlite3'), '--http', '0', '--embedder', 'off'], {
      env: { ...process.env, PAGEWISE_MCP_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      const url = await new Promise<string>((ok, fail) => {
        let err = '';
        child.stderr!.on('data', (c: Buffer) => { err += c; const m = /server at (\S+) \(bearer token required\)/.exec(err); if (m) ok(m[1]!); });
        child.once('exit', (code) => fail(new Error(`exited ${code}: ${err}`)));
      });
      expect((await post(url, { host: 'localhost' })).status).toBe(401);
      expect((await post(url, { host: 'localhost', authorization: `Bearer ${token}` })).status).toBe(200);
    } finally {
      if (child.exitCode === null) {
        const exited = new Promise((ok) => child.once('exit', ok));
        child.kill('SIGTERM');
        await exited;
      }
    }
  });
});
