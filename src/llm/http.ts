import { PagewiseError, type PagewiseErrorCode } from '../contracts/errors.js';
import { redact, redactError, secretsOf } from '../text/redact.js';
import type { LlmTransportOptions } from '../contracts/types.js';

const MODULE = 'llm';

/** Waits `ms`, or rejects at once when `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) { reject(signal.reason); return; }
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
    const onAbort = (): void => { clearTimeout(timer); reject(signal!.reason); };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Seconds or an HTTP date in Retry-After, as milliseconds (capped at a minute); null when absent. */
function retryAfter(res: Response): number | null {
  const value = res.headers.get('retry-after');
  if (!value) return null;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.min(60_000, Math.max(0, ms)) : null;
}

/**
 * Errors whose message and cause hold no secret of the request: the key (an endpoint may echo it in its error body,
 * a JSON.parse error quotes the reply) or credentials in the URL.
 */
function errors(secrets: readonly string[]) {
  return (code: PagewiseErrorCode, message: string, cause?: unknown): PagewiseError =>
    new PagewiseError(code, MODULE, redact(message, secrets), cause === undefined ? undefined : { cause: redactError(cause, secrets) });
}

/**
 * POSTs JSON and parses the JSON reply, over `fetch` (no SDK). Each attempt has its own timeout; HTTP 429 and 5xx
 * and network errors are retried with exponential backoff and jitter (Retry-After honoured); other HTTP errors,
 * malformed replies and aborts fail at once with `code` (LLM_ERROR, or EMBEDDING_ERROR for embedding endpoints) / ABORTED.
 */
export async function postJson(
  url: string, body: unknown, headers: Record<string, string>, transport: LlmTransportOptions, signal?: AbortSignal,
  code: 'LLM_ERROR' | 'EMBEDDING_ERROR' = 'LLM_ERROR',
): Promise<unknown> {
  const timeoutMs = transport.timeoutMs ?? 20_000;
  const maxRetries = transport.maxRetries ?? 2;
  const baseDelay = transport.retryDelayMs ?? 500;
  const secrets = secretsOf({ url, headers: { ...headers, ...transport.headers } });
  const fail = errors(secrets);
  const aborted = (cause?: unknown): PagewiseError => fail('ABORTED', `The request to ${url} was aborted (${String(signal?.reason ?? 'abort')}).`, cause);
  let lastError: PagewiseError | undefined;
  for (let attempt = 0; attempt <= maxRetries; attempt++) {
    if (signal?.aborted) throw aborted();
    if (attempt > 0) {
      const wait = lastError && 'retryAfterMs' in lastError ? Number((lastError as { retryAfterMs?: number }).retryAfterMs) : NaN;
      const backoff = baseDelay * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5);
      try { await sleep(Number.isFinite(wait) ? wait : backoff, signal); } catch (cause) { throw aborted(cause); }
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers, ...transport.headers },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
      });
    } catch (cause) {
      if (signal?.aborted) throw aborted(cause);
      lastError = fail(code, timeout.aborted
        ? `${url} did not answer within ${timeoutMs} ms (attempt ${attempt + 1} of ${maxRetries + 1}). Raise timeoutMs or check the server.`
        : `Could not reach ${url} (${(cause as Error).message}). Check baseUrl.`, cause);
      continue;
    }
    let raw: string;
    try {
      raw = await res.text();
    } catch (cause) {
      if (signal?.aborted) throw aborted(cause);
      lastError = fail(code, `${url} broke off its reply (${(cause as Error).message}).`, cause);
      continue;
    }
    // Redacted before it is cut: a key straddling the cut would otherwise leave its head in the message.
    const head = (n: number): string => redact(raw, secrets).slice(0, n);
    if (res.status === 429 || res.status >= 500) {
      lastError = Object.assign(fail(code, `${url} answered HTTP ${res.status} after ${attempt + 1} attempt(s): ${head(200)}`),
        { status: res.status, retryAfterMs: retryAfter(res) ?? undefined });
      continue;
    }
    if (!res.ok) {
      throw Object.assign(fail(code, `${url} answered HTTP ${res.status}: ${head(200)}. Check the model name and the API key.`), { status: res.status });
    }
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      // No cause: the parser's message quotes a cut of the reply, where a cut key would no longer be recognized.
      throw fail(code, `${url} answered with something other than JSON: ${head(120)}`);
    }
  }
  throw lastError!;
}
