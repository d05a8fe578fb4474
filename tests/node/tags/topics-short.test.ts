import { afterEach, describe, expect, it } from 'vitest';
import type { Memory } from '../../../src/index.js';
import { createMemory, user } from '../../support/helpers.js';
import { EXAMPLE, EXAMPLE_QUESTION } from '../../../demo/example.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

// A first chat with the demo: its ten example messages, then its question (most subjects said once; only the sister
// comes back).
const FIRST_CHAT = [...EXAMPLE, EXAMPLE_QUESTION];

async function chat(messages: readonly string[]): Promise<Memory> {
  const m = await createMemory();
  for (const [i, text] of messages.entries()) await m.onTurnComplete({ conversationId: 'c', messages: [user(text, { id: `u${i}` })] });
  return m;
}

describe('topics() of a short conversation', () => {
  it('names the things said once, each message before any twice, after those said more than once', async () => {
    memory = await chat(FIRST_CHAT);
    const topics = await memory.topics('c');
    const tags = topics.map((t) => t.tag);
    expect(tags[0]).toBe('sister');
    expect(tags).toEqual(expect.arrayContaining(['japan', 'kyoto', 'postgres', 'dog', 'guitar', 'lisbon']));
    // Things, not the wording around them.
    for (const w of ['busy', 'mostly', 'hate', 'planning', 'started', 'want']) expect(tags).not.toContain(w);
    expect(topics.length).toBeLessThanOrEqual(24);
    // Every message with a thing said once is named before any message is named twice.
    const once = topics.filter((t) => t.units === 1);
    const messages = new Set(once.map((t) => t.firstSeq));
    expect(new Set(once.slice(0, messages.size).map((t) => t.firstSeq)).size).toBe(messages.size);
    expect(messages.size).toBeGreaterThanOrEqual(8);
    expect((await memory.topics('c', { limit: 3 })).map((t) => t.tag)).toEqual(tags.slice(0, 3));
  });

  it('names only what came back once the conversation is longer', async () => {
    const more = ['Japan', 'Kyoto', 'Postgres', 'Biscuit', 'Japan', 'Kyoto', 'Postgres', 'Biscuit'].map((thing, i) => `Day ${i + 1}: more about ${thing} today.`);
    memory = await chat([...FIRST_CHAT, ...more]);
    const topics = await memory.topics('c');
    expect(topics.map((t) => t.tag)).toEqual(expect.arrayContaining(['japan', 'kyoto', 'postgres', 'biscuit', 'sister']));
    expect(topics.every((t) => t.units > 1)).toBe(true);
  });
});
