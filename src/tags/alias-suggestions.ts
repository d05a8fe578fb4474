import type { AliasLayers } from './alias-layers.js';
import { isAliasCandidate } from './canonicalize.js';
import type { TagStore } from './tag-store.js';
import type { AliasSuggestion } from '../contracts/types-data.js';

export type { AliasSuggestion } from '../contracts/types-data.js';


type Counted = { tag: string; units: number };
type Pair = { a: string; b: string; aUnits: number; bUnits: number; conversations: number };

/** Per conversation: its tags with their units, and the spellings already aliased there (left out of suggestions). */
interface Groups {
  groups: Map<string, Counted[]>;
  aliased: Map<string, Set<string>>;
}

/** Pairs of tags of one conversation that look like spellings of one thing, summed over the conversations. */
function pairsOf({ groups, aliased }: Groups): Map<string, Pair> {
  const pairs = new Map<string, Pair>();
  for (const [c, tags] of groups) {
    const skip = aliased.get(c)!;
    const byFirst = new Map<string, Counted[]>();
    for (const t of tags) {
      if (skip.has(t.tag)) continue;
      const list = byFirst.get(t.tag[0]!) ?? [];
      for (const other of list) {
        if (!isAliasCandidate(t.tag, other.tag)) continue;
        const [x, y] = t.tag < other.tag ? [t, other] : [other, t];
        const key = `${x.tag} ${y.tag}`;
        const pair = pairs.get(key) ?? { a: x.tag, b: y.tag, aUnits: 0, bUnits: 0, conversations: 0 };
        pair.aUnits += x.units;
        pair.bUnits += y.units;
        pair.conversations++;
        pairs.set(key, pair);
      }
      list.push(t);
      byFirst.set(t.tag[0]!, list);
    }
  }
  return pairs;
}

/** The suggestions of aliases over one conversation or every one. */
export function createAliasSuggester(store: TagStore, layers: AliasLayers) {
  /** The tags and the aliased spellings of one conversation, or of every conversation with tags. */
  const groupsOf = async (conversationId: string | null): Promise<Groups> => {
    const groups = new Map<string, Counted[]>();
    const aliased = new Map<string, Set<string>>();
    if (conversationId !== null) {
      groups.set(conversationId, (await store.vocabulary(conversationId)).map((t) => ({ tag: t.tag, units: t.units })));
      aliased.set(conversationId, new Set((await layers.layersOf(conversationId)).flatMap((m) => [...m.keys()])));
      return { groups, aliased };
    }
    for (const t of await store.tagsByConversation()) {
      const list = groups.get(t.conversationId) ?? [];
      list.push(t);
      groups.set(t.conversationId, list);
    }
    const everywhere = new Set((await store.aliases()).map((a) => a.alias));
    for (const a of await store.allAliases()) {
      if (a.conversationId === null) continue;
      const keys = aliased.get(a.conversationId) ?? new Set(everywhere);
      keys.add(a.alias);
      aliased.set(a.conversationId, keys);
    }
    for (const c of groups.keys()) if (!aliased.has(c)) aliased.set(c, everywhere);
    return { groups, aliased };
  };

  /**
   * Pairs of tags of one conversation that look like spellings of one thing; the rarer one is proposed as the
   * alias. Over every conversation unless one is given: a pair counts only where both spellings occur in the same
   * conversation (tags of different users are not compared), summed over those conversations.
   */
  return async (limit: number, conversationId: string | null): Promise<AliasSuggestion[]> => {
    const pairs = pairsOf(await groupsOf(conversationId));
    // The rarer spelling is the alias; on a tie, the one later in alphabetical order.
    const out = [...pairs.values()].map((p): AliasSuggestion => (p.aUnits < p.bUnits
      ? { alias: p.a, tag: p.b, aliasUnits: p.aUnits, tagUnits: p.bUnits, conversations: p.conversations }
      : { alias: p.b, tag: p.a, aliasUnits: p.bUnits, tagUnits: p.aUnits, conversations: p.conversations }));
    return out.sort((x, y) => y.aliasUnits + y.tagUnits - (x.aliasUnits + x.tagUnits) || (x.alias < y.alias ? -1 : x.alias > y.alias ? 1 : 0)
      || (x.tag < y.tag ? -1 : 1)).slice(0, limit);
  };
}
