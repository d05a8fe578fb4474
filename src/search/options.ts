// The `search` option, checked once at construction, with its defaults.
import { PagewiseError } from '../contracts/errors.js';
import { describe } from '../common/messages.js';
import type { SearchProvider, SearchTrigger } from '../contracts/types.js';
import { resolveProviders } from './providers.js';
import { type ResolvedAnonymize, resolveAnonymize } from './query.js';

/** The `search` option with every default filled in. */
export interface ResolvedSearch {
  providers: SearchProvider[];
  maxResults: number;
  timeoutMs: number;
  trigger: SearchTrigger;
  keywords: string[];
  anonymize: ResolvedAnonymize;
  share: number;
  /** null: results keep the provider's text. */
  fetchPages: { allowPrivateHosts: boolean; maxBytes: number } | null;
  cacheMs: number;
}

const KNOWN = new Set(['providers', 'maxResults', 'timeoutMs', 'trigger', 'keywords', 'anonymize', 'share', 'fetchPages', 'cacheMs']);
const TRIGGERS: readonly SearchTrigger[] = ['auto', 'keywords', 'llm', 'always'];
const EXAMPLE = 'e.g. search: { providers: [searxng({ url: "https://searx.example.org" })] }';

function bad(path: string, message: string): never {
  throw new PagewiseError('INVALID_OPTIONS', 'search', `\`${path}\` ${message}`, { path });
}

function int(value: unknown, path: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) bad(path, `must be an integer from ${min} to ${max} (got ${describe(value)}).`);
  return value;
}

/** The checked option, or null when search is off (absent, or `null`). */
export function resolveSearch(value: unknown): ResolvedSearch | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) bad('search', `must be an object (${EXAMPLE}; got ${describe(value)}).`);
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o)) if (!KNOWN.has(key)) bad(`search.${key}`, `is not a search option (known: ${[...KNOWN].join(', ')}).`);
  if (o.providers === undefined) bad('search.providers', `is required: where to search (${EXAMPLE}).`);
  const trigger = o.trigger ?? 'auto';
  if (!TRIGGERS.includes(trigger as SearchTrigger)) bad('search.trigger', `must be one of ${TRIGGERS.map((t) => `"${t}"`).join(', ')} (got ${describe(trigger)}).`);
  const keywords = o.keywords ?? [];
  if (!Array.isArray(keywords) || keywords.length > 500 || keywords.some((k) => typeof k !== 'string' || k.trim() === '' || k.length > 100)) {
    bad('search.keywords', `must be an array of at most 500 non-empty words or phrases of up to 100 characters (got ${describe(o.keywords)}).`);
  }
  const share = o.share ?? 0.5;
  if (typeof share !== 'number' || !(share > 0 && share <= 1)) bad('search.share', `must be a number in (0, 1]: the share of the memory budget results may take (got ${describe(o.share)}).`);
  return {
    providers: resolveProviders(o.providers),
    maxResults: int(o.maxResults, 'search.maxResults', 1, 10, 3),
    timeoutMs: int(o.timeoutMs, 'search.timeoutMs', 1, 120_000, 5_000),
    trigger: trigger as SearchTrigger,
    keywords: (keywords as string[]).map((k) => k.trim()),
    anonymize: resolveAnonymize(o.anonymize),
    share,
    fetchPages: readFetchPages(o.fetchPages),
    cacheMs: int(o.cacheMs, 'search.cacheMs', 0, 7 * 24 * 3_600_000, 600_000),
  };
}

function readFetchPages(value: unknown): ResolvedSearch['fetchPages'] {
  const maxBytes = 2 * 1024 * 1024;
  if (value === undefined || value === true) return { allowPrivateHosts: false, maxBytes };
  if (value === false) return null;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) bad('search.fetchPages', `must be true, false or { allowPrivateHosts?, maxBytes? } (got ${describe(value)}).`);
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o)) if (key !== 'allowPrivateHosts' && key !== 'maxBytes') bad(`search.fetchPages.${key}`, 'is not a fetchPages option (known: allowPrivateHosts, maxBytes).');
  if (o.allowPrivateHosts !== undefined && typeof o.allowPrivateHosts !== 'boolean') bad('search.fetchPages.allowPrivateHosts', 'must be true or false.');
  return { allowPrivateHosts: o.allowPrivateHosts === true, maxBytes: int(o.maxBytes, 'search.fetchPages.maxBytes', 1024, 16 * 1024 * 1024, maxBytes) };
}
