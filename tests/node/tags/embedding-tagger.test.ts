import { afterEach, describe, expect, it } from 'vitest';
import { createMemory, type Memory } from '../../../src/index.js';
import { assistant, user } from '../../support/helpers.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

// The conversation never says "database": only the tag `postgres` can connect the question to the decision.
const TURNS: [string, string][] = [
  ['We moved the orders table to Postgres last week.', 'Good: Postgres gives you transactions across orders and payments.'],
  ['My sourdough starter smells like acetone.', 'Feed it twice a day at a warmer spot; the smell fades in a few days.'],
  ['The kubernetes upgrade broke our ingress.', 'Pin the ingress controller version before the next upgrade.'],
  ['I ran 12 km this morning.', 'Nice pace; keep one easy day between long runs.'],
];

async function replay(tagger: 'keyword' | 'embedding') {
  // A window that sends no history whole: what comes back is recalled.
  memory = await createMemory({ contextWindow: 2048, reserveTokens: 256, memoryTokens: 400, tagger, preloadEmbedder: true });
  for (const [q, a] of TURNS) await memory.onTurnComplete({ conversationId: 'c', messages: [user(q), assistant(a)] });
  await memory.flush(); // stored turns and the tags' names are embedded
  return memory.onMessageInbound({ conversationId: 'c', message: user('Which database did we pick?') });
}

describe('the embedding tagger (tagger: "embedding", the shipped model)', () => {
  it('relates a question to a stored tag it never names (database → postgres); the keyword tagger cannot', async () => {
    const plain = await replay('keyword');
    expect(plain.matchedTags).not.toContain('postgres');
    await memory!.close();
    memory = undefined;
    const ctx = await replay('embedding');
    expect(ctx.matchedTags).toContain('postgres');
    // Unrelated topics are not pulled in by the expansion.
    expect(ctx.matchedTags.some((t) => /sourdough|kubernetes|ingress/.test(t))).toBe(false);
  }, 120_000);

  it('needs an embedder: tagger "embedding" with embedder false is refused with advice', async () => {
    await expect(createMemory({ tagger: 'embedding', embedder: false })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', path: 'tagger' });
  });
});
