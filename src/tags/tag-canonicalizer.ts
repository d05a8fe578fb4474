import { isAliasCandidate, isAutoAlias, slug } from './canonicalize.js';
import type { TagAlias, TagStore } from './tag-store.js';

interface Vocab {
  counts: Map<string, number>;
  /** Tags by first letter and length, so a new tag is compared with a few known ones only. */
  buckets: Map<string, string[]>;
}

function bucketKey(tag: string, length = tag.length): string {
  return `${tag[0]}${length}`;
}

/** A suggested alias: two tags that may name the same thing. */
export interface AliasSuggestion {
  alias: string;
  tag: string;
  /** Units carrying each, over all conversations. */
  aliasUnits: number;
  tagUnits: number;
}

/**
 * Makes every tag canonical before it is stored or matched: slug and plural folding, then manual aliases, then
 * automatic aliases of known tags (one edit apart in a long word, or the same without hyphens), which are recorded.
 */
export function createCanonicalizer(store: TagStore) {
  let aliases: Map<string, string> | null = null;
  const vocabs = new Map<string, Vocab>();

  const aliasMap = async () => (aliases ??= new Map((await store.aliases()).map((a) => [a.alias, a.tag])));

  const vocab = async (conversationId: string): Promise<Vocab> => {
    let v = vocabs.get(conversationId);
    if (!v) {
      v = { counts: new Map(), buckets: new Map() };
      for (const s of await store.vocabulary(conversationId)) remember(v, s.tag, s.units);
      vocabs.set(conversationId, v);
    }
    return v;
  };

  function remember(v: Vocab, tag: string, units: number): void {
    if (!v.counts.has(tag)) {
      const key = bucketKey(tag);
      const list = v.buckets.get(key) ?? [];
      list.push(tag);
      v.buckets.set(key, list);
    }
    v.counts.set(tag, units);
  }

  function autoAliasOf(v: Vocab, tag: string): string | null {
    let best: string | null = null;
    for (const len of [tag.length - 1, tag.length, tag.length + 1]) {
      for (const known of v.buckets.get(bucketKey(tag, len)) ?? []) {
        if (isAutoAlias(tag, known) && (best === null || v.counts.get(known)! > v.counts.get(best)!)) best = known;
      }
    }
    return best;
  }

  return {
    /** Canonical, deduplicated tags of a conversation, in the order given; empty spellings are dropped. */
    async canonical(conversationId: string, raws: readonly string[], nowIso: string): Promise<string[]> {
      const map = await aliasMap();
      const v = await vocab(conversationId);
      const out: string[] = [];
      for (const raw of raws) {
        let tag = slug(raw);
        if (!tag) continue;
        tag = map.get(tag) ?? tag;
        if (!v.counts.has(tag)) {
          const known = autoAliasOf(v, tag);
          if (known !== null) {
            await store.addAlias(tag, known, 'auto', nowIso);
            map.set(tag, known);
            tag = known;
          }
        }
        if (!out.includes(tag)) out.push(tag);
      }
      return out;
    },

    /** The conversation's known tags and how many units carry each. */
    async counts(conversationId: string): Promise<ReadonlyMap<string, number>> {
      return (await vocab(conversationId)).counts;
    },

    /** Reload a conversation's vocabulary after its tags changed. */
    async refresh(conversationId: string): Promise<void> {
      vocabs.delete(conversationId);
      await vocab(conversationId);
    },

    async add(alias: string, tag: string, nowIso: string): Promise<TagAlias> {
      const a = slug(alias);
      const t = (await aliasMap()).get(slug(tag)) ?? slug(tag);
      await store.addAlias(a, t, 'manual', nowIso);
      aliases = null;
      vocabs.clear();
      return { alias: a, tag: t, source: 'manual', createdAt: nowIso };
    },

    async remove(alias: string): Promise<boolean> {
      const removed = await store.removeAlias(slug(alias));
      aliases = null;
      return removed;
    },

    list(): Promise<TagAlias[]> {
      return store.aliases();
    },

    /** Pairs of stored tags that look like spellings of one thing; the rarer one is proposed as the alias. */
    async suggest(limit = 50): Promise<AliasSuggestion[]> {
      const all = await store.allTags();
      const map = await aliasMap();
      const out: AliasSuggestion[] = [];
      const byFirst = new Map<string, { tag: string; units: number }[]>();
      for (const t of all) {
        if (map.has(t.tag)) continue;
        const list = byFirst.get(t.tag[0]!) ?? [];
        for (const other of list) {
          if (isAliasCandidate(t.tag, other.tag)) {
            const [alias, tag] = t.units <= other.units ? [t, other] : [other, t];
            out.push({ alias: alias.tag, tag: tag.tag, aliasUnits: alias.units, tagUnits: tag.units });
          }
        }
        list.push(t);
        byFirst.set(t.tag[0]!, list);
      }
      return out.sort((a, b) => b.aliasUnits + b.tagUnits - (a.aliasUnits + a.tagUnits)).slice(0, limit);
    },
  };
}

export type Canonicalizer = ReturnType<typeof createCanonicalizer>;
