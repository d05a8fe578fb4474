/** Every error pagewise throws has one of these codes. Check `error.name === 'PagewiseError'` and `error.code`. */
export type PagewiseErrorCode =
  | 'INVALID_OPTIONS'
  | 'INVALID_ARGUMENT'
  | 'INVALID_CONVERSATION_ID'
  | 'INVALID_MESSAGE'
  | 'INVALID_ROLE'
  | 'INVALID_CONTENT'
  | 'EMPTY_MESSAGE'
  | 'MESSAGE_TOO_LARGE'
  | 'ATTACHMENT_TOO_LARGE'
  | 'INVALID_TOOL_CALL'
  | 'INVALID_DATE'
  | 'ID_CONFLICT'
  | 'CONVERSATION_NOT_FOUND'
  | 'BUDGET_EXCEEDED'
  | 'ENGINE_CLOSED'
  | 'STORAGE_LOCKED'
  | 'STORAGE_UNAVAILABLE'
  | 'STORAGE_ERROR'
  | 'STORAGE_FULL'
  | 'WORKER_FAILED'
  | 'LLM_ERROR'
  | 'TAGGER_ERROR'
  | 'EMBEDDING_ERROR'
  | 'ABORTED'
  | 'NOT_FOUND'
  | 'UNKNOWN_TOOL'
  | 'UNAUTHENTICATED'
  /** The encryption key or passphrase given does not open this database (or the database is not encrypted). */
  | 'WRONG_KEY'
  /** The database is encrypted and no key or passphrase was given. */
  | 'KEY_REQUIRED'
  /** An HTTP surface's upstream (the proxy's LLM provider) failed or refused the server's own credentials. */
  | 'UPSTREAM_ERROR'
  /** A list's answer is more than one value may carry across Workers RPC (32 MiB): ask for it a page at a time. */
  | 'RESULT_TOO_LARGE'
  /**
   * A sync peer has not read forgets this replica has since compacted (it was away too long, or is new and holds
   * copies from elsewhere): run `memory.sync(other, { resync: true })` on that peer.
   */
  | 'SYNC_RESYNC_REQUIRED';

/** All codes, for validation across the worker boundary. */
export const ERROR_CODES: readonly PagewiseErrorCode[] = [
  'INVALID_OPTIONS', 'INVALID_ARGUMENT', 'INVALID_CONVERSATION_ID', 'INVALID_MESSAGE', 'INVALID_ROLE',
  'INVALID_CONTENT', 'EMPTY_MESSAGE', 'MESSAGE_TOO_LARGE', 'ATTACHMENT_TOO_LARGE', 'INVALID_TOOL_CALL', 'INVALID_DATE', 'ID_CONFLICT',
  'CONVERSATION_NOT_FOUND', 'BUDGET_EXCEEDED', 'ENGINE_CLOSED', 'STORAGE_LOCKED', 'STORAGE_UNAVAILABLE',
  'STORAGE_ERROR', 'STORAGE_FULL', 'WORKER_FAILED', 'LLM_ERROR', 'TAGGER_ERROR', 'EMBEDDING_ERROR', 'ABORTED', 'NOT_FOUND', 'UNKNOWN_TOOL',
  'UNAUTHENTICATED', 'UPSTREAM_ERROR', 'WRONG_KEY', 'KEY_REQUIRED', 'RESULT_TOO_LARGE',
  'SYNC_RESYNC_REQUIRED',
];

/**
 * The one error class. Messages name the module and the fix:
 * `[pagewise] [engine] Missing conversationId: pass a non-empty string that identifies the conversation.`
 */
export class PagewiseError extends Error {
  override readonly name = 'PagewiseError';
  readonly code: PagewiseErrorCode;
  /** Where in the input the problem is, e.g. `messages[3].content`. */
  readonly path?: string;

  constructor(code: PagewiseErrorCode, module: string, message: string, options?: { cause?: unknown; path?: string }) {
    super(`[pagewise] [${module}] ${message}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options?.path !== undefined) this.path = options.path;
  }
}

/** True for a PagewiseError, also one rebuilt on the far side of a worker boundary (so no `instanceof`). */
export function isPagewiseError(value: unknown, code?: PagewiseErrorCode): value is PagewiseError {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { name?: unknown; code?: unknown };
  return v.name === 'PagewiseError' && typeof v.code === 'string' && (code === undefined || v.code === code);
}
