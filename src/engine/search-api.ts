// The Memory API's search side: memory.webSearch (a search asked for directly: the MCP tool, the CLI) and
// memory.stats(); and what a request's search step may ask of the stores (inbound.ts).
import type { Atomic } from '../compaction/compactor.js';
import { PagewiseError } from '../contracts/errors.js';
import type { Memory } from '../contracts/memory.js';
import type { MemoryStats, Tokenizer } from '../contracts/types.js';
import { describe, validateConversationId } from '../common/messages.js';
import { ftsStem } from '../text/fts-words.js';
import type { MemoryLookup } from '../search/query.js';
import { type Search, searchOff } from '../search/search.js';
import type { TurnStore } from '../store/turn-store.js';
import { checkObject } from './support.js';

const MODULE = 'search';
const MAX_QUERY_CHARS = 4096;

// Characters of private text read to find a private run inside a longer one (scripts without spaces).
const PRIVATE_TEXT_CHARS = 1_000_000;

/**
 * What memory knows of one conversation, read directly (the caller holds the conversation's slot). `privateHistory`:
 * the text of the request's own private history messages, which are not stored but are private all the same.
 */
export function lookupOf(store: TurnStore, conversationId: string, privateHistory: readonly string[] = []): MemoryLookup {
  // Split as the full-text index splits (letters and digits), so "Quibbletron's" and "Dubois-Martin" give their words.
  const stemsOf = (text: string) => (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => ftsStem(w) ?? w);
  const historyStems = new Set(privateHistory.flatMap(stemsOf));
  let privateText: Promise<string> | undefined;
  return {
    known: (words) => store.wordsIn(conversationId, words, false),
    async privateWords(words) {
      const found = await store.wordsIn(conversationId, words, true);
      for (const w of words) if (stemsOf(w).some((p) => historyStems.has(p))) found.add(w);
      return found;
    },
    speakers: () => store.speakers(conversationId),
    mentions: (word, limit) => store.textsWith(conversationId, word, limit),
    async privateOverlap(run) {
      privateText ??= store.privateText(conversationId, PRIVATE_TEXT_CHARS).then((t) => `${t}\n${privateHistory.join('\n')}`);
      const text = await privateText;
      const chars = [...run];
      return chars.some((_, i) => i + 2 <= chars.length && text.includes(chars.slice(i, i + 2).join('')));
    },
  };
}

/** A lookup whose reads each take the conversation's slot in turn (a direct search holds no slot while it waits). */
function keyedLookup(store: TurnStore, conversationId: string, atomic: Atomic): MemoryLookup {
  const direct = lookupOf(store, conversationId);
  return {
    known: (words) => atomic(() => direct.known(words)),
    privateWords: (words) => atomic(() => direct.privateWords(words)),
    speakers: () => atomic(() => direct.speakers()),
    mentions: (word, limit) => atomic(() => direct.mentions(word, limit)),
    privateOverlap: (run) => atomic(() => direct.privateOverlap(run)),
  };
}

/** Without a conversation: nothing is known, nothing private, no speakers. */
const NO_LOOKUP: MemoryLookup = { known: async () => new Set(), privateWords: async () => new Set(), speakers: async () => [], mentions: async () => [], privateOverlap: async () => false };

export function searchApi(d: { search: Search | null; store: TurnStore; keyed(conversationId: string): Atomic; check(): Promise<void>; tokenizer: () => Promise<Tokenizer>; maxResults: number }): Pick<Memory, 'webSearch'> & { stats(): Promise<Pick<MemoryStats, 'search'>> } {
  return {
    // Counters only: no slot, so a conversation's slow search holds nobody's figures up. The usage and health figures
    // around them are engine/usage.ts's.
    stats: async () => { await d.check(); return { search: d.search ? d.search.stats() : searchOff() }; },

    async webSearch(input) {
      const args = checkObject(input, 'webSearch');
      const { query, maxResults = d.maxResults } = args;
      if (typeof query !== 'string' || query.trim() === '' || query.length > MAX_QUERY_CHARS) {
        throw new PagewiseError('INVALID_ARGUMENT', MODULE, `query must be a non-empty string of at most ${MAX_QUERY_CHARS} characters (got ${describe(query)}).`, { path: 'query' });
      }
      if (typeof maxResults !== 'number' || !Number.isSafeInteger(maxResults) || maxResults < 1 || maxResults > 10) {
        throw new PagewiseError('INVALID_ARGUMENT', MODULE, `maxResults must be an integer from 1 to 10 (got ${describe(maxResults)}).`, { path: 'maxResults' });
      }
      const conversationId = args.conversationId === undefined ? undefined : validateConversationId(args.conversationId);
      // Refused once closed, like every call; it waits for no other call (its reads take the conversation's slot one by one).
      await d.check();
      if (!d.search) {
        throw new PagewiseError('INVALID_OPTIONS', MODULE, 'webSearch needs the search option: createMemory({ search: { providers: [searxng({ url: "https://searx.example.org" })] } }) (the CLI: --search).');
      }
      const lookup = conversationId === undefined ? NO_LOOKUP : keyedLookup(d.store, conversationId, d.keyed(conversationId));
      return d.search.direct(query, maxResults, lookup, await d.tokenizer(), conversationId);
    },
  };
}
