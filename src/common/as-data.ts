// Caller-controlled strings (turn text, speaker names, ids, tool names and arguments, tag names, queries, summaries)
// reach a model inside pagewise's own delimiters. They must not be able to close or forge one, in any spelling a model
// may read as a tag: `</prior-conversation>`, `</ prior-conversation>`, `<\/prior-conversation>` (JSON's escaped
// slash), full-width `＜／prior-conversation＞`, look-alike brackets (`˂ ❮ ⟨ ‹ 〈`), a zero-width character inside
// the name, `&lt;/prior-conversation&gt;` (also `&amp;lt;`), `%3C/prior-conversation%3E`, `\u003c/excerpt>`,
// `<prior_conversation>` (and the same for `<web-results>` / `<web-result>`, the web search block). This module finds them; src/text/render.ts is the one place that writes what a model reads.

/** The tag names pagewise writes into prompts, after a `<` (anchored: tried at each place a `<` may be spelled). */
const OWN_TAG = /^<\s*\/?\s*(?:prior[\s_-]*conversation|excerpt|summary|context[\s_-]*topics|turn(?![a-z])|web[\s_-]*results?(?![a-z]))/;
// Characters a model may read as `<`: the ASCII one and its look-alikes (NFKD folds ＜ ﹤ too, and ≮ to < + U+0338).
const LESS_THAN = '<\u02C2\u2039\u2329\u276C\u276E\u2770\u27E8\u27EA\u29FC\u2A79\u3008\u300A\u1438\u227A\u22D6\uFE64\uFF1C\u226E';
const LOOKALIKE = new RegExp(`[${LESS_THAN}]`, 'u');
// Where a `<` may begin: a look-alike, or the start of an escape (`&`, `%`, `\`).
const MAY_OPEN = new RegExp(`[${LESS_THAN}&%\\\\]`, 'gu');
// Spellings of `<` and `/` that a reader (or a model) decodes: HTML entities (also double-escaped as `&amp;lt;`),
// URL escapes, string escapes, and JSON's escaped slash `\/`.
const ESCAPED = /^(?:&(?:amp;)*(?:lt;?|#0*60;?|#x0*3c;?|sol;|#0*47;?|#x0*2f;?)|%(?:25)*(?:3c|2f)|\\+(?:u\{0*3c\}|u0*3c|x3c|u\{0*2f\}|u0*2f|x2f|\/))/i;
const ESCAPED_LT = /lt|60|3c/i;
// Longest escape above with a few repeats and leading zeros.
const ESCAPE_MAX = 24;
const IGNORABLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Mn}\p{Me}]/u;
const DASH = /[\p{Pd}\u2212_]/u;
const SLASH = /[\u2044\u2215\u29F8\uFF0F\\]/u;
// Folded characters enough to hold `</ prior-conversation` with room for spaces.
const LOOK = 40;
const PLAIN = /^[\t\n\r\x20-\x7E]*$/;
// Letters of other scripts that look like the Latin ones of pagewise's tag names (Cyrillic, Greek, Armenian, small
// capitals…), folded to them: `</wеb-results>` with a Cyrillic е is read as the tag.
const CONFUSABLE: Record<string, string> = {
  'а': 'a', 'с': 'c', 'ԁ': 'd', 'е': 'e', 'ё': 'e', 'һ': 'h', 'і': 'i', 'ї': 'i', 'ј': 'j', 'к': 'k', 'м': 'm', 'о': 'o', 'р': 'p',
  'ԛ': 'q', 'ѕ': 's', 'т': 't', 'у': 'y', 'х': 'x', 'ԝ': 'w', 'ո': 'n', 'ս': 'u', 'ց': 'g', 'օ': 'o', 'α': 'a', 'ε': 'e',
  'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x', 'ɑ': 'a', 'ı': 'i', 'ɡ': 'g', 'ʀ': 'r', 'ᴜ': 'u',
};
const MAY_ESCAPE = /&[#a-z]|%[0-9a-f]{2}|\\/i;
/** What an opening is replaced with: visibly "a character was replaced here", and no bracket of any script. */
export const REPLACEMENT = '\uFFFD';

/** One character (or escape) at `i`, folded: what a reader would take it for, and where the next one starts. */
function foldOne(text: string, i: number): { piece: string; next: number } {
  const m = text[i] === '&' || text[i] === '\\' || text[i] === '%' ? ESCAPED.exec(text.slice(i, i + ESCAPE_MAX)) : null;
  if (m) return { piece: ESCAPED_LT.test(m[0].replace(/^&(?:amp;)*|^%(?:25)*/i, '')) ? '<' : '/', next: i + m[0].length };
  const ch = String.fromCodePoint(text.codePointAt(i)!);
  const next = i + ch.length;
  if (IGNORABLE.test(ch)) return { piece: '', next };
  if (LOOKALIKE.test(ch)) return { piece: '<', next };
  if (DASH.test(ch)) return { piece: '-', next };
  if (SLASH.test(ch)) return { piece: '/', next };
  const folded = ch.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
  return { piece: CONFUSABLE[folded] ?? folded, next };
}

/**
 * The text from `start` folded (NFKD without marks, case, dashes, slashes, look-alikes, entities, escapes; invisible
 * characters dropped) until `LOOK` characters are folded, and the original index just after the first folded one.
 */
function fold(text: string, start: number): { folded: string; firstEnd: number } {
  let folded = '';
  let firstEnd = start;
  let i = start;
  while (i < text.length && folded.length < LOOK) {
    const { piece, next } = foldOne(text, i);
    if (folded.length === 0 && piece.length > 0) firstEnd = next;
    folded += piece;
    i = next;
  }
  return { folded, firstEnd };
}

/** Where `text` spells one of pagewise's own tags: the original range of each such tag's `<`. */
export function ownTagOpenings(text: string): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  let after = 0;
  for (const m of text.matchAll(MAY_OPEN)) {
    if (m.index < after) continue;
    // Plain ASCII after a plain `<` (most code and markup) folds to itself but for case and `_`.
    const raw = text.slice(m.index, m.index + LOOK);
    if (m[0] === '<' && PLAIN.test(raw) && !MAY_ESCAPE.test(raw)) {
      if (OWN_TAG.test(raw.toLowerCase().replace(/_/g, '-'))) out.push({ start: m.index, end: m.index + 1 });
      continue;
    }
    if (m[0] === '&' || m[0] === '\\' || m[0] === '%') {
      const e = ESCAPED.exec(text.slice(m.index, m.index + ESCAPE_MAX));
      if (!e || foldOne(text, m.index).piece !== '<') continue;
    }
    const { folded, firstEnd } = fold(text, m.index);
    if (OWN_TAG.test(folded)) {
      out.push({ start: m.index, end: firstEnd });
      after = firstEnd;
    }
  }
  return out;
}

/** How many of pagewise's own tags `text` spells, in any spelling (for tests and checks of a whole prompt). */
export function countOwnTags(text: string): number {
  return ownTagOpenings(text).length;
}

/**
 * Caller text made safe to quote inside pagewise's delimiters: every spelling of `<` that would open or close one
 * of its tags becomes U+FFFD (�). Everything else is kept as written.
 */
export function neutralize(text: string): string {
  const openings = ownTagOpenings(text);
  if (openings.length === 0) return text;
  let out = '';
  let at = 0;
  for (const { start, end } of openings) {
    out += `${text.slice(at, start)}${REPLACEMENT}`;
    at = end;
  }
  return out + text.slice(at);
}

/**
 * A caller string shown on one line (a speaker name, an id, a tool name, a tag, a query): line breaks and control
 * characters become spaces, so it cannot start a line of its own, and it is neutralized.
 */
export function inline(text: string): string {
  return neutralize(text.replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, ' '));
}

/** A caller string as a quoted literal on one line (JSON string syntax), e.g. an id in a note. */
export function quoted(text: string): string {
  return JSON.stringify(inline(text));
}

/** A short description of a value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  // Array.isArray throws on a revoked Proxy.
  try {
    if (Array.isArray(value)) return 'an array';
  } catch {
    return 'a value that cannot be inspected';
  }
  if (typeof value === 'string') {
    // Quoted as data on one line (it may end up in a prompt through an error message), cut at a code point.
    const cut = Array.from(value.slice(0, 41)).slice(0, 40).join('');
    const shown = JSON.stringify(inline(cut.length < value.length ? cut : value));
    return cut.length < value.length ? `a string ${shown.slice(0, -1)}…"` : shown;
  }
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return 'a symbol';
  return `${typeof value} ${String(value)}`;
}
