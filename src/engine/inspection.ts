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

    turns(id, range) {
      return on(() => validateConversationId(id), async (conversationId) => {
        const { from = 0, limit = 1000, branch } = optionalObject(range, 'range') as { from?: unknown; limit?: unknown; branch?: unknown };
        if (!(await store.conversation(conversationId))) {
          throw new PagewiseError('CONVERSATION_NOT_FOUND', MODULE, `No conversation ${describe(conversationId)} is stored. List them with memory.conversations().`);
        }
        if (!Number.isSafeInteger(from) || (from as number) < 0 || !Number.isSafeInteger(limit) || (limit as number) < 1) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, `range.from must be an integer ≥ 0 and range.limit an integer ≥ 1 (got ${describe(from)}, ${describe(limit)}).`, { path: 'range' });
        }
        if (branch !== undefined) return (await d.pathTurns(conversationId, checkId(branch, 'range.branch'), from as number, limit as number)).map(publicTurn);
        return (await store.range(conversationId, from as number, limit as number)).map(publicTurn);
      });
    },

    tags(id) {
      return on(() => validateConversationId(id), (conversationId) => tagStore.vocabulary(conversationId));
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
