/**
 * Facts an attachment's bytes state about themselves (image size, a PDF's pages, a WAV's duration) and the media type
 * its magic number names. No dependencies and no Node APIs: it runs in browsers, Node and workerd alike. Only
 * headers are read (a PDF is the exception: its page objects are counted), and every read is checked against the
 * end of the bytes, so a truncated or hostile file gives `{}`, never an exception or a wrong number.
 */

/** What the bytes of an attachment say of it; a field is absent when the bytes do not say (or cannot be read). */
export interface MediaFacts { width?: number; height?: number; pages?: number; durationMs?: number }

/** Thrown by a read past the end of the bytes; `probeMedia` turns it into `{}`. */
class Truncated extends Error {}

function u8(b: Uint8Array, i: number): number {
  const v = b[i];
  if (v === undefined) throw new Truncated();
  return v;
}
const u16be = (b: Uint8Array, i: number) => u8(b, i) * 0x100 + u8(b, i + 1);
const u16le = (b: Uint8Array, i: number) => u8(b, i) + u8(b, i + 1) * 0x100;
const u24le = (b: Uint8Array, i: number) => u16le(b, i) + u8(b, i + 2) * 0x10000;
const u32be = (b: Uint8Array, i: number) => u16be(b, i) * 0x10000 + u16be(b, i + 2);
const u32le = (b: Uint8Array, i: number) => u16le(b, i) + u16le(b, i + 2) * 0x10000;
const i32le = (b: Uint8Array, i: number) => u32le(b, i) | 0;

/** Whether `text` (ASCII) stands at `i`; false, not a throw, when the bytes end first. */
function hasAscii(b: Uint8Array, i: number, text: string): boolean {
  if (i + text.length > b.length) return false;
  for (let k = 0; k < text.length; k++) if (b[i + k] !== text.charCodeAt(k)) return false;
  return true;
}

function dims(width: number, height: number): MediaFacts {
  return width > 0 && height > 0 ? { width, height } : {};
}

function png(b: Uint8Array): MediaFacts {
  // IHDR comes first (PNG §5.6), but Apple's CgBI variant puts a chunk before it: walk the chunks up to the pixels.
  for (let pos = 8; pos + 8 <= b.length; pos += 12 + u32be(b, pos)) {
    if (hasAscii(b, pos + 4, 'IHDR')) return dims(u32be(b, pos + 8), u32be(b, pos + 12));
    if (hasAscii(b, pos + 4, 'IDAT')) break;
  }
  return {};
}

/** C0..CF are the start-of-frame markers except these three: DHT, JPG (reserved) and DAC. */
const NOT_SOF = new Set([0xc4, 0xc8, 0xcc]);

/**
 * A JPEG's stored size, from its first SOF segment. EXIF orientation is not applied: a rotated photo reports its
 * stored width and height, and the token rules only use the area and the short and long sides, which a quarter
 * turn keeps (tiles swap rows for columns: same count).
 */
function jpeg(b: Uint8Array): MediaFacts {
  let pos = 2;
  for (;;) {
    if (u8(b, pos) !== 0xff) return {};
    let marker = u8(b, pos + 1);
    while (marker === 0xff) marker = u8(b, ++pos + 1); // fill bytes before a marker
    if (marker === 0x01 || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) { pos += 2; continue; } // no length
    if (marker === 0xd9 || marker === 0xda) return {}; // end of image, or scan data before any frame header
    if (marker >= 0xc0 && marker <= 0xcf && !NOT_SOF.has(marker)) return dims(u16be(b, pos + 7), u16be(b, pos + 5));
    pos += 2 + u16be(b, pos + 2); // the length counts itself, so every step moves on
  }
}

const gif = (b: Uint8Array) => dims(u16le(b, 6), u16le(b, 8));

/** WebP's first chunk (RFC 9649): lossy VP8 (a key frame's header), lossless VP8L, or extended VP8X (the canvas). */
function webp(b: Uint8Array): MediaFacts {
  if (hasAscii(b, 12, 'VP8 ')) {
    if (u8(b, 23) !== 0x9d || u8(b, 24) !== 0x01 || u8(b, 25) !== 0x2a) return {};
    return dims(u16le(b, 26) & 0x3fff, u16le(b, 28) & 0x3fff); // the top two bits are an upscaling hint
  }
  if (hasAscii(b, 12, 'VP8L')) {
    if (u8(b, 20) !== 0x2f) return {};
    const bits = u32le(b, 21);
    return dims((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (hasAscii(b, 12, 'VP8X')) return dims(u24le(b, 24) + 1, u24le(b, 27) + 1);
  return {};
}

function bmp(b: Uint8Array): MediaFacts {
  // OS/2's 12-byte core header has 16-bit sizes; the later ones signed 32-bit, a negative height for top-down rows.
  if (u32le(b, 14) === 12) return dims(u16le(b, 18), u16le(b, 20));
  return dims(Math.abs(i32le(b, 18)), Math.abs(i32le(b, 22)));
}

/** `/Type /Page` ending where the name ends (whitespace, a delimiter or the end), so `/Type /Pages` is not one. */
const PAGE_OBJECT = /\/Type\s*\/Page(?![^\s()<>[\]{}/%])/g;

function latin1(b: Uint8Array): string {
  try {
    return new TextDecoder('latin1').decode(b);
  } catch {
    // A runtime whose TextDecoder knows only UTF-8: byte to character by hand, in slices the call stack takes.
    let s = '';
    for (let i = 0; i < b.length; i += 0x2000) s += String.fromCharCode(...b.subarray(i, i + 0x2000));
    return s;
  }
}

/**
 * A PDF's pages, counted as its page objects. Pages kept inside compressed object streams (PDF 1.5+) are not seen,
 * so none found gives `{}` (unknown), not 0; an incrementally updated file may count a rewritten page twice (an
 * upper bound). A file without `%%EOF` near its end is truncated: its count would be short, so `{}`.
 */
function pdf(b: Uint8Array): MediaFacts {
  const text = latin1(b);
  if (!text.slice(-1024).includes('%%EOF')) return {};
  const pages = text.match(PAGE_OBJECT)?.length ?? 0;
  return pages > 0 ? { pages } : {};
}

/** A RIFF WAVE's duration: the data chunk's size over the fmt chunk's byte rate. */
function wav(b: Uint8Array): MediaFacts {
  let byteRate: number | undefined;
  let dataSize: number | undefined;
  for (let pos = 12; pos + 8 <= b.length && (byteRate === undefined || dataSize === undefined);) {
    const size = u32le(b, pos + 4);
    if (hasAscii(b, pos, 'fmt ')) byteRate = u32le(b, pos + 16);
    // 0xFFFFFFFF: a stream written before its length was known; the data runs to the end.
    if (hasAscii(b, pos, 'data')) dataSize = size === 0xffffffff ? b.length - pos - 8 : size;
    pos += 8 + size + (size & 1); // chunks are padded to an even length
  }
  if (!byteRate || dataSize === undefined) return {};
  return { durationMs: Math.round((dataSize / byteRate) * 1000) };
}

const PROBES: Record<string, (b: Uint8Array) => MediaFacts> = {
  'image/png': png, 'image/jpeg': jpeg, 'image/gif': gif, 'image/webp': webp, 'image/bmp': bmp,
  'application/pdf': pdf, 'audio/wav': wav,
};

/** Other names the same formats go by. */
const ALIASES: Record<string, string> = {
  'image/jpg': 'image/jpeg', 'image/pjpeg': 'image/jpeg', 'image/x-ms-bmp': 'image/bmp', 'image/x-bmp': 'image/bmp',
  'application/x-pdf': 'application/pdf', 'audio/x-wav': 'audio/wav', 'audio/wave': 'audio/wav', 'audio/vnd.wave': 'audio/wav',
};

/** A media type without its parameters, lower case, aliases resolved. */
function baseType(mediaType: string): string {
  const type = (mediaType.split(';')[0] ?? '').trim().toLowerCase();
  return ALIASES[type] ?? type;
}

/**
 * What the bytes say of themselves: image dimensions (PNG, JPEG, GIF, WebP, BMP), a PDF's page count, a WAV's
 * duration. The bytes' magic number picks the format, `mediaType` only where the bytes have none known (a
 * mislabelled PNG is still read as a PNG). Unknown formats, truncated or malformed bytes → `{}`; never throws.
 */
export function probeMedia(bytes: Uint8Array, mediaType: string): MediaFacts {
  const probe = PROBES[sniffMediaType(bytes) ?? baseType(mediaType)];
  if (!probe) return {};
  try {
    return probe(bytes);
  } catch {
    return {}; // a read past the end (Truncated); nothing else throws, and a probe must not
  }
}

/** An MPEG audio frame header: 11 sync bits, a version and layer that are not reserved, a usable bitrate and rate. */
function isMpegFrame(b: Uint8Array): boolean {
  const [b0, b1, b2] = [b[0], b[1], b[2]];
  if (b0 !== 0xff || b1 === undefined || b2 === undefined || (b1 & 0xe0) !== 0xe0) return false;
  // Layer 00 is reserved (it is AAC's ADTS, not MPEG audio); bitrate 1111 and sample rate 11 are invalid.
  return ((b1 >> 3) & 3) !== 1 && ((b1 >> 1) & 3) !== 0 && b2 >> 4 !== 0xf && ((b2 >> 2) & 3) !== 3;
}

/** DIB header sizes a BMP can carry: "BM" alone is too common a start of text to trust. */
const BMP_HEADERS = new Set([12, 40, 52, 56, 64, 108, 124]);

/**
 * The media type the bytes' magic number says: image/png, image/jpeg, image/gif, image/webp, image/bmp,
 * application/pdf, audio/wav, audio/mpeg (an ID3 tag or a frame header), audio/ogg, audio/flac; null for anything
 * else (or too few bytes to tell).
 */
export function sniffMediaType(bytes: Uint8Array): string | null {
  const b = bytes;
  if (hasAscii(b, 0, '\x89PNG\r\n\x1a\n')) return 'image/png';
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (hasAscii(b, 0, 'GIF87a') || hasAscii(b, 0, 'GIF89a')) return 'image/gif';
  if (hasAscii(b, 0, 'RIFF') && hasAscii(b, 8, 'WEBP')) return 'image/webp';
  if (hasAscii(b, 0, 'RIFF') && hasAscii(b, 8, 'WAVE')) return 'audio/wav';
  if (hasAscii(b, 0, 'BM') && b.length >= 18 && BMP_HEADERS.has(u32le(b, 14))) return 'image/bmp';
  if (hasAscii(b, 0, '%PDF-')) return 'application/pdf';
  if (hasAscii(b, 0, 'ID3') || isMpegFrame(b)) return 'audio/mpeg';
  if (hasAscii(b, 0, 'OggS')) return 'audio/ogg';
  if (hasAscii(b, 0, 'fLaC')) return 'audio/flac';
  return null;
}
