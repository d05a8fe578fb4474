import { PagewiseError, isPagewiseError } from '../errors.js';
import { checkWellFormed, describe, validateConversationId } from '../messages.js';
import { isAliasCandidate, isAutoAlias, slug } from './canonicalize.js';
import { CACHED_CONVERSATIONS, Lru } from '../cache.js';
import type { AliasRewrite, TagAlias, TagStore } from './tag-store.js';

interface Vocab {
  counts: Map<string, number>;
  /** Tags by first letter and length, so a new tag is compared with a few known ones only. */
  buckets: Map<string, string[]>;
}

/** A conversation's own aliases, by source. */
interface Local {
  manual: Map<string, string>;
  auto: Map<string, string>;
}

function bucketKey(tag: string, length = tag.length): string {
  return `${tag[0]}${length}`;
}

/** A suggested alias: two tags that may name the same thing. */
export interface AliasSuggestion {
  alias: string;
  tag: string;
  /** Units carrying each, over the conversations where both spellings occur. */
  aliasUnits: number;
  tagUnits: number;
  /** In how many conversations both spellings occur (suggestions only pair tags of one conversation). */
  conversations: number;
}

/**
 * Tag aliases: `db` is read as `database`. A manual alias applies in every conversation, or in one when given
 * `{ conversationId }`; a learned (`'auto'`) alias applies only in the conversation whose content taught it. In a
 * conversation, its own manual aliases come first, then the global ones, then its learned ones. Arguments of any
 * other type, text that names no tag (`'!!!'`), lone surrogates and spellings over 128 characters are refused with
 * INVALID_ARGUMENT, and nothing changes.
 */
export interface AliasApi {
  /**
   * Records a manual alias and rewrites stored tags spelled that way, in its scope only (one transaction). Both are
   * canonicalized first; the alias must differ from the tag it reads as.
   */
  add(alias: string, tag: string, scope?: { conversationId?: string }): Promise<TagAlias>;
  /** Removes the global alias, or the conversation's own (manual or learned); tags it rewrote stay as they are. */
  remove(alias: string, scope?: { conversationId?: string }): Promise<boolean>;
  /** The global aliases; with a conversation, the global ones followed by that conversation's own. */
  list(scope?: { conversationId?: string }): Promise<TagAlias[]>;
  /**
   * Pairs of tags of one conversation that look like spellings of one thing (edit distance, prefixes, hyphens),
   * at most `limit` (an integer ≥ 1, default 50); over all conversations unless one is given.
   */
  suggest(limit?: number, scope?: { conversationId?: string }): Promise<AliasSuggestion[]>;
}

const MODULE = 'aliases';
/** The longest alias or tag accepted, in UTF-16 code units (a canonical tag is cut to 64 characters). */
export const MAX_ALIAS_LENGTH = 128;
const DEFAULT_SUGGESTIONS = 50;

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path}: ${message}`, { path });
}

/** A caller's alias or tag, canonical; anything that names no tag is INVALID_ARGUMENT. */
export function spelling(value: unknown, path: string, example: string): string {
  if (typeof value !== 'string') invalid(path, `must be a string such as "${example}" (got ${describe(value)}).`);
  if (value.length > MAX_ALIAS_LENGTH) {
    invalid(path, `is ${value.length} characters long, over ${MAX_ALIAS_LENGTH}: pass the tag's name (a word or a few), such as "${example}".`);
  }
  checkWellFormed(value, 'INVALID_ARGUMENT', path, MODULE);
  const canonical = slug(value);
  if (canonical === '') invalid(path, `has no letters or digits (got ${describe(value)}), so it names no tag. Pass a word such as "${example}".`);
  return canonical;
}

/** The optional last argument `{ conversationId }`: the conversation, or null for every conversation. */
function scopeOf(value: unknown, method: string): string | null {
  if (value === undefined) return null;
  const hint = `${method} takes an optional { conversationId } as its last argument (leave it out for every conversation)`;
  let field: PropertyDescriptor | undefined;
  try {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) invalid('scope', `${hint}; got ${describe(value)}.`);
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) invalid('scope', `${hint}; got an object that is not a plain object.`);
    for (const key of Reflect.ownKeys(value)) {
      // A misspelt key must not turn a per-conversation alias into a global one.
      if (key !== 'conversationId') invalid('scope', `${hint}; ${typeof key === 'string' ? describe(key) : 'a symbol'} is not an option.`);
    }
    field = Object.getOwnPropertyDescriptor(value, 'conversationId');
  } catch (error) {
    // A Proxy whose traps throw (or a revoked one).
    if (isPagewiseError(error)) throw error;
    invalid('scope', `${hint}; got an object that cannot be read.`);
  }
  if (field === undefined) return null;
  if (!('value' in field)) invalid('scope.conversationId', 'must be a plain property holding a string, not a getter.');
  return field.value === undefined ? null : validateConversationId(field.value, 'scope.conversationId');
}

function limitOf(value: unknown): number {
  if (value === undefined) return DEFAULT_SUGGESTIONS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    invalid('limit', `must be an integer ≥ 1 (got ${describe(value)}); leave it out for ${DEFAULT_SUGGESTIONS}.`);
  }
  return value;
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
  let global: Map<string, string> | null = null;
  // Per conversation, for the most recently used ones only: an engine may see any number of conversation ids.
  const locals = new Lru<string, Local>(CACHED_CONVERSATIONS);
  const vocabs = new Lru<string, Vocab>(CACHED_CONVERSATIONS);

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

  function forget(v: Vocab, tag: string): void {
    if (!v.counts.delete(tag)) return;
    const key = bucketKey(tag);
    const list = v.buckets.get(key)!.filter((t) => t !== tag);
    if (list.length > 0) v.buckets.set(key, list);
    else v.buckets.delete(key);
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

  /** Alias maps of a conversation, in the order they are tried. */
  const layersOf = async (conversationId: string): Promise<ReadonlyMap<string, string>[]> => {
    const l = await local(conversationId);
    return [l.manual, await globalMap(), l.auto];
  };

  return {
    /** Drops what is cached of a conversation (its tags or aliases were removed: forget). */
    uncache(conversationId: string): void {
      locals.delete(conversationId);
      vocabs.delete(conversationId);
    },

    /** Canonical, deduplicated tags of a conversation, in the order given; empty spellings are dropped. */
    async canonical(conversationId: string, raws: readonly string[], nowIso: string): Promise<string[]> {
      const layers = await layersOf(conversationId);
      const learned = (await local(conversationId)).auto;
      const v = await vocab(conversationId);
      const out: string[] = [];
      for (const raw of raws) {
        let tag = slug(raw);
        if (!tag) continue;
        tag = resolve(layers, tag);
        if (!v.counts.has(tag) && !layers.some((m) => m.has(tag))) {
          const known = autoAliasOf(v, tag);
          if (known !== null) {
            // Learned from this conversation's content: recorded for it, and rewrites nothing elsewhere.
            await store.addAlias({ alias: tag, tag: known, source: 'auto', createdAt: nowIso, conversationId }, [{ conversationId, tag: known }]);
            learned.set(tag, known);
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
      const rewrites: AliasRewrite[] = [];
      if (l && conversationId !== null) {
        rewrites.push({ conversationId, tag: resolve([new Map(l.manual).set(alias, tag), g, l.auto], alias) });
      } else {
        const next = new Map(g).set(alias, tag);
        for (const c of await store.conversationsWithTag(alias)) {
          const own = await local(c);
          rewrites.push({ conversationId: c, tag: resolve([own.manual, next, own.auto], alias) });
        }
      }
      try {
        await store.addAlias(entry, rewrites);
      } finally {
        if (conversationId === null) global = null;
        else locals.delete(conversationId);
        for (const r of rewrites) vocabs.delete(r.conversationId);
      }
      return entry;
    },

    /** Removes an alias of one scope (global when no conversation is given); stored tags it rewrote stay. */
    async remove(aliasIn: unknown, scopeIn: unknown): Promise<boolean> {
      const alias = spelling(aliasIn, 'alias', 'db');
      const conversationId = scopeOf(scopeIn, 'aliases.remove');
      try {
        return await store.removeAlias(conversationId, alias);
      } finally {
        if (conversationId === null) global = null;
        else locals.delete(conversationId);
      }
    },

    /** The global aliases, or those that apply in a conversation: the global ones, then its own (manual and learned). */
    async list(scopeIn: unknown): Promise<TagAlias[]> {
      const conversationId = scopeOf(scopeIn, 'aliases.list');
      return conversationId === null ? store.aliases() : store.aliases(conversationId);
    },

    /**
     * Pairs of tags of one conversation that look like spellings of one thing; the rarer one is proposed as the
     * alias. Over every conversation unless one is given: a pair counts only where both spellings occur in the same
     * conversation (tags of different users are not compared), summed over those conversations.
     */
    async suggest(limitIn: unknown, scopeIn: unknown): Promise<AliasSuggestion[]> {
      const limit = limitOf(limitIn);
      const conversationId = scopeOf(scopeIn, 'aliases.suggest');
      const groups = new Map<string, { tag: string; units: number }[]>();
      const aliased = new Map<string, Set<string>>();
      if (conversationId !== null) {
        groups.set(conversationId, (await store.vocabulary(conversationId)).map((t) => ({ tag: t.tag, units: t.units })));
        aliased.set(conversationId, new Set((await layersOf(conversationId)).flatMap((m) => [...m.keys()])));
      } else {
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
      }
      const pairs = new Map<string, { a: string; b: string; aUnits: number; bUnits: number; conversations: number }>();
      for (const [c, tags] of groups) {
        const skip = aliased.get(c)!;
        const byFirst = new Map<string, { tag: string; units: number }[]>();
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
      // The rarer spelling is the alias; on a tie, the one later in alphabetical order.
      const out = [...pairs.values()].map((p): AliasSuggestion => (p.aUnits < p.bUnits
        ? { alias: p.a, tag: p.b, aliasUnits: p.aUnits, tagUnits: p.bUnits, conversations: p.conversations }
        : { alias: p.b, tag: p.a, aliasUnits: p.bUnits, tagUnits: p.aUnits, conversations: p.conversations }));
      return out.sort((x, y) => y.aliasUnits + y.tagUnits - (x.aliasUnits + x.tagUnits) || (x.alias < y.alias ? -1 : x.alias > y.alias ? 1 : 0)
        || (x.tag < y.tag ? -1 : 1)).slice(0, limit);
    },
  };
}

export type Canonicalizer = ReturnType<typeof createCanonicalizer>;
