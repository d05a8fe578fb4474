// "Sync with the edge": this browser's memory and the user's replica in examples/edge (a Durable Object behind the
// sync endpoint), through remoteMemory(). The sync runs in the page, over the worker's sync methods; what moved is
// said in plain words, and the conversations are shown again.
import { remoteMemory, type ConnectedMemory, type SyncProgress, type SyncReport } from '../src/client.js';
import { $ } from './dom.js';
import { readable, type Settings } from './settings.js';

export interface SyncHooks {
  /** The memory once it is started (undefined when it could not start). */
  memory(): Promise<ConnectedMemory | undefined>;
  settings(): Settings;
  /** The open conversation, and how to open another or show the open one again. */
  conversationId(): string;
  switchTo(id: string): Promise<void>;
  refresh(): Promise<void>;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

/** Bytes as a person reads them: 850 bytes, 18 KB, 2.4 MB. */
export function size(bytes: number): string {
  if (bytes < 1000) return `${bytes} bytes`;
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(bytes < 1e4 ? 1 : 0)} KB`;
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** What moved, in plain words: "pulled 12 messages, pushed 3, removed 2 forgotten; 18 KB in 0.4 s". */
export function describeSync(r: SyncReport): string {
  const moved = [
    r.pulled ? `pulled ${plural(r.pulled, 'message')}` : '',
    r.pushed ? (r.pulled ? `pushed ${r.pushed.toLocaleString('en')}` : `pushed ${plural(r.pushed, 'message')}`) : '',
    r.forgotten ? `removed ${r.forgotten.toLocaleString('en')} forgotten` : '',
    r.pins ? `${plural(r.pins, 'pin')} updated` : '',
    r.aliases ? `${plural(r.aliases, 'alias', 'aliases')} updated` : '',
  ].filter(Boolean);
  const what = moved.length > 0 ? moved.join(', ') : 'already in sync: nothing to move';
  const where = r.conversations.length > 0 ? ` (${plural(r.conversations.length, 'conversation')})` : '';
  // A refused turn is rare (an id reused with other content, a row over the edge's limit) and must not pass unseen.
  const refused = r.conflicts.length > 0 ? `; ${plural(r.conflicts.length, 'message')} not stored (${[...new Set(r.conflicts.map((c) => c.reason === 'id' ? 'same id, other text' : 'too large for the edge'))].join(', ')})` : '';
  return `${what}${where}${refused}; ${size(r.bytes)} in ${(r.ms / 1000).toFixed(1)} s`;
}

/** One progress line: the direction under way and what it has moved so far. */
function describeProgress(p: SyncProgress): string {
  const verb = p.direction === 'pull' ? 'pulling from the edge' : 'pushing to the edge';
  return `syncing · ${verb}: ${plural(p.turns, 'message')} in ${plural(p.batches, 'batch', 'batches')}, ${size(p.bytes)}…`;
}

/** A failure in a person's words: a refused token, an edge that cannot be reached (named), or the error's own message. */
export function syncError(e: unknown, url: string): string {
  const code = (e as { code?: unknown } | null)?.code;
  const message = readable(e);
  if (code === 'UNAUTHENTICATED') return `Sync failed: the token was refused by ${url}. Check the sync token in Settings; nothing was read or stored.`;
  if (code === 'STORAGE_UNAVAILABLE' && /could not be reached/.test(message)) {
    return `Sync failed: could not reach ${url}. Is the edge running (cd examples/edge && npx wrangler dev), and does its PAGEWISE_ALLOWED_ORIGINS list this page's origin (${location.origin})? Nothing was lost: sync again once it answers.`;
  }
  return `Sync failed: ${message}`;
}

/** Wires the "Sync with the edge" button of the status bar. */
export function setupSync(hooks: SyncHooks): void {
  const button = $<HTMLButtonElement>('sync');
  const bar = $<HTMLProgressElement>('sync-progress');
  const status = $('sync-status');
  const say = (text: string, state: string, code?: string) => {
    status.replaceChildren(text);
    status.className = state === 'failed' ? 'status error' : 'status';
    if (code) status.dataset.code = code; else delete status.dataset.code;
    document.body.dataset.sync = state;
  };
  const run = async () => {
    const { syncUrl, syncToken } = hooks.settings();
    if (!syncToken) {
      say('Sync: set the sync URL and token in Settings first (Sync with the edge).', 'failed');
      $<HTMLDetailsElement>('settings-panel').open = true;
      return;
    }
    const memory = await hooks.memory();
    if (!memory) throw new Error('the memory is not ready');
    say(`syncing with ${new URL(syncUrl).host}…`, 'running');
    const report = await memory.sync(remoteMemory(syncUrl, { token: syncToken }), { onProgress: (p) => say(describeProgress(p), 'running') });
    const open = hooks.conversationId();
    const stored = (await memory.conversations()).filter((c) => c.turns > 0);
    // The open conversation is shown again with what it got. Where it is empty — a device that had nothing yet, or the
    // conversation was forgotten on another device — what came in is opened instead.
    const gone = report.conversations.includes(open) && !stored.some((c) => c.id === open);
    const next = stored.some((c) => c.id === open) || report.conversations.length === 0 ? open
      : report.conversations.find((id) => stored.some((c) => c.id === id)) ?? stored[0]?.id ?? 'demo';
    await (next === open ? hooks.refresh() : hooks.switchTo(next));
    say(`Synced with ${new URL(syncUrl).host}: ${describeSync(report)}.${gone ? ` "${open}" was forgotten on another device.` : ''}`, 'done');
  };
  button.addEventListener('click', () => {
    button.disabled = true;
    bar.hidden = false;
    run().catch((e: unknown) => {
      const code = (e as { code?: unknown } | null)?.code;
      say(syncError(e, hooks.settings().syncUrl), 'failed', typeof code === 'string' ? code : undefined);
    }).finally(() => { button.disabled = false; bar.hidden = true; });
  });
}
