import { invalid, limitOf, scopeOf, spelling } from './alias-arguments.js';
import { type AliasLayers, type AliasState, createAliasLayers, planStates, resolve } from './alias-layers.js';
import { type AliasSuggestion, createAliasSuggester } from './alias-suggestions.js';
import { slug } from './canonicalize.js';
import { autoAliasOf, createVocabularies, remember, type Vocab } from './tag-vocabulary.js';
import type { TagAlias, TagStore } from './tag-store.js';
import { PagewiseError } from '../contracts/errors.js';
import { validateConversationId } from '../common/messages.js';
import type { Statement } from '../contracts/types.js';

export type { AliasApi } from '../contracts/types-data.js';

export { MAX_ALIAS_LENGTH, spelling } from './alias-arguments.js';
export { resolve } from './alias-layers.js';
export type { AliasState } from './alias-layers.js';
export type { AliasSuggestion } from './alias-suggestions.js';

/** A state with the spellings add() and remove() would take (canonical), or null where they would refuse it. */
function checkedState(s: AliasState): AliasState | null {
  const conversationId = s.conversationId === null ? null : validateConversationId(s.conversationId, 'scope.conversationId');
  try {
    return { conversationId, alias: spelling(s.alias, 'alias', 'db'), tag: s.removed ? '' : spelling(s.tag, 'tag', 'database'), createdAt: s.createdAt, ...(s.removed ? { removed: true } : {}) };
  } catch (error) {
    if (error instanceof PagewiseError && error.code === 'INVALID_ARGUMENT') return null;
    throw error;
  }
}

/** canonicalizer.applyStates over the canonicalizer's store and caches (see there). */
function stateApplier(store: TagStore, layers: AliasLayers, vocabularies: Pick<ReturnType<typeof createVocabularies>, 'drop'>) {
  return async (states: readonly AliasState[], also: readonly Statement[] = []): Promise<(boolean | null)[]> => {
    const checked = states.map(checkedState);
    if (checked.every((s) => s === null)) {
      if (also.length > 0) await store.writeAliasChanges({ aliases: [], removals: [], moves: [], restat: [], rewritten: [] }, also);
      return checked.map(() => null);
    }
    const read = new Set(checked.flatMap((s) => (s && !s.removed ? [s.alias] : [])));
    const holders = await store.tagHolders([...read]);
    const conversations = new Set(checked.flatMap((s) => (s?.conversationId ? [s.conversationId] : [])));
    for (const set of holders.values()) for (const c of set) conversations.add(c);
    const plan = planStates(checked, await layers.globalMap(), await layers.localsOf(conversations), holders, read);
    try {
      await store.writeAliasChanges(plan, also);
      plan.commit();
    } catch (error) {
      for (const c of plan.scopes) layers.drop(c);
      throw error;
    } finally {
      for (const c of plan.rewritten) vocabularies.drop(c);
    }
    return plan.applied;
  };
}

/**
 * canonical() over a vocabulary made apart from the stored one (a tag index rebuilt beside it, engine/rebuild-tags.ts):
 * the manual and global aliases in force, and the automatic aliases it learns kept to itself (`learned`) until the
 * new index replaces the stored one. `know` sets a tag's unit count in its vocabulary.
 */
/**
 * Canonical, deduplicated tags in the order given: slug and plural folding, the alias layers `maps` in order, then an
 * automatic alias of a known tag in `v`, handed to `learn` (which records it where the caller keeps learned aliases).
 */
async function canonicalTags(raws: readonly string[], maps: readonly ReadonlyMap<string, string>[], v: Vocab, learn: (alias: string, tag: string) => void | Promise<void>): Promise<string[]> {
  const out: string[] = [];
  for (const raw of raws) {
    let tag = slug(raw);
    if (!tag) continue;
    tag = resolve(maps, tag);
    if (!v.counts.has(tag) && !maps.some((m) => m.has(tag))) {
      const known = autoAliasOf(v, tag);
      if (known !== null) {
        await learn(tag, known);
        tag = known;
      }
    }
    if (!out.includes(tag)) out.push(tag);
  }
  return out;
}

function stagedCanonicalizer(layers: AliasLayers, conversationId: string) {
  const learned = new Map<string, string>();
  const v: Vocab = { counts: new Map(), buckets: new Map() };
  return {
    learned,
    know: (tag: string, units: number) => remember(v, tag, units),
    units: (tag: string): number => v.counts.get(tag) ?? 0,
    async canonical(raws: readonly string[]): Promise<string[]> {
      const [manual, global] = await layers.layersOf(conversationId);
      return canonicalTags(raws, [manual!, global!, learned], v, (alias, tag) => { learned.set(alias, tag); });
    },
  };
}

/**
 * Makes every tag canonical before it is stored or matched: slug and plural folding, then aliases, then automatic
 * aliases of known tags (one edit apart in a long word, or the same without hyphens), which are recorded.
 *
 * Scopes: a manual alias is global or belongs to one conversation; a learned alias always belongs to the conversation
 * whose content taught it, and is read and applied there only (one user's spellings must not rewrite another's
 * memory). In a conversation, its manual aliases come first, then global ones, then its learned ones.
 *
 * The public methods (`add`, `remove`, `list`, `suggest`) take the caller's arguments unchecked and refuse anything
 * else than their documented types with INVALID_ARGUMENT (a bad conversation id: INVALID_CONVERSATION_ID), before
 * anything is read or stored.
 */
export function createCanonicalizer(store: TagStore) {
  const layers = createAliasLayers(store);
  const vocabularies = createVocabularies(store);
  const suggestAliases = createAliasSuggester(store, layers);
  const { globalMap, local } = layers;

  return {
    /** Drops what is cached of a conversation (its tags or aliases were removed: forget). */
    uncache(conversationId: string): void {
      layers.drop(conversationId);
      vocabularies.drop(conversationId);
    },

    /** Canonical, deduplicated tags of a conversation, in the order given; empty spellings are dropped. */
    async canonical(conversationId: string, raws: readonly string[], nowIso: string): Promise<string[]> {
      const maps = await layers.layersOf(conversationId);
      const learned = (await local(conversationId)).auto;
      const v = await vocabularies.vocab(conversationId);
      return canonicalTags(raws, maps, v, async (alias, tag) => {
        // Learned from this conversation's content: recorded for it, and rewrites nothing elsewhere.
        await store.addAlias({ alias, tag, source: 'auto', createdAt: nowIso, conversationId }, [{ conversationId, tag }]);
        learned.set(alias, tag);
      });
    },

    /** canonical() over a vocabulary made apart from the stored one: see stagedCanonicalizer. */
    staged: (conversationId: string) => stagedCanonicalizer(layers, conversationId),
    /** The conversation's known tags and how many units carry each. */
    async counts(conversationId: string): Promise<ReadonlyMap<string, number>> {
      return (await vocabularies.vocab(conversationId)).counts;
    },

    /** Brings a conversation's vocabulary up to date after its tags changed (only `changed`, when given). */
    refresh: vocabularies.refresh,

    /**
     * Records a manual alias, global or of one conversation, and rewrites the stored tags spelled `alias` in its
     * scope only (a global alias: every conversation, each to the spelling the alias reads as there). One
     * transaction. The tag is read through the aliases of the scope first, so the alias points at the final spelling.
     */
    async add(aliasIn: unknown, tagIn: unknown, scopeIn: unknown, nowIso: string): Promise<TagAlias> {
      const alias = spelling(aliasIn, 'alias', 'db');
      const wanted = spelling(tagIn, 'tag', 'database');
      const conversationId = scopeOf(scopeIn, 'aliases.add');
      const g = await globalMap();
      const l = conversationId === null ? null : await local(conversationId);
      const tag = resolve(l ? [l.manual, g, l.auto] : [g], wanted);
      if (tag === alias) {
        invalid('tag', wanted === alias
          ? `${JSON.stringify(alias)} and the tag are one tag once canonical (case, plurals and punctuation are folded): pass two different tags.`
          : `${JSON.stringify(wanted)} is already read as ${JSON.stringify(alias)} through existing aliases, so this one would make a loop: remove the alias that leads there first (see aliases.list()).`);
      }
      const entry: TagAlias = { alias, tag, source: 'manual', createdAt: nowIso, conversationId };
      const rewrites = await layers.rewritesOf(alias, tag, g, l && conversationId !== null ? { conversationId, own: l } : null);
      try {
        await store.addAlias(entry, rewrites);
      } finally {
        layers.drop(conversationId);
        for (const r of rewrites) vocabularies.drop(r.conversationId);
      }
      return entry;
    },

    /**
     * Removes an alias of one scope (global when no conversation is given); stored tags it rewrote stay. `nowIso`:
     * the removal's time (sync applies another replica's with its own).
     */
    async remove(aliasIn: unknown, scopeIn: unknown, nowIso = new Date().toISOString()): Promise<boolean> {
      const alias = spelling(aliasIn, 'alias', 'db');
      const conversationId = scopeOf(scopeIn, 'aliases.remove');
      try {
        return await store.removeAlias(conversationId, alias, nowIso);
      } finally {
        layers.drop(conversationId);
      }
    },

    /**
     * Applies manual alias states in order — an alias with add()'s result (at its `createdAt`; one add() refuses, a
     * loop or a spelling that names no tag, is left out), a removal with remove()'s — as if each were applied one at a
     * time, in one transaction after `also`: the alias maps and the stored tags the aliases are spelled as are read
     * once, and the rows written in a few statements, whatever the number of states. Resolves with, per state,
     * whether it changed something (false: a removal of an alias the scope lacks; null: refused). `also`: statements
     * of the caller's, written first in the same transaction. Sync applies another replica's aliases with it, a slice
     * at a time.
     *
     * @example
     * await canonicalizer.applyStates([
     *   { conversationId: null, alias: 'js', tag: 'javascript', createdAt: '2026-01-01T00:00:00.000Z' },
     *   { conversationId: 'c', alias: 'pg', tag: '', createdAt: '2026-01-02T00:00:00.000Z', removed: true },
     * ]); // → [true, false]
     */
    applyStates: stateApplier(store, layers, vocabularies),

    /** The global aliases, or those that apply in a conversation: the global ones, then its own (manual and learned). */
    async list(scopeIn: unknown): Promise<TagAlias[]> {
      const conversationId = scopeOf(scopeIn, 'aliases.list');
      return conversationId === null ? store.aliases() : store.aliases(conversationId);
    },

    /** Suggested aliases: see AliasApi.suggest. */
    async suggest(limitIn: unknown, scopeIn: unknown): Promise<AliasSuggestion[]> {
      const limit = limitOf(limitIn);
      const conversationId = scopeOf(scopeIn, 'aliases.suggest');
      return suggestAliases(limit, conversationId);
    },
  };
}

export type Canonicalizer = ReturnType<typeof createCanonicalizer>;
