import { afterEach, describe, expect, it } from 'vitest';
import type { Memory } from '../../../src/index.js';
import { offlineReply } from '../../../demo/responder.js';
import { createMemory, user } from '../../support/helpers.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

// The demo's settings (index.html): a history target of 128 tokens, so the early messages come back by recall.
const DEMO = { contextWindow: 2048, reserveTokens: 256, targetTokens: 128, memoryTokens: 800, protectedRecentTurns: 2 };
const SAID = [
  'My sister Priya moves to Lisbon on the 14th of March.',
  'My dog Biscuit hates thunderstorms, any tips to calm him?',
  'Should I give Biscuit a bigger crate?',
  'Work is busy: we are migrating our billing service to Postgres.',
  'I am trying to cook more vegetarian dinners this winter.',
  'The book club is reading The Left Hand of Darkness next.',
  'Our kitchen renovation should be done before the holidays.',
  'I might run the harbour half marathon in spring.',
];

/** The offline answer to `question` after SAID (and `before`, said first), with what was recalled for it. */
async function answer(question: string, before: string[] = []): Promise<{ reply: string; recalled: string }> {
  await memory?.close();
  memory = await createMemory(DEMO);
  for (const [i, text] of [...before, ...SAID].entries()) await memory.onTurnComplete({ conversationId: 'c', messages: [user(text, { id: `u${i}` })] });
  const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user(question) });
  return { reply: offlineReply(ctx, question), recalled: ctx.recallText };
}

const quoted = (reply: string) => reply.split('\n').filter((l) => l.startsWith('From memory: '));

describe('the demo\'s offline answer (demo/responder.ts)', () => {
  it('quotes recalled lines that were questions: "what did I say about my dog?" is answered by the one asking for tips', async () => {
    const { reply, recalled } = await answer('What did I say about my dog?');
    expect(recalled).toContain('any tips to calm him?');
    expect(quoted(reply)).toContain('From memory: user: My dog Biscuit hates thunderstorms, any tips to calm him?');
  });

  it('quotes the best lines in the order they were said, and content words only count', async () => {
    const { reply } = await answer('When does my sister move, and where to?');
    // "moves" answers "move"; "and", "when", "where" match nothing.
    expect(quoted(reply)).toEqual(['From memory: user: My sister Priya moves to Lisbon on the 14th of March.']);
    const dog = quoted((await answer('Tell me again about Biscuit and his crate?')).reply);
    expect(dog).toEqual(['From memory: user: My dog Biscuit hates thunderstorms, any tips to calm him?', 'From memory: user: Should I give Biscuit a bigger crate?']);
  });

  it('leaves out an earlier copy of the question being asked, which answers nothing', async () => {
    const { reply, recalled } = await answer('Where does Priya move to?', ['Where does Priya move to?']);
    expect(recalled).toContain('Where does Priya move to?');
    expect(quoted(reply)).toEqual(['From memory: user: My sister Priya moves to Lisbon on the 14th of March.']);
  });

  it('says what the memory gave when nothing recalled shares a word with the question', async () => {
    const { reply } = await answer('Quantum chromodynamics?');
    expect(reply).toMatch(/^\d+ earlier messages are in context and \d+ excerpts? (was|were) recalled; \d+ of \d+ tokens used\.$/);
  });
});
