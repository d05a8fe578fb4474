/**
 * pagewise: a memory that never forgets for LLM chat apps. The core is runtime-agnostic: it runs in Node, in a
 * browser worker (see `pagewise/client`) and at the edge.
 *
 * @module pagewise
 */
export { createMemory, type Memory } from './engine/engine.js';
export { braveSearch, searxng, tavily } from './search/providers.js';
export type { AliasApi, AliasSuggestion } from './tags/tag-canonicalizer.js';
export type { TagAlias, TagStat } from './tags/tag-store.js';
export type { ExportData, ExportedConversation, ExportedTurn, ForgetInput, ForgetReport, ImportReport } from './engine/data-control.js';
export { PagewiseError, isPagewiseError, ERROR_CODES, type PagewiseErrorCode } from './contracts/errors.js';
export { sqliteWasm, type SqliteWasmOptions } from './storage/sqlite-wasm.js';
export { createTokenizer, encodingForModel } from './tokens/tokenizer.js';
import { useJsTiktoken } from './tokens/js-tiktoken.js';

// This entry offers both tokenizer packages (pagewise/edge only gpt-tokenizer: a Worker's bundle carries one).
useJsTiktoken();
export { MIGRATIONS, SCHEMA_VERSION } from './store/schema.js';
export { openaiCompatible } from './llm/openai-compatible.js';
export { anthropic } from './llm/anthropic.js';
export { extractiveSummarizer } from './compaction/extractive.js';
export { llmSummarizer } from './compaction/llm-summarizer.js';
export { memoryTools } from './engine/tools.js';
export type { CostLine, CostReport } from './llm/ledger.js';
export type * from './contracts/types.js';
export type * from './contracts/types-sync.js';
export type * from './contracts/types-branches.js';
export { bearerAuth, memoryProxy, proxyConversationKey, type MemoryProxyOptions, type ProxyCaller, type UpstreamOptions, type WaitUntil } from './surfaces/proxy.js';
export { SYNC_PATH, remoteMemory, syncEndpoint, type RemoteMemory, type RemoteMemoryOptions, type SyncEndpointOptions } from './surfaces/sync-http.js';
export { relayPeer, type RelayPeer, type RelayPeerOptions } from './surfaces/sync-relay.js';
export type { RelayTarget } from './storage/relay-protocol.js';
