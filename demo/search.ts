// "Search the web": the settings' SearXNG instance as the engine's `search` option, and the inspector's account of one
// request's search — whether it searched and why, the exact query sent, each provider's part, each result as a link to
// its page (text set as text: a title is whatever the page says it is) with whether it was placed and its tokens.
// SearXNG only: a key-based provider (Brave, Tavily) would put its key in this page, where whoever uses it can read it.
import { searxng } from '../src/client.js';
import type { ConnectOptions } from '../src/client.js';
import type { SearchReport, SearchResultReport } from '../src/contracts/types.js';
import { $, el } from './dom.js';

/** The settings search reads (settings.ts's Settings has them). */
export interface SearchSettings { search: boolean; searxngUrl: string }

/** The settings that change the engine's options: a change reconnects the memory. */
export const SEARCH_KEYS = ['search', 'searxngUrl'] as const;

/** The connect() option for these settings, or undefined when search is off. */
export function searchOptions(s: SearchSettings): ConnectOptions['search'] {
  return s.search ? { providers: [searxng({ url: s.searxngUrl })] } : undefined;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

const OUTCOMES: Record<SearchReport['outcome'], string> = {
  searched: 'Searched', empty: 'Searched, nothing found', failed: 'Search failed', skipped: 'Not searched',
};
const TEXT: Record<SearchResultReport['text'], string> = { page: 'the page\'s main text', provider: 'the provider\'s text', snippet: 'the snippet' };
const REMOVED: Record<string, string> = {
  private: 'private', email: 'email', phone: 'phone number', address: 'address', id: 'id', person: 'person', name: 'name', url: 'link',
};

/** What a browser says of a fetch it refused to let the page read (CORS), or could not make. */
const BLOCKED = /Failed to fetch|NetworkError|Load failed/i;

/** A link to a result's page, opened apart from this one; anything but http(s) stays text. */
export function resultLink(title: string, url: string): HTMLElement {
  let web = false;
  try { web = ['http:', 'https:'].includes(new URL(url).protocol); } catch { /* not a URL: text */ }
  if (!web) return el('span', { className: 'result-title', textContent: title || url, title: url });
  return el('a', { className: 'result-title', href: url, target: '_blank', rel: 'noopener noreferrer', referrerPolicy: 'no-referrer', textContent: title || url, title: url });
}

/** Why a provider failed, with what to check when the browser kept its reply from the page. */
function providerLine(p: SearchReport['providers'][number]): string {
  const head = `${p.name}: ${p.outcome}, ${plural(p.results, 'result')} in ${p.ms} ms`;
  if (!p.error) return head;
  const hint = BLOCKED.test(p.error) ? ` — a SearXNG instance must allow this page's origin (${location.origin}) with CORS, and answer JSON` : '';
  return `${head} — ${p.error}${hint}`;
}

/** Why a result's page was not read, in the demo's words. */
function pageNote(r: SearchResultReport): string {
  if (!r.pageError) return '';
  const why = BLOCKED.test(r.pageError) ? 'the site does not let this page read it (CORS), as most do not'
    : /private (address|host)/.test(r.pageError) ? 'pages on this machine or its network are not fetched' : r.pageError;
  return `page not read: ${why} (${r.pageError}), so its snippet was used`;
}

function resultItem(r: SearchResultReport): HTMLElement {
  const placed = r.included ? `placed, ${plural(r.tokens, 'token')}` : r.tokens > 0 ? `left out: no room (${plural(r.tokens, 'token')})` : 'left out';
  const meta = [placed, `from ${TEXT[r.text]}`, r.provider, r.publishedAt ?? ''].filter(Boolean).join(' · ');
  const li = el('li', { className: r.included ? 'placed' : 'left-out' }, resultLink(r.title, r.url), el('span', { className: 'meta', textContent: ` ${meta}` }));
  const note = pageNote(r);
  if (note) li.append(el('span', { className: 'page-error', textContent: note }));
  return li;
}

/** The request's search report in the inspector (`undefined`: search is off). */
export function renderSearch(report: SearchReport | undefined): void {
  const box = $('search-report');
  box.dataset.outcome = report?.outcome ?? 'off';
  if (!report) {
    box.replaceChildren(el('p', { textContent: 'Off: nothing leaves this device. Settings › Search the web turns it on.' }));
    return;
  }
  const removed = Object.entries(report.removed ?? {}).filter(([, n]) => n && n > 0).map(([k, n]) => plural(n!, REMOVED[k] ?? k));
  const sent = report.query === undefined ? el('p', { textContent: 'Nothing was sent.' })
    : el('p', {}, report.cached ? 'Query (answered from the cache, not sent again): ' : 'Sent to the search engine, exactly: ',
      el('code', { className: 'search-query', textContent: report.query }), removed.length ? ` — taken out first: ${removed.join(', ')}` : '');
  box.replaceChildren(
    el('p', { className: 'search-outcome' }, el('strong', { textContent: OUTCOMES[report.outcome] }), ` (${plural(report.ms, 'ms', 'ms')}): ${report.reason}`),
    sent,
    ...(report.providers.length ? [el('ul', { className: 'search-providers' }, ...report.providers.map((p) => el('li', { className: p.error ? 'error' : '', textContent: providerLine(p) })))] : []),
    ...(report.results.length ? [el('ol', { className: 'search-results' }, ...report.results.map(resultItem))] : []),
  );
}

export function clearSearch(): void {
  delete $('search-report').dataset.outcome;
  $('search-report').replaceChildren();
}
