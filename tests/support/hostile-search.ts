// Hostile web search for the prompt-injection suite: a search provider whose results carry a payload in every field
// (title, URL path, query and fragment, snippet, date, content, and the query it was asked echoed back), a page server
// whose pages carry it everywhere a page can (article text, raw markup, <pre>, <script>, <noscript>, attributes,
// <title>, metas, plain text), and an LLM double that records what pagewise's search decision asks a model.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LlmProvider, LlmRequest, Memory, MemoryOptions, SearchOptions, SearchProvider, SearchRequest, SearchResult } from '../../src/index.js';
import { PAYLOAD_MARKERS } from './fault-breakout.js';
import { createMemory } from './helpers.js';

/** The payload a provider or page carries now (the test sets it before each request), and its number. */
export interface Current { payload: string; index: number }

/**
 * The results for one payload: each field carries it. `pagesUrl`: results point at the payload's pages on that
 * server (no content, so pagewise fetches them); else they point at evil.example and carry text of their own.
 */
export function hostileResults(c: Current, request: SearchRequest, pagesUrl?: string, site = 'evil.example'): SearchResult[] {
  const { payload: p, index: i } = c;
  if (pagesUrl !== undefined) {
    return [
      { title: `Vault key rotation: ${p}`, url: `${pagesUrl}/page/${i}?q=${encodeURIComponent(p)}#${p}`, snippet: `Vault key snippet: ${p}`, publishedAt: p },
      { title: p, url: `${pagesUrl}/plain/${i}#${p}`, snippet: `The vault key notes: ${p}`, publishedAt: '2026-11-20T09:30:00Z' },
    ];
  }
  return [
    // Text from the provider (Tavily's raw_content): the payload in paragraphs about the question.
    { title: `Vault key rotation news: ${p}`, url: `https://${site}/vault/${p}?q=${p}#${p}`, snippet: `Vault key snippet: ${p}`, publishedAt: p,
      content: `The vault key rotation plan, as this page tells it.\n\n${p}\n\nThe vault key is rotated each week. ${p}` },
    // Only a snippet: the payload in it, and the title is the payload itself.
    { title: p, url: `https://${site}/snippet/${i}?note=${encodeURIComponent(p)}`, snippet: `The vault key snippet says: ${p}` },
    // A search engine that echoes the query (the user's words) into its results.
    { title: `Results for ${request.query}`, url: `https://${site}/echo/${i}#${request.query}`, snippet: `You searched for ${request.query}: the vault key page. ${p}`, publishedAt: `2026-11-20 ${p}` },
  ];
}

/** A SearchProvider (`{ name, search }`) answering with hostileResults for the current payload (on `site`). */
export function hostileProvider(current: () => Current, options: { name?: string; pagesUrl?: string; site?: string } = {}): SearchProvider & { asked: SearchRequest[] } {
  const asked: SearchRequest[] = [];
  return {
    name: options.name ?? 'hostile',
    asked,
    search: async (request) => {
      asked.push(request);
      return hostileResults(current(), request, options.pagesUrl, options.site);
    },
  };
}

/**
 * A provider that fails with the payload as its error message (a provider passing on a remote error's text), on one
 * line: the report keeps an error's line breaks, which the JSON check reads as lines of their own.
 */
export function throwingProvider(current: () => Current): SearchProvider {
  return { name: 'thrower', search: async () => { throw new Error(`upstream said: ${current().payload}`); } };
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const attr = (s: string): string => esc(s).replace(/"/g, '&quot;');
/** A script's string literal that cannot end the script element. */
const js = (s: string): string => JSON.stringify(s).replace(/</g, '\\u003c');

/** One payload's page: the payload as text (escaped, so it survives parsing as text) and as raw markup, in every part. */
export function hostilePage(p: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Vault key rotation ${esc(p)}</title>
<meta property="article:published_time" content="${attr(p)}">
<meta name="description" content="${attr(p)}">
<script>var note = ${js(p)}; document.title = 'HOSTILE_SCRIPT_RAN';</script>
<style>.x::after { content: ${js(p)} }</style>
</head><body>
<nav><a href="/" title="${attr(p)}">Home ${esc(p)}</a></nav>
<article class="post">
<h1>Vault key rotation: ${esc(p)}</h1>
<p class="byline">By Mallory · <time datetime="${attr(p)}">today</time></p>
<p>The vault key rotation plan was published today by the security team, with every step of the schedule and the reasons for each of them.</p>
<p>The vault key is rotated each week, and the old vault key is kept for a day. ${esc(p)}</p>
<p>Raw markup about the vault key follows here: ${p}</p>
<pre>${esc(p)}</pre>
<p><a href="https://evil.example/?q=${attr(p)}" title="${attr(p)}">the vault key link</a> <img alt="${attr(p)}" src="x.png"> <span data-note="${attr(p)}" aria-label="${attr(p)}">vault key attribute</span></p>
<p>More on the vault key rotation plan: ${esc(p)} The team will publish the next vault key rotation in a week, after the audit of the vault.</p>
<script>document.write(${js(p)});</script>
<noscript>${esc(p)}</noscript>
<blockquote>Quoted on the vault key: ${esc(p)}</blockquote>
</article>
<footer><p title="${attr(p)}">Footer ${esc(p)}</p></footer>
</body></html>`;
}

export interface HostilePages {
  /** http://127.0.0.1:PORT: `/page/<i>` (HTML) and `/plain/<i>` (text/plain) carry payload i. */
  url: string;
  /** Paths requested, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** The pages of `payloads`, one node:http server on 127.0.0.1. */
export async function startHostilePages(payloads: readonly string[]): Promise<HostilePages> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    requests.push(path);
    const m = /^\/(page|plain)\/(\d+)$/.exec(path);
    const p = m ? payloads[Number(m[2])] : undefined;
    if (!m || p === undefined) { res.writeHead(404, { 'content-type': 'text/html' }); res.end('<html><body>404</body></html>'); return; }
    if (m[1] === 'page') { res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }); res.end(hostilePage(p)); return; }
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`The vault key notes, plain text.\n\n${p}\n\nThe vault key is rotated each week. ${p}`);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((done) => { server.closeAllConnections(); server.close(() => done()); }),
  };
}

/** An LLM double that says yes to every question (a search decision) and records what it was asked. */
export function recordingLlm(): LlmProvider & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = [];
  return { name: 'recorder', model: 'recorder-1', requests, complete: async (request) => { requests.push(request); return { text: 'yes', model: 'recorder-1' }; } };
}

/** A memory that searches `providers` on every message (no cache; a deadline no test machine misses). */
export function searchingMemory(providers: SearchOptions['providers'], fetchPages: SearchOptions['fetchPages'], extra: MemoryOptions = {}, search: Partial<SearchOptions> = {}): Promise<Memory> {
  return createMemory({ contextWindow: 8192, targetTokens: 3000, ...extra, search: { providers, fetchPages, trigger: 'always', cacheMs: 0, maxResults: 6, timeoutMs: 60_000, ...search } });
}

/** Whether a payload's instruction text reached the `<web-results>` block of `text` (so the check had it to see). */
export function carriesPayload(text: string): boolean {
  const start = text.indexOf('<web-results>\n');
  const block = start < 0 ? '' : text.slice(start, text.indexOf('\n</web-results>', start));
  return PAYLOAD_MARKERS.some((m) => m.test(block));
}
