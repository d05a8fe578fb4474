/**
 * Tokens of a message's non-text parts (images, files, audio) by each provider's documented rule. Images follow the
 * providers' published formulas, so a part with its size known counts exactly; files and audio have no published
 * rule that a client can apply, so their counts are estimates sized to the upper end of what the providers state.
 */

import type { MediaRule } from '../contracts/types.js';

/** Whose rule counts a part: OpenAI's (also the fallback for providers that publish none) or Anthropic's. */
export type { MediaRule };

/** A non-text part, with whatever facts the caller (or `probeMedia`) knows of it. */
export interface MediaPart {
  kind: 'image' | 'file' | 'audio';
  mediaType?: string;
  detail?: 'auto' | 'low' | 'high';
  width?: number;
  height?: number;
  pages?: number;
  durationMs?: number;
  /** Bytes. */
  size?: number;
  /**
   * Text the caller supplied for it (a PDF's extracted text, a transcript); counted with countText when given: added
   * to the part's own tokens, except for a text/* file, whose caption is its text and replaces the size estimate.
   */
  caption?: string;
}

export interface MediaCount {
  tokens: number;
  /** false: an estimate (the rule needs facts the part does not carry) */
  exact: boolean;
  /** the rule used, in words, e.g. "OpenAI image tiles: 2×2 tiles of 512 px, 85 + 170 × 4" */
  rule: string;
}

/** A positive finite number, or undefined (an absent, zero, negative or NaN fact is an unknown one). */
const known = (n: number | undefined): number | undefined => (n !== undefined && Number.isFinite(n) && n > 0 ? n : undefined);
/** A finite number ≥ 0 (a size or a duration may be 0), or undefined. */
const nonNegative = (n: number | undefined): number | undefined => (n !== undefined && Number.isFinite(n) && n >= 0 ? n : undefined);
const thousands = (n: number) => n.toLocaleString('en-US');

/**
 * OpenAI's tile rule for GPT-4o, GPT-4.1 and GPT-5 (OpenAI's vision guide, "Calculating costs"): low detail costs
 * 85; otherwise the image is scaled to fit 2048×2048, then so its shortest side is at most 768 px (down only), and
 * costs 85 + 170 per 512 px tile. (gpt-4o-mini bills more tokens per tile, and the patch-based models — gpt-4.1-mini,
 * o4-mini — count differently; this rule is the one pagewise applies to every OpenAI model.)
 */
function openaiImage(part: MediaPart): MediaCount {
  if (part.detail === 'low') return { tokens: 85, exact: true, rule: 'OpenAI image, low detail: 85' };
  const w = known(part.width);
  const h = known(part.height);
  // Unknown size: the most a high-detail image can cost, a 768×2048 one (2×4 tiles).
  if (!w || !h) return { tokens: 85 + 170 * 8, exact: false, rule: 'OpenAI image of unknown size: the most high detail costs, 2×4 tiles of 512 px, 85 + 170 × 8' };
  // The overall scale min(1, 2048 / long, 768 / short) as a fraction n / d: a side landing on a multiple of 512
  // divides exactly, where a floating-point scale could land a hair above it and cost a tile more.
  let n = 1;
  let d = 1;
  const long = Math.max(w, h);
  const short = Math.min(w, h);
  if (long > 2048) { n = 2048; d = long; }
  if (short * n > 768 * d) { n = 768; d = short; }
  const across = Math.ceil((w * n) / (d * 512));
  const down = Math.ceil((h * n) / (d * 512));
  const size = `${Math.round((w * n) / d)}×${Math.round((h * n) / d)} px`;
  return { tokens: 85 + 170 * across * down, exact: true, rule: `OpenAI image tiles: ${across}×${down} tiles of 512 px (${size}), 85 + 170 × ${across * down}` };
}

/**
 * Anthropic's rule (Claude's vision docs, "Calculate image costs"): tokens = width × height / 750, after an image
 * whose long edge is over 1568 px is scaled down to it; an image that would still cost more than ~1,600 tokens is
 * scaled down (aspect kept) until it costs 1,600.
 */
function anthropicImage(part: MediaPart): MediaCount {
  const w = known(part.width);
  const h = known(part.height);
  if (!w || !h) return { tokens: 1600, exact: false, rule: 'Anthropic image of unknown size: the most an image costs, 1,600' };
  const long = Math.max(w, h);
  // The area scaled by (1568 / long)², as one division so that exact results stay exact.
  const area = long > 1568 ? (w * h * 1568 * 1568) / (long * long) : w * h;
  const raw = Math.max(1, Math.ceil(area / 750));
  const scaled = long > 1568 ? ` (scaled to ${Math.round((w * 1568) / long)}×${Math.round((h * 1568) / long)} px)` : '';
  const rule = `Anthropic image: ${w}×${h} px${scaled} / 750`;
  return raw > 1600
    ? { tokens: 1600, exact: true, rule: `${rule}, scaled down to 1,600` }
    : { tokens: raw, exact: true, rule: `${rule} = ${raw}` };
}

/** Anthropic's PDF support sends each page as its text plus an image of it: "typically 1,500–3,000 tokens per page". */
const PDF_PAGE_TOKENS = 3000;
/** Bytes per page assumed when a PDF's page count is unknown (scanned pages run larger, text pages smaller). */
const PDF_PAGE_BYTES = 100_000;
/** Bytes a token when a file is sent as text (~4 in English prose). */
const BYTES_PER_TOKEN = 4;

function pdfFile(part: MediaPart, countText: (text: string) => number): MediaCount {
  const given = known(part.pages);
  const size = nonNegative(part.size);
  const pages = given !== undefined ? Math.ceil(given) : size !== undefined ? Math.max(1, Math.ceil(size / PDF_PAGE_BYTES)) : 1;
  const from = given !== undefined ? '' : size !== undefined ? ` (from ${thousands(size)} bytes at ~100 KB a page)` : ' (page count unknown)';
  return {
    tokens: pages * PDF_PAGE_TOKENS + countText(part.caption ?? ''),
    exact: false,
    rule: `PDF: ${pages} page${pages === 1 ? '' : 's'}${from} × 3,000 tokens (upper end of Anthropic's 1,500–3,000 a page)${part.caption ? ' + its text' : ''}`,
  };
}

/** Files other than PDFs: a text file's caption is its text; anything else is estimated as its bytes sent as text. */
function otherFile(part: MediaPart, type: string, countText: (text: string) => number): MediaCount {
  if (type.startsWith('text/') && part.caption !== undefined) return { tokens: Math.max(1, countText(part.caption)), exact: false, rule: 'Text file: its text, counted' };
  const caption = part.caption ? countText(part.caption) : 0;
  const plus = caption ? ' + its caption' : '';
  const size = nonNegative(part.size);
  if (size === undefined) return { tokens: 1000 + caption, exact: false, rule: `File of unknown size: 1,000${plus}` };
  return { tokens: Math.max(1, Math.ceil(size / BYTES_PER_TOKEN)) + caption, exact: false, rule: `File: ${thousands(size)} bytes / 4 as text${plus}` };
}

/**
 * OpenAI's gpt-4o audio input: ~10 tokens a second (its audio models count user audio at about one token per
 * 100 ms). Claude takes no audio input; the same estimate stands in (such a caller sends a transcript instead).
 * Unknown duration: from the size at 16 KB a second (128 kbps MP3), at least a second; nothing known: a minute.
 */
function audio(part: MediaPart): MediaCount {
  const ms = nonNegative(part.durationMs);
  const size = known(part.size);
  if (ms !== undefined) return { tokens: Math.max(1, Math.ceil(ms / 100)), exact: false, rule: `Audio: ${ms / 1000} s × 10 tokens a second` };
  if (size !== undefined) {
    const seconds = Math.max(1, size / 16_000);
    return { tokens: Math.ceil(seconds * 10), exact: false, rule: `Audio: ~${seconds.toFixed(1)} s (from ${thousands(size)} bytes at 16 KB a second) × 10 tokens a second` };
  }
  return { tokens: 600, exact: false, rule: 'Audio of unknown length: a minute, 600' };
}

/** A media type without parameters, lower case ('' when absent). */
const baseType = (mediaType: string | undefined) => (mediaType?.split(';')[0] ?? '').trim().toLowerCase();

/**
 * Tokens a non-text part costs under `rule`, never 0. Images count exactly when their width and height are known
 * (an upper bound otherwise); PDFs, other files and audio are always estimates (`exact: false`). A `file` part whose
 * media type is an image or audio type counts as that (the AI SDK sends images as file parts). `countText` counts
 * the part's caption.
 */
export function mediaTokens(part: MediaPart, rule: MediaRule, countText: (text: string) => number): MediaCount {
  const type = baseType(part.mediaType);
  const kind = part.kind === 'file' && type.startsWith('image/') ? 'image' : part.kind === 'file' && type.startsWith('audio/') ? 'audio' : part.kind;
  if (kind === 'file') {
    return type === 'application/pdf' || type === 'application/x-pdf' ? pdfFile(part, countText) : otherFile(part, type, countText);
  }
  const own = kind === 'image' ? (rule === 'anthropic' ? anthropicImage(part) : openaiImage(part)) : audio(part);
  if (!part.caption) return own;
  return { ...own, tokens: own.tokens + countText(part.caption), rule: `${own.rule} + its caption` };
}

/** The rule a model name implies: a Claude model (any case, behind any 'provider/' or Bedrock 'anthropic.' prefix) → 'anthropic'; anything else, unknown included → 'openai'. */
export function ruleForModel(model: string | undefined): MediaRule {
  const name = (model ?? '').trim().toLowerCase();
  return name.startsWith('anthropic/') || /(^|[/.:])claude/.test(name) ? 'anthropic' : 'openai';
}
