// "Usage and health": memory.stats() for the conversation shown and for the whole memory — what memory injected and
// what it saved against sending the history whole, why recall picked what it did, how long each hook took, what
// failed, how deep the queues are, how much is stored, and what retention removed.
import type { Memory } from '../src/contracts/memory.js';
import type { MemoryStats } from '../src/contracts/types.js';
import { $, el } from './dom.js';

const number = (n: number) => n.toLocaleString('en-US');
const bytes = (n: number | null) => (n === null ? 'unknown' : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`);

function row(name: string, value: string, test: string): HTMLTableRowElement {
  const tr = el('tr', {}, el('th', { scope: 'row', textContent: name }), el('td', { textContent: value }));
  tr.dataset.figure = test;
  return tr;
}

/** One table of figures: this conversation's persisted counters, the memory's latency, errors, queues and bytes. */
function table(one: MemoryStats, all: MemoryStats): HTMLTableElement {
  const t = one.usage.tokens;
  const signals = Object.entries(one.usage.recall.bySignal).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
  const hook = (name: string) => {
    const l = all.latencyMs[name];
    return l && l.count > 0 ? `p50 ${l.p50.toFixed(1)} ms · p95 ${l.p95.toFixed(1)} ms · max ${l.max.toFixed(1)} ms (${number(l.count)} calls)` : 'no calls yet';
  };
  const errors = Object.entries(all.errors).flatMap(([method, codes]) => Object.entries(codes).map(([code, n]) => `${method} ${code} ×${n}`));
  const q = all.queues;
  return el('table', { className: 'figures' }, el('tbody', {},
    row('requests assembled', number(one.usage.calls.onMessageInbound), 'requests'),
    row('tokens memory injected', `${number(t.memory)} (recall ${number(t.recall)} · summaries ${number(t.summary)} · topics ${number(t.topics)} · web ${number(t.search)})`, 'injected'),
    row('tokens saved', `${number(t.saved)} of ${number(t.wholeHistory)} the whole history would have cost`, 'saved'),
    row('recall by signal', signals.length > 0 ? signals.map(([s, n]) => `${s} ${n}`).join(' · ') : 'nothing recalled yet', 'signals'),
    row('onMessageInbound', hook('onMessageInbound'), 'inbound'),
    row('onTurnComplete', hook('onTurnComplete'), 'turn'),
    row('errors', errors.length > 0 ? errors.join(' · ') : 'none', 'errors'),
    row('queues now', `calls ${q.calls.waiting} waiting, ${q.calls.running} running · background ${q.background.queued} queued, ${q.background.running} running`, 'queues'),
    row('compactions', `${number(one.usage.compaction.runs)} (${number(one.usage.compaction.turnsCompacted)} turns, ${number(one.usage.compaction.summariesMade)} summaries)`, 'compactions'),
    row('stored', `${bytes(one.bytes)} in this conversation · ${bytes(all.bytes)} the whole database`, 'bytes'),
  ));
}

/** Renders the panel for `conversationId` (a conversation not stored yet shows the memory's figures and zeros). */
export async function renderHealth(memory: Memory, conversationId: string): Promise<void> {
  const all = await memory.stats();
  const one = await memory.stats({ conversationId }).catch((e: unknown) => {
    if ((e as { code?: string } | null)?.code === 'CONVERSATION_NOT_FOUND') return null;
    throw e;
  });
  const log = await memory.retentionLog({ limit: 5 });
  const health = $('health');
  health.replaceChildren(
    one ? table(one, all) : el('p', { className: 'small', textContent: 'Nothing stored in this conversation yet.' }),
    el('p', { className: 'small', textContent: log.items.length === 0
      ? 'Retention: nothing removed (every turn is kept unless the app sets a retention policy).'
      : `Retention log, oldest first: ${log.items.map((e) => `${e.turns} turn${e.turns === 1 ? '' : 's'} of ${e.conversationId} (${e.reason})`).join(' · ')}` }),
  );
}
