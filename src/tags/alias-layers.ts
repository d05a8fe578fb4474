import { CACHED_CONVERSATIONS, Lru } from '../common/cache.js';
import type { AliasChanges, AliasRewrite, TagAlias, TagStore } from './tag-store.js';

/** A conversation's own aliases, by source. */
export interface Local {
  manual: Map<string, string>;
  auto: Map<string, string>;
}

/** An alias map as resolve reads it (a Map, or a view of one). */
export type AliasLookup = Pick<ReadonlyMap<string, string>, 'get'>;

/**
 * The spelling `start` is read as, through alias maps tried in order at each step (a conversation's manual aliases,
 * then the global ones, then the ones it learned), followed until no alias changes it; a cycle stops before it
 * comes back.
 */
export function resolve(layers: readonly AliasLookup[], start: string): string {
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

    /** The own aliases of many conversations: the cached ones, and the others read at once (and cached). */
    async localsOf(conversationIds: Iterable<string>): Promise<Map<string, Local>> {
      const out = new Map<string, Local>();
      const read: string[] = [];
      for (const c of conversationIds) {
        const l = locals.get(c);
        if (l) out.set(c, l);
        else if (!out.has(c)) { out.set(c, { manual: new Map(), auto: new Map() }); read.push(c); }
      }
      for (const a of read.length > 0 ? await store.ownAliasesOf(read) : []) out.get(a.conversationId!)![a.source].set(a.alias, a.tag);
      for (const c of read) locals.set(c, out.get(c)!);
      return out;
    },

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

/** A manual alias's state: the alias (`alias` → `tag`) or, `removed`, its removal; `createdAt`: when. */
export interface AliasState {
  /** null: a global alias. */
  conversationId: string | null;
  alias: string;
  tag: string;
  createdAt: string;
  removed?: boolean;
}

// ---- Many manual alias states applied at once, in memory, with the result of add() and remove() one at a time ----

// An alias reads as a shared cell: add() points every alias of its scope that read as `alias` at its tag (an UPDATE
// of the rows), here one link of `alias`'s cell under the tag's, so a chain of adds costs no more than its length.
interface Cell { tag: string; up: Cell | null }

function rootOf(cell: Cell): Cell {
  let root = cell;
  while (root.up) root = root.up;
  for (let c = cell; c.up && c.up !== root;) {
    const next: Cell = c.up;
    c.up = root;
    c = next;
  }
  return root;
}

/**
 * One scope's aliases while states are applied, as add() and remove() leave its rows: what changed, over the maps as
 * cached (never copied: a slice costs what it changes, not what the scope holds), written back to them by commit().
 */
class ScopeAliases {
  /** Aliases written here (with their time) or deleted (null). */
  private readonly changed = new Map<string, { cell: Cell; at: string } | null>();
  /** The root cell of each spelling that has one, and the first cell of each: stored aliases of that tag read through it. */
  private readonly roots = new Map<string, Cell>();
  private readonly firsts = new Map<string, Cell>();
  /** Whether an add ran here: the stored self-aliases are gone (add() deletes them). */
  private added = false;

  constructor(readonly conversationId: string | null, private readonly stored: Local) {}

  get touched(): boolean {
    return this.changed.size > 0;
  }

  private cell(tag: string): Cell {
    let c = this.roots.get(tag);
    if (!c) {
      this.roots.set(tag, (c = { tag, up: null }));
      if (!this.firsts.has(tag)) this.firsts.set(tag, c);
    }
    return c;
  }

  /** The alias's source and the tag it reads as now, if the scope has it. */
  private entry(alias: string): { tag: string; source: TagAlias['source'] } | undefined {
    const c = this.changed.get(alias);
    if (c === null) return undefined;
    if (c) return { tag: rootOf(c.cell).tag, source: 'manual' };
    const manual = this.stored.manual.get(alias);
    const source = manual !== undefined ? 'manual' : 'auto';
    const tag = manual ?? this.stored.auto.get(alias);
    if (tag === undefined || (this.added && tag === alias)) return undefined;
    const first = this.firsts.get(tag);
    return { tag: first ? rootOf(first).tag : tag, source };
  }

  get(alias: string, source?: TagAlias['source']): string | undefined {
    const e = this.entry(alias);
    return e && (source === undefined || e.source === source) ? e.tag : undefined;
  }

  view(source?: TagAlias['source']): AliasLookup {
    return { get: (alias) => this.get(alias, source) };
  }

  /** add()'s rows: the alias (replacing one of its spelling), aliases that read as it read as its tag, no self-alias. */
  add(alias: string, tag: string, at: string): void {
    this.changed.set(alias, { cell: this.cell(tag), at });
    // Stored aliases of tag `alias` read through its first cell: made now if it is not there yet.
    const old = this.roots.get(alias) ?? (this.firsts.has(alias) ? undefined : this.cell(alias));
    if (old) {
      this.roots.delete(alias);
      old.up = this.cell(tag);
    }
    this.added = true;
    // Only `tag` can have become a self-alias (stored ones went with the first add).
    if (this.get(tag) === tag) this.changed.set(tag, null);
  }

  /** remove()'s rows: the alias's source if the scope had it (it is gone), or null. */
  remove(alias: string): TagAlias['source'] | null {
    const e = this.entry(alias);
    if (!e) return null;
    this.changed.set(alias, null);
    return e.source;
  }

  /** Stored tags that read as another now, each before any that leads to it (see AliasChanges). */
  private retags(): [string, string][] {
    const to = new Map<string, string>();
    for (const [tag, first] of this.firsts) if (rootOf(first).tag !== tag) to.set(tag, rootOf(first).tag);
    const out: [string, string][] = [];
    const done = new Set<string>();
    const visit = (tag: string): void => {
      if (done.has(tag)) return;
      done.add(tag);
      if (to.has(to.get(tag)!)) visit(to.get(tag)!);
      out.push([tag, to.get(tag)!]);
    };
    for (const tag of to.keys()) visit(tag);
    return out;
  }

  /** The rows that change. */
  changes(): AliasChanges['aliases'][number] {
    const out: AliasChanges['aliases'][number] = { conversationId: this.conversationId, deleted: [], written: [], retagged: this.retags(), loops: this.added };
    for (const [alias, c] of this.changed) {
      if (c === null) out.deleted.push(alias);
      else out.written.push([alias, rootOf(c.cell).tag, c.at]);
    }
    return out;
  }

  /** Writes the changes into the cached maps given (once the rows are written): they read as the rows do. */
  commit(retagged: readonly [string, string][]): void {
    const to = new Map(retagged);
    for (const map of [this.stored.manual, this.stored.auto]) {
      if (to.size === 0 && !this.added) break;
      for (const [alias, tag] of map) {
        if (this.added && alias === tag) map.delete(alias);
        else if (to.has(tag)) map.set(alias, to.get(tag)!);
      }
    }
    for (const [alias, c] of this.changed) {
      this.stored.auto.delete(alias);
      if (c === null) this.stored.manual.delete(alias);
      else this.stored.manual.set(alias, rootOf(c.cell).tag);
    }
  }
}

// A conversation's stored tags while states are applied: for each spelling, the read spellings whose units sit there
// now, in the precedence add()'s rewrites gave them (a unit that already carries the target keeps its row: INSERT OR
// IGNORE), as a list that a rewrite appends to another in one step. A spelling not read is never rewritten itself:
// its own units, if any, stay first wherever others join them.
interface Member { spelling: string; next: Member | null }
interface Group { head: Member; tail: Member }

class StoredTags {
  private readonly groups = new Map<string, Group>();
  /** Tags recounted, with the time of the last rewrite that touched each. */
  readonly restat = new Map<string, string>();

  /** `present`: the read spellings it has units of; `read`: every spelling read; `holders`: kept current. */
  constructor(readonly conversationId: string, present: readonly string[], private readonly read: ReadonlySet<string>, private readonly holders: Map<string, Set<string>>) {
    for (const s of present) {
      const m = { spelling: s, next: null };
      this.groups.set(s, { head: m, tail: m });
    }
  }

  /** A rewrite of the units spelled `from` to `to` at `at` (both tags recounted then). */
  move(from: string, to: string, at: string): void {
    this.restat.set(from, at).set(to, at);
    const src = this.groups.get(from);
    if (!src) return;
    this.groups.delete(from);
    this.holders.get(from)?.delete(this.conversationId);
    const dst = this.groups.get(to);
    if (dst) {
      dst.tail.next = src.head;
      dst.tail = src.tail;
    } else {
      this.groups.set(to, src);
    }
    if (this.read.has(to)) {
      const set = this.holders.get(to);
      if (set) set.add(this.conversationId);
      else this.holders.set(to, new Set([this.conversationId]));
    }
  }

  /** Per spelling, the spellings whose units move there (a spelling's own units, first in precedence, stay). */
  moves(): AliasChanges['moves'] {
    const out: AliasChanges['moves'] = [];
    for (const [tag, g] of this.groups) {
      const from: string[] = [];
      for (let m: Member | null = g.head; m; m = m.next) from.push(m.spelling);
      if (from[0] === tag) from.shift();
      if (from.length > 0) out.push({ conversationId: this.conversationId, tag, from });
    }
    return out;
  }
}

/** What applying alias states does: per state, applied (true), nothing to do (false) or refused (null); the rows. */
export interface AliasPlan extends AliasChanges {
  applied: (boolean | null)[];
  /** Scopes whose aliases changed. */
  scopes: (string | null)[];
  /** Brings the maps given to planStates to what the rows hold once written (on failure, drop them instead). */
  commit(): void;
}

/**
 * Applies `states` in order to the alias maps and stored tags given, as add() (an alias: refused, null, when it
 * would read as itself) and remove() (a removal) would one at a time, and gives the rows that change. States are
 * checked (canonical spellings; null: refused). `holders`: for every alias spelling of the states (`read`), the
 * conversations with units spelled so; `locals`: the own aliases of those conversations and of the states' scopes.
 */
export function planStates(states: readonly (AliasState | null)[], global: Map<string, string>, locals: ReadonlyMap<string, Local>, holders: Map<string, Set<string>>, read: ReadonlySet<string>): AliasPlan {
  const g = new ScopeAliases(null, { manual: global, auto: new Map() });
  const scopes = new Map<string, ScopeAliases>();
  const scope = (c: string) => scopes.get(c) ?? scopes.set(c, new ScopeAliases(c, locals.get(c) ?? { manual: new Map(), auto: new Map() })).get(c)!;
  const present = new Map<string, string[]>();
  for (const [tag, set] of holders) {
    for (const c of set) {
      const list = present.get(c);
      if (list) list.push(tag);
      else present.set(c, [tag]);
    }
  }
  const stored = new Map<string, StoredTags>();
  const tagsOf = (c: string) => stored.get(c) ?? stored.set(c, new StoredTags(c, present.get(c) ?? [], read, holders)).get(c)!;
  const removals = new Map<string, AliasChanges['removals'][number]>();
  const rewritten = new Set<string>();

  const applied = states.map((s) => {
    if (!s) return null;
    const sc = s.conversationId === null ? g : scope(s.conversationId);
    const key = `${s.conversationId ?? ''}\u0000${s.alias}`;
    if (s.removed) {
      const source = sc.remove(s.alias);
      if (source === 'manual') removals.set(key, { conversationId: s.conversationId, alias: s.alias, at: s.createdAt });
      return source !== null;
    }
    const tag = resolve(s.conversationId === null ? [g] : [sc.view('manual'), g, sc.view('auto')], s.tag);
    if (tag === s.alias) return null;
    // add()'s rewrites, read from the maps before it.
    const rewrites: [string, string][] = [];
    if (s.conversationId === null) {
      const next = { get: (k: string) => (k === s.alias ? tag : g.get(k)) };
      for (const c of [...(holders.get(s.alias) ?? [])].sort()) rewrites.push([c, resolve([scope(c).view('manual'), next, scope(c).view('auto')], s.alias)]);
    } else {
      rewrites.push([s.conversationId, resolve([{ get: (k: string) => (k === s.alias ? tag : sc.get(k, 'manual')) }, g, sc.view('auto')], s.alias)]);
    }
    sc.add(s.alias, tag, s.createdAt);
    removals.set(key, { conversationId: s.conversationId, alias: s.alias, at: null });
    for (const [c, to] of rewrites) {
      if (to === s.alias) continue;
      tagsOf(c).move(s.alias, to, s.createdAt);
      rewritten.add(c);
    }
    return true;
  });

  const changed = [g, ...scopes.values()].filter((s) => s.touched);
  const aliases = changed.map((s) => s.changes());
  return {
    applied,
    aliases,
    scopes: changed.map((s) => s.conversationId),
    commit: () => changed.forEach((s, i) => s.commit(aliases[i]!.retagged)),
    removals: [...removals.values()],
    moves: [...stored.values()].flatMap((t) => t.moves()),
    restat: [...stored.values()].flatMap((t) => [...t.restat].map(([tag, at]) => ({ conversationId: t.conversationId, tag, at }))),
    rewritten: [...rewritten],
  };
}
