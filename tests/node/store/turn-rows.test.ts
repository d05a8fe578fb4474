// turnRowError measures a turn's row only where a bound from the strings' lengths does not already fit the limit:
// the bound must never be under the exact size (JSON escapes, non-ASCII, lone surrogates, parts, tool calls).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { turnRowBytes, turnRowError } from '../../../src/store/turn-rows.js';
import { DURABLE_OBJECT_LIMITS } from '../../../src/storage/limits.js';
import { messageText } from '../../../src/common/messages.js';
import type { ChatMessage } from '../../../src/contracts/types.js';

afterEach(() => { vi.restoreAllMocks(); });

const n = 20_000;
const messages: Record<string, ChatMessage> = {
  'plain text': { role: 'user', content: 'z'.repeat(n) },
  'quotes (2 bytes of JSON each)': { role: 'user', content: '"'.repeat(n) },
  'control characters (6 bytes of JSON, 1 of text)': { role: 'user', content: '\u0001'.repeat(n) },
  'lone surrogates (6 bytes of JSON, 3 of text)': { role: 'user', content: '\ud800'.repeat(n) },
  'non-ASCII and emoji': { role: 'user', content: '€😀'.repeat(n / 2), name: 'Zoë' },
  'parts with escapes': { role: 'user', content: [{ type: 'text', text: '\\\n\t'.repeat(n / 3) }, { type: 'reasoning', text: '\u001f'.repeat(n / 2) }] },
  'tool calls': { role: 'assistant', content: null, toolCalls: [{ id: 'call-1', type: 'function', function: { name: 'lookup', arguments: JSON.stringify({ q: '"\u0002'.repeat(n / 2) }) } }] },
  'a tool result': { role: 'tool', content: '\u0003"'.repeat(n / 2), toolCallId: 'call-1' },
};

const check = (maxRowBytes: number, m: ChatMessage) =>
  turnRowError({ ...DURABLE_OBJECT_LIMITS, maxRowBytes }, 'test', 'conv-ü', 'm-1', m, messageText(m));

describe('turnRowError: a turn just under the row limit is stored, one just over is refused', () => {
  for (const [name, m] of Object.entries(messages)) {
    it(name, () => {
      const exact = turnRowBytes('conv-ü', 'm-1', m, messageText(m));
      expect(check(exact, m)).toBeNull();
      const over = check(exact - 1, m);
      expect(over).toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
      // The size the error reports is the exact one, not the bound.
      expect(over!.message).toContain(`a row of ${exact} bytes`);
    });
  }

  it('a turn far under the limit is not measured byte by byte (no JSON of its content is made)', () => {
    const stringify = vi.spyOn(JSON, 'stringify');
    for (const m of Object.values(messages)) expect(check(2_000_000, m)).toBeNull();
    expect(stringify).not.toHaveBeenCalled();
    // Near the limit it is.
    expect(check(8 * n, messages['control characters (6 bytes of JSON, 1 of text)']!)).toBeNull();
    expect(stringify).toHaveBeenCalled();
  });
});
