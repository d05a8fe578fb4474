const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

// Intl.Segmenter gives every segment its own copy of the input in V8, so segmenting a long text whole costs time
// (and, if the segments are kept, memory) in the square of its length: 190 KB took 2.8 s, and a 317 KB tool result
// spread into an array aborted the process. Text is segmented in windows of this many characters instead.
const WINDOW = 512;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * The sentences of a text, in order, joined back they give the text exactly. Linear in the length on any input: a
 * sentence longer than the window is cut at its last space in the window (or at the window's end).
 */
export function sentences(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  while (start < text.length) {
    const end = Math.min(text.length, start + WINDOW);
    const window = text.slice(start, end);
    const parts: { segment: string; index: number }[] = [];
    for (const s of segmenter.segment(window)) parts.push({ segment: s.segment, index: s.index });
    if (end === text.length) {
      for (const p of parts) out.push(p.segment);
      break;
    }
    if (parts.length > 1) {
      // The last segment may go on past the window: it is segmented again with what follows.
      for (const p of parts.slice(0, -1)) out.push(p.segment);
      start += parts[parts.length - 1]!.index;
      continue;
    }
    let cut = window.lastIndexOf(' ') + 1;
    if (cut < WINDOW / 2) cut = window.length;
    if (isHighSurrogate(window.charCodeAt(cut - 1))) cut -= 1;
    out.push(window.slice(0, cut));
    start += cut;
  }
  return out;
}
