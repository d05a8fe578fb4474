// Caller-controlled strings (turn text, speaker names, ids, tool names and arguments, queries) reach the prompt
// inside pagewise's own delimiters. They must not be able to close or forge one, in any spelling a model may read
// as a tag: `</prior-conversation>`, `</ prior-conversation>`, full-width `＜／prior-conversation＞`, a zero-width
// character inside the name, `&lt;/prior-conversation&gt;`, `\u003c/excerpt>`, `<prior_conversation>`.

/** The tag names pagewise writes into prompts, after a `<` (anchored: tried at each place a `<` may be spelled). */
const OWN_TAG = /^<\s*\/?\s*(?:prior[\s_-]*conversation|excerpt|summary|context[\s_-]*topics)/;
// Only these characters can begin a `<` once folded (NFKD maps ＜ and ﹤ to <, and ≮ to < + U+0338).
const MAY_OPEN = /[<&\\\uFE64\uFF1C\u226E]/g;
// Spellings of `<` and `/` that a reader (or a model) decodes: HTML entities and string escapes.
const ESCAPED = /^(?:&(?:lt;?|#0*60;?|#x0*3c;?|sol;|#0*47;?|#x0*2f;?)|\\u003c|\\x3c|\\u002f|\\x2f)/i;
// Longest escape above with a few leading zeros.
const ESCAPE_MAX = 12;
const IGNORABLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Mn}\p{Me}]/u;
const DASH = /[\p{Pd}\u2212]/u;
const SLASH = /[\u2044\u2215\u29F8]/u;
// Folded characters enough to hold `</ prior-conversation` with room for spaces.
const LOOK = 40;
const PLAIN = /^[\t\n\r\x20-\x7E]*$/;
const MAY_ESCAPE = /&[#a-z]|\\[ux]/i;

/**
 * The text from `start` folded (NFKD without marks, case, dashes, slashes, entities, escapes; invisible characters
 * dropped) until `LOOK` characters are folded, and the original index just after the first folded character.
 */
function fold(text: string, start: number): { folded: string; firstEnd: number } {
  let folded = '';
  let firstEnd = start;
  let i = start;
  while (i < text.length && folded.length < LOOK) {
    const m = text[i] === '&' || text[i] === '\\' ? ESCAPED.exec(text.slice(i, i + ESCAPE_MAX)) : null;
    let piece: string;
    let next: number;
    if (m) {
      piece = /lt|60|3c/i.test(m[0]) ? '<' : '/';
      next = i + m[0].length;
    } else {
      const ch = String.fromCodePoint(text.codePointAt(i)!);
      next = i + ch.length;
      piece = IGNORABLE.test(ch) ? '' : DASH.test(ch) ? '-' : SLASH.test(ch) ? '/' : ch.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
    }
    if (folded.length === 0 && piece.length > 0) firstEnd = next;
    folded += piece;
    i = next;
  }
  return { folded, firstEnd };
}

/** Where `text` spells one of pagewise's own tags: the original range of each such tag's `<`. */
export function ownTagOpenings(text: string): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  for (const m of text.matchAll(MAY_OPEN)) {
    // Plain ASCII after a plain `<` (most code and markup) folds to itself but for case.
    const raw = text.slice(m.index, m.index + LOOK);
    if (m[0] === '<' && PLAIN.test(raw) && !MAY_ESCAPE.test(raw)) {
      if (OWN_TAG.test(raw.toLowerCase())) out.push({ start: m.index, end: m.index + 1 });
      continue;
    }
    if (m[0] === '&' || m[0] === '\\') {
      const e = ESCAPED.exec(text.slice(m.index, m.index + ESCAPE_MAX));
      if (!e || !/lt|60|3c/i.test(e[0])) continue;
    }
    const { folded, firstEnd } = fold(text, m.index);
    if (OWN_TAG.test(folded)) out.push({ start: m.index, end: firstEnd });
  }
  return out;
}

/** How many of pagewise's own tags `text` spells, in any spelling (for tests and checks of a whole prompt). */
export function countOwnTags(text: string): number {
  return ownTagOpenings(text).length;
}

/**
 * Caller text made safe to quote inside pagewise's delimiters: every spelling of `<` that would open or close one
 * of its tags becomes `‹`. Everything else is kept as written.
 */
export function neutralize(text: string): string {
  const openings = ownTagOpenings(text);
  if (openings.length === 0) return text;
  let out = '';
  let at = 0;
  for (const { start, end } of openings) {
    out += `${text.slice(at, start)}‹`;
    at = end;
  }
  return out + text.slice(at);
}

/**
 * A caller string shown on one line (a speaker name, an id, a tool name, a query): line breaks and control
 * characters become spaces, so it cannot start a line of its own, and it is neutralized.
 */
export function inline(text: string): string {
  return neutralize(text.replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, ' '));
}

/** A caller string as a quoted literal on one line (JSON string syntax), e.g. an id in a note. */
export function quoted(text: string): string {
  return JSON.stringify(inline(text));
}
