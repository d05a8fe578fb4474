// The inspector of one request: the budget bar and its legend, the question's flags, the manifest (source ids that
// jump to their turn, scores as lines), what was dropped, and the exact messages sent.
import type { AssembledContext } from '../src/types.js';
import { $, el } from './dom.js';

export function clearInspector(): void {
  for (const id of ['budget', 'legend', 'dropped', 'flags', 'sent']) $(id).replaceChildren();
  $('manifest').querySelector('tbody')!.replaceChildren();
}

// The budget's parts in the order they are spent, each with its colour in the bar and the legend.
const PARTS: [string, string][] = [['prefix', 'prefix'], ['hint', 'topics hint'], ['recalled', 'recalled memory'], ['history', 'history'], ['message', 'new message'], ['overhead', 'overhead'], ['free', 'free'], ['reserve', 'reserve (reply)']];

export function renderContext(ctx: AssembledContext): void {
  const b = ctx.budget;
  const size: Record<string, number> = {
    prefix: b.prefix, hint: b.topics, recalled: b.memory - b.topics, history: b.history, message: b.message, overhead: b.overhead, free: b.free, reserve: b.reserve,
  };
  $('budget').replaceChildren(...PARTS.filter(([k]) => size[k]! > 0).map(([k, label]) => {
    const s = el('span', { className: `b-${k}`, title: `${label}: ${size[k]} tokens` });
    s.style.width = `${(100 * size[k]!) / b.window}%`;
    return s;
  }));
  $('legend').replaceChildren(...PARTS.map(([k, label]) => el('li', {}, el('i', { className: `b-${k}` }), `${label} ${size[k]}`)),
    el('li', { className: 'total', textContent: `total ${b.total} of ${b.available} (${b.encoding}${b.exact ? '' : ', estimate'})` }));
  $('flags').textContent = [ctx.broad ? 'broad question' : '', ctx.temporal ? 'temporal question' : '', ctx.matchedTags.length ? `tags: ${ctx.matchedTags.slice(0, 6).join(', ')}` : ''].filter(Boolean).join(' · ');
  $('manifest').querySelector('tbody')!.replaceChildren(...ctx.manifest.map((e) => {
    const sources = el('td', { className: 'sources' });
    // Long engine-made ids (pw_<uuid>) are shortened; the whole id is the link's title.
    for (const id of e.sourceIds.slice(0, 6)) sources.append(el('a', { href: `#turn-${id}`, title: id, textContent: id.length > 12 ? `${id.slice(0, 9)}…` : id, onclick: (ev: Event) => { ev.preventDefault(); jump(id); } }), ' ');
    if (e.sourceIds.length > 6) sources.append(`+${e.sourceIds.length - 6}`);
    const scores = el('td', { className: 'scores', textContent: Object.entries(e.scores).map(([k, v]) => `${k}: ${typeof v === 'number' ? Number(v.toPrecision(3)) : String(v)}`).join('\n') });
    return el('tr', {}, el('td', { textContent: e.kind }), el('td', { textContent: String(e.tokens) }), sources, scores, el('td', { textContent: e.reason }));
  }));
  $('dropped').replaceChildren(...ctx.dropped.map((d) => el('li', {
    textContent: `${d.kind}: ${d.range ? `${d.range.count} turns` : `${d.sourceIds.length} turns`}, ${d.tokens} tokens — ${d.reason}`,
  })));
  $('sent').textContent = [
    ...(ctx.prependText ? [`[system, prependText]\n${ctx.prependText}`] : []),
    ...ctx.messages.map((m) => `[${m.role}${m.name ? ` ${m.name}` : ''}]\n${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`),
  ].join('\n\n');
}

export function jump(id: string): void {
  const target = document.getElementById(`turn-${id}`);
  if (!target) return;
  target.scrollIntoView({ block: 'center' });
  target.classList.add('flash');
  setTimeout(() => target.classList.remove('flash'), 1200);
}

