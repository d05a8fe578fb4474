import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isPagewiseError } from '../../../src/contracts/errors.js';
import type { SearchReport, WebSearchAnswer } from '../../../src/contracts/types.js';
import { commandHelp, UsageError } from '../../../src/surfaces/cli-help.js';
import { checkSearchCommand, refuseSearchKeys, searchOption } from '../../../src/surfaces/cli-search.js';
import { CLI_SOURCE } from '../../support/cli.js';
import { PAGES, startSearchServers, TEST_KEY, type SearchServers } from '../../support/search-servers.js';

// `--search SPEC`, `pagewise search QUERY` and `mcp --search` as a user runs them: the CLI in a child process against
// the local SearXNG, Brave and Tavily servers of this process (so the child is awaited, never run synchronously: the
// servers must answer while it runs). The spec parsing itself is checked in-process.
const dir = mkdtempSync(join(tmpdir(), 'pagewise-cli-search-'));
let s: SearchServers;
let config: string;
beforeAll(async () => {
  s = await startSearchServers();
  // The fixtures' pages are on 127.0.0.1: only a "search" object in --config lets them be fetched.
  config = join(dir, 'search.json');
  writeFileSync(config, JSON.stringify({ search: { fetchPages: { allowPrivateHosts: true } } }));
});
afterAll(async () => { await s.close(); rmSync(dir, { recursive: true, force: true }); });
beforeEach(() => s.reset());

const KEY_VARS = ['BRAVE_API_KEY', 'TAVILY_API_KEY', 'BRAVE_BASE_URL', 'TAVILY_BASE_URL'];
/** This process's environment without any search key or endpoint, plus `extra`. */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !KEY_VARS.includes(e[0])));
  return { ...env, ...extra };
}

/** `pagewise ARGS…` in a child process, awaited (this process's servers keep answering meanwhile). */
function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), CLI_SOURCE, ...args], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c; });
  child.stderr.setEncoding('utf8').on('data', (c: string) => { err += c; });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

/** The error `fn` throws. */
function thrown(fn: () => unknown): Error {
  try { fn(); } catch (error) { return error as Error; }
  throw new Error('did not throw');
}

describe('--search SPEC, read before anything opens', () => {
  it('makes providers as data: searxng=URL, brave and tavily from the environment or @FILE, base URLs from BRAVE_BASE_URL and TAVILY_BASE_URL', () => {
    const keyFile = join(dir, 'tavily.key');
    writeFileSync(keyFile, '\uFEFFtvly-from-file\n');
    const env = { BRAVE_API_KEY: 'brave-from-env', BRAVE_BASE_URL: 'http://127.0.0.1:9/brave' };
    const option = searchOption('search', { search: ['searxng=https://searx.example.org', 'brave', `tavily=@${keyFile}`], 'search-trigger': 'always', 'search-timeout': '2500' }, { fetchPages: false } as never, env);
    expect(option).toEqual({
      fetchPages: false, trigger: 'always', timeoutMs: 2500,
      providers: [
        { provider: 'searxng', url: 'https://searx.example.org' },
        { provider: 'brave', apiKey: 'brave-from-env', baseUrl: 'http://127.0.0.1:9/brave' },
        { provider: 'tavily', apiKey: 'tvly-from-file' },
      ],
    });
    // No flag and no "search" in --config: no search; a command that does not search refuses the flags.
    expect(searchOption('retrieve', {}, undefined, {})).toBeUndefined();
    // Settings in --config without a provider anywhere: search stays off (every command still opens).
    expect(searchOption('status', {}, { fetchPages: { allowPrivateHosts: true } } as never, {})).toBeUndefined();
    expect(searchOption('mcp', { search: ['brave'] }, { providers: [{ provider: 'searxng', url: 'https://a.example' }], cacheMs: 0 }, { BRAVE_API_KEY: 'k' }))
      .toEqual({ cacheMs: 0, providers: [{ provider: 'searxng', url: 'https://a.example' }, { provider: 'brave', apiKey: 'k' }] });
    expect(() => checkSearchCommand('retrieve', { search: ['brave'] })).not.toThrow();
    expect(thrown(() => checkSearchCommand('status', { 'search-timeout': '10' })).message).toMatch(/--search-timeout is an option of pagewise retrieve, transform, search and mcp/);
  });

  it('refuses what cannot work with a usage error that says what to write, and never repeats a key', () => {
    const usage = (fn: () => unknown): string => {
      const e = thrown(fn);
      expect(e, e.message).toBeInstanceOf(UsageError);
      return e.message;
    };
    for (const spec of ['brave=BSA-secret-4242', 'tavily=tvly-secret-4242', 'Brave=BSA-secret-4242']) {
      const message = usage(() => refuseSearchKeys(['searxng=https://searx.example.org', spec]));
      expect(message).toMatch(/is refused: a key on the command line/);
      expect(message).toMatch(/(BRAVE|TAVILY)_API_KEY/);
      expect(message).toContain('=@FILE');
      expect(message).not.toContain('secret-4242');
    }
    expect(() => refuseSearchKeys(['brave', 'tavily=@key.txt', 'searxng=https://x.example'])).not.toThrow();
    expect(usage(() => searchOption('search', { search: ['brave'] }, undefined, { BRAVE_API_KEY: '' }))).toMatch(/needs a key: set BRAVE_API_KEY .* --search brave=@FILE/);
    expect(usage(() => searchOption('search', { search: ['searxng'] }, undefined, {}))).toMatch(/needs the instance's URL: --search searxng=https:/);
    expect(usage(() => searchOption('search', { search: ['searxng=ftp://user:pw@host'] }, undefined, {}))).not.toContain('pw@host');
    expect(usage(() => searchOption('search', { search: ['sk-live-secret-4242'] }, undefined, {}))).not.toContain('secret-4242');
    expect(usage(() => searchOption('search', { search: ['tavily'] }, undefined, { TAVILY_API_KEY: 'k', TAVILY_BASE_URL: 'not a url' }))).toMatch(/TAVILY_BASE_URL is not an http/);
    expect(usage(() => searchOption('mcp', { search: ['searxng=http://x.example'], 'search-trigger': 'sometimes' }, undefined, {}))).toMatch(/--search-trigger is auto, keywords, llm, always/);
    expect(usage(() => searchOption('mcp', { search: ['searxng=http://x.example'], 'search-timeout': '0' }, undefined, {}))).toMatch(/--search-timeout is milliseconds, from 1 to 120000/);
    expect(usage(() => searchOption('retrieve', { 'search-trigger': 'always' }, undefined, {}))).toMatch(/need a provider: --search SPEC/);
    expect(usage(() => searchOption('search', {}, undefined, {}))).toMatch(/search needs a provider: --search SPEC/);
    // A key file: its path in the message, never its content.
    const empty = join(dir, 'empty.key');
    writeFileSync(empty, '\n');
    expect(usage(() => searchOption('search', { search: [`brave=@${empty}`] }, undefined, {}))).toMatch(/is empty: write the key in it/);
    const missing = thrown(() => searchOption('search', { search: [`tavily=@${join(dir, 'nope.key')}`] }, undefined, {}));
    expect(isPagewiseError(missing) && missing.code).toBe('NOT_FOUND');
  });

  it('pagewise search --help says what it does, its options and an example', () => {
    const help = commandHelp('search')!;
    expect(help).toMatch(/^pagewise search QUERY/);
    for (const words of ['--search SPEC', 'BRAVE_API_KEY', 'TAVILY_API_KEY', 'brave=@FILE', 'BRAVE_BASE_URL', '--search-timeout MS', '\nExample:\n  pagewise search ']) expect(help).toContain(words);
    for (const command of ['retrieve', 'transform', 'mcp']) expect(commandHelp(command)).toContain('--search-trigger auto|keywords|llm|always');
  });
});

describe('pagewise search QUERY', () => {
  it('against SearXNG: the pages\' main text inside <web-results>; the anonymized query, as sent, on stderr', async () => {
    const r = await run(['search', 'latest Node.js 24.3.0 release notes for bob.jones@example.com', '--search', `searxng=${s.searxngUrl}`, '--config', config]);
    expect(r.code, r.err).toBe(0);
    expect(s.queries).toHaveLength(1);
    const sent = s.queries[0]!.query;
    expect(sent).toContain('24.3.0');
    expect(sent).not.toMatch(/bob|example\.com|@/);
    expect(r.err).toBe(`search: sent ${JSON.stringify(sent)} to searxng: asked for directly (webSearch); 3 result(s)\n`);
    expect(r.out.startsWith('<web-results>\n')).toBe(true);
    expect(r.out).toContain(`url="${s.pagesUrl}${PAGES.article.path}"`);
    for (const line of PAGES.article.main) expect(r.out).toContain(line);
    for (const chrome of PAGES.article.boilerplate) expect(r.out).not.toContain(chrome);
  });

  it('against Tavily and SearXNG at once (--search twice), the key from TAVILY_API_KEY, as JSON; no key in the output', async () => {
    const r = await run(['search', 'latest Node.js release', '--search', 'tavily', '--search', `searxng=${s.searxngUrl}`, '--config', config, '--json'],
      { TAVILY_API_KEY: TEST_KEY, TAVILY_BASE_URL: s.tavilyUrl });
    expect(r.code, r.err).toBe(0);
    expect(s.queries.map((q) => q.provider).sort()).toEqual(['searxng', 'tavily']);
    expect(s.queries.find((q) => q.provider === 'tavily')!.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    const answer = JSON.parse(r.out) as WebSearchAnswer;
    expect(answer.report).toMatchObject({ outcome: 'searched', query: 'latest Node.js release' });
    expect(answer.report.providers.map((p) => [p.name, p.outcome])).toEqual([['tavily', 'ok'], ['searxng', 'ok']]);
    expect(answer.text).toContain('<web-results>');
    expect(answer.results.map((x) => x.url)).toContain(`${s.pagesUrl}${PAGES.article.path}`);
    expect(r.out + r.err).not.toContain(TEST_KEY);
  });

  it('refuses brave=KEY on the command line: exit code 2, the key nowhere in the output, nothing sent', async () => {
    const r = await run(['search', 'latest Node.js release', '--search', 'brave=BSA-do-not-echo-7731', '--db', join(dir, 'never.sqlite3')]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^pagewise: --search brave=… is refused: .*BRAVE_API_KEY.*--search brave=@FILE/);
    expect(r.out + r.err).not.toContain('do-not-echo-7731');
    expect(s.queries).toEqual([]);
  });
});

describe('retrieve and mcp with --search', () => {
  it('retrieve --search-trigger always: the manifest\'s web results and the search report', async () => {
    const r = await run(['retrieve', '-c', 'ops', '-m', 'Which Node.js version came out?', '--db', join(dir, 'retrieve.sqlite3'), '--create', '--embedder', 'off',
      '--search', `searxng=${s.searxngUrl}`, '--search-trigger', 'always', '--config', config, '--json']);
    expect(r.code, r.err).toBe(0);
    const report = JSON.parse(r.out) as { manifest: { kind: string }[]; search: SearchReport };
    expect(report.search).toMatchObject({ outcome: 'searched', trigger: { by: 'always' }, query: s.queries[0]!.query });
    expect(report.manifest.filter((e) => e.kind === 'search')).toHaveLength(3);
  });

  it('mcp --search searxng=URL over stdio lists web_search and answers it', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', import.meta.resolve('tsx'), CLI_SOURCE, 'mcp', '--db', join(dir, 'mcp.sqlite3'), '--embedder', 'off', '--search', `searxng=${s.searxngUrl}`, '--config', config],
      env: childEnv(),
      stderr: 'pipe',
    });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('web_search');
      const raw = await client.callTool({ name: 'web_search', arguments: { query: 'latest Node.js release', maxResults: 1 } }) as { content: { text: string }[] };
      const answer = JSON.parse(raw.content[0]!.text) as { text: string; report: SearchReport };
      expect(answer.report).toMatchObject({ outcome: 'searched', query: s.queries[0]!.query, results: [{ url: `${s.pagesUrl}${PAGES.article.path}` }] });
      expect(answer.text).toContain(PAGES.article.main[0]);
    } finally {
      await client.close();
    }
  });
});
