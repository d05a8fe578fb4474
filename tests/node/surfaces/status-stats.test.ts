// The usage and health figures where an operator reads them: `pagewise status` (a separate process on the database
// file, as a user runs it: the counters persisted by the earlier commands) and MCP's domain_status (the SDK's client).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createMcpServer } from '../../../src/surfaces/mcp.js';
import type { MemoryStats } from '../../../src/contracts/types.js';
import { cli } from '../../support/cli.js';
import { createMemory } from '../../support/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'pagewise-status-'));
const LOCOMO = resolve(import.meta.dirname, '../../fixtures/locomo/priya-tom.json');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('usage and health figures on the surfaces', () => {
  it('pagewise status --json carries memory.stats(), kept in the file across processes', () => {
    const db = join(dir, 'memory.sqlite3');
    expect(cli('import', LOCOMO, '--db', db).code).toBe(0);
    // Two requests in two processes: each persists its figures in the file.
    const first = cli('retrieve', '-c', 'priya-tom', '-m', "What is the name of Priya's cat?", '--window', '1024', '--db', db, '--json');
    const second = cli('retrieve', '-c', 'priya-tom', '-m', 'Where did Tom go hiking?', '--window', '1024', '--db', db, '--json');
    expect([first.code, second.code]).toEqual([0, 0]);
    const budgets = [first, second].map((r) => r.json().budget as { total: number; memory: number });

    const status = cli('status', '--db', db, '--json');
    expect(status.code).toBe(0);
    const { conversations, stats } = status.json() as { conversations: { id: string }[]; stats: MemoryStats };
    expect(conversations.map((x) => x.id)).toEqual(['priya-tom']);
    expect(stats.conversationId).toBeNull();
    expect(stats.usage.calls.onMessageInbound).toBe(2);
    expect(stats.usage.tokens.total).toBe(budgets[0]!.total + budgets[1]!.total);
    expect(stats.usage.tokens.memory).toBe(budgets[0]!.memory + budgets[1]!.memory);
    expect(stats.usage.tokens.saved).toBeGreaterThan(0);
    expect(stats.bytes).toBeGreaterThan(0);
    expect(stats.search.enabled).toBe(false);
    // Rebuilds after an upgrade: none under way on a file this version wrote.
    expect(stats.rebuilds).toEqual([]);
    // The plain output says it in words.
    const plain = cli('status', '--db', db);
    expect(plain.out).toMatch(/usage: 2 requests, \d+ tokens injected, \d+ tokens saved; \d+ compactions?/);
  }, 120_000);

  it('MCP domain_status carries the figures, of one conversation when it names one', async () => {
    const memory = await createMemory();
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer(memory).connect(serverSide);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(clientSide);
    const text = (r: unknown) => JSON.parse((r as { content: { text: string }[] }).content[0]!.text) as { stats: MemoryStats };
    try {
      for (const id of ['c1', 'c2']) {
        await client.callTool({ name: 'remember', arguments: { conversationId: id, messages: [{ role: 'user', content: `The ${id} staging password rotates on Fridays.` }, { role: 'assistant', content: 'Noted.' }] } });
      }
      const recalled = JSON.parse((await client.callTool({ name: 'recall_context', arguments: { conversationId: 'c1', message: 'When does the staging password rotate?' } }) as { content: { text: string }[] }).content[0]!.text) as { budget: { total: number } };
      const one = text(await client.callTool({ name: 'domain_status', arguments: { conversationId: 'c1' } })).stats;
      expect(one.conversationId).toBe('c1');
      expect(one.usage.calls).toEqual({ onMessageInbound: 1, onTurnComplete: 1 });
      expect(one.usage.tokens.total).toBe(recalled.budget.total);
      expect(one.usage.turnsStored).toBe(2);
      const all = text(await client.callTool({ name: 'domain_status', arguments: {} })).stats;
      expect(all.conversationId).toBeNull();
      expect(all.usage.calls).toEqual({ onMessageInbound: 1, onTurnComplete: 2 });
      expect(all.usage.turnsStored).toBe(4);
      expect(all.latencyMs.onTurnComplete!.count).toBe(2);
      expect(all.rebuilds).toEqual([]);
    } finally {
      await client.close();
      await memory.close();
    }
  });
});
