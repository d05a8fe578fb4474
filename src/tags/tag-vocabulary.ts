import { CACHED_CONVERSATIONS, Lru } from '../common/cache.js';
import { isAutoAlias } from './canonicalize.js';
import type { TagStore } from './tag-store.js';

/** A conversation's known tags with the units carrying each. */
export interface Vocab {
  counts: Map<string, number>;
  /** Tags by first letter and length, so a new tag is compared with a few known ones only. */
  buckets: Map<string, string[]>;
}

function bucketKey(tag: string, length = tag.length): string {
  return `${tag[0]}${length}`;
}

export function remember(v: Vocab, tag: string, units: number): void {
  if (!v.counts.has(tag)) {
    const key = bucketKey(tag);
    const list = v.buckets.get(key) ?? [];
    list.push(tag);
    v.buckets.set(key, list);
  }
  v.counts.set(tag, units);
}

function forget(v: Vocab, tag: string): void {
  if (!v.counts.delete(tag)) return;
  const key = bucketKey(tag);
  const list = v.buckets.get(key)!.filter((t) => t !== tag);
  if (list.length > 0) v.buckets.set(key, list);
  else v.buckets.delete(key);
}

/** The known tag that `tag` is an automatic alias of (the most used one), if any. */
export function autoAliasOf(v: Vocab, tag: string): string | null {
  let best: string | null = null;
  for (const len of [tag.length - 1, tag.length, tag.length + 1]) {
    for (const known of v.buckets.get(bucketKey(tag, len)) ?? []) {
      if (isAutoAlias(tag, known) && (best === null || v.counts.get(known)! > v.counts.get(best)!)) best = known;
    }
  }
  return best;
}

/** The vocabularies of the most recently used conversations, read once and kept current by `refresh`. */
export function createVocabularies(store: TagStore) {
  const vocabs = new Lru<string, Vocab>(CACHED_CONVERSATIONS);

  const vocab = async (conversationId: string): Promise<Vocab> => {
    let v = vocabs.get(conversationId);
    if (!v) {
      v = { counts: new Map(), buckets: new Map() };
      for (const s of await store.vocabulary(conversationId)) remember(v, s.tag, s.units);
      vocabs.set(conversationId, v);
    }
    return v;
  };

  return {
    vocab,

    /** Drops a conversation's vocabulary: it is read again when next needed. */
    drop(conversationId: string): void {
      vocabs.delete(conversationId);
    },

    /**
     * Brings a conversation's vocabulary up to date after its tags changed: only `changed` are read again (a long
     * conversation has thousands of tags, and this runs after every indexed turn); without it, all of them.
     */
    async refresh(conversationId: string, changed?: readonly string[]): Promise<void> {
      const v = changed === undefined ? undefined : vocabs.get(conversationId);
      if (!v) {
        vocabs.delete(conversationId);
        await vocab(conversationId);
        return;
      }
      const units = await store.tagUnits(conversationId, changed!);
      for (const tag of changed!) {
        const n = units.get(tag);
        if (n !== undefined) remember(v, tag, n);
        else forget(v, tag);
      }
    },
  };
}

export type Vocabularies = ReturnType<typeof createVocabularies>;
