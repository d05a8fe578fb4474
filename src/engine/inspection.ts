// The inspection side of the Memory API: what is stored (conversations, turns, tags, topics), the aliases, and how
// much of a conversation has vectors.
import type { Semantic } from '../embed/semantic.js';
import type { Hints, Stores } from './parts.js';
import type { EngineQueue } from './queue.js';
import { checkId, optionalObject } from './support.js';
import type { PathTurns } from './branches.js';
import { PagewiseError } from '../contracts/errors.js';
import type { Memory } from '../contracts/memory.js';
import { describe, validateConversationId } from '../common/messages.js';
import { mainTopics } from '../retrieval/broad.js';
import { publicTurn } from '../store/turn-store.js';
import { asksPage, cursorOf, pageBudget, pageOf, readPage } from '../common/pages.js';
import type { Page } from '../contracts/types-ops.js';
import type { StoredTurn } from '../contracts/types.js';
import type { TagStat } from '../tags/tag-store.js';

const MODULE = 'engine';
const DEFAULT_TOPICS = 24;
// Each topic asked for reads up to four tags' sentences with compromise (a first call), so the list is bounded.
const MAX_TOPICS = 200;
/**
 * Up to this many exchanges a thing said once is one of the conversation's topics (ten messages about ten things are
 * about all ten: a trip to Japan, a Postgres migration, a dog); past it, only what came back is (mainTopics).
 */
const SHORT_CONVERSATION = 16;

export type InspectionDeps = Pick<Stores, 'store' | 'tagStore' | 'canonicalizer' | 'thingJudge'> & Pick<EngineQueue, 'serial' | 'on'> & {
  semantic: Semantic;
  hints: Pick<Hints, 'delete' | 'clear'>;
  /** Another branch's turns (`range.branch`). */
  pathTurns: PathTurns;
};

type InspectionMethods = Pick<Memory, 'conversations' | 'turns' | 'tags' | 'topics' | 'aliases' | 'embeddingStatus'>;

export function inspectionApi(d: InspectionDeps): InspectionMethods {
  const { store, tagStore, canonicalizer, serial, on } = d;
  return {
    conversations() {
      return serial(() => store.conversations());
    },

    turns(id: string, range?: unknown) {
      return on(() => validateConversationId(id), async (conversationId) => {
        if (asksPage(range)) return turnsPage(d, conversationId, range) as never;
        const { from = 0, limit = 1000, branch } = optionalObject(range, 'range') as { from?: unknown; limit?: unknown; branch?: unknown };
        if (!(await store.conversation(conversationId))) {
          throw new PagewiseError('CONVERSATION_NOT_FOUND', MODULE, `No conversation ${describe(conversationId)} is stored. List them with memory.conversations().`);
        }
        if (!Number.isSafeInteger(from) || (from as number) < 0 || !Number.isSafeInteger(limit) || (limit as number) < 1) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `range.from must be an integer ≥ 0 and range.limit an integer ≥ 1 (got ${describe(from)}, ${describe(limit)}).`, { path: 'range' });
        }
        if (branch !== undefined) return (await d.pathTurns(conversationId, checkId(branch, 'range.branch'), from as number, limit as number)).map(publicTurn);
        return (await store.range(conversationId, from as number, limit as number)).map(publicTurn);
      }) as never;
    },

    tags(id, page?: unknown) {
      return on(() => validateConversationId(id), async (conversationId) => {
        if (!asksPage(page)) return tagStore.vocabulary(conversationId);
        const { limit, at } = readPage('tags', conversationId, '', page, (x): x is string => typeof x === 'string');
        const { items, more } = pageOf(await tagStore.vocabularyAfter(conversationId, at ?? '', limit + 1), limit);
        return { items, cursor: more ? cursorOf('tags', conversationId, '', items[items.length - 1]!.tag) : null };
      }) as never;
    },

    topics(id, options) {
      return on(() => validateConversationId(id), (conversationId) => {
        const { limit = DEFAULT_TOPICS } = optionalObject(options, 'options') as { limit?: unknown };
        if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_TOPICS) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `options.limit must be an integer from 1 to ${MAX_TOPICS} (got ${describe(limit)}); leave it out for ${DEFAULT_TOPICS}.`, { path: 'options.limit' });
        }
        return topicsOf(d, conversationId, limit);
      });
    },

    aliases: {
      // Arguments are checked by the canonicalizer, inside the queue: a bad one is a rejected promise. Exclusive: the
      // scope is only known once the canonicalizer has read it, and a global alias changes every conversation.
      add: (alias, tag, scope) => serial(async () => {
        const added = await canonicalizer.add(alias, tag, scope, new Date().toISOString());
        if (added.conversationId === null) d.hints.clear();
        else d.hints.delete(added.conversationId);
        return added;
      }),
      remove: (alias, scope) => serial(() => canonicalizer.remove(alias, scope)),
      list: (scope) => serial(() => canonicalizer.list(scope)),
      suggest: (limit, scope) => serial(() => canonicalizer.suggest(limit, scope)),
    },

    embeddingStatus(id) {
      return on(() => validateConversationId(id), async (conversationId) => {
        const status = await d.semantic.status(conversationId);
        // Asking is a sign of interest: vectors a reload left missing are queued (as a first question would).
        if (status.embedded < status.total) d.semantic.touch(conversationId);
        return status;
      });
    },
  };
}

// Turns read per query while a page fills (a page stops at the byte cap long before 10,000 large turns).
const TURN_CHUNK = 256;
type TurnKey = [id: string, position: number];
const isTurnKey = (x: unknown): x is TurnKey => Array.isArray(x) && x.length === 2 && typeof x[0] === 'string' && Number.isSafeInteger(x[1]) && (x[1] as number) >= 0;

/**
 * A page of the current path's turns (or of the path through `branch`). The cursor keys on the last turn given: the
 * next page goes on after it on the path as it is then. Positions on the path do not shift as the conversation grows;
 * a checkout that takes that turn off the path makes the cursor refused (list again from the first page).
 */
async function turnsPage(d: Pick<InspectionDeps, 'store' | 'pathTurns'>, conversationId: string, options: { cursor: unknown; limit?: unknown; branch?: unknown; from?: unknown }): Promise<Page<StoredTurn>> {
  if (options.from !== undefined) throw new PagewiseError('INVALID_ARGUMENT', MODULE, 'page.from is for the list without cursor: a page starts where its cursor says (null: the start).', { path: 'page.from' });
  const branch = options.branch === undefined ? undefined : checkId(options.branch, 'page.branch');
  const { limit, at } = readPage('turns', conversationId, branch ?? '', options, isTurnKey);
  if (!(await d.store.conversation(conversationId))) {
    throw new PagewiseError('CONVERSATION_NOT_FOUND', MODULE, `No conversation ${describe(conversationId)} is stored. List them with memory.conversations().`);
  }
  let from = at === null ? 0 : at[1] + 1;
  if (at !== null && branch === undefined) {
    const [last] = await d.store.byIds(conversationId, [at[0]]);
    if (last && last.seq < 0) {
      throw new PagewiseError('INVALID_ARGUMENT', MODULE, `The turn this cursor stopped at (${describe(at[0])}) is no longer on the conversation's current branch (a checkout or an edit moved it): list again from { cursor: null }, or pass { branch } to page through another branch.`, { path: 'page.cursor' });
    }
    // A forgotten turn leaves its position empty: the page goes on from there.
    if (last) from = last.seq + 1;
  }
  if (branch !== undefined) return branchPage(d, conversationId, branch, limit, at);
  const read = (start: number, n: number) => d.store.range(conversationId, start, n);
  const budget = pageBudget();
  const items: StoredTurn[] = [];
  let more = false;
  for (;;) {
    const want = Math.min(TURN_CHUNK, limit - items.length) + 1;
    const rows = await read(from, want);
    const taken = rows.slice(0, want - 1).map(publicTurn);
    let k = 0;
    while (k < taken.length && budget.fits(taken[k])) items.push(taken[k++]!);
    if (k < taken.length || items.length >= limit) {
      more = rows.length > k;
      break;
    }
    if (rows.length < want) break;
    from = taken[taken.length - 1]!.seq + 1;
  }
  const last = items[items.length - 1];
  return { items, cursor: more && last ? cursorOf('turns', conversationId, branch ?? '', [last.id, last.seq] satisfies TurnKey) : null };
}

/**
 * A page of the path through `branch`, read once (the path is worked out from the whole tree on each read). That path
 * runs on to the turn written last below the branch, so a turn written since may re-route it: the cursor's turn must
 * still be where it was, else the cursor is refused rather than mixing two paths.
 */
async function branchPage(d: Pick<InspectionDeps, 'pathTurns'>, conversationId: string, branch: string, limit: number, at: TurnKey | null): Promise<Page<StoredTurn>> {
  const rows = await d.pathTurns(conversationId, branch, at === null ? 0 : at[1], limit + (at === null ? 1 : 2));
  if (at !== null && rows.shift()?.id !== at[0]) {
    throw new PagewiseError('INVALID_ARGUMENT', MODULE, `The turn this cursor stopped at (${describe(at[0])}) is no longer at its place on the path through ${describe(branch)} (a message written since re-routed it, or it was forgotten): list again from { cursor: null }.`, { path: 'page.cursor' });
  }
  const budget = pageBudget();
  const items: StoredTurn[] = [];
  for (const row of rows.slice(0, limit)) {
    const turn = publicTurn(row);
    if (!budget.fits(turn)) break;
    items.push(turn);
  }
  const last = items[items.length - 1];
  return { items, cursor: rows.length > items.length && last ? cursorOf('turns', conversationId, branch, [last.id, last.seq] satisfies TurnKey) : null };
}

/**
 * The topics of mainTopics (things on more than one exchange, most used first), then — in a short conversation, while
 * there is room — the things said once: each exchange's first, then each one's second, …, in the order they were
 * said, so every exchange is named before one is named twice.
 */
async function topicsOf(d: Pick<InspectionDeps, 'tagStore' | 'thingJudge'>, conversationId: string, limit: number): Promise<TagStat[]> {
  const main = await mainTopics({ tags: d.tagStore, things: d.thingJudge }, conversationId, limit);
  if (main.length >= limit || (await d.tagStore.unitCount(conversationId)) > SHORT_CONVERSATION) return main;
  const once = (await d.tagStore.vocabulary(conversationId)).filter((t) => t.units === 1);
  const verdicts = await d.thingJudge.judge(conversationId, once);
  const byExchange = new Map<number, TagStat[]>();
  for (const [i, t] of once.entries()) if (verdicts[i]) byExchange.set(t.firstSeq, [...(byExchange.get(t.firstSeq) ?? []), t]);
  const exchanges = [...byExchange].sort(([a], [b]) => a - b).map(([, tags]) => tags);
  const picked: TagStat[] = [];
  for (let round = 0; picked.length < limit - main.length && exchanges.some((tags) => round < tags.length); round++) {
    for (const tags of exchanges) if (round < tags.length && picked.length < limit - main.length) picked.push(tags[round]!);
  }
  return [...main, ...picked];
}
