import { CACHED_CONVERSATIONS, Lru } from '../common/cache.js';
import type { AliasRewrite, TagStore } from './tag-store.js';

/** A conversation's own aliases, by source. */
export interface Local {
  manual: Map<string, string>;
  auto: Map<string, string>;
}

/**
 * The spelling `start` is read as, through alias maps tried in order at each step (a conversation's manual aliases,
 * then the global ones, then the ones it learned), followed until no alias changes it; a cycle stops before it
 * comes back.
 */
export function resolve(layers: readonly ReadonlyMap<string, string>[], start: string): string {
  let tag = start;
  const seen = new Set([tag]);
  for (;;) {
    let next: string | undefined;
    for (const map of layers) if ((next = map.get(tag)) !== undefined) break;
    if (next === undefined || seen.has(next)) return tag;
    seen.add(next);
    tag = next;
  }
}

/**
 * The alias maps as canonicalization reads them, cached: the global ones, and per conversation (the most recently
 * used ones only: an engine may see any number of conversation ids) its manual and learned ones.
 */
export function createAliasLayers(store: TagStore) {
  let global: Map<string, string> | null = null;
  const locals = new Lru<string, Local>(CACHED_CONVERSATIONS);

  const globalMap = async () => (global ??= new Map((await store.aliases()).map((a) => [a.alias, a.tag])));

  const local = async (conversationId: string): Promise<Local> => {
    let l = locals.get(conversationId);
    if (!l) {
      l = { manual: new Map(), auto: new Map() };
      for (const a of await store.aliases(conversationId, true)) l[a.source].set(a.alias, a.tag);
      locals.set(conversationId, l);
    }
    return l;
  };

  return {
    globalMap,
    local,

    /** Alias maps of a conversation, in the order they are tried. */
    async layersOf(conversationId: string): Promise<ReadonlyMap<string, string>[]> {
      const l = await local(conversationId);
      return [l.manual, await globalMap(), l.auto];
    },

    /**
     * The rewrites a new manual alias `alias` → `tag` brings: in its conversation (`scope`), or, for a global one,
     * in every conversation with stored tags spelled `alias`, each to the spelling the alias reads as there. `g`:
     * the global aliases before it.
     */
    async rewritesOf(alias: string, tag: string, g: ReadonlyMap<string, string>, scope: { conversationId: string; own: Local } | null): Promise<AliasRewrite[]> {
      if (scope) {
        const l = scope.own;
        return [{ conversationId: scope.conversationId, tag: resolve([new Map(l.manual).set(alias, tag), g, l.auto], alias) }];
      }
      const rewrites: AliasRewrite[] = [];
      const next = new Map(g).set(alias, tag);
      for (const c of await store.conversationsWithTag(alias)) {
        const own = await local(c);
        rewrites.push({ conversationId: c, tag: resolve([own.manual, next, own.auto], alias) });
      }
      return rewrites;
    },

    /** Drops the cached aliases of one scope (null: the global ones): they are read again when next needed. */
    drop(conversationId: string | null): void {
      if (conversationId === null) global = null;
      else locals.delete(conversationId);
    },
  };
}

export type AliasLayers = ReturnType<typeof createAliasLayers>;
