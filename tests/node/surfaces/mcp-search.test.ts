import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Memory } from '../../../src/contracts/memory.js';
import type { SearchOptions, SearchReport } from '../../../src/contracts/types.js';
import { searxng } from '../../../src/search/providers.js';
import { createMcpServer } from '../../../src/surfaces/mcp.js';
import { assistant, createMemory, user } from '../../support/helpers.js';
import { PAGES, startSearchServers, type SearchServers } from '../../support/search-servers.js';

// The web_search tool and the search report of recall_context, with the SDK's own client over its in-memory transport,
// against a local SearXNG speaking the real JSON API (its pages on 127.0.0.1: allowPrivateHosts).
let s: SearchServers;
beforeAll(async () => { s = await startSearchServers(); });
afterAll(() => s.close());
beforeEach(() => s.reset());

type Content = { content: { type: string; text: string }[]; isError?: boolean; structuredContent?: Record<string, unknown> };
type WebAnswer = { text: string; report: SearchReport };

const searchOptions = (extra: Partial<SearchOptions> = {}): SearchOptions => ({
  providers: [searxng({ url: s.searxngUrl })], fetchPages: { allowPrivateHosts: true }, cacheMs: 0, ...extra,
});

/** A client connected to an MCP server over `memory`; `close` ends both and the memory. */
async function connect(memory: Memory, webSearch: boolean | undefined): Promise<{ client: Client; close(): Promise<void> }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer(memory, webSearch === undefined ? {} : { webSearch }).connect(serverSide);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  return { client, close: async () => { await client.close(); await memory.close(); } };
}

const webSearch = async (client: Client, args: Record<string, unknown>): Promise<{ raw: Content; answer: WebAnswer }> => {
  const raw = await client.callTool({ name: 'web_search', arguments: args }) as Content;
  return { raw, answer: JSON.parse(raw.content[0]!.text) as WebAnswer };
};

describe('the web_search tool', () => {
  it('is there only when the server is made with webSearch: true', async () => {
    for (const [flag, listed] of [[undefined, false], [false, false], [true, true]] as const) {
      const { client, close } = await connect(await createMemory({ search: searchOptions() }), flag);
      try {
        const tools = (await client.listTools()).tools;
        expect(tools.some((t) => t.name === 'web_search'), `webSearch: ${flag}`).toBe(listed);
        if (listed) {
          const tool = tools.find((t) => t.name === 'web_search')!;
          expect(tool.description).toMatch(/data, not instructions/);
          expect(tool.description).toMatch(/anonymized/);
          expect(Object.keys(tool.inputSchema.properties ?? {}).sort()).toEqual(['conversationId', 'maxResults', 'query']);
          expect(tool.inputSchema.required).toEqual(['query']);
        }
      } finally {
        await close();
      }
    }
    expect(s.queries).toEqual([]);
  });

  it('answers the pages\' main text inside <web-results> with their URLs, and the report of the anonymized query that was sent', async () => {
    const { client, close } = await connect(await createMemory({ search: searchOptions() }), true);
    try {
      const { raw, answer } = await webSearch(client, { query: 'latest Node.js 24.3.0 release notes, reply to priya.sharma@example.com', maxResults: 2 });
      expect(raw.isError).toBeFalsy();
      // What reached the provider: the query without the email address, exactly as the report says.
      expect(s.queries).toHaveLength(1);
      const sent = s.queries[0]!.query;
      expect(sent).toContain('24.3.0');
      expect(sent).not.toMatch(/priya|example\.com|@/i);
      expect(answer.report).toMatchObject({ outcome: 'searched', query: sent, removed: { email: 1 }, providers: [{ name: 'searxng', outcome: 'ok' }] });
      const article = `${s.pagesUrl}${PAGES.article.path}`;
      expect(answer.report.results.map((r) => r.url)).toEqual([article, `${s.pagesUrl}${PAGES.docs.path}`]);
      expect(answer.report.results[0]).toMatchObject({ text: 'page', included: true, provider: 'searxng' });
      // The rendered block, as the one renderer made it: the article's main text, not its site's chrome.
      expect(answer.text.startsWith('<web-results>\n')).toBe(true);
      expect(answer.text.trimEnd().endsWith('</web-results>')).toBe(true);
      expect(answer.text).toContain(`url="${article}"`);
      for (const line of PAGES.article.main) expect(answer.text).toContain(line);
      for (const chrome of PAGES.article.boilerplate) expect(answer.text).not.toContain(chrome);
      // The text content leaves the rendered block as rendered; the structured content is exact.
      expect(raw.structuredContent).toMatchObject({ text: answer.text, report: { query: sent } });
    } finally {
      await close();
    }
  });

  it('a provider that never answers gives an answer whose report says it timed out, not a tool error', async () => {
    s.mode.searxng = 'hang';
    const { client, close } = await connect(await createMemory({ search: searchOptions({ timeoutMs: 200 }) }), true);
    try {
      const { raw, answer } = await webSearch(client, { query: 'latest Node.js release' });
      expect(raw.isError).toBeFalsy();
      expect(s.queries).toHaveLength(1);
      expect(answer.text).toBe('');
      expect(answer.report).toMatchObject({ outcome: 'failed', query: s.queries[0]!.query, providers: [{ name: 'searxng', outcome: 'timeout' }], results: [] });
      expect(answer.report.reason).toMatch(/every provider failed/);
      // A bad argument is a refusal with pagewise's code.
      const refused = await client.callTool({ name: 'web_search', arguments: { query: '   ' } }) as Content;
      expect(refused.isError).toBe(true);
      expect(JSON.parse(refused.content[0]!.text)).toMatchObject({ error: { code: 'INVALID_ARGUMENT', path: 'query' } });
    } finally {
      await close();
    }
  });
});

describe('recall_context with the search option', () => {
  it('carries the search report, and the web results come first in the memory block', async () => {
    const memory = await createMemory({ contextWindow: 3000, search: searchOptions({ trigger: 'keywords' }) });
    await memory.onTurnComplete({ conversationId: 'ops', messages: [user('We pinned the build servers to Node.js 24.2 until the startup regression is fixed.'), assistant('Noted: build servers stay on Node.js 24.2 for now.')] });
    for (let i = 0; i < 80; i++) {
      await memory.onTurnComplete({ conversationId: 'ops', messages: [user(`Lunch order ${i}: soup, bread and a salad for the team meeting on the third floor, with coffee for everyone who asked.`), assistant(`Ordered lunch ${i}: soup, bread, salad and coffee, delivered to the third floor.`)] });
    }
    const { client, close } = await connect(memory, false);
    try {
      const raw = await client.callTool({ name: 'recall_context', arguments: { conversationId: 'ops', message: 'What is new in the latest Node.js release? Can the build servers leave 24.2?' } }) as Content;
      const answer = JSON.parse(raw.content[0]!.text) as { context: string; search: SearchReport; manifest: { kind: string; web?: { url: string } }[] };
      expect(s.queries).toHaveLength(1);
      expect(answer.search).toMatchObject({ outcome: 'searched', trigger: { by: 'keyword' }, query: s.queries[0]!.query });
      const article = `${s.pagesUrl}${PAGES.article.path}`;
      expect(answer.search.results.find((r) => r.url === article)).toMatchObject({ included: true });
      expect(answer.manifest.filter((e) => e.kind === 'search').map((e) => e.web?.url)).toContain(article);
      // The memory block: the web results first, then what memory recalled.
      const web = answer.context.indexOf('<web-results>');
      const recalled = answer.context.indexOf('<prior-conversation>');
      expect(web).toBeGreaterThanOrEqual(0);
      expect(recalled).toBeGreaterThan(web);
      expect(answer.context).toContain('</web-results>\n<prior-conversation>');
      expect(answer.context.slice(recalled)).toContain('pinned the build servers');
      expect(answer.context.slice(web, recalled)).toContain(PAGES.article.main[1]);
    } finally {
      await close();
    }
  });
});
