// The demo's settings: the form, read and written, and checked with the engine's own validation before saving.
import { resolveOptions } from '../src/engine/options.js';
import { remoteMemory } from '../src/client.js';
import { $ } from './dom.js';
import { searchOptions } from './search.js';

export type Provider = 'offline' | 'openai' | 'anthropic';
export interface Settings {
  provider: Provider; baseUrl: string; model: string; apiKey: string;
  contextWindow: number; reserveTokens: number; targetTokens: number; memoryTokens: number; protectedRecentTurns: number;
  /** Sync with the edge: the endpoint (examples/edge under `wrangler dev` by default) and the bearer token it accepts. */
  syncUrl: string; syncToken: string;
  /** Search the web (off by default) through this SearXNG instance: a URL, never a key, so it may be saved. */
  search: boolean; searxngUrl: string;
}
// The memory settings the engine takes. The demo's defaults (index.html) are small on purpose: a history target of
// 128 tokens means a conversation of a few messages is no longer sent whole, so recall shows within a short chat.
export const ENGINE_KEYS = ['contextWindow', 'reserveTokens', 'targetTokens', 'memoryTokens', 'protectedRecentTurns'] as const;
// The form's names for the engine's options, for messages a person reads.
const LABELS: Record<string, string> = {
  contextWindow: 'context window', reserveTokens: 'reserve', targetTokens: 'history target', memoryTokens: 'memory tokens', protectedRecentTurns: 'protected turns',
};

export const settingsForm = $<HTMLFormElement>('settings');

/** An error's message without pagewise's `[pagewise] [module]` prefix, which is for logs, not for people. */
export function readable(e: unknown): string {
  const message = (e as { message?: unknown } | null)?.message;
  return (typeof message === 'string' ? message : String(e)).replace(/^\[pagewise\] \[[^\]]*\] /, '');
}

export function readForm(): Settings {
  const f = new FormData(settingsForm);
  const n = (k: string) => Number(f.get(k));
  return {
    provider: String(f.get('provider')) as Provider, baseUrl: String(f.get('baseUrl') ?? '').trim(), model: String(f.get('model') ?? '').trim(),
    apiKey: String(f.get('apiKey') ?? ''), contextWindow: n('contextWindow'), reserveTokens: n('reserveTokens'), targetTokens: n('targetTokens'), memoryTokens: n('memoryTokens'),
    protectedRecentTurns: n('protectedRecentTurns'), syncUrl: String(f.get('syncUrl') ?? '').trim(), syncToken: String(f.get('syncToken') ?? '').trim(),
    search: f.get('search') === 'on', searxngUrl: String(f.get('searxngUrl') ?? '').trim(),
  };
}

export function writeForm(s: Settings): void {
  for (const [k, v] of Object.entries(s)) {
    const input = settingsForm.elements.namedItem(k) as HTMLInputElement | HTMLSelectElement | null;
    if (input instanceof HTMLInputElement && input.type === 'checkbox') input.checked = v === true;
    else if (input) input.value = String(v);
  }
}

/** Checks settings before anything is saved: the engine's own validation, and a usable endpoint. */
export function validate(s: Settings): string | null {
  try {
    resolveOptions(Object.fromEntries(ENGINE_KEYS.map((k) => [k, s[k]])));
  } catch (e) {
    // The engine's message, in the form's words: "context window must be an integer ≥ 256 (got 100)."
    return readable(e).replace(/`(\w+)`/g, (_, k: string) => LABELS[k] ?? k).replace(/\(got number /g, '(got ');
  }
  if (s.provider !== 'offline') {
    try {
      const url = new URL(s.baseUrl);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'base URL must be http(s)';
    } catch {
      return `base URL "${s.baseUrl}" is not a URL (e.g. http://localhost:11434/v1)`;
    }
    if (!s.model) return 'model is required (the name your endpoint serves)';
  }
  return validateSync(s) ?? validateSearch(s);
}

/** The SearXNG URL, checked as the engine checks it, when search is on (off, whatever the field holds is kept). */
function validateSearch(s: Settings): string | null {
  if (!s.search) return null;
  if (!s.searxngUrl) return 'SearXNG URL is required to search the web (e.g. http://localhost:8888), or switch "Search the web" off';
  try {
    resolveOptions({ search: searchOptions(s) });
  } catch (e) {
    return readable(e).replace(/`search\.providers\[0\]\.url`/g, 'SearXNG URL').replace(/`searxng\(\{ url: '([^']*)' \}\)`/g, '$1');
  }
  return null;
}

/** The sync URL and token, checked as remoteMemory() checks them (https off this machine); the token may wait. */
function validateSync(s: Settings): string | null {
  if (s.syncToken && !/^[\x21-\x7e]+$/.test(s.syncToken)) return 'sync token must be printable characters without spaces (the token the edge lists)';
  try {
    remoteMemory(s.syncUrl, { token: s.syncToken || 'unset' });
  } catch (e) {
    return readable(e).replace(/remoteMemory's url/g, 'sync URL').replace(/, or allowHttp: true on a network you trust/, '');
  }
  return null;
}

