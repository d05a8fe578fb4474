import { describe, expect, it } from 'vitest';
import { createTokenizer, encodingForModel } from '../../../src/index.js';
import { resolveOptions } from '../../../src/engine/options.js';
import { messageText } from '../../../src/common/messages.js';
import { TOKENS_PER_MESSAGE, TOKENS_PER_NAME, blockTokens, messageTokens } from '../../../src/tokens/chat-format.js';
import type { ChatMessage, Tokenizer } from '../../../src/contracts/types.js';
import { refCount } from '../../support/helpers.js';

const SAMPLES = [
  'Hello, world!',
  'naïve café — 日本語のテキスト 🧠🚀 emoji',
  'function add(a: number, b: number) { return a + b; }\n\n    // indented',
  'Special look-alikes: <|endoftext|> <|im_start|>user <|fim_prefix|>',
  ' leading and trailing spaces   ',
  'x'.repeat(2000),
  '',
];

describe('tokenizers', () => {
  for (const encoding of ['o200k_base', 'cl100k_base'] as const) {
    it(`gpt-tokenizer and js-tiktoken count the same for ${encoding}`, async () => {
      const a = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding, margin: 1 });
      const b = await createTokenizer({ tokenizer: 'js-tiktoken', encoding, margin: 1 });
      for (const s of SAMPLES) expect(a.count(s), JSON.stringify(s.slice(0, 30))).toBe(b.count(s));
      expect(a.exact && b.exact).toBe(true);
    });
  }

  it('counts special-token look-alikes in user text as plain text instead of throwing', async () => {
    const t = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
    const text = 'ignore <|endoftext|> this';
    expect(t.count(text)).toBe(refCount(text));
    expect(t.count(text)).toBeGreaterThan(4);
  });

  it('o200k_base and cl100k_base really differ (the encoding is honoured)', async () => {
    const a = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
    const b = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'cl100k_base', margin: 1 });
    const text = SAMPLES[1]!.repeat(20);
    expect(a.count(text)).not.toBe(b.count(text));
  });

  it('maps models to encodings, unknown models to a marked estimate', async () => {
    expect(encodingForModel('gpt-4o-mini')).toBe('o200k_base');
    expect(encodingForModel('gpt-5')).toBe('o200k_base');
    expect(encodingForModel('o3-mini')).toBe('o200k_base');
    expect(encodingForModel('gpt-4-turbo')).toBe('cl100k_base');
    expect(encodingForModel('gpt-3.5-turbo')).toBe('cl100k_base');
    expect(encodingForModel('claude-sonnet-4')).toBeNull();
    const unknown = resolveOptions({ model: 'llama-3.1-8b' });
    expect(unknown.margin).toBe(1.25);
    const est = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: unknown.encoding, margin: unknown.margin });
    expect(est.exact).toBe(false);
    const text = 'An estimate must never undercount the real tokenizer. '.repeat(10);
    expect(est.count(text)).toBe(Math.ceil(refCount(text) * 1.25));
    expect(resolveOptions({ model: 'gpt-4' }).encoding).toBe('cl100k_base');
  });
});

describe("chat format: a message counted the provider's way", () => {
  // OpenAI's cookbook, num_tokens_from_messages: 3 per message, the tokens of every value in it, 1 more for a name.
  const cookbook = (m: ChatMessage): number =>
    3 + [m.role, messageText(m), m.name ?? '', m.toolCallId ?? ''].reduce((n, v) => n + refCount(v), 0) + (m.name ? 1 : 0);
  const MESSAGES: ChatMessage[] = [
    { role: 'user', content: 'Hello there' },
    { role: 'user', content: 'Hello there', name: 'Caroline' },
    { role: 'assistant', content: 'Sure.', name: 'Dr. Evelyn Hartmann-Okonkwo, Chief Medical Officer of St. Bartholomew' },
    { role: 'system', content: 'You are helpful.' },
    { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
    { role: 'tool', content: '{"result": 42}', toolCallId: 'call_8x7Yq2LmZpW3vT9k' },
    { role: 'user', content: [{ type: 'text', text: 'part one' }, { type: 'text', text: '日本語 🧠' }], name: 'ann_b' },
  ];

  it('counts the role, the name and a tool call id with the tokenizer, as the cookbook does', async () => {
    const t = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
    for (const m of MESSAGES) expect(messageTokens(t, m, t.count(messageText(m))), JSON.stringify(m)).toBe(cookbook(m));
    // The name's own tokens: far more than the one token the markup adds for it.
    const named = MESSAGES[2]!;
    expect(messageTokens(t, named, t.count(messageText(named))) - messageTokens(t, { role: 'assistant' }, t.count(messageText(named))))
      .toBe(refCount(named.name!) + TOKENS_PER_NAME);
    expect(refCount(named.name!)).toBeGreaterThan(10);
  });

  it('uses the tokenizer it is given for the role and the name', () => {
    const chars: Tokenizer = { name: 'chars', encoding: 'o200k_base', exact: true, count: (s) => s.length };
    expect(messageTokens(chars, { role: 'assistant', name: 'Ann' }, 10)).toBe(10 + TOKENS_PER_MESSAGE + 9 + 3 + TOKENS_PER_NAME);
    expect(messageTokens(chars, { role: 'tool', toolCallId: 'call_1' }, 0)).toBe(TOKENS_PER_MESSAGE + 4 + 6);
    // A memory block is a system message of its own.
    expect(blockTokens(chars, 'abc')).toBe(3 + TOKENS_PER_MESSAGE + 6);
    expect(blockTokens(chars, '')).toBe(0);
  });
});
