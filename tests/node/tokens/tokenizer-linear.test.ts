import fc from 'fast-check';
import { countTokens as gptCountO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { countTokens as gptCountCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import gptRanksO200k from 'gpt-tokenizer/bpeRanks/o200k_base';
import gptRanksCl100k from 'gpt-tokenizer/bpeRanks/cl100k_base';
import { CL100K_TOKEN_SPLIT_REGEX, O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import { BytePairEncodingCore } from 'gpt-tokenizer/BytePairEncodingCore';
import { Tiktoken } from 'js-tiktoken/lite';
import jsRanksO200k from 'js-tiktoken/ranks/o200k_base';
import jsRanksCl100k from 'js-tiktoken/ranks/cl100k_base';
import { describe, expect, it } from 'vitest';
import { createBpeCounter, gptTokenizerTable, isValidUtf8, jsTiktokenTable, utf8Binary } from '../../../src/tokens/bpe.js';
import { createTokenizer } from '../../../src/index.js';
import type { EncodingName, Tokenizer } from '../../../src/contracts/types.js';
import { rng } from '../../support/rng.js';

// The packages themselves, counting special-token text as plain text (as createTokenizer configures them).
const plain = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };
const packages = {
  o200k_base: {
    gpt: (s: string) => gptCountO200k(s, plain),
    js: ((t) => (s: string) => t.encode(s, [], []).length)(new Tiktoken(jsRanksO200k)),
    gptLinear: createBpeCounter(gptTokenizerTable(gptRanksO200k, O200K_TOKEN_SPLIT_REGEX)),
    jsLinear: createBpeCounter(jsTiktokenTable(jsRanksO200k)),
  },
  cl100k_base: {
    gpt: (s: string) => gptCountCl100k(s, plain),
    js: ((t) => (s: string) => t.encode(s, [], []).length)(new Tiktoken(jsRanksCl100k)),
    gptLinear: createBpeCounter(gptTokenizerTable(gptRanksCl100k, CL100K_TOKEN_SPLIT_REGEX)),
    jsLinear: createBpeCounter(jsTiktokenTable(jsRanksCl100k)),
  },
} as const;
const ENCODINGS = ['o200k_base', 'cl100k_base'] as const satisfies readonly EncodingName[];

// Pieces that exercise every branch of both pre-tokenizers and of the merge: scripts (cased, uncased, combining
// marks), emoji with modifiers, digits, contractions, whitespace of every kind, punctuation (o200k keeps '/' with
// it), special-token look-alikes, a byte-order mark (gpt-tokenizer decodes merged bytes with a TextDecoder that drops
// it: the packages disagree there) and lone surrogates (gpt-tokenizer looks a whole chunk up by its string).
const PIECES = [
  'a', 'z', 'Z', 'the', 'The', ' hello', 'WORLD', 'naïve', 'é', 'É', 'ß', 'e\u0301', '\u0301', 'ñ', 'Ω', 'д', 'Привет',
  'ع', 'שלום', 'हिन्दी', 'ไทย', 'あ', 'カ', 'ー', '日本', '語', '한국어', '🧠', '🚀', '👍🏽', '👨‍👩‍👧', '🇫🇷', '0', '7', '123',
  '4567', '٣', ' ', '  ', '\t', '\n', '\r\n', '\n\n', ' \n ', '\u00a0', '\u3000', '.', ',', '!', '?', '/', '//', '...', '—',
  '(', ')', '{', '}', '"', "'", "'s", "'LL", "'Re", "n't", '<|endoftext|>', '<|im_start|>', '<|fim_prefix|>', '\uFEFF',
  '\uFEFFusing', '\uFEFF名', '名', '\uD800', '\uDC00', 'a\uD800', '\u0000', '\u00ff',
];
// Characters for runs: one chunk of many bytes, where the merge order (lowest rank, leftmost on ties) decides.
const RUN_UNITS = ['z', 'a', 'Z', 'é', 'ab', 'acgt', 'ー', 'あ', 'カタ', '語', '🧠', '0', ' ', '\n', '!', '.', '-', '=', '\uFEFF', 'e\u0301', 'ab1'];

const piece = fc.constantFrom(...PIECES);
const run = (min: number, max: number) =>
  fc.tuple(fc.constantFrom(...RUN_UNITS), fc.integer({ min, max })).map(([unit, n]) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n));
// A run of random characters from one class: a chunk whose pairs differ.
const mixedRun = fc.tuple(fc.constantFrom('abcdefghijklmnopqrstuvwxyz', 'éèêëàâäôöûüçñ', 'あいうえおかきくけこさしすせそたちつてとカキクケコ', 'acgt', 'ABCDEFGHIJ'), fc.array(fc.nat(), { minLength: 1, maxLength: 300 }))
  .map(([alphabet, picks]) => picks.map((p) => alphabet[p % alphabet.length]).join(''));
const segment = fc.oneof(
  { arbitrary: piece, weight: 8 },
  { arbitrary: run(1, 40), weight: 3 },
  { arbitrary: mixedRun, weight: 2 },
  // Just above the counters' thresholds: 24 bytes (heap merge), 128 characters (chunk cache), 256 (createTokenizer).
  { arbitrary: run(240, 320), weight: 1 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 12 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }), weight: 2 },
);
const text = fc.array(segment, { maxLength: 24 }).map((parts) => parts.join(''));

const WORDS = ['the', 'memory', 'conversation', 'naïve', 'café', 'Straße', '日本語の', 'テキスト', '中文', '한국어', 'привет', 'مرحبا',
  '🧠', '🚀', '👍🏽', '12345', '3.14159', '<|endoftext|>', 'function', 'return', 'a + b;', '{"json": [1, 2]}', '—', '...', "don't", "it's"];
const LONG_RUNS: ((n: number, r: () => number) => string)[] = [
  (n) => 'z'.repeat(n),
  (n) => 'é'.repeat(n),
  (n, r) => Array.from({ length: n }, () => String.fromCharCode(0x3042 + Math.floor(r() * 80))).join(''),
  (n, r) => Array.from({ length: n }, () => 'acgt'[Math.floor(r() * 4)]).join(''),
  (n, r) => Array.from({ length: n }, () => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/'[Math.floor(r() * 54)]).join(''),
  (n) => '🧠'.repeat(n >> 1),
  (n) => ' '.repeat(n) + 'x',
];

/**
 * About 1 MiB of mixed text: prose in several scripts, emoji, numbers, code, whitespace runs, and now and then a
 * long run that is one pre-tokenizer chunk (a repeated letter, kana, DNA, base64 without digits, emoji, spaces).
 */
function mixedText(chars: number, seed = 7): string {
  const r = rng(seed);
  const out: string[] = [];
  let length = 0;
  while (length < chars) {
    let part: string;
    if (r() < 0.0002) part = LONG_RUNS[Math.floor(r() * LONG_RUNS.length)]!(1000 + Math.floor(r() * 9000), r);
    else if (r() < 0.05) part = ' '.repeat(1 + Math.floor(r() * 12)) + (r() < 0.5 ? '\n' : '');
    else part = WORDS[Math.floor(r() * WORDS.length)]! + (r() < 0.1 ? '.\n' : ' ');
    out.push(part);
    length += part.length;
  }
  return out.join('').slice(0, chars);
}

describe('linear token counting equals the packages', () => {
  for (const encoding of ENCODINGS) {
    it(`counts what gpt-tokenizer and js-tiktoken count, on generated text (${encoding})`, async () => {
      const p = packages[encoding];
      const viaGpt = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding, margin: 1 });
      const viaJs = await createTokenizer({ tokenizer: 'js-tiktoken', encoding, margin: 1 });
      let long = 0;
      let disagree = 0;
      fc.assert(fc.property(text, (s) => {
        const gpt = p.gpt(s);
        const js = p.js(s);
        expect(p.gptLinear(s)).toBe(gpt);
        expect(p.jsLinear(s)).toBe(js);
        expect(viaGpt.count(s)).toBe(gpt);
        expect(viaJs.count(s)).toBe(js);
        if (s.length > 256) long++;
        if (gpt !== js) disagree++;
      }), { seed: encoding === 'o200k_base' ? 20240501 : 20240502, numRuns: 400 });
      // The generated texts reach the long path of createTokenizer, and the packages' one difference (the BOM).
      expect(long).toBeGreaterThan(40);
      expect(disagree).toBeGreaterThan(5);
    }, 240_000);
  }

  // Random small vocabularies, counted by the packages' own engines: merges are frequent, ties common, and the
  // packages' quirks reachable (in the real vocabularies a BOM-prefixed merge or a whole chunk holding a lone
  // surrogate rarely decides a count).
  it("counts what the packages' engines count with random vocabularies", () => {
    const ALPHABET = ['a', 'b', 'c', 'é', '名', '\uFEFF', '\uD800', ' ', '1', '.'];
    const strict = new TextDecoder('utf-8', { fatal: true });
    const encoder = new TextEncoder();
    const word = fc.array(fc.constantFrom(...ALPHABET), { minLength: 1, maxLength: 6 }).map((w) => w.join(''));
    const vocabulary = fc.array(fc.tuple(word, fc.nat(), fc.nat()), { minLength: 1, maxLength: 60 });
    const texts = fc.array(fc.array(fc.oneof(fc.constantFrom(...ALPHABET), word), { maxLength: 40 }).map((t) => t.join('')), { minLength: 1, maxLength: 8 });
    fc.assert(fc.property(vocabulary, texts, (words, samples) => {
      // Every byte is a token (ranks 0–255); then each word's bytes and a slice of them (partial characters).
      const seen = new Set<string>();
      const tokens: number[][] = [];
      for (const [w, i, j] of words) {
        const bytes = Array.from(encoder.encode(w));
        const a = i % bytes.length;
        for (const t of [bytes, bytes.slice(a, a + 1 + (j % (bytes.length - a)))]) {
          const key = t.join(',');
          if (t.length > 1 && !seen.has(key)) { seen.add(key); tokens.push(t); }
        }
      }
      const all = [...Array.from({ length: 256 }, (_, b) => [b]), ...tokens];
      // As gpt-tokenizer stores ranks: the text when the bytes decode to it and back, else the bytes.
      const decoder = all.map((t): string | number[] => {
        try {
          const text = strict.decode(Uint8Array.from(t));
          return encoder.encode(text).join(',') === t.join(',') ? text : t;
        } catch { return t; }
      });
      const gptCore = new BytePairEncodingCore({ bytePairRankDecoder: decoder, tokenSplitRegex: O200K_TOKEN_SPLIT_REGEX, specialTokensEncoder: new Map([['<|endoftext|>', all.length]]) });
      const jsData = { pat_str: O200K_TOKEN_SPLIT_REGEX.source, special_tokens: {}, bpe_ranks: `! 0 ${all.map((t) => btoa(String.fromCharCode(...t))).join(' ')}` };
      const js = new Tiktoken(jsData);
      const gptLinear = createBpeCounter(gptTokenizerTable(decoder, O200K_TOKEN_SPLIT_REGEX));
      const jsLinear = createBpeCounter(jsTiktokenTable(jsData));
      for (const s of samples) {
        expect(gptLinear(s), `gpt-tokenizer ${JSON.stringify(s)}`).toBe(gptCore.countNative(s, new Set()));
        expect(jsLinear(s), `js-tiktoken ${JSON.stringify(s)}`).toBe(js.encode(s, [], []).length);
      }
    }), { seed: 7, numRuns: 600 });
  }, 120_000);

  it('counts runs of every length up to 400 characters exactly (merge order on equal ranks)', () => {
    for (const encoding of ENCODINGS) {
      const p = packages[encoding];
      for (const unit of ['z', 'a', 'é', 'ー', '🧠', 'acgt', '=', ' ', '\n']) {
        for (let n = 1; n <= 400; n += n < 64 ? 1 : 7) {
          const s = unit.repeat(n);
          expect(p.gptLinear(s), `${encoding} ${JSON.stringify(unit)}×${n}`).toBe(p.gpt(s));
        }
      }
    }
  }, 120_000);

  it('builds the same ranks as js-tiktoken, and leaves out only what gpt-tokenizer cannot find', () => {
    for (const encoding of ENCODINGS) {
      const js = new Tiktoken(encoding === 'o200k_base' ? jsRanksO200k : jsRanksCl100k) as unknown as { rankMap: Map<string, number> };
      const table = jsTiktokenTable(encoding === 'o200k_base' ? jsRanksO200k : jsRanksCl100k);
      expect(table.ranks.size).toBe(js.rankMap.size);
      for (const [key, rank] of js.rankMap) {
        const binary = String.fromCharCode(...key.split(',').map(Number));
        if (table.ranks.get(binary) !== rank) expect(table.ranks.get(binary), key).toBe(rank);
      }
      // gpt-tokenizer's table: every token but those stored as bytes that are valid UTF-8 (a leading BOM).
      const gpt = gptTokenizerTable(encoding === 'o200k_base' ? gptRanksO200k : gptRanksCl100k, encoding === 'o200k_base' ? O200K_TOKEN_SPLIT_REGEX : CL100K_TOKEN_SPLIT_REGEX);
      const missing = [...table.ranks].filter(([key, rank]) => gpt.ranks.get(key) !== rank);
      expect(missing.length).toBeGreaterThan(0);
      for (const [key] of missing) expect(key.startsWith('\xef\xbb\xbf') && isValidUtf8(key), JSON.stringify(key)).toBe(true);
    }
  });

  it('writes UTF-8 as TextEncoder does', () => {
    const encoder = new TextEncoder();
    fc.assert(fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) })), (s) => {
      const { bytes, loneSurrogate } = utf8Binary(s);
      expect(Array.from(bytes, (c) => c.charCodeAt(0))).toEqual(Array.from(encoder.encode(s)));
      expect(loneSurrogate).toBe(/\p{Cs}/u.test(s));
      expect(isValidUtf8(bytes)).toBe(true);
    }), { seed: 42, numRuns: 300 });
  });
});

describe('linear token counting on large inputs', () => {
  const kana = Array.from({ length: 30_000 }, (_, i) => String.fromCharCode(0x3042 + ((i * 7) % 80))).join('');
  const mixed = mixedText(1 << 20);
  const LARGE: [string, string][] = [["'z' × 100,000", 'z'.repeat(100_000)], ["'é' × 100,000", 'é'.repeat(100_000)], ['30,000 kana', kana], ['1 MiB of mixed text', mixed]];
  // Counted once by gpt-tokenizer 4.0.0 itself, which took 6.5 s, 26 s, 6.0 s and 4.8 s (o200k_base) and 11 s, 119 s,
  // 25 s and 19 s (cl100k_base).
  const KNOWN: Record<EncodingName, Record<string, number>> = {
    o200k_base: { "'z' × 100,000": 50_000, "'é' × 100,000": 100_000, '30,000 kana': 33_375, '1 MiB of mixed text': 424_547 },
    cl100k_base: { "'z' × 100,000": 50_000, "'é' × 100,000": 100_000, '30,000 kana': 42_750, '1 MiB of mixed text': 517_314 },
  };

  for (const encoding of ENCODINGS) {
    it(`finishes on 'z' × 100k, 'é' × 100k, 30k kana and 1 MiB of mixed text (${encoding})`, async () => {
      const gpt = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding, margin: 1 });
      const js = await createTokenizer({ tokenizer: 'js-tiktoken', encoding, margin: 1 });
      gpt.count('x'.repeat(300));
      js.count('x'.repeat(300));
      for (const [label, s] of LARGE) {
        const counts: number[] = [];
        const times: string[] = [];
        for (const t of [gpt, js] as Tokenizer[]) {
          const start = performance.now();
          counts.push(t.count(s));
          times.push(`${t.name} ${(performance.now() - start).toFixed(0)} ms`);
        }
        console.log(`${encoding} ${label}: ${counts[0]} tokens; ${times.join(', ')}`);
        expect(counts[0], label).toBe(counts[1]);
        expect(counts[0], label).toBeGreaterThan(s.length / 40);
        expect(counts[0], label).toBe(KNOWN[encoding][label]);
      }
    }, 120_000);
  }

  it('costs no more than the package on short texts', async () => {
    const r = rng(3);
    const texts = (chars: number) => Array.from({ length: 300 }, () => {
      let s = '';
      while (s.length < chars) s += WORDS[Math.floor(r() * WORDS.length)] + ' ';
      return s.slice(0, chars);
    });
    const tokenizer = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
    const js = await createTokenizer({ tokenizer: 'js-tiktoken', encoding: 'o200k_base', margin: 1 });
    const counters: [string, (s: string) => number][] = [
      ['gpt-tokenizer', packages.o200k_base.gpt], ['createTokenizer(gpt-tokenizer)', (s) => tokenizer.count(s)],
      ['js-tiktoken', packages.o200k_base.js], ['createTokenizer(js-tiktoken)', (s) => js.count(s)],
    ];
    for (const chars of [100, 1000, 4000]) {
      // Each counter gets texts of its own (no cache hits in createTokenizer's count cache), best of two rounds.
      const line = counters.map(([name, f]) => {
        for (const s of texts(chars).slice(0, 30)) f(s);
        let best = Infinity;
        for (let round = 0; round < 2; round++) {
          const all = texts(chars);
          const start = performance.now();
          for (const s of all) f(s);
          best = Math.min(best, (performance.now() - start) * 1000 / all.length);
        }
        return `${name} ${best.toFixed(0)} µs`;
      });
      console.log(`count of a ${chars}-character text: ${line.join(', ')}`);
      for (const s of texts(chars).slice(0, 50)) expect(tokenizer.count(s)).toBe(packages.o200k_base.gpt(s));
    }
  }, 120_000);
});
