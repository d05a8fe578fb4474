import { describe, expect, it } from 'vitest';
import { createTokenizer, encodingForModel } from '../../src/tokens/tokenizer.js';
import { resolveOptions } from '../../src/options.js';
import { refCount } from './helpers.js';

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
