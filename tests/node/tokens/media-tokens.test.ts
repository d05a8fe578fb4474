import { describe, expect, it, vi } from 'vitest';
import { probeMedia, sniffMediaType } from '../../../src/common/media-probe.js';
import { mediaTokens, ruleForModel } from '../../../src/tokens/media.js';
import type { MediaFacts } from '../../../src/common/media-probe.js';
import type { MediaPart, MediaRule } from '../../../src/tokens/media.js';

// Real headers, built byte by byte from each format's spec.
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));
const be16 = (n: number) => [n >> 8, n & 0xff];
const be32 = (n: number) => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const le16 = (n: number) => [n & 0xff, n >> 8];
const le24 = (n: number) => [n & 0xff, (n >> 8) & 0xff, n >> 16];
const le32 = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24];
const bytes = (...parts: (number[] | string)[]) => new Uint8Array(parts.flatMap((p) => (typeof p === 'string' ? ascii(p) : p)));

function crc32(data: number[]): number {
  let c = 0xffffffff;
  for (const byte of data) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}
const pngChunk = (type: string, data: number[]) => [...be32(data.length), ...ascii(type), ...data, ...be32(crc32([...ascii(type), ...data]))];
const png = (w: number, h: number) => bytes([0x89], 'PNG\r\n\x1a\n', pngChunk('IHDR', [...be32(w), ...be32(h), 8, 6, 0, 0, 0]), pngChunk('IEND', []));

const APP0 = [0xff, 0xe0, ...be16(16), ...ascii('JFIF\0'), 1, 1, 0, ...be16(1), ...be16(1), 0, 0];
const segment = (marker: number, payload: number[]) => [0xff, marker, ...be16(payload.length + 2), ...payload];
const sof = (marker: number, w: number, h: number) => segment(marker, [8, ...be16(h), ...be16(w), 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
const jpeg = (...segments: number[][]) => bytes([0xff, 0xd8], APP0, ...segments, [0xff, 0xd9]);

const gif = (w: number, h: number) => bytes('GIF89a', le16(w), le16(h), [0xf7, 0, 0]);
const riff = (form: string, chunks: number[]) => bytes('RIFF', le32(4 + chunks.length), form, chunks);
const webpVp8 = (w: number, h: number) => riff('WEBP', [...ascii('VP8 '), ...le32(10), 0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a, ...le16(w), ...le16(h)]);
const webpVp8l = (w: number, h: number) => riff('WEBP', [...ascii('VP8L'), ...le32(5), 0x2f, ...le32((w - 1) | ((h - 1) << 14) | (1 << 28))]);
const webpVp8x = (w: number, h: number) => riff('WEBP', [...ascii('VP8X'), ...le32(10), 0x10, 0, 0, 0, ...le24(w - 1), ...le24(h - 1)]);
const bmp = (w: number, h: number) => bytes('BM', le32(54), le32(0), le32(54), le32(40), le32(w), le32(h), le16(1), le16(24), le32(0), le32(0), le32(2835), le32(2835), le32(0), le32(0));

const PDF = `%PDF-1.4
1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj
2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj
3 0 obj << /Type /Page /Parent 2 0 R >> endobj
4 0 obj <</Type/Page/Parent 2 0 R>> endobj
5 0 obj << /Type
/Page
>> endobj
trailer << /Root 1 0 R >>
%%EOF
`;
const pdf = (text = PDF) => new TextEncoder().encode(text);

const fmt = (byteRate: number) => [...ascii('fmt '), ...le32(16), ...le16(1), ...le16(1), ...le32(byteRate / 2), ...le32(byteRate), ...le16(2), ...le16(16)];
const wav = (byteRate: number, dataSize: number, extra: number[] = []) => riff('WAVE', [...fmt(byteRate), ...extra, ...ascii('data'), ...le32(dataSize)]);

describe('probeMedia reads what the bytes say', () => {
  const cases: [string, Uint8Array, string, MediaFacts][] = [
    ['PNG', png(640, 480), 'image/png', { width: 640, height: 480 }],
    ['JPEG, SOF0 after APP0', jpeg(sof(0xc0, 1024, 768)), 'image/jpeg', { width: 1024, height: 768 }],
    ['GIF89a', gif(300, 200), 'image/gif', { width: 300, height: 200 }],
    ['WebP VP8', webpVp8(800, 600), 'image/webp', { width: 800, height: 600 }],
    ['WebP VP8L', webpVp8l(5000, 16384), 'image/webp', { width: 5000, height: 16384 }],
    ['WebP VP8X', webpVp8x(20000, 3), 'image/webp', { width: 20000, height: 3 }],
    ['BMP', bmp(123, 45), 'image/bmp', { width: 123, height: 45 }],
    ['PDF', pdf(), 'application/pdf', { pages: 3 }],
    ['WAV', wav(32000, 64000), 'audio/wav', { durationMs: 2000 }],
  ];

  it.each(cases)('%s', (_name, data, type, facts) => {
    expect(probeMedia(data, type)).toEqual(facts);
  });

  it.each(cases)('%s: every prefix gives {} or the right facts, never throws', (_name, data, type, facts) => {
    let full = 0;
    for (let n = 0; n <= data.length; n++) {
      const got = probeMedia(data.subarray(0, n), type);
      if (Object.keys(got).length === 0) continue;
      expect(got, `prefix of ${n} bytes`).toEqual(facts);
      full++;
    }
    expect(full).toBeGreaterThan(0);
  });

  it('reads every JPEG start-of-frame marker, skipping DHT, JPG and DAC (C4, C8, CC) and other segments', () => {
    for (let m = 0xc0; m <= 0xcf; m++) {
      if (m === 0xc4 || m === 0xc8 || m === 0xcc) continue;
      expect(probeMedia(jpeg(sof(m, 17, 33)), 'image/jpeg'), m.toString(16)).toEqual({ width: 17, height: 33 });
    }
    // DHT, JPG and DAC segments with a frame-like payload come first; then an EXIF APP1, fill bytes, and SOF2.
    const exif = segment(0xe1, [...ascii('Exif\0\0'), ...Array<number>(20).fill(0)]);
    const data = jpeg(sof(0xc4, 1, 1), sof(0xc8, 2, 2), sof(0xcc, 3, 3), exif, [0xff, 0xff], sof(0xc2, 4032, 3024));
    expect(probeMedia(data, 'image/jpeg')).toEqual({ width: 4032, height: 3024 });
  });

  it('gives {} for a JPEG whose scan starts before any frame header, or whose height is 0 (set later by DNL)', () => {
    expect(probeMedia(jpeg(segment(0xda, [1, 1, 0, 0, 0x3f, 0])), 'image/jpeg')).toEqual({});
    expect(probeMedia(jpeg(sof(0xc0, 100, 0)), 'image/jpeg')).toEqual({});
  });

  it('reads a top-down BMP (negative height) and an OS/2 core-header BMP', () => {
    expect(probeMedia(bmp(10, -20), 'image/bmp')).toEqual({ width: 10, height: 20 });
    expect(probeMedia(bytes('BM', le32(26), le32(0), le32(26), le32(12), le16(640), le16(400), le16(1), le16(24)), 'image/bmp')).toEqual({ width: 640, height: 400 });
  });

  it('counts /Type /Page objects only: not /Pages, not a longer name, and not in a truncated PDF', () => {
    expect(probeMedia(pdf(PDF.replace('/Type /Catalog', '/Type /PageLabel')), 'application/pdf')).toEqual({ pages: 3 });
    expect(probeMedia(pdf(PDF.replace(/\/Type \/Page \//, '/Type /Page[/')), 'application/pdf')).toEqual({ pages: 3 });
    expect(probeMedia(pdf(PDF.replace('%%EOF', '')), 'application/pdf')).toEqual({});
    expect(probeMedia(pdf('%PDF-1.7\n1 0 obj << /Type /Pages /Count 9 >> endobj\n%%EOF'), 'application/pdf')).toEqual({});
    // Leading junk hides the magic number: the declared type picks the probe.
    expect(probeMedia(pdf(`garbage\n${PDF}`), 'application/pdf')).toEqual({ pages: 3 });
  });

  it('counts a PDF\'s pages where TextDecoder knows only UTF-8 (as some runtimes\' does)', () => {
    const Native = TextDecoder;
    vi.stubGlobal('TextDecoder', class extends Native {
      constructor(label?: string) {
        if (label !== undefined && label !== 'utf-8') throw new RangeError(`unsupported: ${label}`);
        super(label);
      }
    });
    try {
      const big = pdf(`${PDF.slice(0, -7)}${'%'.repeat(20_000)}\n/Type /Page\n%%EOF\n`);
      expect(probeMedia(big, 'application/pdf')).toEqual({ pages: 4 });
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('walks a WAV\'s chunks past others (odd sizes padded) and reads a streamed one to the end of the bytes', () => {
    const list = [...ascii('LIST'), ...le32(3), 1, 2, 3, 0];
    expect(probeMedia(wav(32000, 64000, list), 'audio/x-wav')).toEqual({ durationMs: 2000 });
    const streamed = bytes([...wav(8000, 0xffffffff)], Array<number>(4000).fill(0));
    expect(probeMedia(streamed, 'audio/wav')).toEqual({ durationMs: 500 });
    expect(probeMedia(wav(0, 64000), 'audio/wav')).toEqual({});
  });

  it('trusts the magic number over the declared type, and gives {} for what it cannot read', () => {
    expect(probeMedia(png(2, 3), 'image/jpeg')).toEqual({ width: 2, height: 3 });
    expect(probeMedia(bytes('hello world'), 'image/png')).toEqual({});
    expect(probeMedia(bytes('ID3'), 'audio/mpeg')).toEqual({});
    expect(probeMedia(new Uint8Array(0), 'text/plain')).toEqual({});
  });

  it('never throws on random bytes behind any magic number, and stops on a zero-length JPEG segment', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
    const heads = [png(1, 1), jpeg(), gif(1, 1), webpVp8(1, 1), bmp(1, 1), wav(2, 2), pdf()].map((h) => h.subarray(0, 14));
    for (let i = 0; i < 3000; i++) {
      const head = heads[i % heads.length]!;
      const data = bytes([...head], Array.from({ length: random() }, random));
      for (const type of ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/bmp', 'application/pdf', 'audio/wav']) {
        const facts = probeMedia(data, type);
        for (const v of Object.values(facts)) expect(Number.isFinite(v) && v >= 0).toBe(true);
      }
    }
    expect(probeMedia(bytes([0xff, 0xd8], [0xff, 0xe1, 0, 0], [0xff, 0xe1, 0, 0]), 'image/jpeg')).toEqual({});
  });
});

describe('sniffMediaType', () => {
  it.each([
    [png(1, 1), 'image/png'],
    [jpeg(), 'image/jpeg'],
    [bytes('GIF87a', le16(1), le16(1)), 'image/gif'],
    [webpVp8l(1, 1), 'image/webp'],
    [bmp(1, 1), 'image/bmp'],
    [pdf(), 'application/pdf'],
    [wav(32000, 0), 'audio/wav'],
    [bytes('ID3', [4, 0, 0]), 'audio/mpeg'],
    [bytes([0xff, 0xfb, 0x90, 0x64]), 'audio/mpeg'], // MPEG-1 layer III, 128 kbps, 44.1 kHz
    [bytes('OggS', [0, 2]), 'audio/ogg'],
    [bytes('fLaC', [0, 0, 0, 34]), 'audio/flac'],
  ])('%#: %s', (data, type) => {
    expect(sniffMediaType(data)).toBe(type);
  });

  it('says null for text, for too few bytes, for AAC ADTS and for "BM" without a DIB header', () => {
    expect(sniffMediaType(bytes('hello'))).toBeNull();
    expect(sniffMediaType(new Uint8Array(0))).toBeNull();
    expect(sniffMediaType(bytes([0x89], 'PN'))).toBeNull();
    expect(sniffMediaType(bytes([0xff, 0xf1, 0x50, 0x80]))).toBeNull();
    expect(sniffMediaType(bytes('BMW 320i, one owner, full service history'))).toBeNull();
    expect(sniffMediaType(bytes('RIFF', le32(4), 'AVI '))).toBeNull();
  });
});

describe('mediaTokens', () => {
  const chars = (text: string) => text.length;
  const image = (rule: MediaRule, width?: number, height?: number, detail?: MediaPart['detail']) =>
    mediaTokens({ kind: 'image', width, height, detail }, rule, chars);

  it('counts OpenAI images by 512 px tiles after scaling to 2048 and a 768 px short side', () => {
    expect(image('openai', 1024, 1024)).toMatchObject({ tokens: 765, exact: true });
    expect(image('openai', 2048, 4096)).toMatchObject({ tokens: 1105, exact: true });
    expect(image('openai', 4096, 8192)).toMatchObject({ tokens: 1105, exact: true });
    expect(image('openai', 512, 512).tokens).toBe(255);
    expect(image('openai', 800, 600, 'high').tokens).toBe(765); // no scaling: 2×2 tiles
    expect(image('openai', 100, 100).tokens).toBe(255); // never scaled up
    expect(image('openai', 513, 512).tokens).toBe(425);
    expect(image('openai', 1920, 1080).tokens).toBe(1105); // 1365×768: 3×2
    expect(image('openai', 1536, 768).tokens).toBe(1105); // exactly on tile edges: 3×2, not 4×2
    expect(image('openai', 3072, 6144).tokens).toBe(1105); // scaled to 1024×2048, then 768×1536: 2×3
    expect(image('openai', 1024, 1024).rule).toBe('OpenAI image tiles: 2×2 tiles of 512 px (768×768 px), 85 + 170 × 4');
  });

  it('counts OpenAI low detail as 85, and an unknown size as the most high detail costs', () => {
    expect(image('openai', 4096, 8192, 'low')).toMatchObject({ tokens: 85, exact: true });
    expect(image('openai', undefined, undefined, 'low')).toMatchObject({ tokens: 85, exact: true });
    expect(image('openai')).toMatchObject({ tokens: 1445, exact: false });
    expect(image('openai', 0, 100)).toMatchObject({ tokens: 1445, exact: false });
    expect(image('openai', Number.NaN, 100, 'auto')).toMatchObject({ tokens: 1445, exact: false });
  });

  it('counts Anthropic images as width × height / 750 after scaling to a 1568 px long edge, at most 1,600', () => {
    expect(image('anthropic', 1000, 1000)).toMatchObject({ tokens: 1334, exact: true });
    expect(image('anthropic', 1568, 1568)).toMatchObject({ tokens: 1600, exact: true });
    expect(image('anthropic', 200, 200).tokens).toBe(54);
    expect(image('anthropic', 1092, 1092).tokens).toBe(1590); // the docs' table: ≈ 1,590
    expect(image('anthropic', 1000, 500).tokens).toBe(667);
    expect(image('anthropic', 3000, 2000).tokens).toBe(1600);
    expect(image('anthropic', 4000, 100).tokens).toBe(82); // 1568 × 39.2 / 750 = 81.95
    expect(image('anthropic', 1, 1).tokens).toBe(1);
    expect(image('anthropic', 1000, 1000, 'low').tokens).toBe(1334); // detail is OpenAI's only
    expect(image('anthropic')).toMatchObject({ tokens: 1600, exact: false });
  });

  it('estimates PDFs at 3,000 tokens a page plus their text, whatever the rule', () => {
    for (const rule of ['openai', 'anthropic'] as const) {
      const pdfPart = (p: Partial<MediaPart>) => mediaTokens({ kind: 'file', mediaType: 'application/pdf', ...p }, rule, chars);
      expect(pdfPart({ pages: 3 })).toMatchObject({ tokens: 9000, exact: false });
      expect(pdfPart({ pages: 3, caption: 'twelve chars' }).tokens).toBe(9012);
      expect(pdfPart({ size: 250_000 }).tokens).toBe(9000); // ~100 KB a page: 3 pages
      expect(pdfPart({ size: 10 }).tokens).toBe(3000);
      expect(pdfPart({}).tokens).toBe(3000);
    }
    expect(mediaTokens({ kind: 'file', mediaType: 'Application/PDF; name=x.pdf', pages: 2 }, 'openai', chars).tokens).toBe(6000);
  });

  it('counts a text file by its caption, and estimates other files at 4 bytes a token, 1,000 when nothing is known', () => {
    const file = (p: Partial<MediaPart>) => mediaTokens({ kind: 'file', ...p }, 'openai', chars);
    expect(file({ mediaType: 'text/csv', caption: 'a,b\n1,2', size: 1e6 })).toMatchObject({ tokens: 7, exact: false });
    expect(file({ mediaType: 'text/plain', caption: '' }).tokens).toBe(1);
    expect(file({ mediaType: 'text/plain', size: 4001 }).tokens).toBe(1001);
    expect(file({ mediaType: 'application/zip', size: 0 }).tokens).toBe(1);
    expect(file({ mediaType: 'application/zip' })).toMatchObject({ tokens: 1000, exact: false });
    expect(file({})).toMatchObject({ tokens: 1000, exact: false });
  });

  it('estimates audio at 10 tokens a second, from the size at 16 KB a second, or a minute', () => {
    const sound = (p: Partial<MediaPart>) => mediaTokens({ kind: 'audio', ...p }, 'anthropic', chars);
    expect(sound({ durationMs: 2000 })).toMatchObject({ tokens: 20, exact: false });
    expect(sound({ durationMs: 1234 }).tokens).toBe(13);
    expect(sound({ durationMs: 0 }).tokens).toBe(1);
    expect(sound({ size: 48_000 }).tokens).toBe(30);
    expect(sound({ size: 100 }).tokens).toBe(10);
    expect(sound({})).toMatchObject({ tokens: 600, exact: false });
    expect(mediaTokens({ kind: 'audio', durationMs: 2000 }, 'openai', chars).tokens).toBe(20);
  });

  it('counts a file part with an image or audio type by that rule, and adds a caption to images and audio', () => {
    expect(mediaTokens({ kind: 'file', mediaType: 'image/png', width: 1024, height: 1024 }, 'openai', chars)).toMatchObject({ tokens: 765, exact: true });
    expect(mediaTokens({ kind: 'file', mediaType: 'audio/wav', durationMs: 2000 }, 'openai', chars).tokens).toBe(20);
    expect(mediaTokens({ kind: 'image', width: 200, height: 200, caption: 'a cat' }, 'anthropic', chars).tokens).toBe(59);
    expect(mediaTokens({ kind: 'audio', durationMs: 1000, caption: 'hello' }, 'openai', chars).tokens).toBe(15);
  });

  it('never counts a non-text part as 0 tokens', () => {
    const parts: MediaPart[] = [
      { kind: 'image', width: 1, height: 1 }, { kind: 'image' }, { kind: 'file', size: 0 }, { kind: 'file', mediaType: 'text/plain', caption: '' },
      { kind: 'file', mediaType: 'application/pdf', size: 0, pages: 0 }, { kind: 'audio', durationMs: 0 }, { kind: 'audio', size: 0 },
    ];
    for (const part of parts) for (const rule of ['openai', 'anthropic'] as const) expect(mediaTokens(part, rule, () => 0).tokens).toBeGreaterThan(0);
  });
});

describe('ruleForModel', () => {
  it.each([
    ['claude-sonnet-4-5', 'anthropic'], ['Claude-3-Opus', 'anthropic'], ['anthropic/claude-3.5-sonnet', 'anthropic'],
    ['openrouter/anthropic/claude-opus-4', 'anthropic'], ['us.anthropic.claude-3-7-sonnet-20250219-v1:0', 'anthropic'],
    ['gpt-4o', 'openai'], ['gemini-2.5-pro', 'openai'], ['', 'openai'], [undefined, 'openai'],
  ] as const)('%s → %s', (model, rule) => {
    expect(ruleForModel(model)).toBe(rule);
  });
});
