import { CACHED_CONVERSATIONS, Lru } from '../common/cache.js';
import type { TurnStore } from '../store/turn-store.js';
import { candidates } from './key-phrases.js';
import { taggableText } from '../common/parts.js';
import type { TagStat, TagStore } from './tag-store.js';
import { type Things, things } from './things.js';

// Judgements kept per conversation: a topics list reads a few dozen of its most used tags, which change slowly.
const JUDGED_PER_CONVERSATION = 1024;
// Sentences read per tag: compromise costs ~3 ms per 20 words, and a tag's first uses say what it is.
const SENTENCES = 2;
// Turns of a unit read (a user message and its replies).
const UNIT_TURNS = 4;

/** Tells the tags that name things from the wording around them, remembering each answer. */
export interface ThingJudge {
  /** For each tag of `stats` (in order), whether it names a thing. */
  judge(conversationId: string, stats: readonly Where[]): Promise<boolean[]>;
  /** Drops what is remembered of a conversation (its turns were removed or replaced). */
  uncache(conversationId: string): void;
}

/** A tag and the units it was first and last seen on. */
export type Where = Pick<TagStat, 'tag' | 'firstSeq' | 'lastSeq'>;

type Sentence = { text: string; terms: ReturnType<typeof candidates> };

/**
 * Judges a tag by the sentences of its first unit (else its last) that carry it as a word or a pair of words, read
 * with compromise (things.ts): a thing when they read it as a noun, a name, an activity or a noun phrase. A tag no
 * sentence carries (configured keywords, an LLM tagger's or related tag, an alias) was chosen, not read off the
 * wording: it is kept.
 */
export function createThingJudge(stores: { turns: TurnStore; tags: TagStore }): ThingJudge {
  const judged = new Lru<string, Lru<string, boolean>>(CACHED_CONVERSATIONS);

  /** The sentences of the units starting at `seqs`, each with its candidate terms. */
  const unitSentences = async (conversationId: string, seqs: readonly number[]): Promise<Map<number, Sentence[]>> => {
    const units = await stores.tags.unitOf(conversationId, seqs);
    const wanted = [...new Set(seqs.flatMap((seq) => {
      const end = Math.min(units.get(seq)?.endSeq ?? seq, seq + UNIT_TURNS - 1);
      return Array.from({ length: end - seq + 1 }, (_, i) => seq + i);
    }))];
    const text = new Map((await stores.turns.bySeqs(conversationId, wanted)).map((t) => [t.seq, taggableText(t.text)]));
    return new Map(seqs.map((seq) => {
      const end = Math.min(units.get(seq)?.endSeq ?? seq, seq + UNIT_TURNS - 1);
      const sentences: Sentence[] = [];
      for (let s = seq; s <= end; s++) {
        for (const part of (text.get(s) ?? '').split(/\n+|(?<=[.!?…])\s+/u)) if (part.trim()) sentences.push({ text: part, terms: candidates(part) });
      }
      return [seq, sentences];
    }));
  };

  /**
   * Whether the sentences carrying `tag` read it as a thing; undefined where none carries it. A sentence is read once
   * per call (`read`): the tags of one unit share its sentences.
   */
  const readAs = async (tag: string, sentences: readonly Sentence[] | undefined, read: Map<Sentence, Promise<Things>>): Promise<boolean | undefined> => {
    const carrying = (sentences ?? []).filter((s) => s.terms.has(tag)).slice(0, SENTENCES);
    if (carrying.length === 0) return undefined;
    const phrase = carrying[0]!.terms.get(tag)!.phrase;
    for (const s of carrying) {
      let found = read.get(s);
      if (!found) read.set(s, (found = things(s.text)));
      if ((phrase ? (await found).pairs : (await found).words).has(tag)) return true;
    }
    return false;
  };

  return {
    async judge(conversationId, stats) {
      let known = judged.get(conversationId);
      if (!known) judged.set(conversationId, (known = new Lru(JUDGED_PER_CONVERSATION)));
      const todo = stats.filter((s) => !known.has(s.tag));
      const read = new Map<Sentence, Promise<Things>>();
      if (todo.length > 0) {
        const first = await unitSentences(conversationId, [...new Set(todo.map((s) => s.firstSeq))]);
        const unread: Where[] = [];
        for (const s of todo) {
          const verdict = await readAs(s.tag, first.get(s.firstSeq), read);
          if (verdict === undefined && s.lastSeq !== s.firstSeq) unread.push(s);
          else known.set(s.tag, verdict ?? true);
        }
        const last = unread.length > 0 ? await unitSentences(conversationId, [...new Set(unread.map((s) => s.lastSeq))]) : new Map<number, Sentence[]>();
        for (const s of unread) known.set(s.tag, (await readAs(s.tag, last.get(s.lastSeq), read)) ?? true);
      }
      return stats.map((s) => known.get(s.tag) ?? true);
    },

    uncache(conversationId) {
      judged.delete(conversationId);
    },
  };
}
