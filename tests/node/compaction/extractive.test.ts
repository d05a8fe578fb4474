import { describe, expect, it } from 'vitest';
import { extractiveSummarizer } from '../../../src/index.js';
import { PRIVATE_PLACEHOLDER } from '../../../src/compaction/compactor.js';
import { createTokenizer } from '../../../src/tokens/tokenizer.js';
import type { SummaryItem, SummaryRequest } from '../../../src/contracts/types.js';

const tokenizer = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
const summarizer = extractiveSummarizer(tokenizer);
const AT = '2023-05-08T13:00:00.000Z';

function request(items: [string, string][], targetTokens: number): SummaryRequest {
  return {
    conversationId: 'c', kind: 'segment', level: 1, tags: [], relatedTags: [], instructions: [], targetTokens,
    items: items.map(([speaker, text], i): SummaryItem => ({ id: `t${i}`, speaker, text, createdAt: AT })),
  };
}

describe('extractive summarizer', () => {
  it('keeps the decision, its names and numbers rather than the small talk around it, within the target', async () => {
    const r = request([
      ['Sam', 'Hey Dana! How did the meeting go? It was a long one, I heard.'],
      ['Dana', 'Wow, it really was long, honestly. After a long debate we decided to move to Postgres 16 on March 3, and Lee will book the migration window.'],
      ['Sam', 'That is great, thanks so much for sorting it out, Dana!'],
      ['Dana', 'No problem at all, it was fun.'],
    ], 40);
    const { text } = await summarizer.summarize(r);
    expect(tokenizer.count(text)).toBeLessThanOrEqual(40);
    expect(text).toMatch(/^Dana: .*decided to move to Postgres 16 on March 3/m);
    expect(text).toContain('Lee');
    // Deterministic: the same request, the same summary.
    expect((await summarizer.summarize(r)).text).toBe(text);
  });

  it('never exceeds the target, whatever it is', async () => {
    const long = Array.from({ length: 60 }, (_, i) => `On day ${i} Kim decided the budget for Oslo was ${i * 7} euros, and Ann agreed.`).join(' ');
    for (const target of [16, 32, 57, 150]) {
      const { text } = await summarizer.summarize(request([['Kim', long], ['Ann', 'Noted, I will book it.']], target));
      expect(text.length).toBeGreaterThan(0);
      expect(tokenizer.count(text), String(target)).toBeLessThanOrEqual(target);
    }
  });

  it('leaves out whom a line is said to, and pins relative days to the day it was written', async () => {
    const { text } = await summarizer.summarize(request([
      ['Melanie', 'Hey Caroline! I ran a charity race for mental health last Saturday.'],
      ['Caroline', 'Wow, Mel, I went to a support group yesterday.'],
    ], 60));
    expect(text).toBe('Melanie: I ran a charity race for mental health last Saturday (6 May).\nCaroline: I went to a support group yesterday (7 May).');
  });

  it('a segment of filler or private messages still gets a summary', async () => {
    expect((await summarizer.summarize(request([['user', PRIVATE_PLACEHOLDER]], 32))).text).toBe(`user: ${PRIVATE_PLACEHOLDER}`);
    expect((await summarizer.summarize(request([['user', 'Hi!'], ['assistant', 'Hello!']], 32))).text).not.toBe('');
  });
});
