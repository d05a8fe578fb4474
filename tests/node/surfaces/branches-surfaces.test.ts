import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createMcpServer } from '../../../src/surfaces/mcp.js';
import { fileStorage } from '../../../src/storage/node-file.js';
import type { Memory } from '../../../src/contracts/memory.js';
import type { BranchList } from '../../../src/contracts/types-branches.js';
import { cli } from '../../support/cli.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

// Branches through the surfaces: the MCP tools (list_branches, checkout_branch, remember's parentId, forget's branch)
// with the SDK's client, and `pagewise branches` / `pagewise checkout` as a user runs them, on a database file.
const dir = mkdtempSync(join(tmpdir(), 'pagewise-branches-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const at = (minute: number) => `2025-03-01T10:${String(minute).padStart(2, '0')}:00.000Z`;
const ids = (turns: { id: string }[]) => turns.map((t) => t.id);

/** Lisbon, then Alfama hotels; then the second question edited (forked after a1): Porto's wine cellars instead. */
async function forked(memory: Memory, c: string): Promise<void> {
  await memory.onTurnComplete({ conversationId: c, messages: [user('Plan a trip to Lisbon in May.', { id: 'u1', createdAt: at(0) }), assistant('Lisbon in May: trams, Belém, pastéis de nata.', { id: 'a1', createdAt: at(1) })] });
  await memory.onTurnComplete({ conversationId: c, messages: [user('What about hotels in Alfama?', { id: 'u2', createdAt: at(2) }), assistant('Alfama hotels are small and hilly.', { id: 'a2', createdAt: at(3) })] });
  const fork = await memory.onTurnComplete({ conversationId: c, parentId: 'a1', messages: [user('Actually, Porto instead: which wine cellars?', { id: 'u2b', createdAt: at(4) }), assistant("Porto's cellars: Graham's and Taylor's.", { id: 'a2b', createdAt: at(5) })] });
  expect(fork.storedIds).toEqual(['u2b', 'a2b']);
  expect(ids(await memory.turns(c))).toEqual(['u1', 'a1', 'u2b', 'a2b']);
}

type Result = { content: { type: string; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

describe('branches over MCP (the SDK\'s client)', () => {
  it('list_branches, checkout_branch, remember with parentId, forget a branch; refusals as tool errors', async () => {
    const memory = await createMemory();
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer(memory).connect(serverSide);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(clientSide);
    const call = async (name: string, args: Record<string, unknown>) => await client.callTool({ name, arguments: args }) as Result;
    try {
      const tools = (await client.listTools()).tools;
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['list_branches', 'checkout_branch']));
      expect(Object.keys(tools.find((t) => t.name === 'remember')!.inputSchema.properties!)).toContain('parentId');
      await forked(memory, 'trip');

      const listed = await call('list_branches', { conversationId: 'trip' });
      expect(listed.isError).toBeUndefined();
      const list = JSON.parse(listed.content[0]!.text) as BranchList;
      expect(list).toEqual(listed.structuredContent);
      expect(list).toEqual({
        conversationId: 'trip',
        head: 'a2b',
        branches: [
          { start: 'u1', forkAfter: null, tip: 'a2', turns: 4, firstAt: at(0), lastAt: at(3), current: false, onPath: 2 },
          { start: 'u2b', forkAfter: 'a1', tip: 'a2b', turns: 2, firstAt: at(4), lastAt: at(5), current: true, onPath: 2 },
        ],
        forks: [{ after: 'a1', starts: ['u2', 'u2b'] }],
      });

      // Back to the Alfama branch: the answer is the list after the switch, and memory reads that branch.
      const checkedOut = await call('checkout_branch', { conversationId: 'trip', messageId: 'u2' });
      expect(checkedOut.isError).toBeUndefined();
      expect(checkedOut.structuredContent).toMatchObject({ head: 'a2', branches: [{ start: 'u1', current: true, onPath: 4 }, { start: 'u2b', current: false, onPath: 0 }] });
      expect(ids(await memory.turns('trip'))).toEqual(['u1', 'a1', 'u2', 'a2']);

      // A regenerated reply through remember: parentId u2 forks a second alternative after it.
      const regenerated = await call('remember', { conversationId: 'trip', parentId: 'u2', messages: [{ role: 'assistant', content: 'Alfama has a few boutique hotels near the castle.', id: 'a2c' }] });
      expect(regenerated.structuredContent).toMatchObject({ stored: 1, storedIds: ['a2c'] });
      expect(ids(await memory.turns('trip'))).toEqual(['u1', 'a1', 'u2', 'a2c']);
      const three = (await call('list_branches', { conversationId: 'trip' })).structuredContent as unknown as BranchList;
      expect(three.head).toBe('a2c');
      expect(three.forks).toEqual([{ after: 'a1', starts: ['u2', 'u2b'] }, { after: 'u2', starts: ['a2', 'a2c'] }]);
      expect(three.branches.filter((b) => b.current).map((b) => b.start)).toEqual(['a2c']);
      // parentId null: the conversation starts over (an edit of the first message).
      await call('remember', { conversationId: 'trip', parentId: null, messages: [{ role: 'user', content: 'Plan a trip to Madrid instead.', id: 'u1m' }] });
      expect(ids(await memory.turns('trip'))).toEqual(['u1m']);
      expect(((await call('list_branches', { conversationId: 'trip' })).structuredContent as unknown as BranchList).forks[0]).toEqual({ after: null, starts: ['u1', 'u1m'] });

      // The Porto branch forgotten by its start: gone from the tree and from every branch.
      const forgot = await call('forget', { conversationId: 'trip', branch: 'u2b' });
      expect((forgot.structuredContent as { messageIds: string[] }).messageIds.sort()).toEqual(['a2b', 'u2b']);
      const after = (await call('checkout_branch', { conversationId: 'trip', messageId: 'a2' })).structuredContent as unknown as BranchList;
      expect(after.branches.map((b) => b.start)).not.toContain('u2b');
      expect(ids(await memory.turns('trip'))).toEqual(['u1', 'a1', 'u2', 'a2']);

      // Refusals are tool errors with pagewise's code, and change nothing.
      const unknown = await call('checkout_branch', { conversationId: 'trip', messageId: 'nope' });
      expect(unknown.isError).toBe(true);
      expect(JSON.parse(unknown.content[0]!.text)).toMatchObject({ error: { code: 'NOT_FOUND' } });
      expect(ids(await memory.turns('trip'))).toEqual(['u1', 'a1', 'u2', 'a2']);
      const none = await call('list_branches', { conversationId: 'nobody' });
      expect(none.isError).toBe(true);
      expect(JSON.parse(none.content[0]!.text)).toMatchObject({ error: { code: 'CONVERSATION_NOT_FOUND' } });
      expect((await call('remember', { conversationId: 'trip', parentId: 'nope', messages: [{ role: 'user', content: 'lost' }] })).isError).toBe(true);
    } finally {
      await client.close();
      await memory.close();
    }
  });
});

describe('npx pagewise branches / checkout (the CLI, on a database file)', () => {
  it('prints the branches as a table, switches branch, and refuses bad command lines (2) and unknown ids (1)', async () => {
    const db = join(dir, 'memory.sqlite3');
    const open = () => createMemory({ storage: fileStorage(db) });
    let memory = await open();
    await forked(memory, 'trip');
    await memory.close();

    const listed = cli('branches', 'trip', '--db', db, '--embedder', 'off');
    expect(listed.code, listed.err).toBe(0);
    expect(listed.out.split('\n')).toEqual([
      'conversation trip: 2 branches, head a2b',
      '   START  FORKS AFTER  TIP  TURNS  ON PATH  FIRST                     LAST',
      `   u1     (start)      a2   4      2        ${at(0)}  ${at(3)}`,
      `*  u2b    a1           a2b  2      2        ${at(4)}  ${at(5)}`,
      'forks:',
      '  after a1: u2 | u2b (2 alternatives)',
      '',
    ]);
    const json = cli('branches', '-c', 'trip', '--db', db, '--embedder', 'off', '--json');
    expect(JSON.parse(json.out)).toMatchObject({ conversationId: 'trip', head: 'a2b', forks: [{ after: 'a1', starts: ['u2', 'u2b'] }] });

    const checkedOut = cli('checkout', 'trip', 'u2', '--db', db, '--embedder', 'off');
    expect(checkedOut.code, checkedOut.err).toBe(0);
    expect(checkedOut.out).toMatch(/^now on the branch through u2 \(head a2\)\n/);
    expect(checkedOut.out).toMatch(/^\*\s+u1\s+\(start\)\s+a2\s+4\s+4\s/m);
    memory = await open();
    try {
      expect(ids(await memory.turns('trip'))).toEqual(['u1', 'a1', 'u2', 'a2']);
      expect((await memory.branches('trip')).head).toBe('a2');
    } finally {
      await memory.close();
    }
    const back = cli('checkout', 'a2b', '-c', 'trip', '--db', db, '--embedder', 'off', '--json');
    expect(back.code, back.err).toBe(0);
    expect(JSON.parse(back.out)).toMatchObject({ head: 'a2b', branches: [{ current: false }, { start: 'u2b', current: true }] });

    // A bad command line: exit code 2 and the usage; a refusal: exit code 1 with pagewise's code.
    const noId = cli('branches', '--db', db, '--embedder', 'off');
    expect(noId.code).toBe(2);
    expect(noId.err).toContain('branches needs a conversation id');
    expect(noId.err).toContain('checkout ID MESSAGE_ID');
    expect(cli('checkout', 'trip', '--db', db, '--embedder', 'off').code).toBe(2);
    const unknown = cli('checkout', 'trip', 'nope', '--db', db, '--embedder', 'off', '--json');
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.out)).toMatchObject({ error: { code: 'NOT_FOUND' } });
    const nobody = cli('branches', 'nobody', '--db', db, '--embedder', 'off');
    expect(nobody.code).toBe(1);
    expect(nobody.err).toMatch(/^pagewise: CONVERSATION_NOT_FOUND: .*`pagewise status`/);
    memory = await open();
    try {
      expect(ids(await memory.turns('trip'))).toEqual(['u1', 'a1', 'u2b', 'a2b']);
    } finally {
      await memory.close();
    }
  });
});
