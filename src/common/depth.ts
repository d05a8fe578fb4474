// How deep caller data nests, measured without recursion: JSON.parse builds a value 100,000 arrays deep without
// complaint, and whatever walks it recursively next (JSON.stringify, structuredClone, a validator) overflows the stack.

/**
 * True when `value` nests objects or arrays more than `limit` levels deep (a plain object or array is one level;
 * strings and numbers are none). Walks with a stack of its own, so any depth is safe to ask about.
 *
 * @example
 * if (depthOver(JSON.parse(text), 64)) throw new PagewiseError('INVALID_ARGUMENT', 'cli', 'The file nests deeper than 64 levels…');
 */
export function depthOver(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= limit) return true;
    for (const child of Object.values(v)) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}
