// The Memory API: what createMemory() returns, and what connect(), memoryStub() and the MCP server offer the same way.
import type { AliasApi, Attachment, CostReport, ExportData, ForgetInput, ForgetReport, ImportReport, TagStat } from './types-data.js';
import type { BranchList } from './types-branches.js';
import type { MemoryStats, WebSearchAnswer, WebSearchInput } from './types-search.js';
import type { MaintenanceReport, Page, PageOptions, RetentionLogEntry, RetentionPolicy, RetentionReport } from './types-ops.js';
import type { SyncApplied, SyncBatch, SyncOptions, SyncPeer, SyncReport, SyncRequest, SyncState, SyncStateOptions } from './types-sync.js';
import type {
  AssembledContext, CompactionReport, ConversationInfo, EmbeddingStatus, EncryptionOptions, InboundInput, StoredTurn, Summary, ToolDefinition, ToolResult, TurnInput, TurnReport,
} from './types.js';

/** The engine: the two hooks around an LLM call, plus inspection. Same methods in-process and over a worker. */
export interface Memory {
  /** Before the LLM request: retrieve and assemble a context that fits the budget, and say what is in it and why. */
  onMessageInbound(input: InboundInput): Promise<AssembledContext>;
  /** After the response: store what is new (verbatim, once) and index it. */
  onTurnComplete(input: TurnInput): Promise<TurnReport>;
  /** Stored conversations, most recently updated first. */
  conversations(): Promise<ConversationInfo[]>;
  /**
   * Stored turns of the conversation's current branch in order (the path from its start to the head), from `from`
   * (seq, default 0), at most `limit` (default 1000). `branch`: another branch's path instead — the one through that
   * message, up to its tip — without switching to it.
   */
  turns(conversationId: string, range?: { from?: number; limit?: number; branch?: string }): Promise<StoredTurn[]>;
  /** A page of them: pass `cursor` (null for the first page), then each page's `cursor` until it is null. */
  turns(conversationId: string, page: PageOptions & { cursor: string | null; branch?: string }): Promise<Page<StoredTurn>>;
  /** The conversation's tree: its branches (where each forks, its tip, size, times), the places with alternatives, the head. */
  branches(conversationId: string): Promise<BranchList>;
  /**
   * Makes the branch through `messageId` current (an edit's "1 of 2" arrows): the path to that message, then on to the
   * message written last below it. Everything reads the current branch; nothing is deleted. Syncs as the later of
   * this and the last message written.
   */
  checkout(conversationId: string, messageId: string): Promise<BranchList>;
  /**
   * The bytes of an attachment a turn of the conversation refers to (a part's `attachment` id), base64; NOT_FOUND
   * when no turn of it does, or its bytes are not on this device (yet).
   */
  attachment(conversationId: string, id: string): Promise<Attachment>;
  /** Tags of a conversation with their statistics (units carrying each, first and last turn, last used), most used first. */
  tags(conversationId: string): Promise<TagStat[]>;
  /** A page of them: pass `cursor` (null for the first page), then each page's `cursor` until it is null. */
  tags(conversationId: string, page: PageOptions & { cursor: string | null }): Promise<Page<TagStat>>;
  /**
   * The conversation's topics as a person (or the `<context-topics>` hint) names them: tags on more than one exchange
   * that name things — people, places, objects, activities — not the wording around them (`noted`, `appreciate`),
   * and not its background (a tag on most exchanges); most used first, at most `limit` (an integer from 1 to 200,
   * default 24). In a conversation of up to 16 exchanges, while there is room, things said once follow — each
   * exchange's first before any exchange's second — so ten messages about ten things name all ten (the
   * `<context-topics>` hint keeps to the repeated ones). Retrieval still uses every tag (`tags()`).
   */
  topics(conversationId: string, options?: { limit?: number }): Promise<TagStat[]>;
  /** Manual and detected tag aliases. */
  readonly aliases: AliasApi;
  /**
   * Compacts now, whatever the thresholds: everything between the watermark and the protected recent turns, or at
   * most `maxTurns` of it (between segments; the report says `more` when turns are left: call again).
   */
  compact(conversationId: string, options?: { maxTurns?: number }): Promise<CompactionReport | null>;
  /** Resolves once background work (soft-threshold compaction, lazy regeneration) is done, with its compaction reports. */
  flush(): Promise<CompactionReport[]>;
  /** Stored summaries of every level (or one kind), oldest first. */
  summaries(conversationId: string, filter?: { kind?: Summary['kind'] }): Promise<Summary[]>;
  /** A page of them: pass `cursor` (null for the first page), then each page's `cursor` until it is null. */
  summaries(conversationId: string, filter: PageOptions & { cursor: string | null; kind?: Summary['kind'] }): Promise<Page<Summary>>;
  /**
   * Rebuilds summaries from their sources with the current summarizer (ids stay): all of a conversation's, or
   * `ids`. `lazy: true` only marks them stale: each is rebuilt in the background when assembly next uses it.
   */
  regenerateSummaries(conversationId: string, options?: { ids?: string[]; lazy?: boolean }): Promise<{ regenerated: number; marked: number }>;
  /** Pins a stored message: it is recalled first whenever it is not in the history sent, and never compressed. */
  pin(conversationId: string, messageId: string): Promise<void>;
  unpin(conversationId: string, messageId: string): Promise<boolean>;
  /** Pinned message ids, oldest pin first. */
  pins(conversationId: string): Promise<string[]>;
  /** The memory tools in the OpenAI function format, for the request's `tools`: expand, reload, search. */
  tools(): Promise<ToolDefinition[]>;
  /** Runs a memory tool the model called; `args` is the call's arguments (JSON string or object). */
  callTool(name: string, args: unknown, context: { conversationId: string }): Promise<ToolResult>;
  /** How much of a conversation has vectors of the current embedding model, and the embedder's last failure. */
  embeddingStatus(conversationId: string): Promise<EmbeddingStatus>;
  /** Usage of the configured LLM (tagging, summaries) per conversation and purpose, with cost when priced. */
  costReport(conversationId?: string): Promise<CostReport>;
  /**
   * Usage and health: per conversation (with `conversationId`) and overall — tokens injected by kind and saved against
   * sending the history whole, recall hits by signal, latency per hook over a rolling window, errors by code, queue
   * depths, compactions, summaries regenerated, bytes stored — and external search's figures.
   */
  stats(options?: { conversationId?: string }): Promise<MemoryStats>;
  /**
   * Runs the retention policy now (the `retention` option, and each conversation's own from `setRetention`): removes
   * what it no longer keeps through forget's path, logs it, and reports it. `now` (ISO 8601): the clock to judge
   * ages by (default the real one). `maxTurns`: stop after about that many turns (the report says `more`).
   */
  applyRetention(options?: { now?: string; maxTurns?: number }): Promise<RetentionReport>;
  /** A conversation's own retention (its `maxAgeDays`, `idleDays`, `keepPinned` over the option's); null removes it. */
  setRetention(conversationId: string, policy: RetentionPolicy | null): Promise<void>;
  /** What retention removed, oldest first, a page at a time. */
  retentionLog(page?: PageOptions): Promise<Page<RetentionLogEntry>>;
  /**
   * One slice of the background maintenance that is due: retention, and rebuilding derived data an older summarizer,
   * tagger or embedder made. The engine runs it by itself between calls; the edge's alarms call it a slice at a time.
   */
  maintain(): Promise<MaintenanceReport>;
  /**
   * A web search asked for directly (the MCP `web_search` tool): the query anonymized as a message's would be, the
   * providers of the `search` option asked, the results cleaned and rendered as data. INVALID_OPTIONS without the
   * option; a failed search is an answer whose report says why, not an error.
   */
  webSearch(input: WebSearchInput): Promise<WebSearchAnswer>;
  /**
   * Removes a whole conversation, or some of its messages (`messageIds`, or every exchange carrying `tag`), with
   * everything derived from them, in one transaction; what is derived from the rest is rebuilt. Afterwards the text is
   * in no index and, once closed, nowhere in the database file. The one exception to append-only.
   */
  forget(input: ForgetInput): Promise<ForgetReport>;
  /** Every stored original of one conversation (or all of them) in pagewise's portable format. */
  export(conversationId?: string): Promise<ExportData>;
  /**
   * One conversation's export a page of turns at a time (at the edge, where one value crosses RPC at most 32 MiB):
   * each page is `ExportData` holding that conversation with some of its turns, in order; `import` each in turn.
   */
  export(conversationId: string, page: PageOptions & { cursor: string | null }): Promise<ExportData & { cursor: string | null }>;
  /** Restores what `export` gave: importing the same data twice changes nothing; a conflicting message is refused. */
  import(data: ExportData): Promise<ImportReport>;
  /** The SQLite database's bytes (a backup): open them with `sqliteWasm({ bytes })`. */
  exportDatabase(): Promise<Uint8Array>;
  /**
   * Changes the key the database is encrypted with, in place and crash-safe (a kill leaves it opening with the old
   * key or the new one); with a plain database, encrypts it; with `null`, decrypts it back to a plain SQLite file.
   * Keys are never logged or kept beyond the database's sealed key slot.
   */
  rekey(encryption: EncryptionOptions | null): Promise<void>;
  /**
   * Brings this memory and `other` (another Memory — in-process, the worker client, a Durable Object stub — or
   * `remoteMemory(url, { token })`) to the same turns in the same order: each gets the turns it lacks, forgets travel
   * as tombstones, pins and manual aliases merge; private turns and derived data never move. Incremental and
   * resumable: a sync stopped midway leaves both sides consistent and the next one goes on from there.
   */
  sync(other: SyncPeer, options?: SyncOptions): Promise<SyncReport>;
  /**
   * Sync's first step: this replica's id and how far it has read `peer` (for that conversation filter); with
   * `options.seen`, it checks what the peer says it read of it, and takes a new id when it finds it is a copy.
   */
  syncState(peer: string, conversations?: string[], options?: SyncStateOptions): Promise<SyncState>;
  /** Sync's read: a batch of this replica's changes after the receiver's cursor, sized to `maxTurns` and `maxBytes`. */
  syncChanges(request: SyncRequest): Promise<SyncBatch>;
  /** Sync's write: applies another replica's batch (its turns in one transaction), then records the cursor it reached. */
  applySync(batch: SyncBatch): Promise<SyncApplied>;
  /** Finishes pending work and releases the storage. Later calls fail with ENGINE_CLOSED. */
  close(): Promise<void>;
}
