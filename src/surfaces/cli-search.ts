// External search at the command line: `--search SPEC` (repeatable) adds a provider to the `search` option of the
// commands that answer questions (retrieve, transform, search, mcp), `--search-trigger` and `--search-timeout` set how
// it decides and how long it waits, and `pagewise search QUERY` asks the providers directly (memory.webSearch).
// Keys come from the environment (BRAVE_API_KEY, TAVILY_API_KEY) or a file (`brave=@FILE`), never from the command
// line itself; no message here repeats a key, a key file's content or a provider's URL.
import { resolve } from 'node:path';
import { isPagewiseError } from '../contracts/errors.js';
import type { Memory } from '../contracts/memory.js';
import type { SearchOptions, SearchProviderOptions, SearchTrigger } from '../contracts/types.js';
import { braveSearch, searxng, tavily } from '../search/providers.js';
import { inline, quoted } from '../common/as-data.js';
import { UsageError } from './cli-help.js';
import { MOST_KEY_FILE, readBounded } from './cli-keys.js';

/** The search flags, as parseArgs takes them (cli.ts spreads them into its options). */
export const SEARCH_OPTIONS = {
  search: { type: 'string', multiple: true },
  'search-trigger': { type: 'string' },
  'search-timeout': { type: 'string' },
} as const;

export type SearchFlags = { search?: string[] | undefined; 'search-trigger'?: string | undefined; 'search-timeout'?: string | undefined };

/** The commands that answer questions, and so may search. */
const SEARCHING = ['retrieve', 'transform', 'search', 'mcp'];
const SPECS = 'searxng=URL, brave, brave=@FILE, tavily or tavily=@FILE';
const TRIGGERS: readonly SearchTrigger[] = ['auto', 'keywords', 'llm', 'always'];
const KEYED = {
  brave: { env: 'BRAVE_API_KEY', baseEnv: 'BRAVE_BASE_URL' },
  tavily: { env: 'TAVILY_API_KEY', baseEnv: 'TAVILY_BASE_URL' },
} as const;

/**
 * Refuses `--search brave=KEY` and `--search tavily=KEY` before anything else reads the command line: a key there lands
 * in shell history and in `ps`. The message never repeats the value.
 */
export function refuseSearchKeys(specs: readonly string[] | undefined): void {
  for (const spec of specs ?? []) {
    const eq = spec.indexOf('=');
    const name = (eq < 0 ? spec : spec.slice(0, eq)).trim().toLowerCase();
    if ((name === 'brave' || name === 'tavily') && eq >= 0 && !spec.slice(eq + 1).startsWith('@')) {
      throw new UsageError(`--search ${name}=… is refused: a key on the command line lands in shell history and the process list. Set ${KEYED[name].env} in the environment, or put the key in a file and pass --search ${name}=@FILE.`);
    }
  }
}

/** The search flags on a command that does not search: a usage error (not silently ignored). */
export function checkSearchCommand(command: string, v: SearchFlags): void {
  const stray = v.search !== undefined ? 'search' : v['search-trigger'] !== undefined ? 'search-trigger' : v['search-timeout'] !== undefined ? 'search-timeout' : undefined;
  if (stray !== undefined && !SEARCHING.includes(command)) throw new UsageError(`--${stray} is an option of pagewise retrieve, transform, search and mcp (pagewise search --help).`);
}

/** An http(s) URL, or a usage error naming where it came from (never the URL: it may hold credentials). */
function checkUrl(value: string, where: string, example: string): string {
  let url: URL | undefined;
  try { url = new URL(value.trim()); } catch { url = undefined; }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new UsageError(`${where} is not an http:// or https:// URL: ${example}.`);
  return value.trim();
}

/** The key in `@FILE`: the file's text, trimmed. Errors name the path, never content. */
function readKey(path: string, flag: string): string {
  let bytes: Buffer | undefined;
  try {
    bytes = readBounded(path, MOST_KEY_FILE, flag);
  } catch (e) {
    // readBounded's one INVALID_ARGUMENT: the path is a directory. On this command line that is a usage error.
    if (isPagewiseError(e, 'INVALID_ARGUMENT')) throw new UsageError(`${flag}: "${resolve(path)}" is a directory: pass the path of the file that holds the key.`);
    throw e;
  }
  if (bytes === undefined) throw new UsageError(`${flag}: "${resolve(path)}" has more than ${MOST_KEY_FILE} bytes: a key file holds the key, on one line.`);
  const key = bytes.toString('utf8').replace(/^\uFEFF/, '').trim();
  if (key === '' || /\s/.test(key)) throw new UsageError(`${flag}: "${resolve(path)}" ${key === '' ? 'is empty' : 'holds more than one word'}: write the key in it, on one line.`);
  return key;
}

/** One `--search SPEC` as a provider (data, as searxng(), braveSearch() and tavily() make it). */
function providerOf(spec: string, env: NodeJS.ProcessEnv): SearchProviderOptions {
  const eq = spec.indexOf('=');
  const name = (eq < 0 ? spec : spec.slice(0, eq)).trim().toLowerCase();
  const value = eq < 0 ? undefined : spec.slice(eq + 1);
  if (name === 'searxng') {
    const example = '--search searxng=https://searx.example.org';
    if (value === undefined || value.trim() === '') throw new UsageError(`--search searxng needs the instance's URL: ${example}.`);
    return searxng({ url: checkUrl(value, '--search searxng=URL', example) });
  }
  if (name !== 'brave' && name !== 'tavily') throw new UsageError(`--search is one of ${SPECS} (a provider, with where its URL or key is).`);
  const { env: keyEnv, baseEnv } = KEYED[name];
  let apiKey: string;
  if (value === undefined) {
    // An empty variable is an unset one (`BRAVE_API_KEY= pagewise …`).
    const fromEnv = env[keyEnv]?.trim();
    if (!fromEnv) throw new UsageError(`--search ${name} needs a key: set ${keyEnv} in the environment, or put the key in a file and pass --search ${name}=@FILE.`);
    apiKey = fromEnv;
  } else {
    // Only @FILE: a key itself is refused (main() refuses it earlier, before anything reads the command line).
    if (!value.startsWith('@')) refuseSearchKeys([spec]);
    if (value.length < 2) throw new UsageError(`--search ${name}=@FILE needs the path of the file that holds the key.`);
    apiKey = readKey(value.slice(1), `--search ${name}=@FILE`);
  }
  const base = env[baseEnv]?.trim();
  const baseUrl = base ? checkUrl(base, baseEnv, `e.g. ${baseEnv}=https://${name === 'brave' ? 'api.search.brave.com' : 'api.tavily.com'}`) : undefined;
  return name === 'brave' ? braveSearch({ apiKey, ...(baseUrl ? { baseUrl } : {}) }) : tavily({ apiKey, ...(baseUrl ? { baseUrl } : {}) });
}

/**
 * The `search` option a command opens its memory with: `--config`'s (`given`), with the `--search` providers added and
 * `--search-trigger` and `--search-timeout` set; undefined when no provider is named anywhere (a "search" object in
 * --config without providers only holds settings). `pagewise search` without a provider is a usage error.
 */
export function searchOption(command: string, v: SearchFlags, given: SearchOptions | undefined, env: NodeJS.ProcessEnv = process.env): SearchOptions | undefined {
  const providers = (v.search ?? []).map((spec) => providerOf(spec, env));
  const trigger = v['search-trigger'];
  const timeout = v['search-timeout'];
  if (trigger !== undefined && !TRIGGERS.includes(trigger as SearchTrigger)) throw new UsageError(`--search-trigger is ${TRIGGERS.join(', ')} (got ${quoted(trigger.slice(0, 40))}).`);
  if (timeout !== undefined && (!/^\d+$/.test(timeout) || Number(timeout) < 1 || Number(timeout) > 120_000)) throw new UsageError('--search-timeout is milliseconds, from 1 to 120000 (e.g. --search-timeout 5000).');
  const configured: unknown = given?.providers;
  if (providers.length === 0 && configured === undefined) {
    if (command === 'search') throw new UsageError(`search needs a provider: --search SPEC (${SPECS}), or "providers" in --config FILE's "search" object.`);
    if (trigger !== undefined || timeout !== undefined) throw new UsageError(`--search-trigger and --search-timeout need a provider: --search SPEC (${SPECS}).`);
    return undefined;
  }
  return {
    ...given,
    // A "providers" that is not a list is left as it is, for createMemory to say what is wrong with it.
    providers: Array.isArray(configured) ? [...configured, ...providers] : providers.length === 0 ? configured as SearchOptions['providers'] : providers,
    ...(trigger !== undefined ? { trigger: trigger as SearchTrigger } : {}),
    ...(timeout !== undefined ? { timeoutMs: Number(timeout) } : {}),
  };
}

/** `pagewise search QUERY`: the providers asked directly; the results as a model reads them, or the answer as JSON. */
export async function searchCommand(memory: Memory, c: { json: boolean; given?: string | undefined }, rest: string[]): Promise<number> {
  const query = rest.join(' ').trim();
  if (query === '') throw new UsageError('search QUERY: what to search the web for, e.g. pagewise search "node 24 release notes" --search searxng=https://searx.example.org');
  const found = await memory.webSearch({ query, ...(c.given !== undefined ? { conversationId: c.given } : {}) });
  const { report } = found;
  // Exit 1 when nothing could be searched: every provider failed, or nothing was left of the query to send.
  const code = report.outcome === 'failed' || report.outcome === 'skipped' ? 1 : 0;
  if (c.json) {
    process.stdout.write(`${JSON.stringify(found, null, 2)}\n`);
    return code;
  }
  if (found.text !== '') process.stdout.write(`${found.text}\n`);
  // What left the machine, on stderr: the query exactly as sent, and to whom.
  const sent = report.query === undefined ? 'nothing sent' : report.cached ? `${quoted(report.query)} answered from the cache` : `sent ${quoted(report.query)} to ${report.providers.map((p) => p.name).join(', ')}`;
  process.stderr.write(`search: ${sent}: ${inline(report.reason)}\n`);
  return code;
}
