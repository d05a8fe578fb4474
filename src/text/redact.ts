/**
 * Keeps configured secrets out of the text pagewise surfaces (error messages and their causes, notes,
 * `embeddingStatus().lastError`): an endpoint that echoes the key it was sent in its error body would otherwise have
 * it copied into each of them. The client that holds a key redacts with it before any such text leaves its module.
 */

export const REDACTED = '[redacted]';

// No real key is this short, and replacing a short value would garble the text around every occurrence.
export const MIN_SECRET_LENGTH = 8;

// Header names whose values are credentials (`authorization`, `x-api-key`, `api-key`, `x-auth-token`, `cookie`…).
const CREDENTIAL_HEADER = /auth|key|token|secret|cookie|password|signature/i;
// Query parameters that carry credentials in a URL (`?key=`, `?api_key=`, `?access_token=`, `?sig=`…).
const CREDENTIAL_PARAM = /^(key|api[-_]?key|apikey|token|access[-_]?token|auth|secret|password|sig|signature)$/i;
// An error's cause chain is copied this deep; a deeper cause is dropped.
const MAX_CAUSES = 4;

/** The secrets a request carries: credential header values (and the token after `Bearer `/`Basic `), URL credentials. */
export function secretsOf(request: { url?: string; headers?: Record<string, string | undefined> }): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(request.headers ?? {})) {
    if (typeof value !== 'string' || !CREDENTIAL_HEADER.test(name)) continue;
    out.push(value);
    const scheme = /^\s*\w+\s+(\S+)\s*$/.exec(value);
    if (scheme) out.push(scheme[1]!);
  }
  if (request.url) {
    try {
      const url = new URL(request.url);
      out.push(decodeURIComponent(url.password), decodeURIComponent(url.username));
      for (const [name, value] of url.searchParams) if (CREDENTIAL_PARAM.test(name)) out.push(value);
    } catch {
      // Not a URL: fetch refuses it before anything is sent.
    }
  }
  return [...new Set(out.filter((s) => s.length >= MIN_SECRET_LENGTH))].sort((a, b) => b.length - a.length);
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The spellings a server may echo a secret in: as sent, URL-encoded (either hex case, `+` for spaces), JSON-escaped. */
function pattern(secrets: readonly string[]): RegExp | null {
  const variants = new Set<string>();
  for (const s of secrets) {
    variants.add(escapeRegExp(s));
    for (const encoded of [encodeURIComponent(s), encodeURIComponent(s).replace(/%20/g, '+')]) {
      variants.add(escapeRegExp(encoded).replace(/%([0-9A-F])([0-9A-F])/g, (_, a: string, b: string) => `%[${a}${a.toLowerCase()}][${b}${b.toLowerCase()}]`));
    }
    variants.add(escapeRegExp(JSON.stringify(s).slice(1, -1)));
    variants.add(escapeRegExp(s.replace(/\//g, '\\/')));
  }
  return variants.size > 0 ? new RegExp([...variants].join('|'), 'g') : null;
}

/** `text` with every secret (in each spelling a server may echo it in) replaced by `[redacted]`. */
export function redact(text: string, secrets: readonly string[]): string {
  const re = secrets.length > 0 ? pattern(secrets) : null;
  return re ? text.replace(re, REDACTED) : text;
}

/**
 * A copy of an error and its causes with the secrets taken out of every message, stack and string property (a
 * JSON.parse error quotes the text it failed on; a fetch error may quote the URL). Without secrets, `value` itself.
 */
export function redactError(value: unknown, secrets: readonly string[], depth = 0): unknown {
  if (secrets.length === 0) return value;
  if (typeof value === 'string') return redact(value, secrets);
  if (typeof value !== 'object' || value === null || depth >= MAX_CAUSES) return undefined;
  const source = value as Error & Record<string, unknown>;
  const copy = new Error(redact(String(source.message ?? ''), secrets)) as Error & Record<string, unknown>;
  copy.name = typeof source.name === 'string' ? source.name : 'Error';
  copy.stack = typeof source.stack === 'string' ? redact(source.stack, secrets) : `${copy.name}: ${copy.message}`;
  for (const [key, v] of Object.entries(source)) {
    if (key === 'cause' || key === 'message' || key === 'stack' || key === 'name') continue;
    if (typeof v === 'string') copy[key] = redact(v, secrets);
    else if (typeof v === 'number' || typeof v === 'boolean') copy[key] = v;
  }
  if (source.cause !== undefined) {
    const cause = redactError(source.cause, secrets, depth + 1);
    if (cause !== undefined) copy.cause = cause;
  }
  return copy;
}
