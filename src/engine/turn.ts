// onTurnComplete: after the response, what is new of the turn is stored (verbatim, once), indexed, queued for its
// vectors, and compacted when the conversation is over a threshold.
import type { Background } from '../common/background.js';
import type { Atomic, Compactor } from '../compaction/compactor.js';
import type { Semantic } from '../embed/semantic.js';
import type { BackgroundJobs, Hints, Stores } from './parts.js';
import type { EngineQueue } from './queue.js';
import { checkObject, newTurns } from './support.js';
import { PagewiseError } from '../contracts/errors.js';
import type { Memory } from '../contracts/memory.js';
import { contentHash, describe, messageText, readArray, validateConversationId, validateMessage } from '../common/messages.js';
import type { ResolvedOptions } from './options.js';
import { warmDateParser } from '../retrieval/intent.js';
import { storedOverlap } from '../store/reconcile.js';
import { appendAt, placeOf, readParent, type Branching } from './branches.js';
import type { NewTurn } from '../store/turn-store.js';
import type { TagIndex } from '../tags/tag-index.js';
import { countCacheKey } from '../tokens/chat-format.js';
import { sentMessageText } from '../tokens/message-cost.js';
import { type StoredMessage, broughtIds, ownNamed, toStored } from './attachments.js';
import type { CompactionReport, Tokenizer, TurnReport } from '../contracts/types.js';

const MODULE = 'engine';

export type TurnCompleteDeps = Pick<Stores, 'store' | 'ledger' | 'attachments'> & {
  opts: ResolvedOptions;
  on: EngineQueue['on'];
  tokenizer: () => Promise<Tokenizer>;
  index: TagIndex;
  semantic: Semantic;
  hints: Hints;
  compactor: Compactor;
  background: Background;
  jobs: Pick<BackgroundJobs, 'compactLater'>;
  branching: Branching;
};

// A hard compaction runs inside the operation that found it due, which already holds the conversation's key.
const inline: Atomic = (fn) => fn();

/** The Memory API's write path. */
export function turnCompleteApi(d: TurnCompleteDeps): Pick<Memory, 'onTurnComplete'> {
  return {
    onTurnComplete(input) {
      let args: Record<string, unknown>;
      return d.on(() => validateConversationId((args = checkObject(input, 'onTurnComplete')).conversationId), (conversationId) => turnComplete(d, conversationId, args));
    },
  };
}

async function turnComplete(d: TurnCompleteDeps, conversationId: string, args: Record<string, unknown>): Promise<TurnReport> {
  const { store } = d;
  const list = readArray(args.messages, 'messages');
  if (!list || list.length === 0) {
    throw new PagewiseError('INVALID_ARGUMENT', MODULE, `messages must be a non-empty array of the turn's messages (got ${describe(args.messages)}).`, { path: 'messages' });
  }
  const checked = list.map((m, i) => validateMessage(m, `messages[${i}]`, d.opts.maxMessageBytes, d.opts.maxAttachmentBytes));
  // An attachment named by id must be this conversation's (or come with its bytes in this call): checked before anything is written.
  const messages = await ownNamed(checked, d.attachments, conversationId, (i) => `messages[${i}]`, await broughtIds(checked));
  const hashes = await Promise.all(messages.map(contentHash));
  const keys = messages.map((m, i) => ({ id: m.id, contentHash: hashes[i]! }));
  // Where they go in the conversation's tree: after the message `parentId` names, a stored id, or the stored tail they repeat.
  const placed = await placeOf(d.branching, conversationId, keys, { parentId: readParent(args.parentId) });
  const from = placed ? placed.next : storedOverlap((await store.before(conversationId, Number.MAX_SAFE_INTEGER, messages.length)).reverse(), keys);
  const fresh = await newTurns(store, conversationId, messages, hashes, from);
  const tok = await d.tokenizer();
  const now = new Date();
  // Attachments by id, their bytes beside.
  const stored = await Promise.all(fresh.map(({ message }) => toStored(message, d.attachments)));
  const turns = fresh.map(({ hash }, i) => newTurn(stored[i]!, hash, now, tok));
  // Nothing new, and where they lead is on the current branch already: a retry, not a switch.
  const retry = placed !== null && turns.length === 0 && placed.at !== null && placed.at.seq >= 0;
  const at = await appendAt(d.branching, conversationId, retry ? null : placed, turns[0]?.id ?? '', now.toISOString());
  if (turns.length > 0) await store.append(conversationId, turns, countCacheKey(tok), now.toISOString(), at.append);
  else if (at.append.before && at.append.before.length > 0) await d.branching.driver.batch(at.append.before);
  if (at.moved !== null) {
    d.branching.uncache(conversationId, at.moved);
    await d.branching.after(conversationId);
  }
  let compaction: CompactionReport | null = null;
  if ((await store.turnCount(conversationId)) > 0) compaction = await afterStore(d, conversationId, turns.length > 0, now, tok);
  await d.ledger.flush();
  return {
    conversationId,
    stored: turns.length,
    skipped: messages.length - turns.length,
    storedIds: turns.map((t) => t.id),
    totalTurns: await store.turnCount(conversationId),
    compaction,
  };
}

function newTurn({ message, attachments, refs }: StoredMessage, hash: string, now: Date, tok: Tokenizer): NewTurn {
  const createdMs = message.createdAt ? Date.parse(message.createdAt) : now.getTime();
  return {
    message,
    attachments,
    refs,
    id: message.id ?? `pw_${crypto.randomUUID()}`,
    text: messageText(message),
    contentHash: hash,
    createdAt: new Date(createdMs).toISOString(),
    createdMs,
    // The text a model reads when the turn is sent again (its attachments are counted apart, by the provider's rule).
    tokens: tok.count(sentMessageText(message)),
  };
}

/** Indexing, vectors, the hint and compaction once the turns are stored; the report of a hard compaction, or null. */
async function afterStore(d: TurnCompleteDeps, conversationId: string, stored: boolean, now: Date, tok: Tokenizer): Promise<CompactionReport | null> {
  const { compactor } = d;
  await d.index.indexNew(conversationId, now.toISOString());
  if (stored) d.semantic.schedule(conversationId);
  // Refreshed here, after the response, so that the next question does not wait for it.
  await d.hints.hintFor(conversationId, tok);
  warmDateParser();
  if (d.opts.compaction && stored) {
    const due = compactor.due(await compactor.pressure(conversationId));
    // Hard: before returning, inside this operation. Soft: in the background, between later operations.
    if (due === 'hard') return compactor.compact(conversationId, 'hard', inline, d.background.signal);
    if (due === 'soft') d.jobs.compactLater(conversationId);
  }
  return null;
}
