import { describe, expect, it } from 'vitest';
import { ALIAS_METHODS, MEMORY_METHODS, forwardMemory, invokeMemory } from '../../../src/contracts/memory-methods.js';
import { createMemory, user } from '../../support/helpers.js';

describe('the Memory method list (one list for every transport)', () => {
  it('names every method of the engine, and a forwarded object reaches each one, aliases included', async () => {
    const memory = await createMemory();
    try {
      // close and sync are each transport's own (sync runs where it is called, over the three sync methods).
      const own = Object.keys(memory).filter((k) => k !== 'close' && k !== 'sync' && k !== 'aliases').sort();
      expect(typeof memory.sync).toBe('function');
      expect([...MEMORY_METHODS].sort()).toEqual(own);
      expect([...ALIAS_METHODS].sort()).toEqual(Object.keys(memory.aliases).sort());
      const seen: string[] = [];
      const forwarded = forwardMemory((path, args) => { seen.push(path.join('.')); return invokeMemory(memory, path, args); });
      await forwarded.onTurnComplete({ conversationId: 'c', messages: [user('The garden needs water.', { id: 'm1' })] });
      expect((await forwarded.turns('c')).map((t) => t.id)).toEqual(['m1']);
      expect(await forwarded.aliases.add('veg-patch', 'garden', { conversationId: 'c' })).toMatchObject({ alias: 'veg-patch', tag: 'garden' });
      await expect(forwarded.turns('missing')).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
      expect(seen).toEqual(['onTurnComplete', 'turns', 'aliases.add', 'turns']);
    } finally {
      await memory.close();
    }
  });
});
