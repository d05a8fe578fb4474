import { get, set } from 'idb-keyval';
import { connect, type ConnectedMemory, type StorageStatus } from '../src/client.js';
import { parseConversationFile, type ImportedConversation } from '../src/surfaces/formats.js';
import type { AssembledContext, ChatMessage, CompactionReport, EmbeddingProgress, MediaRule, ModelProgress, StoredTurn } from '../src/contracts/types.js';
import { offlineReply } from './responder.js';
import { streamReply } from './llm.js';
import { $, el } from './dom.js';
import { clearInspector, jump, renderContext } from './inspector.js';
import { EXAMPLE, EXAMPLE_QUESTION } from './example.js';
import { ENGINE_KEYS, type Settings, readForm, readable, settingsForm, validate, writeForm } from './settings.js';
import { setupSync } from './sync.js';
import { type PendingImage, contentOf, forgetThumbnails, pendingImages, refusal, remove, setupComposer, turnImages, withoutBytes } from './attachments.js';

const statusEl = $('status');
let memory: ConnectedMemory | undefined;
// The engine being started; sends wait for it instead of being lost during a restart.
let starting: Promise<void> = Promise.resolve();
let settings: Settings;
let conversationId = 'demo';
let last: AssembledContext | undefined;
// Replay: the loaded file's questions, and the evidence of the one asked last.
let replay: ImportedConversation | undefined;
let evidence = new Set<string>();
// The open conversation's turn numbers by id: the inspector names sources as the chat does (#13).
let seqs = new Map<string, number>();

// Each request's context, by the id of the message it was assembled for (the last 40 of a conversation, kept with
// idb-keyval so a reload keeps them): a stored turn's "inspect" shows what was sent with it.
const INSPECTED = 40;
let inspections = new Map<string, AssembledContext>();
const inspectKey = () => `pagewise-demo-inspect:${conversationId}`;
async function loadInspections(): Promise<void> {
  inspections = new Map((await get<[string, AssembledContext][]>(inspectKey())) ?? []);
}
async function keepInspection(id: string, ctx: AssembledContext): Promise<void> {
  inspections.set(id, await withoutBytes(ctx));
  while (inspections.size > INSPECTED) inspections.delete(inspections.keys().next().value as string);
  await set(inspectKey(), [...inspections]);
}

// The compaction log: every compaction a call reported (hard, soft, manual), newest first.
const logKey = () => `pagewise-demo-compactions:${conversationId}`;
async function logCompaction(report: CompactionReport | null): Promise<void> {
  if (!report) return;
  const log = (await get<(CompactionReport & { at: string })[]>(logKey())) ?? [];
  log.unshift({ ...report, at: new Date().toISOString() });
  await set(logKey(), log.slice(0, 50));
}
async function renderCompactionLog(): Promise<void> {
  const log = (await get<(CompactionReport & { at: string })[]>(logKey())) ?? [];
  $('compaction-log').replaceChildren(...log.map((r) => el('li', {
    textContent: `${r.at.slice(11, 19)} · ${r.trigger}: ${r.turnsCompacted} turns → ${r.summariesMade} summaries, ${r.tokensFreed} tokens freed${r.tagsCovered.length ? ` (${r.tagsCovered.slice(0, 4).join(', ')})` : ''}`,
  })));
}

function showMode(): void {
  $('mode').textContent = settings.provider === 'offline' ? '· offline: replies come from memory alone and are not stored'
    : `· ${settings.provider === 'openai' ? 'OpenAI-compatible' : 'Anthropic'} ${settings.model} at ${settings.baseUrl}`;
  document.body.dataset.provider = settings.provider;
}

function showError(e: unknown, where: HTMLElement = statusEl): void {
  const code = (e as { code?: unknown } | null)?.code;
  const span = el('span', { className: 'error', textContent: readable(e) });
  // The code stays at hand for developers (and tests) without being the first thing a person reads.
  if (typeof code === 'string') { span.dataset.code = code; span.title = code; }
  where.replaceChildren(span);
}

/** Where the memory lives. In memory only (OPFS could not open): a banner no one can miss. */
function showStorage(storage: StorageStatus): void {
  const banner = $('storage-banner');
  document.body.dataset.storage = storage.persistent === false ? 'memory' : 'opfs';
  if (storage.persistent === false) {
    statusEl.textContent = 'ready · in memory only: nothing survives a reload';
    banner.hidden = false;
    banner.replaceChildren(el('strong', { textContent: 'Memory will not survive a reload. ' }),
      'This browser could not open its storage (OPFS — a private window or an old browser?), so this session runs in memory: everything you add is gone when you reload or close the tab. Export a conversation to keep it.',
      el('span', { className: 'small reason', textContent: ` (${storage.fallbackReason ?? 'no OPFS'})` }));
  } else {
    statusEl.textContent = 'ready · SQLite on OPFS in a worker: kept across reloads';
    banner.hidden = true;
  }
}

// Images are counted by the rule of the provider they go to (offline: OpenAI's, the engine's default).
const mediaRule = (): MediaRule => (settings.provider === 'anthropic' ? 'anthropic' : 'openai');

/** The inspector for `ctx`, its sources named by the chat's turn numbers. */
function inspect(ctx: AssembledContext): void {
  renderContext(ctx, { seqOf: (id) => seqs.get(id), targetTokens: settings.targetTokens, protectedRecentTurns: settings.protectedRecentTurns, mediaRule: mediaRule() });
}

const modelEl = $('model');
const modelBar = $<HTMLProgressElement>('model-progress');

/** The embedding model's load (23 MB the first time, then from the HTTP cache): progress, then ready. */
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
  if (p.conversationId !== conversationId) return;
  $('embedded').textContent = `${p.embedded}/${p.total} turns and summaries embedded`;
  document.body.dataset.embedded = `${p.embedded}/${p.total}`;
}

function restart(): void {
  statusEl.textContent = 'starting the worker…';
  document.body.dataset.ready = 'false';
  starting = start().catch((e) => showError(e));
}

async function start(): Promise<void> {
  await memory?.close();
  memory = undefined;
  const options = Object.fromEntries(ENGINE_KEYS.map((k) => [k, settings[k]]));
  // Where OPFS cannot open, the demo runs in memory for the session rather than not at all, and says so.
  memory = await connect({ ...options, storage: { directory: '.pagewise-demo' }, fallback: 'memory', onModelProgress: showModel, onEmbeddingProgress: showEmbedded });
  showStorage(memory.storage);
  document.body.dataset.ready = 'true';
  await refresh();
}

async function storedTurns(): Promise<StoredTurn[]> {
  if (!memory) return [];
  return memory.turns(conversationId, { limit: 5000 }).catch((e: { code?: string }) => {
    if (e.code === 'CONVERSATION_NOT_FOUND') return [];
    throw e;
  });
}

async function refresh(): Promise<void> {
  await Promise.all([renderTurns(), renderConversations(), renderTopics(), renderSummaries(), renderCompactionLog()]);
  // The new message is stored now: its number can replace "new".
  if (last) inspect(last);
}

async function renderConversations(): Promise<void> {
  if (!memory) return;
  const stored = await memory.conversations();
  const ids = stored.some((c) => c.id === conversationId) ? stored : [{ id: conversationId, turns: 0, createdAt: '', updatedAt: '' }, ...stored];
  $('conversations').replaceChildren(...ids.map((c) => el('li', {}, el('button', {
    type: 'button', textContent: `${c.id} (${c.turns})`, className: c.id === conversationId ? 'current' : '',
    onclick: () => { void switchTo(c.id); },
  }))));
}

async function renderTopics(): Promise<void> {
  if (!memory) return;
  const topics = await memory.topics(conversationId, { limit: 24 });
  $('topics').replaceChildren(...topics.map((t) => el('li', { textContent: `${t.tag} · ${t.units} exchanges · last at #${t.lastSeq ?? '?'}` })));
}

async function renderSummaries(): Promise<void> {
  if (!memory) return;
  const summaries = await memory.summaries(conversationId);
  $('summaries').replaceChildren(...summaries.slice(-30).map((s) => el('li', {}, el('span', { className: 'meta', textContent: `${s.kind} · level ${s.level} · turns ${s.firstSeq}–${s.lastSeq}${s.tag ? ` · ${s.tag}` : ''}` }), s.text)));
}

async function switchTo(id: string): Promise<void> {
  conversationId = id;
  last = undefined;
  evidence = new Set();
  forgetThumbnails();
  await set('pagewise-demo-conversation', id);
  await loadInspections();
  clearInspector();
  await refresh();
}

async function renderTurns(): Promise<void> {
  const turns = await storedTurns();
  seqs = new Map(turns.map((t) => [t.id, t.seq]));
  // First visit (or an empty conversation): one line on what to do, and both ways to start.
  $('intro').hidden = turns.length > 0;
  const pinned = new Set(memory && turns.length > 0 ? await memory.pins(conversationId) : []);
  $('pins').replaceChildren(...[...pinned].map((id) => el('li', {}, el('a', { href: `#turn-${id}`, title: id, textContent: turns.find((t) => t.id === id)?.text.slice(0, 60) ?? id, onclick: (ev: Event) => { ev.preventDefault(); jump(id); } }))));
  const sent = new Set(last?.manifest.filter((e) => e.kind !== 'recall').flatMap((e) => e.sourceIds));
  const recalled = new Set(last?.manifest.filter((e) => e.kind === 'recall').flatMap((e) => e.sourceIds));
  $('turns').replaceChildren(...turns.map((t) => {
    const classes = [t.role, sent.has(t.id) ? 'in-context' : '', recalled.has(t.id) ? 'recalled' : '', evidence.has(t.id) ? 'evidence' : ''];
    const li = el('li', { className: classes.filter(Boolean).join(' '), id: `turn-${t.id}` });
    li.dataset.id = t.id;
    const pin = el('button', {
      type: 'button', className: 'mini pin', textContent: pinned.has(t.id) ? 'unpin' : 'pin', title: 'A pinned message is recalled first whenever it is not in the history sent',
      onclick: () => { void (pinned.has(t.id) ? memory!.unpin(conversationId, t.id) : memory!.pin(conversationId, t.id)).then(renderTurns, (e) => showError(e)); },
    });
    const seen = inspections.get(t.id);
    const inspectButton = seen ? el('button', { type: 'button', className: 'mini inspect', textContent: 'inspect', title: 'Show what was sent with this message', onclick: () => { last = seen; inspect(seen); void renderTurns(); } }) : '';
    // The turn's text stays its last node (what a reader of the chat, and the browser tests, take as its text).
    li.append(el('span', { className: 'meta' }, `#${t.seq} · ${t.name ?? t.role} · ${t.createdAt.slice(0, 19).replace('T', ' ')} `, pin, inspectButton), turnImages(t.content), t.text);
    if (pinned.has(t.id)) li.classList.add('pinned');
    return li;
  }));
  $('turn-count').textContent = `${turns.length} stored · green: sent as history · dashed: recalled${evidence.size ? ' · blue: the question\'s evidence' : ''}`;
  if (memory) showEmbedded(await memory.embeddingStatus(conversationId));
  const list = $('turns');
  list.scrollTop = list.scrollHeight;
}

/** The reply's bubble while it streams (or the offline answer, which is shown and not stored). */
function liveBubble(label: string, text = ''): HTMLElement {
  const li = el('li', { className: 'assistant live' }, el('span', { className: 'meta', textContent: label }));
  const body = el('span', { className: 'body', textContent: text });
  li.append(body);
  const list = $('turns');
  list.append(li);
  list.scrollTop = list.scrollHeight;
  return body;
}

async function send(text: string, images: PendingImage[] = []): Promise<void> {
  await starting;
  if (!memory) throw new Error('the memory is not ready');
  const message: ChatMessage = { id: crypto.randomUUID(), role: 'user', content: await contentOf(text, images) };
  const ctx = await memory.onMessageInbound({ conversationId, message, mediaTokens: mediaRule() });
  last = ctx;
  inspect(ctx);
  await keepInspection(message.id!, ctx);
  if (settings.provider === 'offline') {
    // Offline: only the user's message is stored; the answer is made from memory and shown, never remembered.
    await logCompaction((await memory.onTurnComplete({ conversationId, messages: [message] })).compaction);
    await refresh();
    liveBubble('offline · from memory alone · not stored', offlineReply(ctx, text));
    return;
  }
  await renderTurns();
  const body = liveBubble(`${settings.model} · streaming…`);
  const reply = await streamReply({ ...settings, provider: settings.provider }, ctx, (delta) => { body.textContent += delta; });
  await logCompaction((await memory.onTurnComplete({ conversationId, messages: [message, { id: crypto.randomUUID(), role: 'assistant', content: reply }] })).compaction);
  for (const r of await memory.flush()) await logCompaction(r);
  await refresh();
}

const input = $<HTMLTextAreaElement>('input');
$<HTMLFormElement>('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = input.value.trim();
  const images = pendingImages();
  const error = $('send-error');
  if (!text && images.length === 0) { error.textContent = 'Type a message or attach an image first.'; return; }
  error.textContent = '';
  $<HTMLButtonElement>('send').disabled = true;
  // The text and the images stay in the composer until they are stored: a refused or failed message is never lost.
  send(text, images).then(() => { if (input.value.trim() === text) input.value = ''; remove(images); }, (err: unknown) => showError(refusal(err, text, images), error))
    .finally(() => { $<HTMLButtonElement>('send').disabled = false; });
});

// The first-visit example: ten messages sent as if typed, then a question about the second one.
$<HTMLButtonElement>('example').addEventListener('click', () => {
  const buttons = [$<HTMLButtonElement>('example'), $<HTMLButtonElement>('send')];
  for (const b of buttons) b.disabled = true;
  void (async () => {
    for (const text of [...EXAMPLE, EXAMPLE_QUESTION]) await send(text);
  })().catch((err: unknown) => showError(err, $('send-error'))).finally(() => { for (const b of buttons) b.disabled = false; });
});

const FILLER = ['the weather this week', 'a new pasta recipe', 'weekend hiking plans', 'a podcast episode', 'the football match', 'repainting the kitchen', 'a sci-fi novel', 'learning the guitar'];

async function seed(): Promise<void> {
  await starting;
  if (!memory) return;
  const base = (await storedTurns()).length;
  const messages: ChatMessage[] = Array.from({ length: 20 }, (_, i) => {
    const topic = FILLER[(base + i) % FILLER.length]!;
    return [
      { role: 'user' as const, content: `Small talk ${base + i}: what do you think about ${topic}?` },
      { role: 'assistant' as const, content: `I like ${topic}; there is always something new in it.` },
    ];
  }).flat();
  await logCompaction((await memory.onTurnComplete({ conversationId, messages })).compaction);
  await refresh();
}
$<HTMLButtonElement>('seed').addEventListener('click', () => { seed().catch((e) => showError(e)); });

$<HTMLButtonElement>('compact').addEventListener('click', () => {
  void (async () => {
    if (!memory) return;
    const report = await memory.compact(conversationId);
    await logCompaction(report);
    $('compaction').textContent = report ? `compacted ${report.turnsCompacted} turns into ${report.summariesMade} summaries; ${report.tokensFreed} tokens freed` : 'nothing to compact yet';
    await refresh();
  })().catch((e) => showError(e, $('compaction')));
});

$<HTMLButtonElement>('new-conversation').addEventListener('click', () => { void switchTo(`chat-${Date.now().toString(36)}`); });
$<HTMLButtonElement>('delete-conversation').addEventListener('click', () => {
  void (async () => {
    if (!memory || !confirm(`Forget "${conversationId}" with everything derived from it?`)) return;
    await memory.forget({ conversationId }).catch((e: { code?: string }) => { if (e.code !== 'CONVERSATION_NOT_FOUND') throw e; });
    const rest = await memory.conversations();
    await switchTo(rest[0]?.id ?? 'demo');
  })().catch((e) => showError(e));
});

$<HTMLButtonElement>('export').addEventListener('click', () => {
  void (async () => {
    if (!memory) return;
    const data = await memory.export();
    const a = el('a', { href: URL.createObjectURL(new Blob([JSON.stringify(data)], { type: 'application/json' })), download: 'pagewise-export.json' });
    a.click();
    URL.revokeObjectURL(a.href);
  })().catch((e) => showError(e));
});

/** A pagewise export is imported; a LoCoMo / LongMemEval / JSONL file is replayed turn by turn, with progress. */
$<HTMLInputElement>('import').addEventListener('change', (e) => {
  const file = (e.target as HTMLInputElement).files?.[0];
  if (!file) return;
  void (async () => {
    await starting;
    if (!memory) return;
    const text = await file.text();
    const status = $('import-status');
    const bar = $<HTMLProgressElement>('import-progress');
    const parsed = text.trimStart().startsWith('{') ? (() => { try { return JSON.parse(text) as { format?: string }; } catch { return null; } })() : null;
    if (parsed?.format === 'pagewise') {
      const report = await memory.import(parsed as never);
      status.textContent = `imported ${report.turns} messages (${report.skipped} already stored)`;
      await refresh();
      return;
    }
    const conversations = parseConversationFile(text, file.name.replace(/\.[^.]+$/, ''));
    const conv = conversations[0]!;
    const total = conv.batches.length;
    bar.hidden = false;
    conversationId = conv.id;
    for (let i = 0; i < total; i++) {
      await memory.onTurnComplete({ conversationId: conv.id, messages: conv.batches[i]! });
      bar.value = (i + 1) / total;
      status.textContent = `replaying ${conv.id}: ${i + 1}/${total} batches`;
    }
    bar.hidden = true;
    status.textContent = `${conv.id}: ${total} batches stored${conversations.length > 1 ? ` (the first of ${conversations.length} conversations)` : ''}; ${conv.questions.length} questions`;
    replay = conv;
    renderQuestions();
    await switchTo(conv.id);
  })().catch((err) => showError(err, $('import-status')));
});

function renderQuestions(): void {
  const panel = $('replay-panel');
  panel.hidden = !replay || replay.questions.length === 0;
  // Numbers written out (not list markers): they stay on the question's first line, two digits or three.
  $('questions').replaceChildren(...(replay?.questions ?? []).slice(0, 200).map((q, i) => el('li', {}, el('span', { className: 'n', textContent: `${i + 1}.` }), el('button', {
    type: 'button', className: 'linkish', textContent: q.question,
    onclick: () => {
      void (async () => {
        if (!memory) return;
        evidence = new Set(q.evidence);
        const ctx = await memory.onMessageInbound({ conversationId, message: { role: 'user', content: q.question }, mediaTokens: mediaRule(), ...(q.now ? { now: q.now } : {}) });
        last = ctx;
        inspect(ctx);
        await renderTurns();
        const found = q.evidence.filter((id) => ctx.manifest.some((m) => m.kind !== 'message' && m.sourceIds.includes(id)));
        $('import-status').textContent = `"${q.question}": ${found.length}/${q.evidence.length} evidence turns in the context${q.answer ? ` · answer: ${q.answer}` : ''}`;
        if (q.evidence[0]) jump(q.evidence[0]);
      })().catch((e) => showError(e, $('import-status')));
    },
  }))));
}

settingsForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const next = readForm();
  const problem = validate(next);
  const error = $('settings-error');
  // Nothing is saved until it is valid.
  if (problem) { error.textContent = problem; return; }
  error.textContent = '';
  const restartNeeded = !settings || ENGINE_KEYS.some((k) => settings[k] !== next[k]);
  settings = next;
  void set('pagewise-demo-settings', settings);
  showMode();
  last = undefined;
  if (restartNeeded) restart();
});

const saved = await get<Settings>('pagewise-demo-settings');
if (saved) writeForm({ ...readForm(), ...saved });
settings = readForm();
conversationId = (await get<string>('pagewise-demo-conversation')) ?? 'demo';
await loadInspections();
showMode();
restart();
setupComposer(async (id) => { await starting; return memory!.attachment(conversationId, id); }, (message) => showError({ message }, $('send-error')));
setupSync({ memory: async () => { await starting; return memory; }, settings: () => settings, conversationId: () => conversationId, switchTo, refresh });
