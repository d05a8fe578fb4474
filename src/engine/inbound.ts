// onMessageInbound: before the LLM request, the question is analyzed (tags, words, its vector), the history that fits
// is chosen, memory is recalled and the context assembled; then what was used is recorded.
import { type HistoryItem, type SummaryCandidate, assemble } from '../assembly/assembler.js';
import { stemsOf } from '../assembly/passages.js';
import { summaryPlan } from '../compaction/summary-plan.js';
import { workingView } from '../assembly/working-view.js';
import type { QueryVector, Semantic } from '../embed/semantic.js';
import type { BackgroundJobs, Hints, Stores } from './parts.js';
import type { EngineQueue } from './queue.js';
import { checkObject } from './support.js';
import { PagewiseError } from '../contracts/errors.js';
import { type HistoryView, callerHistory, itemFor, storedHistory } from './history.js';
import type { Memory } from '../contracts/memory.js';
import { contentHash, describe, messageText, parseNow, readArray, validateConversationId, validateMessage } from '../common/messages.js';
import type { ResolvedOptions } from './options.js';
import { sampleBroad } from '../retrieval/broad.js';
import { type QueryAnalysis, analyzeQuery } from '../retrieval/query.js';
import { PER_CHANNEL, type RankTrace, type RecallBlock, type RecallResult, recall } from '../retrieval/retriever.js';
import { FEATURES, asksOf } from '../retrieval/ranking.js';
import type { TagIndex } from '../tags/tag-index.js';
import type { TagRules } from '../tags/tag-rules.js';
import { TOKENS_PER_REQUEST } from '../tokens/chat-format.js';
import { messageCost } from '../tokens/message-cost.js';
import type { AssembledContext, ChatMessage, CompressionKind, MediaRule, Tokenizer } from '../contracts/types.js';
import type { TurnRecord } from '../store/turn-store.js';
import { reasoningText } from '../common/parts.js';
import { ownNamed, withBytes, withoutAbsent } from './attachments.js';
import { reattach } from './recall-attachments.js';
import { ftsMatch } from '../text/fts-words.js';
import { type Branching, placeRequest } from './branches.js';
import type { Search, Searched } from '../search/search.js';
import { lookupOf } from './search-api.js';

const MODULE = 'engine';
const RECALL_HITS = 16;
// Excerpts of the branches the conversation left, at most (`branches: 'all'`).
const OTHER_BRANCH_HITS = 4;

export type InboundDeps = Pick<Stores, 'store' | 'tagStore' | 'canonicalizer' | 'thingJudge' | 'summaryStore' | 'importance' | 'attachments'> & {
  opts: ResolvedOptions;
  on: EngineQueue['on'];
  tokenizer: () => Promise<Tokenizer>;
  semantic: Semantic;
  index: TagIndex;
  rules: TagRules;
  hints: Hints;
  jobs: Pick<BackgroundJobs, 'regenerateLater'>;
  branching: Branching;
  /** External search, when the option is set. */
  search: Search | null;
};

/** The Memory API's request path. */
export function inboundApi(d: InboundDeps): Pick<Memory, 'onMessageInbound'> {
  return {
    onMessageInbound(input) {
      let args: Record<string, unknown>;
      return d.on(() => validateConversationId((args = checkObject(input, 'onMessageInbound')).conversationId), (conversationId) => inbound(d, conversationId, args));
    },
  };
}

async function inbound(d: InboundDeps, conversationId: string, args: Record<string, unknown>): Promise<AssembledContext> {
  const { opts } = d;
  const asked = validateMessage(args.message, 'message', opts.maxMessageBytes, opts.maxAttachmentBytes);
  const history = args.history === undefined ? undefined : readArray(args.history, 'history');
  if (args.history !== undefined && !history) {
    throw new PagewiseError('INVALID_ARGUMENT', MODULE, `history must be an array of messages (got ${describe(args.history)}).`, { path: 'history' });
  }
  const how = requestOptions(args, opts.mediaTokens);
  // Attachments named by id must be this conversation's; they are counted by the store's facts.
  const [message, ...after] = await ownNamed([asked, ...readAfter(args.after, opts)], d.attachments, conversationId, (i) => (i === 0 ? 'message' : `after[${i - 1}]`), new Set());
  if (!message) throw new PagewiseError('INVALID_ARGUMENT', MODULE, 'message is missing.', { path: 'message' });
  const now = parseNow(args.now);
  // The branch the request is on: recall reads the path to where the new message goes, never the branch left
  // (the last check of the input; a move is the first write).
  await placeRequest(d.branching, conversationId, args, history, [message, ...after], opts);
  const nowIso = new Date(now).toISOString();
  const tok = await d.tokenizer();
  const text = messageText(message);
  // The search step (its network wait) runs while the question is understood and the history read; it stops when the
  // request fails.
  const failed = new AbortController();
  const searching: Promise<Searched> | null = d.search ? startSearch(d, d.search, conversationId, message, [...(history ?? []), ...after], how.search, failed.signal) : null;
  try {
    return await assembleRequest(message);
  } catch (error) {
    failed.abort();
    throw error;
  }
  async function assembleRequest(message: ChatMessage): Promise<AssembledContext> {
    const { query, meaning } = await understand(d, conversationId, message, text, now, nowIso);
    // Broad questions may use the whole window; temporal ones more memory within the target.
    const wide = query.intent.broad;
    const notes = [...meaning.notes];
    const { state, view } = await historyView(d, conversationId, history, tok, how.rule, wide);
    const messageItem = itemFor(message, null, tok, how.rule);
    const afterItems = after.map((m) => itemFor(m, null, tok, how.rule));
    // The stored copy of this round (a retry, a tool loop's next step) is neither history nor recalled: it is sent as given.
    const repeated = history ? [] : await storedRound(view, [message, ...after]);
    const sentSeqs = [...view.prefix, ...repeated].flatMap((p) => (p.seq === null ? [] : [p.seq]));
    const round = { ...messageItem, tokens: messageItem.tokens + afterItems.reduce((n, i) => n + i.tokens, 0) };
    const { pinned, working } = await workingHistory(d, conversationId, view, round, text, tok, wide, how.rewrite);
    const plan = await planSummaries(d, conversationId, state !== null, query, meaning);
    const hint = wide || opts.topicsHintAlways ? await d.hints.hintFor(conversationId, tok) : '';
    const searched = searching ? await searching : null;
    const { webBudget, ...assembled } = await assemble({
      conversationId,
      tokenizer: tok,
      window: opts.contextWindow,
      reserve: opts.reserveTokens,
      memoryTokens: opts.memoryTokens,
      fillTarget: opts.memoryTokensAuto,
      targetTokens: opts.targetTokens,
      protectedRecentTurns: opts.protectedRecentTurns,
      prefix: view.prefix,
      history: working.history,
      historyComplete: view.complete,
      beyondHistory: how.allBranches,
      message: messageItem,
      after: afterItems,
      hint,
      placement: opts.recallPlacement,
      wide,
      temporal: query.intent.temporal,
      compacted: state !== null,
      summaries: plan.candidates,
      summaryShare: plan.share,
      recall: recallFor(d, { conversationId, text, pinned, sentSeqs, query, meaning, now, reasoning: how.reasoning, allBranches: how.allBranches }),
      ...(searched && searched.items.length > 0 ? { web: { items: searched.items, share: opts.search!.share, focus: stemsOf(text), reason: searched.report.trigger.detail ?? 'web search' } } : {}),
    });
    if (working.compressed.size > 0) {
      for (const entry of assembled.manifest) {
        const mine = entry.sourceIds.filter((id) => working.compressed.has(id));
        if (mine.length > 0) entry.compressed = Object.fromEntries(mine.map((id) => [id, working.compressed.get(id)!]));
      }
    }
    await recordUse(d, conversationId, assembled.manifest, plan.candidates, query, now, nowIso);
    const waiting = meaning.vector ? await d.semantic.unembedded(conversationId, await d.store.turnCount(conversationId)) : 0;
    if (waiting > 0) notes.push(`${waiting} stored turn(s) not embedded yet (background queue): found by tags and BM25 only until then.`);
    const head = (await d.branching.tree.head(conversationId)).node?.id ?? null;
    const ctx = await reattach(d.store, { ...assembled, matchedTags: query.matchedTags, broad: query.intent.broad, temporal: query.intent.temporal, head }, how.attachments, how.rule, tok);
    // Stored attachments are sent with their bytes.
    const search = searched ? { search: d.search!.placed(searched, assembled.manifest, assembled.dropped, webBudget) } : {};
    return { ...ctx, messages: await withBytes(ctx.messages, d.attachments), ...(notes.length > 0 ? { notes } : {}), ...search };
  }
}

/**
 * The request's search step: its text parts only (an attachment's file name is not the user's question), and the
 * request's own private messages (its history's and those after it: text, attachment names, tool calls) kept out of
 * the query like private turns.
 */
function startSearch(d: InboundDeps, search: Search, conversationId: string, message: ChatMessage, around: unknown[], requested: boolean | undefined, failed: AbortSignal): Promise<Searched> | null {
  let privateHistory: string[];
  try {
    privateHistory = around.flatMap((h) => (h !== null && typeof h === 'object' && (h as ChatMessage).private === true ? [wordsOf(h as ChatMessage)] : []));
  } catch {
    // A history this malformed fails its validation below: nothing is searched for a request that cannot stand.
    return null;
  }
  const text = typeof message.content === 'string' ? message.content : (message.content ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
  return search.forMessage({ conversationId, text, isPrivate: message.private === true, requested }, lookupOf(d.store, conversationId, privateHistory), failed);
}

/** Every word of a caller's message, read defensively (it is not validated yet): its text parts and its tool calls. */
function wordsOf(m: ChatMessage): string {
  const content = m.content as unknown;
  // Text parts, and what an attachment says of itself: its file name and caption.
  const parts = typeof content === 'string' ? [content] : Array.isArray(content) ? content.flatMap((p: { text?: unknown; name?: unknown; caption?: unknown } | null) => (p ? [p.text, p.name, p.caption].filter((x): x is string => typeof x === 'string') : [])) : [];
  const calls = Array.isArray(m.toolCalls) ? m.toolCalls.flatMap((c: { function?: { name?: unknown; arguments?: unknown } }) => [c?.function?.name, c?.function?.arguments].filter((x): x is string => typeof x === 'string')) : [];
  return [...parts, ...calls].join('\n');
}

/** The messages after the new one (a tool loop's round), checked as messages. */
function readAfter(value: unknown, opts: ResolvedOptions): ChatMessage[] {
  if (value === undefined) return [];
  const list = readArray(value, 'after');
  if (!list) throw new PagewiseError('INVALID_ARGUMENT', MODULE, `after must be an array of messages (got ${describe(value)}).`, { path: 'after' });
  return list.map((m, i) => validateMessage(m, `after[${i}]`, opts.maxMessageBytes, opts.maxAttachmentBytes));
}

/**
 * The stored history's tail that repeats the round's start (the new message, then what follows it), by content:
 * removed from the history view, and returned (its turns are not recalled either).
 */
async function storedRound(view: HistoryView, round: readonly ChatMessage[]): Promise<HistoryItem[]> {
  const n = Math.min(view.history.length, round.length);
  if (n === 0) return [];
  const [tail, head] = await Promise.all([Promise.all(view.history.slice(-n).map((i) => contentHash(i.message))), Promise.all(round.slice(0, n).map(contentHash))]);
  for (let k = n; k > 0; k--) {
    if (tail.slice(n - k).every((h, i) => h === head[i])) return view.history.splice(view.history.length - k, k);
  }
  return [];
}

/** How this request is assembled, as the caller asked (INVALID_ARGUMENT for a value of the wrong kind). */
function requestOptions(args: Record<string, unknown>, defaultRule: MediaRule) {
  const bool = (name: string, fallback: boolean): boolean => {
    const v = args[name];
    if (v !== undefined && typeof v !== 'boolean') throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${name} must be true or false (got ${describe(v)}).`, { path: name });
    return v === undefined ? fallback : v;
  };
  const rule = args.mediaTokens ?? defaultRule;
  if (rule !== 'openai' && rule !== 'anthropic') throw new PagewiseError('INVALID_ARGUMENT', MODULE, `mediaTokens must be "openai" or "anthropic" (got ${describe(rule)}).`, { path: 'mediaTokens' });
  const a = args.recallAttachments;
  if (a !== undefined && typeof a !== 'boolean' && !(typeof a === 'number' && Number.isInteger(a) && a >= 0 && a <= 64)) {
    throw new PagewiseError('INVALID_ARGUMENT', MODULE, `recallAttachments must be true, false or how many images (0–64) (got ${describe(a)}).`, { path: 'recallAttachments' });
  }
  if (args.branches !== undefined && args.branches !== 'current' && args.branches !== 'all') {
    throw new PagewiseError('INVALID_ARGUMENT', MODULE, `branches must be "current" or "all" (got ${describe(args.branches)}).`, { path: 'branches' });
  }
  if (args.search !== undefined && typeof args.search !== 'boolean') throw new PagewiseError('INVALID_ARGUMENT', MODULE, `search must be true or false (got ${describe(args.search)}).`, { path: 'search' });
  return { search: args.search as boolean | undefined, rule: rule as MediaRule, rewrite: bool('rewriteHistory', true), reasoning: bool('recallReasoning', false), attachments: a === true ? 4 : typeof a === 'number' ? a : 0, allBranches: args.branches === 'all' };
}

/** The question's tags, words and intent, and its vector (none for a broad question). */
async function understand(d: InboundDeps, conversationId: string, message: ChatMessage, text: string, now: number, nowIso: string): Promise<{ query: QueryAnalysis; meaning: QueryVector }> {
  const { opts, semantic } = d;
  // The question's vector is computed in the model's thread while this one reads tags and words (a broad
  // question then discards it: a few milliseconds of the model's time, none of the request's).
  const embedding = semantic.query(text, undefined, message.private === true);
  const query = await analyzeQuery({ turns: d.store, tags: d.tagStore, index: d.index, canonicalizer: d.canonicalizer, minTags: opts.minTags, maxTags: opts.maxTags },
    conversationId, text, now, nowIso, async () => (await embedding).vector, message.private === true);
  semantic.touch(conversationId);
  const meaning = query.intent.broad ? { vector: null, notes: [] } : await embedding;
  return { query, meaning };
}

/** The history the request may send (the caller's, or the stored one), without what was compacted. */
async function historyView(d: InboundDeps, conversationId: string, history: unknown[] | undefined, tok: Tokenizer, rule: MediaRule, wide: boolean) {
  const { opts } = d;
  const available = opts.contextWindow - opts.reserveTokens;
  const state = await d.summaryStore.state(conversationId);
  const watermark = state?.watermark ?? 0;
  const view: HistoryView = history
    ? await callerHistory(d.store, tok, rule, conversationId, history, opts, (messages) => ownNamed(messages, d.attachments, conversationId, (i) => `history[${i}]`, new Set()))
    : await storedHistory(d.store, tok, rule, conversationId, wide ? available : opts.targetTokens, opts.protectedRecentTurns, watermark);
  if (!history) {
    // A stored turn whose attachment's bytes a sync has not brought yet is sent, and counted, with a reference in words.
    const count = (m: ChatMessage) => messageCost(tok, m, rule);
    view.prefix = await withoutAbsent(view.prefix, d.attachments, count);
    view.history = await withoutAbsent(view.history, d.attachments, count);
  }
  // Compacted turns are sent as summaries (and recalled when relevant), not verbatim.
  if (state) view.history = view.history.filter((i) => i.seq === null || i.seq >= watermark);
  return { state, view };
}

/** The history fitted to its budget (long tool runs and large payloads compressed), and the conversation's pins. */
async function workingHistory(d: InboundDeps, conversationId: string, view: HistoryView, messageItem: HistoryItem, text: string, tok: Tokenizer, wide: boolean, rewrite: boolean) {
  const { opts, importance } = d;
  const available = opts.contextWindow - opts.reserveTokens;
  const pinned = await importance.pinned(conversationId);
  // Sent as given or left out: the assembler only drops the oldest.
  if (!rewrite) return { pinned, working: { history: view.history, compressed: new Map<string, CompressionKind>() } };
  const fixed = view.prefix.reduce((n, i) => n + i.tokens, 0) + messageItem.tokens + TOKENS_PER_REQUEST;
  const historyBudget = (wide ? available : opts.targetTokens) - fixed - Math.min(opts.memoryTokens, Math.floor(opts.targetTokens / 4));
  const over = view.history.reduce((n, i) => n + i.tokens, 0) > historyBudget;
  const recalls = over ? await importance.recallCounts(conversationId, view.history.flatMap((i) => (i.sourceId ? [i.sourceId] : []))) : new Map<string, number>();
  const working = workingView(view.history, {
    budget: historyBudget, protectedRecentTurns: opts.protectedRecentTurns, minConsecutiveToolMessages: opts.minConsecutiveToolMessages,
    largePayloadThreshold: opts.largePayloadThreshold, offloadPreview: opts.offloadPreview, pinned: new Set(pinned),
    importance: (item, index) => index + 8 * (recalls.get(item.sourceId ?? '') ?? 0), focus: stemsOf(text), tokenizer: tok,
  });
  return { pinned, working };
}

/** The summaries that may be paged in, in priority order, and the share of the recall budget they may take. */
async function planSummaries(d: InboundDeps, conversationId: string, compacted: boolean, query: QueryAnalysis, meaning: QueryVector): Promise<{ candidates: SummaryCandidate[]; share: number }> {
  // Only specific questions rank summaries by meaning (broad and temporal ones have their own order).
  const similar = compacted && meaning.vector && !query.intent.temporal ? await d.semantic.searchSummaries(conversationId, meaning.vector, 4) : [];
  return compacted ? await summaryPlan(d.summaryStore, conversationId, query.intent, similar) : { candidates: [], share: 0 };
}

interface RecallContext {
  conversationId: string;
  /** The question's text. */
  text: string;
  pinned: string[];
  /** Seqs of stored turns the request sends anyway: the stored prefix (system messages), a stored copy of this round. */
  sentSeqs: number[];
  query: QueryAnalysis;
  meaning: QueryVector;
  now: number;
  /** Recalled turns show their reasoning too. */
  reasoning: boolean;
  /** Also search the branches the conversation left (`branches: 'all'`). */
  allBranches: boolean;
}

/** The assembler's recall: pinned turns first, then a broad sample or what tags, words and meaning find. */
function recallFor(d: InboundDeps, c: RecallContext): (exclude: ReadonlySet<number>) => Promise<RecallResult> {
  const { store, tagStore, semantic } = d;
  const { conversationId, query, meaning } = c;
  return async (exclude) => {
    const excluded = new Set([...exclude, ...c.sentSeqs]);
    const pins = (await store.byIds(conversationId, c.pinned)).filter((t) => t.seq >= 0 && !excluded.has(t.seq)).map((t): RecallBlock => ({
      unitSeq: t.seq, hits: [t], pair: [], adjacent: [], scores: {}, tags: [], priority: 10, reason: 'pinned by the user',
    }));
    for (const p of pins) excluded.add(p.unitSeq);
    if (query.intent.broad) return { blocks: [...pins, ...await sampleBroad({ turns: store, tags: tagStore, things: d.thingJudge }, conversationId, excluded, RECALL_HITS * 2)], expired: [] };
    const limit = query.intent.temporal ? RECALL_HITS * 2 : RECALL_HITS;
    // The most similar turns whatever their similarity (the ranker weighs it), and the cosine of every other candidate.
    const qv = meaning.vector;
    const vector = qv ? (await semantic.searchTurns(conversationId, qv, limit * PER_CHANNEL, { exclude: excluded }, -1)).map((h) => ({ seq: h.ref, score: h.score })) : undefined;
    const { onCandidates } = d.opts.ranking;
    const found = await recall({ turns: store, tags: tagStore }, {
      conversationId, terms: query.terms, tagWeights: query.tagWeights, speakers: query.speakers, intent: query.intent,
      exclude: excluded, limit, rules: d.rules, nowMs: c.now, vector, threshold: semantic.threshold(), weights: d.opts.ranking.weights, asks: asksOf(c.text),
      ...(qv ? { scoreVector: (seqs: readonly number[]) => semantic.scoreTurns(conversationId, qv, seqs) } : {}),
      ...(onCandidates ? { trace: (t: RankTrace) => onCandidates({ ...t, features: [...FEATURES] }) } : {}),
    });
    const blocks = [...pins, ...found.blocks, ...(c.allBranches ? await otherBranches(d, conversationId, query) : [])];
    return { ...found, blocks: c.reasoning ? blocks.map(withReasoning) : blocks };
  };
}

/** `branches: 'all'`: what the branches the conversation left say about the question (their words), labelled as such. */
async function otherBranches(d: InboundDeps, conversationId: string, query: QueryAnalysis): Promise<RecallBlock[]> {
  const match = ftsMatch(query.terms);
  if (!match) return [];
  return (await d.store.searchOther(conversationId, match, OTHER_BRANCH_HITS)).map((t): RecallBlock => ({
    unitSeq: t.seq, hits: [{ ...t, text: `(from a branch this conversation left: an edited or regenerated part) ${t.text}` }], pair: [], adjacent: [], scores: { bm25: 1 },
    tags: [], priority: 0, reason: 'from another branch of the conversation (keywords, BM25): branches: all', otherBranch: true,
  }));
}

/** A recalled block whose turns show their reasoning after their text (recallReasoning). */
function withReasoning(block: RecallBlock): RecallBlock {
  const show = (t: TurnRecord): TurnRecord => {
    const reasoning = reasoningText(t.content);
    return reasoning ? { ...t, text: `${t.text}\n(reasoning: ${reasoning})` } : t;
  };
  return { ...block, hits: block.hits.map(show), pair: block.pair.map(show), adjacent: block.adjacent.map(show) };
}

/** What the assembly used: stale summaries are rebuilt in the background, recalled turns and matched tags noted. */
async function recordUse(d: InboundDeps, conversationId: string, manifest: AssembledContext['manifest'], candidates: SummaryCandidate[], query: QueryAnalysis, now: number, nowIso: string): Promise<void> {
  const used = new Set(manifest.flatMap((e) => (e.summaryId ? [e.summaryId] : [])));
  const stale = candidates.filter((c) => c.summary.stale && used.has(c.summary.id)).map((c) => c.summary);
  if (stale.length > 0) d.jobs.regenerateLater(conversationId, stale);
  await d.importance.recalled(conversationId, manifest.filter((e) => e.kind === 'recall').flatMap((e) => e.sourceIds), now);
  await d.tagStore.touch(conversationId, query.matchedTags, nowIso);
}
