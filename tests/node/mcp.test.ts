import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { serveMcpHttp } from '../../src/mcp.js';
import { createMemory } from './helpers.js';

// With the SDK's own client, over both transports.
const dir = mkdtempSync(join(tmpdir(), 'pagewise-mcp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type TextResult = { content: { type: string; text: string }[]; isError?: boolean };
const text = (r: unknown) => (r as TextResult).content[0]!.text;

async function exercise(client: Client): Promise<void> {
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  expect(tools).toEqual(['compact_context', 'domain_status', 'expand_topic', 'forget', 'recall_context', 'remember']);
  const stored = await client.callTool({ name: 'remember', arguments: { conversationId: 'c1', messages: [
    { role: 'user', content: 'The staging database password rotates every Friday at noon.', id: 'm1' },
    { role: 'assistant', content: 'Noted: staging rotates on Fridays at noon.', id: 'm2' },
  ] } });
  expect(JSON.parse(text(stored))).toMatchObject({ stored: 2 });
  const recalled = await client.callTool({ name: 'recall_context', arguments: { conversationId: 'c1', message: 'When does the staging password rotate?' } });
  expect(JSON.parse(text(recalled)).context).toContain('rotates every Friday at noon');
  const status = await client.callTool({ name: 'domain_status', arguments: { conversationId: 'c1' } });
  expect(JSON.parse(text(status)).conversation).toMatchObject({ id: 'c1', turns: 2 });
  const tags = await client.readResource({ uri: 'pagewise://conversations/c1/tags' });
  expect((JSON.parse((tags.contents[0] as { text: string }).text) as { tag: string }[]).map((t) => t.tag)).toContain('staging');
  const expanded = await client.callTool({ name: 'expand_topic', arguments: { conversationId: 'c1', tag: 'staging' } });
  expect(JSON.parse(text(expanded)).text).toContain('Friday at noon');
  const prompt = await client.getPrompt({ name: 'recall', arguments: { conversationId: 'c1', message: 'When does it rotate?' } });
  expect(JSON.stringify(prompt.messages)).toContain('rotates every Friday at noon');
  expect(JSON.stringify((await client.getPrompt({ name: 'summarize_session', arguments: { conversationId: 'c1' } })).messages)).toContain('staging');
  // A refusal is a tool error with pagewise's code, not a protocol failure.
  const refused = await client.callTool({ name: 'forget', arguments: { conversationId: 'nope' } }) as TextResult;
  expect(refused.isError).toBe(true);
  expect(JSON.parse(refused.content[0]!.text)).toMatchObject({ error: { code: 'CONVERSATION_NOT_FOUND' } });
  const forgot = await client.callTool({ name: 'forget', arguments: { conversationId: 'c1', messageIds: ['m1'] } });
  expect(JSON.parse(text(forgot))).toMatchObject({ messageIds: ['m1'] });
}

describe('the MCP server (npx pagewise mcp)', () => {
  it('over stdio, on a database file, with the SDK\'s client', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', resolve(import.meta.dirname, '../../src/cli.ts'), 'mcp', '--db', join(dir, 'stdio.sqlite3'), '--embedder', 'off'],
      stderr: 'pipe',
    });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(transport);
    try {
      await exercise(client);
    } finally {
      await client.close();
    }
  });

  it('over Streamable HTTP, with the SDK\'s client', async () => {
    const memory = await createMemory();
    const server = await serveMcpHttp(memory);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    try {
      await exercise(client);
    } finally {
      await client.close();
      await server.close();
      await memory.close();
    }
  });
});
