// The inspector of one request: why the demo's settings show recall, the budget bar and its legend, the question's
// flags, the web search (search.ts), the manifest (sources as the chat's turn numbers, each jumping to its turn; a web
// result as a link to its page; scores as lines), what was dropped, and the exact messages sent (attachments as a line
// and a thumbnail, never their bytes).
import type { AssembledContext, MediaRule } from '../src/contracts/types.js';
import { sentContent } from './attachments.js';
import { $, el } from './dom.js';
import { clearSearch, renderSearch, resultLink } from './search.js';

/** What the inspector needs besides the context: the turn number of a stored id, and the settings that shape it. */
export interface InspectorView {
  /** The turn's number in the conversation (`#13`), or undefined for an id not stored (yet). */
  seqOf(id: string): number | undefined;
  targetTokens: number;
  protectedRecentTurns: number;
  /** Whose rule counted the images (the provider's): each attachment's tokens are shown by it. */
  mediaRule: MediaRule;
  /** The branch recall read (branches.ts's branchNote), once the request's message is stored. */
  branch?: string | undefined;
}

export function clearInspector(): void {
  for (const id of ['budget', 'legend', 'dropped', 'flags', 'sent', 'branch']) $(id).replaceChildren();
  $('why').textContent = EMPTY;
  $('manifest').querySelector('tbody')!.replaceChildren();
  clearSearch();
}

const EMPTY = 'Send a message: what pagewise sends to the model with it shows here, part by part — history, recalled memory, the new message — and why.';

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

/** Runs of consecutive numbers: [3, 4, 5, 9] → [[3, 5], [9, 9]]. */
function runs(seqs: number[]): [number, number][] {
  const out: [number, number][] = [];
  for (const n of [...new Set(seqs)].sort((a, b) => a - b)) {
    const last = out[out.length - 1];
    if (last && last[1] === n - 1) last[1] = n;
    else out.push([n, n]);
  }
  return out;
}

/**
 * Source ids as the chat numbers its turns: `#0–#2 #7`, each run a link to its first turn (the ids are its title).
 * An id not stored yet (the new message) reads `new`; one the page does not know keeps a short form of the id.
 */
function sourceLinks(ids: string[], view: InspectorView, newId?: string): (Node | string)[] {
  const bySeq = new Map<number, string>();
  const other: string[] = [];
  for (const id of ids) {
    const seq = view.seqOf(id);
    if (seq === undefined) other.push(id);
    else bySeq.set(seq, id);
  }
  const out: (Node | string)[] = [];
  const shown = runs([...bySeq.keys()]);
  for (const [from, to] of shown.slice(0, 6)) {
    const first = bySeq.get(from)!;
    const title = [...bySeq.entries()].filter(([s]) => s >= from && s <= to).map(([, id]) => id).join(', ');
    out.push(el('a', { href: `#turn-${first}`, title, textContent: from === to ? `#${from}` : `#${from}–#${to}`, onclick: (ev: Event) => { ev.preventDefault(); jump(first); } }), ' ');
  }
  if (shown.length > 6) out.push(`+${shown.length - 6} more `);
  for (const id of other.slice(0, 3)) out.push(el('span', { title: id, textContent: id === newId ? 'new' : id.length > 12 ? `${id.slice(0, 9)}…` : id }), ' ');
  if (other.length > 3) out.push(`+${other.length - 3}`);
  return out;
}

/** One line on why the demo's context looks the way it does: the history target, and whether it was reached. */
function why(ctx: AssembledContext, view: InspectorView): string {
  // Paged: something older came as recall or a summary, or history was left out (after a compaction, the active
  // history may fit while the compacted past comes back as summaries and recall).
  const whole = !ctx.manifest.some((e) => e.kind === 'recall' || e.kind === 'summary') && !ctx.dropped.some((d) => d.kind === 'history');
  const recalled = ctx.manifest.filter((e) => e.kind === 'recall').reduce((n, e) => n + e.sourceIds.length, 0);
  const setting = `History target: ${plural(view.targetTokens, 'token')}, small on purpose so that a short chat shows paging (an app with a large model keeps pagewise's default, 2,048 tokens or 30% of the window).`;
  if (whole) return `The whole conversation still fits the history target, so it is sent as it is and nothing needs recalling yet: keep talking, then ask about something from the start. ${setting}`;
  const summaries = ctx.manifest.filter((e) => e.kind === 'summary').length;
  const paged = [recalled ? `${plural(recalled, 'turn')} recalled (dashed in the chat)` : 'no turn recalled for this question', summaries ? `${plural(summaries, 'summary', 'summaries')} of compacted turns` : ''].filter(Boolean).join(', ');
  return `The conversation is longer than the history target: the last ${plural(view.protectedRecentTurns, 'turn')} go as they are, older turns only when the question is about them — ${paged}. ${setting}`;
}

export function renderContext(ctx: AssembledContext, view: InspectorView): void {
  const newId = ctx.manifest.find((e) => e.kind === 'message')?.sourceIds[0];
  $('why').textContent = why(ctx, view);
  $('branch').textContent = view.branch ?? '';

// The budget's parts in the order they are spent, each with its colour in the bar and the legend.
const PARTS: [string, string][] = [['prefix', 'prefix'], ['hint', 'topics hint'], ['search', 'web results'], ['recalled', 'recalled memory'], ['history', 'history'], ['message', 'new message'], ['overhead', 'overhead'], ['free', 'free'], ['reserve', 'reserve (reply)']];

  const b = ctx.budget;
  const size: Record<string, number> = {
    prefix: b.prefix, hint: b.topics, search: b.search ?? 0, recalled: b.memory - b.topics - (b.search ?? 0), history: b.history, message: b.message, overhead: b.overhead, free: b.free, reserve: b.reserve,
  };
  $('budget').replaceChildren(...PARTS.filter(([k]) => size[k]! > 0).map(([k, label]) => {
    const s = el('span', { className: `b-${k}`, title: `${label}: ${size[k]} tokens` });
    s.style.width = `${(100 * size[k]!) / b.window}%`;
    return s;
  }));
  $('legend').replaceChildren(...PARTS.map(([k, label]) => el('li', {}, el('i', { className: `b-${k}` }), `${label} ${size[k]}`)),
    el('li', { className: 'total', textContent: `total ${b.total} of ${b.available} (${b.encoding}${b.exact ? '' : ', estimate'})` }),
    // Files, audio and images of unknown size have no rule that counts them exactly: say how much is a guess.
    ...(b.estimated > 0 ? [el('li', { className: 'estimated', textContent: `of which ${b.estimated} estimated (attachments no documented rule counts exactly)` })] : []));
  $('flags').textContent = [ctx.broad ? 'broad question' : '', ctx.temporal ? 'temporal question' : '', ctx.matchedTags.length ? `tags: ${ctx.matchedTags.slice(0, 6).join(', ')}` : ''].filter(Boolean).join(' · ');
  $('manifest').querySelector('tbody')!.replaceChildren(...ctx.manifest.map((e) => {
    // Turn numbers as the chat shows them (#13); a summary names the turns it covers.
    const sources = el('td', { className: 'sources' }, ...sourceLinks(e.sourceIds, view, newId));
    if (e.covers) sources.append(e.covers.fromSeq === e.covers.toSeq ? `#${e.covers.fromSeq}` : `#${e.covers.fromSeq}–#${e.covers.toSeq}`);
    if (e.web) sources.append(resultLink(e.web.title, e.web.url));
    const scores = el('td', { className: 'scores', textContent: Object.entries(e.scores).map(([k, v]) => `${k}: ${typeof v === 'number' ? Number(v.toPrecision(3)) : String(v)}`).join('\n') });
    return el('tr', {}, el('td', { textContent: e.kind }), el('td', { textContent: String(e.tokens) }), sources, scores, el('td', { textContent: e.reason }));
  }));
  // A dropped summary names the summary; anything else the turns it held, by number.
  $('dropped').replaceChildren(...ctx.dropped.map((d) => {
    if (d.web) return el('li', {}, 'web result: ', resultLink(d.web.title, d.web.url), `, ${plural(d.tokens, 'token')} — ${REASONS[d.reason] ?? d.reason}`);
    const count = d.range?.count ?? d.sourceIds.length;
    const what = d.kind === 'summary' ? plural(count, 'summary', 'summaries') : plural(count, 'turn');
    const from = d.range && view.seqOf(d.range.fromId);
    const to = d.range && view.seqOf(d.range.toId);
    // A long run of history comes as its first and last id.
    const links = d.range && from !== undefined && to !== undefined
      ? [el('a', { href: `#turn-${d.range.fromId}`, title: `${d.range.fromId} … ${d.range.toId}`, textContent: `#${from}–#${to}`, onclick: (ev: Event) => { ev.preventDefault(); jump(d.range!.fromId); } })]
      : sourceLinks(d.sourceIds, view).filter((x) => x !== ' ');
    const where = d.kind === 'summary' || links.length === 0 ? [] : [' (', ...links.flatMap((x, i) => (i ? [' ', x] : [x])), ')'];
    return el('li', {}, `${d.kind}: ${what}`, ...where, `, ${plural(d.tokens, 'token')} — ${REASONS[d.reason] ?? d.reason}`);
  }));
  renderSearch(ctx.search);
  $('sent').replaceChildren(
    ...(ctx.prependText ? [el('div', { className: 'sent-message', textContent: `[system, prependText]\n${ctx.prependText}` })] : []),
    ...ctx.messages.map((m) => el('div', { className: 'sent-message' }, `[${m.role}${m.name ? ` ${m.name}` : ''}]\n`, ...sentContent(m.content, view.mediaRule))),
  );
}

const REASONS: Record<string, string> = {
  budget: 'no room left in the budget', unrelated: 'left out of the history (what the question needs comes back as recall)', duplicate: 'already sent',
  'orphaned-tool-result': 'its tool call was left out', expired: 'past its tag rule\'s ttlDays',
};

export function jump(id: string): void {
  const target = document.getElementById(`turn-${id}`);
  if (!target) return;
  target.scrollIntoView({ block: 'center' });
  target.classList.add('flash');
  setTimeout(() => target.classList.remove('flash'), 1200);
}

