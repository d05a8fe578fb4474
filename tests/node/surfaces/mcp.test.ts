import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { LoggingMessageNotificationSchema, type LoggingMessageNotification, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createMcpServer, serveMcpHttp } from '../../../src/surfaces/mcp.js';
import type { Memory } from '../../../src/contracts/memory.js';
import { createMemory } from '../../support/helpers.js';
import { b64, png } from '../../fixtures/media.js';

// With the SDK's own client, over both transports.
const dir = mkdtempSync(join(tmpdir(), 'pagewise-mcp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type TextResult = { content: { type: string; text: string }[]; isError?: boolean };
const text = (r: unknown) => (r as TextResult).content[0]!.text;

async function exercise(client: Client): Promise<void> {
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  expect(tools).toEqual(['checkout_branch', 'compact_context', 'domain_status', 'expand_topic', 'forget', 'get_attachment', 'list_branches', 'recall_context', 'remember']);
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
  await images(client);
}

/** An image remembered through MCP comes back as image content: in a recalled context with attachments: true, and by its id. */
async function images(client: Client): Promise<void> {
  const bytes = b64(png(48, 32, 5));
  const messages = [{ role: 'user', content: [{ type: 'text', text: 'The whiteboard sketch of the queue design.' }, { type: 'image', data: bytes, mediaType: 'image/png', name: 'sketch.png', caption: 'three workers pulling from one queue' }] }, { role: 'assistant', content: 'Got the sketch.' }];
  await client.callTool({ name: 'remember', arguments: { conversationId: 'img', messages } });
  for (let i = 0; i < 40; i++) {
    await client.callTool({ name: 'remember', arguments: { conversationId: 'img', messages: [{ role: 'user', content: `Unrelated note ${i} about lunch plans and the weather.` }, { role: 'assistant', content: `Fine ${i}.` }] } });
  }
  const recalled = await client.callTool({ name: 'recall_context', arguments: { conversationId: 'img', message: 'How many workers pull from the queue in the whiteboard sketch?', attachments: true } }) as { content: { type: string; data?: string; mimeType?: string; text?: string }[] };
  const answer = JSON.parse(recalled.content[0]!.text!) as { context: string; attachments: { id: string; name: string }[] };
  expect(answer.context).toContain('[image "sketch.png" (image/png');
  expect(recalled.content.slice(1)).toEqual([{ type: 'image', data: bytes, mimeType: 'image/png' }]);
  expect(answer.attachments).toMatchObject([{ type: 'image', mediaType: 'image/png', name: 'sketch.png' }]);
  const id = answer.attachments[0]!.id;
  const got = await client.callTool({ name: 'get_attachment', arguments: { conversationId: 'img', id } }) as { content: { type: string; data?: string; mimeType?: string }[] };
  expect(got.content[1]).toEqual({ type: 'image', data: bytes, mimeType: 'image/png' });
  // Another conversation does not read it.
  const missing = await client.callTool({ name: 'get_attachment', arguments: { conversationId: 'c1', id } }) as TextResult;
  expect(missing.isError).toBe(true);
}

describe('the MCP server (npx pagewise mcp)', () => {
  it('over stdio, on a database file, with the SDK\'s client', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', resolve(import.meta.dirname, '../../../src/surfaces/cli.ts'), 'mcp', '--db', join(dir, 'stdio.sqlite3'), '--embedder', 'off'],
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

/** What a user of an MCP client expects beyond the calls: completion of ids and tags, progress, log messages. */
async function conveniences(client: Client, memory: Memory, session: boolean): Promise<void> {
  for (const id of ['alpha-1', 'alpha-2', 'beta']) {
    await memory.onTurnComplete({ conversationId: id, messages: [{ role: 'user', content: `The staging server of ${id} moves to Berlin.` }] });
  }
  const caps = client.getServerCapabilities();
  expect(caps).toMatchObject({ completions: {}, logging: {} });
  const complete = async (ref: { type: 'ref/prompt'; name: string } | { type: 'ref/resource'; uri: string }, name: string, value: string, args?: Record<string, string>) =>
    (await client.complete({ ref, argument: { name, value }, ...(args ? { context: { arguments: args } } : {}) })).completion.values;
  for (const name of ['recall', 'summarize_session']) {
    expect((await complete({ type: 'ref/prompt', name }, 'conversationId', 'al')).sort()).toEqual(['alpha-1', 'alpha-2']);
  }
  expect(await complete({ type: 'ref/prompt', name: 'recall' }, 'conversationId', 'zz')).toEqual([]);
  expect(await complete({ type: 'ref/resource', uri: 'pagewise://conversations/{conversationId}/tags' }, 'conversationId', 'b')).toEqual(['beta']);
  const summaries = 'pagewise://conversations/{conversationId}/tags/{tag}/summaries';
  expect(await complete({ type: 'ref/resource', uri: summaries }, 'conversationId', 'alpha-')).toHaveLength(2);
  expect(await complete({ type: 'ref/resource', uri: summaries }, 'tag', 'sta', { conversationId: 'alpha-1' })).toContain('staging');
  // The conversations are listed as resources: a client finds the ids there too.
  expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(expect.arrayContaining(['pagewise://conversations/beta/tags']));

  const progress: Progress[] = [];
  const messages = Array.from({ length: 30 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `Message ${i} about the release train.` }));
  await client.callTool({ name: 'remember', arguments: { conversationId: 'big', messages } }, undefined, { onprogress: (p) => progress.push(p) });
  expect(progress.map((p) => [p.progress, p.total])).toEqual([[0, 30], [30, 30]]);
  expect(progress.at(-1)!.message).toBe('stored 30, 0 already stored');
  progress.length = 0;
  await client.callTool({ name: 'compact_context', arguments: { conversationId: 'big' } }, undefined, { onprogress: (p) => progress.push(p) });
  expect(progress.map((p) => [p.progress, p.total])).toEqual([[0, 1], [1, 1]]);

  const logs: LoggingMessageNotification['params'][] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
  await client.callTool({ name: 'forget', arguments: { conversationId: 'nope' } });
  expect(logs).toEqual([expect.objectContaining({ level: 'warning', logger: 'pagewise', data: expect.objectContaining({ tool: 'forget', code: 'CONVERSATION_NOT_FOUND' }) })]);
  // A level set holds for the session (over stateless HTTP every request is a session of its own).
  if (session) {
    await client.setLoggingLevel('error');
    await client.callTool({ name: 'forget', arguments: { conversationId: 'nope' } });
    expect(logs).toHaveLength(1);
  }
}

describe('the MCP server\'s conveniences, with the SDK\'s client', () => {
  it('in one session (the SDK\'s in-memory transport pair)', async () => {
    const memory = await createMemory();
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer(memory).connect(serverSide);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(clientSide);
    try {
      await conveniences(client, memory, true);
    } finally {
      await client.close();
      await memory.close();
    }
  });

  it('over stateless Streamable HTTP (notifications go with the request they belong to)', async () => {
    const memory = await createMemory();
    const server = await serveMcpHttp(memory);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    try {
      await conveniences(client, memory, false);
    } finally {
      await client.close();
      await server.close();
      await memory.close();
    }
  });
});
