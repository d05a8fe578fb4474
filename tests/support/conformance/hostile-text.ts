// Strings that a careless text path merges, truncates or reorders: a decoder that drops a leading BOM, a C string
// cut at NUL, a Unicode normalization, a collation. Ids are opaque, so a driver must give back every one of them
// byte for byte, and a lookup by one must find only its own row. Shared by the conformance suite (every driver) and
// the engine-level tests.

/** Twins: pairs that look alike, or are equal after some normalization, but are different ids. */
export const hostileTwins: readonly (readonly [string, string])[] = [
  ['dave', '\uFEFFdave'],
  ['\uFEFFdave', '\uFEFF\uFEFFdave'],
  ['dave', 'dave\uFEFF'],
  ['dave', '\uFFFEdave'],
  // NFC against NFD: é precomposed, and e + combining acute.
  ['caf\u00E9', 'cafe\u0301'],
  // Å as a letter, as the Angstrom sign (NFC maps it to the letter), and as A + combining ring.
  ['\u00C5', '\u212B'],
  ['\u00C5', 'A\u030A'],
  // A Hangul syllable and its jamo.
  ['\uD55C', '\u1112\u1161\u11AB'],
  // Next to where a NUL would be: a C string would stop there.
  ['a', 'a\u0000'],
  ['a\u0000b', 'a\u0000c'],
  ['b', '\u0000b'],
  // Direction marks and overrides.
  ['dave', '\u200Edave'],
  ['dave', '\u200Fdave'],
  ['dave', '\u202Edave\u202C'],
  ['\u05E9\u05DC\u05D5\u05DD', '\u05E9\u05DC\u05D5\u05DD\u200F'],
  // Zero-width joiner, non-joiner and space.
  ['\u{1F469}\u200D\u{1F4BB}', '\u{1F469}\u{1F4BB}'],
  ['ab', 'a\u200Cb'],
  ['ab', 'a\u200Bb'],
  // Variation selectors: emoji, text and default presentation.
  ['\u2764\uFE0F', '\u2764'],
  ['\u2764\uFE0F', '\u2764\uFE0E'],
  ['\u{1F44D}\u{1F3FD}', '\u{1F44D}'],
  // 512 UTF-16 units each, differing only in the last character (one of them all surrogate pairs).
  ['x'.repeat(512), `${'x'.repeat(511)}y`],
  ['\u{1F9E0}'.repeat(256), `${'\u{1F9E0}'.repeat(255)}\u{1F9E1}`],
  // Case and trailing space: no collation may fold them.
  ['dave', 'Dave'],
  ['dave', 'dave '],
];

/** Every string of the twins once. */
export const hostileStrings: readonly string[] = [...new Set(hostileTwins.flat())];

/** The UTF-8 bytes of `s` in hex, upper case, as SQLite's hex() writes them. */
export function utf8Hex(s: string): string {
  return Array.from(new TextEncoder().encode(s), (b) => b.toString(16).padStart(2, '0')).join('').toUpperCase();
}

/** `s` with every character outside printable ASCII escaped, for messages that must show the difference. */
export function visible(s: string): string {
  const shown = s.replace(/[^\x20-\x7E]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
  return shown.length > 80 ? `${shown.slice(0, 40)}…${shown.slice(-30)} (${s.length} units)` : shown;
}
