import { afterEach, describe, expect, it } from 'vitest';
import { type Memory } from '../../../src/index.js';
import { ftsStem } from '../../../src/text/fts-words.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { createMemory, user } from '../../support/helpers.js';

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

describe('full-text index tokens', () => {
  it('ftsStem names the token SQLite stores for a word (porter, Latin diacritics folded)', async () => {
    const words = ['planning', 'plans', 'running', 'happily', 'generalizations', 'conditional', 'relational', 'hopping',
      'caresses', 'ponies', 'sky', 'Café', 'Beyoncé', 'naïveté', 'Abramović', 'größte', 'école', 'Zürich', 'fiancée',
      'marathon', 'Caroline', 'kubernetes', 'LGBTQ', '2023', 'b2b', '日本語', 'διάλογο'];
    const driver = await sqliteWasm()();
    memory = await createMemory({ storage: driver });
    await memory.onTurnComplete({ conversationId: 'c', messages: words.map((w) => user(w)) });
    const stored = await driver.query<{ term: string }>('SELECT term FROM turns_fts_vocab ORDER BY term');
    const expected = [...new Set(words.map((w) => ftsStem(w)))].sort();
    expect(stored.map((r) => r.term).sort()).toEqual(expected);
  });

  it('leaves words that the index splits in several tokens to the phrase query', () => {
    expect(ftsStem("rock'n'roll")).toBeNull();
    expect(ftsStem('e-mail')).toBeNull();
  });
});
