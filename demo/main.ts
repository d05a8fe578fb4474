import { get, set } from 'idb-keyval';
import { connect, type Memory } from '../src/client.js';
import type { AssembledContext, ChatMessage, EmbeddingProgress, ModelProgress, StoredTurn } from '../src/types.js';
import { offlineReply } from './responder.js';

type Settings = { conversationId: string; contextWindow: number; reserveTokens: number; memoryTokens: number; protectedRecentTurns: number };

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const settingsForm = $<HTMLFormElement>('settings');
const statusEl = $('status');
let memory: Memory | undefined;
// The engine being started; sends wait for it instead of being lost during a restart.
let starting: Promise<void> = Promise.resolve();
let settings: Settings;
let last: AssembledContext | undefined;

function readSettings(): Settings {
  const f = new FormData(settingsForm);
  return {
    conversationId: String(f.get('conversationId') || 'demo'),
    contextWindow: Number(f.get('contextWindow')),
    reserveTokens: Number(f.get('reserveTokens')),
    memoryTokens: Number(f.get('memoryTokens')),
    protectedRecentTurns: Number(f.get('protectedRecentTurns')),
  };
}

function writeSettings(s: Settings): void {
  for (const [k, v] of Object.entries(s)) (settingsForm.elements.namedItem(k) as HTMLInputElement).value = String(v);
}

function showError(e: unknown): void {
  const err = e as { code?: string; message?: string };
  statusEl.innerHTML = '';
  statusEl.append(Object.assign(document.createElement('span'), { className: 'error', textContent: `${err.code ?? 'error'}: ${err.message ?? String(e)}` }));
}

const modelEl = $('model');
const modelBar = $<HTMLProgressElement>('model-progress');

/** The embedding model's load (44 MB the first time, then from the HTTP cache): progress, then ready. */
function showModel(p: ModelProgress): void {
  modelBar.value = p.progress ?? 0;
  if (p.status === 'ready') {
    modelEl.textContent = `embedding model: ready (all-MiniLM-L6-v2 on ${p.device ?? 'wasm'}, in its own worker)`;
    modelBar.hidden = true;
    document.body.dataset.model = 'ready';
  } else {
    modelEl.textContent = `embedding model: loading ${Math.round((p.progress ?? 0) * 100)}%${p.file ? ` (${p.file})` : ''}`;
    modelBar.hidden = false;
    document.body.dataset.model = 'loading';
  }
}

/** The background queue's progress for the open conversation. */
function showEmbedded(p: EmbeddingProgress): void {
  if (p.conversationId !== settings.conversationId) return;
  $('embedded').textContent = `${p.embedded}/${p.total} turns and summaries embedded`;
  document.body.dataset.embedded = `${p.embedded}/${p.total}`;
}

function restart(): void {
  statusEl.textContent = 'starting the worker…';
  document.body.dataset.ready = 'false';
  starting = start().catch(showError);
}

async function start(): Promise<void> {
  await memory?.close();
  memory = undefined;
  settings = readSettings();
  await set('pagewise-demo-settings', settings);
  const { conversationId: _c, ...options } = settings;
  memory = await connect({ ...options, storage: { directory: '.pagewise-demo' }, onModelProgress: showModel, onEmbeddingProgress: showEmbedded });
  statusEl.textContent = 'ready · SQLite on OPFS in a worker';
  document.body.dataset.ready = 'true';
  await renderTurns();
}

async function storedTurns(): Promise<StoredTurn[]> {
  if (!memory) return [];
  return memory.turns(settings.conversationId, { limit: 5000 }).catch((e: { code?: string }) => {
    if (e.code === 'CONVERSATION_NOT_FOUND') return [];
    throw e;
  });
}

async function renderTurns(): Promise<void> {
  const turns = await storedTurns();
  const sent = new Set(last?.manifest.filter((e) => e.kind !== 'recall' && e.placement === 'messages').flatMap((e) => e.sourceIds));
  const recalled = new Set(last?.manifest.filter((e) => e.kind === 'recall').flatMap((e) => e.sourceIds));
  const list = $('turns');
  list.replaceChildren(...turns.map((t) => {
    const li = document.createElement('li');
    li.className = `${t.role}${sent.has(t.id) ? ' in-context' : ''}${recalled.has(t.id) ? ' recalled' : ''}`;
    li.dataset.id = t.id;
    const meta = Object.assign(document.createElement('span'), { className: 'meta', textContent: `#${t.seq} · ${t.name ?? t.role} · ${t.createdAt.slice(0, 19).replace('T', ' ')}` });
    li.append(meta, document.createTextNode(t.text));
    return li;
  }));
  $('turn-count').textContent = `${turns.length} stored turns · green: sent last time · dashed: recalled`;
  if (memory) showEmbedded(await memory.embeddingStatus(settings.conversationId));
  list.scrollTop = list.scrollHeight;
}

function renderContext(ctx: AssembledContext): void {
  const b = ctx.budget;
  const parts: [string, number][] = [['prefix', b.prefix], ['memory', b.memory], ['history', b.history], ['message', b.message], ['overhead', b.overhead], ['free', b.free], ['reserve', b.reserve]];
  $('budget').replaceChildren(...parts.filter(([, n]) => n > 0).map(([k, n]) => {
    const s = document.createElement('span');
    s.className = `b-${k}`;
    s.style.width = `${(100 * n) / b.window}%`;
    s.title = `${k}: ${n} tokens`;
    return s;
  }));
  $('budget-figures').replaceChildren(...parts.flatMap(([k, n]) => [
    Object.assign(document.createElement('dt'), { textContent: k }),
    Object.assign(document.createElement('dd'), { textContent: String(n) }),
  ]), Object.assign(document.createElement('dt'), { textContent: 'total / available' }), Object.assign(document.createElement('dd'), { textContent: `${b.total} / ${b.available} (${b.encoding}${b.exact ? '' : ', estimate'})` }));
  $('manifest').querySelector('tbody')!.replaceChildren(...ctx.manifest.map((e) => {
    const tr = document.createElement('tr');
    for (const cell of [e.kind, e.placement, String(e.tokens), `${e.sourceIds.length}`, JSON.stringify(e.scores), e.reason]) {
      tr.append(Object.assign(document.createElement('td'), { textContent: cell }));
    }
    return tr;
  }));
  $('dropped').replaceChildren(...ctx.dropped.map((d) => Object.assign(document.createElement('li'), {
    textContent: `${d.kind}: ${d.range ? `${d.range.count} turns` : `${d.sourceIds.length} turns`}, ${d.tokens} tokens — ${d.reason}`,
  })));
  $('prepend').textContent = [ctx.prependText, ctx.recallText].filter(Boolean).join('\n\n') || '(nothing recalled: everything relevant is already in the messages)';
}

async function send(text: string): Promise<void> {
  await starting;
  if (!memory) return;
  const conversationId = settings.conversationId;
  const message: ChatMessage = { id: crypto.randomUUID(), role: 'user', content: text };
  const ctx = await memory.onMessageInbound({ conversationId, message });
  const reply: ChatMessage = { id: crypto.randomUUID(), role: 'assistant', content: offlineReply(ctx, text) };
  await memory.onTurnComplete({ conversationId, messages: [message, reply] });
  last = ctx;
  renderContext(ctx);
  await renderTurns();
}

const FILLER = ['the weather this week', 'a new pasta recipe', 'weekend hiking plans', 'a podcast episode', 'the football match', 'repainting the kitchen', 'a sci-fi novel', 'learning the guitar'];

$<HTMLFormElement>('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = $<HTMLTextAreaElement>('input');
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  send(text).catch(showError);
});

async function seed(): Promise<void> {
  await starting;
  if (!memory) return;
  const base = (await storedTurns()).length;
  const messages: ChatMessage[] = Array.from({ length: 20 }, (_, i) => {
    const topic = FILLER[(base + i) % FILLER.length]!;
    return [
      { role: 'user' as const, content: `Small talk ${base + i}: what do you think about ${topic}?` },
      { role: 'assistant' as const, content: `(offline responder) ${topic} sounds nice; tell me more.` },
    ];
  }).flat();
  await memory.onTurnComplete({ conversationId: settings.conversationId, messages });
  await renderTurns();
}

$<HTMLButtonElement>('seed').addEventListener('click', () => { seed().catch(showError); });

settingsForm.addEventListener('submit', (e) => {
  e.preventDefault();
  last = undefined;
  restart();
});

const saved = await get<Settings>('pagewise-demo-settings');
if (saved) writeSettings(saved);
restart();
