/**
 * A result's page as its main text: fetched over `fetch` (http(s) only, private hosts refused unless allowed,
 * redirects followed by hand and each hop checked, the body capped), then reduced with @mozilla/readability over
 * linkedom's DOM — both pure JavaScript, loaded on first use, so they run in Node, browsers and workerd alike.
 * Failures are plain Errors with a short reason that the search report shows per result.
 */
import { describeCause, readCapped } from './provider-formats.js';

/** Redirects followed at most (each hop's scheme and host checked again). */
export const MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const TEXT_TYPES = new Set(['text/html', 'text/plain', 'application/xhtml+xml']);
const ACCEPT = 'text/html,application/xhtml+xml,text/plain;q=0.9';

// ---------------------------------------------------------------------------------------------
// Which hosts are private
// ---------------------------------------------------------------------------------------------

/** An IPv4 address's 4 bytes in private, loopback, link-local, shared, benchmark, multicast or reserved space. */
function privateV4(b: number[]): boolean {
  const [a = 0, c = 0] = b;
  return a === 0 || a === 10 || a === 127 || a >= 224 || (a === 169 && c === 254) || (a === 172 && c >= 16 && c <= 31)
    || (a === 192 && c === 168) || (a === 100 && c >= 64 && c <= 127) || (a === 192 && c === 0 && b[2] === 0) || (a === 198 && (c === 18 || c === 19));
}

function parseV4(host: string): number[] | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  const bytes = m?.slice(1).map(Number);
  return bytes && bytes.every((n) => n <= 255) ? bytes : undefined;
}

/** An IPv6 address's eight 16-bit groups (`::` expanded, a trailing dotted quad read), or undefined. */
function parseV6(host: string): number[] | undefined {
  let text = host;
  const quad = /:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (quad) {
    const v4 = parseV4(quad[1]!);
    if (!v4) return undefined;
    text = `${text.slice(0, quad.index + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const group = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)));
  const head = group(halves[0]!);
  const rest = halves.length === 2 ? group(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...rest];
  return groups.every((g) => Number.isInteger(g)) ? groups : undefined;
}

const v4Of = (hi: number, lo: number): number[] => [hi >> 8, hi & 255, lo >> 8, lo & 255];

function privateV6(g: number[]): boolean {
  const zeros = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 7) && (g[7] === 0 || g[7] === 1)) return true; // :: and ::1
  if ((g[0]! & 0xfe00) === 0xfc00 || (g[0]! & 0xffc0) === 0xfe80 || (g[0]! & 0xffc0) === 0xfec0 || (g[0]! & 0xff00) === 0xff00) return true;
  if (zeros(0, 5) && (g[5] === 0xffff || g[5] === 0)) return privateV4(v4Of(g[6]!, g[7]!)); // IPv4-mapped, IPv4-compatible
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return privateV4(v4Of(g[6]!, g[7]!)); // NAT64
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return privateV4(v4Of(g[6]!, g[7]!)); // IPv4-translated (::ffff:0:0:0/96)
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return true; // local-use NAT64 (64:ff9b:1::/48)
  if (g[0] === 0x2002) return privateV4(v4Of(g[1]!, g[2]!)); // 6to4
  return false;
}

/**
 * Why a host may not be fetched without `allowPrivateHosts` (`private address 127.0.0.1`, `private host localhost`),
 * or undefined for a public one. Judged by the name and address as written: fetch cannot say what a name resolves to.
 */
export function privateHostReason(hostname: string): string | undefined {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  const v4 = parseV4(host);
  if (v4) return privateV4(v4) ? `private address ${host}` : undefined;
  if (host.includes(':')) {
    const v6 = parseV6(host);
    return v6 === undefined || privateV6(v6) ? `private address ${host}` : undefined;
  }
  if (host === '' || host === 'localhost' || !host.includes('.') || /\.(localhost|local|internal|home\.arpa)$/.test(host)) return `private host ${host || '(none)'}`;
  return undefined;
}

/** The URL if it may be fetched; else the Error saying why. */
function checked(href: string, allowPrivateHosts: boolean): URL {
  let url: URL;
  try { url = new URL(href); } catch { throw new Error('not a URL'); }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`refused: not http(s) (${url.protocol.slice(0, 20)})`);
  const reason = allowPrivateHosts ? undefined : privateHostReason(url.hostname);
  if (reason) throw new Error(`refused: ${reason} (fetchPages.allowPrivateHosts)`);
  return url;
}

// ---------------------------------------------------------------------------------------------
// Fetching
// ---------------------------------------------------------------------------------------------

const cancel = (res: Response): void => { res.body?.cancel().catch(() => undefined); };

/** A response that is not a redirect, following at most MAX_REDIRECTS of them by hand. */
async function follow(start: URL, options: { signal: AbortSignal; allowPrivateHosts: boolean }): Promise<{ res: Response; url: URL }> {
  let url = start;
  for (let hop = 0; ; hop++) {
    let res: Response;
    try {
      res = await fetch(url.href, { method: 'GET', headers: { accept: ACCEPT }, redirect: 'manual', signal: options.signal });
    } catch (cause) {
      throw new Error(options.signal.aborted ? 'timed out' : `could not fetch (${describeCause(cause)})`);
    }
    if (res.type === 'opaqueredirect') { cancel(res); throw new Error('redirected where the browser does not show: not followed'); }
    if (!REDIRECTS.has(res.status)) return { res, url };
    cancel(res);
    const location = res.headers.get('location');
    if (!location) throw new Error(`HTTP ${res.status} without a Location`);
    if (hop >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
    let next: URL;
    try { next = new URL(location, url); } catch { throw new Error('redirected to something that is not a URL'); }
    url = checked(next.href, options.allowPrivateHosts);
  }
}

/** The charset a page declares: its Content-Type's, else a `<meta>` in its first bytes; utf-8 when neither. */
function decode(bytes: Uint8Array, contentType: string): string {
  const declared = /charset=["']?([\w:.-]+)/i.exec(contentType)?.[1]
    ?? /<meta[^>]+charset=["']?([\w:.-]+)/i.exec(String.fromCharCode(...bytes.subarray(0, 2048)))?.[1];
  try {
    return new TextDecoder(declared ?? 'utf-8').decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

/**
 * A page's main text: fetched (http(s) only; loopback, private, link-local and unique-local hosts refused unless
 * `allowPrivateHosts`; at most 3 redirects, each hop checked; only HTML, XHTML or plain text; at most `maxBytes` read,
 * the rest left unread), then reduced by htmlToText. Throws an Error with a short reason (`HTTP 404`,
 * `not HTML (application/pdf)`, `refused: private address 127.0.0.1 (fetchPages.allowPrivateHosts)`, `no main text`).
 */
export async function pageText(
  url: string, options: { signal: AbortSignal; allowPrivateHosts: boolean; maxBytes: number },
): Promise<{ text: string; title?: string; publishedAt?: string }> {
  const { res, url: final } = await follow(checked(url, options.allowPrivateHosts), options);
  if (!res.ok) { cancel(res); throw new Error(`HTTP ${res.status}`); }
  const contentType = res.headers.get('content-type') ?? '';
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (!TEXT_TYPES.has(type)) { cancel(res); throw new Error(`not HTML (${type.slice(0, 60) || 'no content type'})`); }
  let bytes: Uint8Array;
  try {
    bytes = (await readCapped(res, Math.max(1, Math.floor(options.maxBytes)))).bytes;
  } catch (cause) {
    throw new Error(options.signal.aborted ? 'timed out' : `broke off (${describeCause(cause)})`);
  }
  const body = decode(bytes, contentType);
  // Reading the page is synchronous work: none once the deadline has passed.
  if (options.signal.aborted) throw new Error('timed out');
  const page = type === 'text/plain' ? { text: paragraphs(body.split(/\n\s*\n/)) } : await htmlToText(body, final.href);
  if (page.text === '') throw new Error('no main text');
  return page;
}

// ---------------------------------------------------------------------------------------------
// HTML to text
// ---------------------------------------------------------------------------------------------

interface ReadabilityResult { title?: string | null; content?: Node | null; publishedTime?: string | null }
type ReadabilityClass = new (doc: Document, options?: { serializer?: (node: Node) => unknown; maxElemsToParse?: number }) => { parse(): ReadabilityResult | null };
interface Readers { parseHTML: (html: string) => { document: Document }; Readability: ReadabilityClass }

let readers: Promise<Readers> | undefined;

/** linkedom and Readability, imported on first use (a memory that never searches never loads them). */
function loadReaders(): Promise<Readers> {
  readers ??= Promise.all([import('linkedom/worker'), import('@mozilla/readability')]).then(([dom, readability]) => {
    const mod = readability as unknown as { Readability?: ReadabilityClass; default?: { Readability?: ReadabilityClass } };
    const Readability = mod.Readability ?? mod.default?.Readability;
    if (!Readability) throw new Error('@mozilla/readability has no Readability export');
    return { parseHTML: (html: string) => dom.parseHTML(html) as unknown as { document: Document }, Readability };
  }).catch((cause: unknown) => {
    readers = undefined;
    throw new Error(`could not load the HTML reader (${describeCause(cause)})`);
  });
  return readers;
}

/** Never text: code, styles, embedded documents, media. */
const NOT_TEXT = 'script, style, noscript, template, iframe, object, embed, svg, canvas, video, audio, img, picture, source, link, meta';
/** Boilerplate around any page's main text. */
const CHROME = 'nav, [role="navigation"], [role="banner"], [role="contentinfo"], dialog, [aria-modal="true"], [hidden], [aria-hidden="true"]';
/** Cookie and consent banners: named so, and short (a page wrapper that mentions cookies in a class is kept). */
const CONSENT = /cookie|consent|gdpr|\bcmp\b/i;
const KEEP = new Set(['HTML', 'HEAD', 'BODY', 'MAIN', 'ARTICLE']);

/** Scripts, styles, navigation and consent banners taken out; with `layout`, also header, footer and asides. */
function strip(document: Document, layout: boolean): void {
  const remove = (el: Element): void => { if (!KEEP.has(el.tagName.toUpperCase())) el.remove(); };
  document.querySelectorAll(NOT_TEXT).forEach(remove);
  document.querySelectorAll(CHROME).forEach(remove);
  if (layout) document.querySelectorAll('header, footer, aside, form, button').forEach(remove);
  document.querySelectorAll('[id], [class], [aria-label]').forEach((el) => {
    const names = `${el.getAttribute('id') ?? ''} ${el.getAttribute('class') ?? ''} ${el.getAttribute('aria-label') ?? ''}`;
    if (CONSENT.test(names) && (el.textContent ?? '').length < 2000) remove(el);
  });
}

const BLOCKS = new Set([
  'ADDRESS', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'BR', 'CAPTION', 'DD', 'DETAILS', 'DIV', 'DL', 'DT', 'FIELDSET', 'FIGCAPTION',
  'FIGURE', 'FOOTER', 'FORM', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HEADER', 'HR', 'LI', 'MAIN', 'NAV', 'OL', 'P',
  'SECTION', 'SUMMARY', 'TABLE', 'TBODY', 'TFOOT', 'THEAD', 'TR', 'UL',
]);
const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE']);

/** Each paragraph's whitespace collapsed (a `<pre>` keeps its lines), empty ones dropped, joined by blank lines. */
function paragraphs(parts: (string | { pre: string })[]): string {
  return parts.map((p) => (typeof p === 'string'
    ? p.replace(/\s+/g, ' ').trim()
    : p.pre.split('\n').map((l) => l.replace(/\s+/g, ' ').trimEnd()).join('\n').replace(/^\n+|\n+$/g, ''))).filter(Boolean).join('\n\n');
}

/** An element's text with a paragraph break at every block element (iterative: deep markup cannot overflow the stack). */
function blockText(root: Node): string {
  const parts: (string | { pre: string })[] = [];
  let line = '';
  const stack: (Node | 'break')[] = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node === 'break') { parts.push(line); line = ''; continue; }
    if (node.nodeType === 3 || node.nodeType === 4) { line += node.nodeValue ?? ''; continue; }
    if (node.nodeType !== 1 && node !== root) continue;
    const tag = node.nodeType === 1 ? (node as Element).tagName.toUpperCase() : '';
    if (SKIP.has(tag)) continue;
    if (tag === 'PRE') { parts.push(line, { pre: node.textContent ?? '' }); line = ''; continue; }
    if (BLOCKS.has(tag)) { parts.push(line); line = ''; stack.push('break'); }
    if (tag === 'TD' || tag === 'TH') line += ' ';
    const children = node.childNodes;
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  parts.push(line);
  return paragraphs(parts);
}

/** When the page says it was published: `article:published_time`, then other date metas; the first `<time datetime>`. */
function metaDate(document: Document): string | undefined {
  for (const selector of ['meta[property="article:published_time"]', 'meta[name="article:published_time"]', 'meta[itemprop="datePublished"]', 'meta[name="date"]']) {
    const value = document.querySelector(selector)?.getAttribute('content')?.trim();
    if (value) return value.slice(0, 100);
  }
  return undefined;
}

function timeDate(document: Document): string | undefined {
  const value = (document.querySelector('article time[datetime], main time[datetime]') ?? document.querySelector('time[datetime]'))?.getAttribute('datetime')?.trim();
  return value ? value.slice(0, 100) : undefined;
}

// The most elements, and the deepest nesting, of a page Readability reads.
const MAX_ELEMENTS = 10_000;
const MAX_DEPTH = 64;

/** Whether the page is within MAX_ELEMENTS and MAX_DEPTH (walked without recursion, stopping at the first excess). */
function readable(document: Document): boolean {
  let elements = 0;
  const stack: [Element, number][] = document.documentElement ? [[document.documentElement, 1]] : [];
  while (stack.length > 0) {
    const [el, depth] = stack.pop()!;
    if (++elements > MAX_ELEMENTS || depth > MAX_DEPTH) return false;
    for (let c = el.firstElementChild; c; c = c.nextElementSibling) stack.push([c, depth + 1]);
  }
  return true;
}

// Elements whose content is never text a reader sees: dropped before parsing (a page's inline scripts and styles are
// often most of its bytes, and parsing is synchronous work no deadline interrupts).
const OPAQUE = ['script', 'style', 'noscript', 'svg', 'template'];
// HTML parsed at most, once opaque elements are gone: a main text lies in its first 256 KiB.
const MAX_PARSE = 256 * 1024;

// Nesting kept at most: the HTML parser keeps its open elements in an array it shifts and unshifts, so its time grows
// with the square of the depth (190,000 nested divs: minutes). Deeper tags are dropped, their text kept.
const MAX_NEST = 96;
// Elements that never nest (void) or whose end tag may be left out: not counted as depth.
const FLAT = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr',
  'p', 'li', 'dt', 'dd', 'tr', 'td', 'th', 'option', 'optgroup', 'tbody', 'thead', 'tfoot', 'colgroup', 'rt', 'rp']);
const TAG_NAME = /^<(\/?)([a-z][a-z0-9-]*)/;

// Elements whose content is text, whatever it holds (`<title>a <script> tag</title>`): copied to their closing tag.
const RAW_TEXT = ['title', 'textarea', 'xmp'];

/** Where the tag opened at `open` ends (just after its `>`), reading quoted attribute values whole; the end when never. */
function tagEnd(lower: string, open: number): number {
  let quote = '';
  for (let i = open + 1; i < lower.length; i++) {
    const c = lower[i]!;
    if (quote) { if (c === quote) quote = ''; continue; }
    if (c === '>') return i + 1;
    if ((c === '"' || c === "'") && /=\s*$/.test(lower.slice(Math.max(open, i - 8), i))) quote = c;
  }
  return lower.length;
}

/** Where a comment opened at `open` ends: `<!-->` and `<!--->` end at once, others after `-->` (or at the end). */
function commentEnd(lower: string, open: number): number {
  if (lower.startsWith('<!-->', open)) return open + 5;
  if (lower.startsWith('<!--->', open)) return open + 6;
  const close = lower.indexOf('-->', open + 4);
  return close < 0 ? lower.length : close + 3;
}

/** Just after the closing tag of `name` from `from` (its `</name` … `>`), or the end. */
function closingEnd(lower: string, name: string, from: number): number {
  const close = lower.indexOf(`</${name}`, from);
  const gt = close < 0 ? -1 : lower.indexOf('>', close);
  return gt < 0 ? lower.length : gt + 1;
}

/**
 * The page without comments and opaque elements, nested at most MAX_NEST deep, at most MAX_PARSE characters. Each tag
 * is read once, to its end (quoted values whole: a `<script` inside an attribute is not a script), so the pass is
 * linear however tags are nested, left open or never closed.
 */
export function leanHtml(html: string): string {
  const lower = html.toLowerCase();
  let out = '';
  let at = 0;
  let depth = 0;
  let dropped = 0;
  while (at < html.length && out.length < MAX_PARSE) {
    const open = lower.indexOf('<', at);
    if (open < 0) { out += html.slice(at); break; }
    out += html.slice(at, open);
    if (lower.startsWith('<!--', open)) { at = commentEnd(lower, open); continue; }
    const tag = TAG_NAME.exec(lower.slice(open, open + 40));
    if (!tag) { out += '<'; at = open + 1; continue; }
    const end = tagEnd(lower, open);
    const [, slash, name] = tag as unknown as [string, string, string];
    if (slash === '' && OPAQUE.includes(name)) { at = closingEnd(lower, name, end); continue; }
    if (slash === '' && RAW_TEXT.includes(name)) {
      const close = lower.indexOf(`</${name}`, end);
      const stop = close < 0 ? html.length : close;
      out += html.slice(open, stop);
      at = stop;
      continue;
    }
    if (!FLAT.has(name) && lower[end - 2] !== '/') {
      const over = slash === '' ? depth >= MAX_NEST : dropped > 0;
      if (over) {
        if (slash === '') dropped++; else dropped--;
        out += ' ';
        at = end;
        continue;
      }
      depth = slash === '' ? depth + 1 : Math.max(0, depth - 1);
    }
    out += html.slice(open, end);
    at = end;
  }
  return out.slice(0, MAX_PARSE);
}

/**
 * An HTML page's main text (Readability over linkedom): paragraphs separated by blank lines, whitespace collapsed;
 * scripts, styles, navigation and cookie banners gone; the body's text when Readability finds no article. `url` is the
 * page's address (the text keeps no links). Hostile text stays text: quoting it is the renderer's job.
 */
export async function htmlToText(page: string, url: string): Promise<{ text: string; title?: string; publishedAt?: string }> {
  void url;
  const { parseHTML, Readability } = await loadReaders();
  const lean = leanHtml(page);
  // linkedom reads a fragment without <html> or <body> as an empty document.
  const html = /<(?:html|body)[\s>]/i.test(lean) ? lean : `<!doctype html><html><body>${lean}</body></html>`;
  const { document } = parseHTML(html);
  const meta = metaDate(document);
  const time = timeDate(document);
  const pageTitle = document.title;
  strip(document, false);
  let article: ReadabilityResult | null = null;
  // Readability's time grows steeply with nesting (700 nested divs, 7.7 KiB: ten seconds no deadline interrupts): a
  // page deeper or larger than any article needs is read by its body's text instead.
  if (readable(document)) {
    try {
      article = new Readability(document, { serializer: (node: Node) => node, maxElemsToParse: MAX_ELEMENTS }).parse();
    } catch {
      article = null; // a page Readability cannot read: its body's text below
    }
  }
  let text = article?.content ? blockText(article.content) : '';
  if (text === '') {
    const again = parseHTML(html).document;
    strip(again, true);
    text = blockText(again.body ?? again.documentElement);
  }
  const out: { text: string; title?: string; publishedAt?: string } = { text };
  const title = (article?.title ?? '').replace(/\s+/g, ' ').trim() || pageTitle.replace(/\s+/g, ' ').trim();
  if (title) out.title = title.slice(0, 300);
  const publishedAt = meta ?? article?.publishedTime?.trim().slice(0, 100) ?? time;
  if (publishedAt) out.publishedAt = publishedAt;
  return out;
}
