import { get, set } from 'idb-keyval';
import { connect, type ConnectedMemory } from '../src/client.js';
import { parseConversationFile, type ImportedConversation } from '../src/surfaces/formats.js';
import type { ChatMessage, EmbeddingProgress, EncryptionOptions, MediaRule, StoredTurn, TurnReport } from '../src/contracts/types.js';
import type { BranchList } from '../src/contracts/types-branches.js';
import { offlineReply } from './responder.js';
import { streamReply } from './llm.js';
import { $, el } from './dom.js';
import { renderHealth } from './health.js';
import { clearInspector, jump, renderContext } from './inspector.js';
import { EXAMPLE, EXAMPLE_QUESTION } from './example.js';
import { ENGINE_KEYS, type Settings, readForm, settingsForm, validate, writeForm } from './settings.js';
import { showError, showModel, showStorage, statusEl } from './status.js';
import { setupSync } from './sync.js';
import { type PendingImage, contentOf, forgetThumbnails, pendingImages, refusal, remove, setupComposer, turnImages } from './attachments.js';
import { type Placing, branchNote, forkSwitch, versionAction } from './branches.js';
import { type Inspected, forgetRecords, inspection, keepInspection, loadInspections, logCompaction, renderCompactionLog, sealRecords } from './records.js';
import { setupActions } from './actions.js';
import { setupLock, showLock, showOpen } from './lock.js';
import { SEARCH_KEYS, searchOptions } from './search.js';

let memory: ConnectedMemory | undefined;
const input = $<HTMLTextAreaElement>('input');
// The engine being started; sends wait for it instead of being lost during a restart.
let starting: Promise<void> = Promise.resolve();
let settings: Settings;
let conversationId = 'demo';
let last: Inspected | undefined;
// Replay: the loaded file's questions, and the evidence of the one asked last.
let replay: ImportedConversation | undefined;
let evidence = new Set<string>();
// The open conversation's turn numbers by id: the inspector names sources as the chat does (#13).
let seqs = new Map<string, number>();
// Whether the open memory is encrypted (it was opened with a passphrase, or rekeyed to one). The passphrase is not kept.
let encrypted = false;

function showMode(): void {
  $('mode').textContent = settings.provider === 'offline' ? '· offline: replies come from memory alone and are not stored'
    : `· ${settings.provider === 'openai' ? 'OpenAI-compatible' : 'Anthropic'} ${settings.model} at ${settings.baseUrl}`;
  if (settings.search) $('mode').textContent += ` · searching the web with ${settings.searxngUrl}`;
  document.body.dataset.provider = settings.provider;
}

// Images are counted by the rule of the provider they go to (offline: OpenAI's, the engine's default).
const mediaRule = (): MediaRule => (settings.provider === 'anthropic' ? 'anthropic' : 'openai');

/** The inspector for `ctx`, its sources named by the chat's turn numbers. */
function inspect(ctx: Inspected): void {
  renderContext(ctx, { seqOf: (id) => seqs.get(id), targetTokens: settings.targetTokens, protectedRecentTurns: settings.protectedRecentTurns, mediaRule: mediaRule(), branch: ctx.branch });
}

/** The background queue's progress for the open conversation. */
function showEmbedded(p: EmbeddingProgress): void {
  if (p.conversationId !== conversationId) return;
  $('embedded').textContent = `${p.embedded}/${p.total} turns and summaries embedded`;
  document.body.dataset.embedded = `${p.embedded}/${p.total}`;
}

/** A new engine for new settings. An encrypted one cannot start without its passphrase, which is not kept: it locks. */
function restart(): void {
  statusEl.textContent = 'starting the worker…';
  document.body.dataset.ready = 'false';
  starting = (encrypted ? lock('The memory settings changed: enter the passphrase to open the memory with them.') : start()).catch((e) => showError(e));
}

/** Opens the memory (with a passphrase: an encrypted one). Encrypted and none given: the unlock prompt, nothing shown. */
async function start(passphrase?: string): Promise<void> {
  await memory?.close();
  memory = undefined;
  const options = Object.fromEntries(ENGINE_KEYS.map((k) => [k, settings[k]]));
  const encryption: EncryptionOptions | undefined = passphrase === undefined ? undefined : { passphrase };
  // Search the web (Settings): the SearXNG instance as the engine's option; off, nothing is searched.
  const search = searchOptions(settings);
  try {
    // Where OPFS cannot open, the demo runs in memory for the session rather than not at all, and says so.
    memory = await connect({ ...options, storage: { directory: '.pagewise-demo' }, ...(encryption ? { encryption } : {}), ...(search ? { search } : {}), fallback: 'memory', onModelProgress: showModel, onEmbeddingProgress: showEmbedded });
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'KEY_REQUIRED') throw e;
    conceal();
    showLock();
    return;
  }
  encrypted = encryption !== undefined;
  await sealRecords(encrypted);
  await loadInspections(conversationId);
  showStorage(memory.storage, encrypted);
  showOpen(memory.storage.persistent === false ? 'unavailable' : encrypted ? 'encrypted' : 'plain');
  document.body.dataset.ready = 'true';
  await refresh();
}

/** Closes the memory, clears all it showed, and asks for the passphrase. */
async function lock(why?: string): Promise<void> {
  document.body.dataset.ready = 'false';
  await memory?.close();
  memory = undefined;
  conceal();
  showLock(why);
}

/** Nothing of the conversation stays on the page (or in it: what the demo held of it is dropped). */
function conceal(): void {
  last = undefined;
  replay = undefined;
  evidence = new Set();
  seqs = new Map();
  forgetThumbnails();
  forgetRecords();
  clearInspector();
  for (const id of ['turns', 'conversations', 'topics', 'pins', 'summaries', 'compaction-log', 'questions']) $(id).replaceChildren();
  for (const id of ['turn-count', 'embedded', 'compaction', 'import-status', 'send-error', 'sync-status']) $(id).textContent = '';
  $('intro').hidden = true;
  $('replay-panel').hidden = true;
  input.value = '';
  remove(pendingImages());
  delete document.body.dataset.embedded;
}

async function storedTurns(): Promise<StoredTurn[]> {
  if (!memory) return [];
  return memory.turns(conversationId, { limit: 5000 }).catch((e: { code?: string }) => {
    if (e.code === 'CONVERSATION_NOT_FOUND') return [];
    throw e;
  });
}

async function branchList(): Promise<BranchList> {
  const none: BranchList = { conversationId, head: null, branches: [], forks: [] };
  if (!memory) return none;
  return memory.branches(conversationId).catch((e: { code?: string }) => {
    if (e.code === 'CONVERSATION_NOT_FOUND') return none;
    throw e;
  });
}

async function refresh(): Promise<void> {
  await Promise.all([renderTurns(), renderConversations(), renderTopics(), renderSummaries(), renderCompactionLog(conversationId), memory && renderHealth(memory, conversationId)]);
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
  $('topics').replaceChildren(...topics.map((t) => el('li', { textContent: `${t.tag} · ${t.units} exchange${t.units === 1 ? '' : 's'} · last at #${t.lastSeq ?? '?'}` })));
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
  await loadInspections(conversationId);
  clearInspector();
  await refresh();
}

async function renderTurns(): Promise<void> {
  const [turns, tree] = await Promise.all([storedTurns(), branchList()]);
  seqs = new Map(turns.map((t) => [t.id, t.seq]));
  // First visit (or an empty conversation): one line on what to do, and both ways to start.
  $('intro').hidden = turns.length > 0 || tree.branches.length > 0;
  const pinned = new Set(memory && turns.length > 0 ? await memory.pins(conversationId) : []);
  $('pins').replaceChildren(...[...pinned].map((id) => el('li', {}, el('a', { href: `#turn-${id}`, title: id, textContent: turns.find((t) => t.id === id)?.text.slice(0, 60) ?? id, onclick: (ev: Event) => { ev.preventDefault(); jump(id); } }))));
  const sent = new Set(last?.manifest.filter((e) => e.kind !== 'recall').flatMap((e) => e.sourceIds));
  const recalled = new Set(last?.manifest.filter((e) => e.kind === 'recall').flatMap((e) => e.sourceIds));
  $('turns').replaceChildren(...turns.map((t, i) => {
    const classes = [t.role, sent.has(t.id) ? 'in-context' : '', recalled.has(t.id) ? 'recalled' : '', evidence.has(t.id) ? 'evidence' : ''];
    const li = el('li', { className: classes.filter(Boolean).join(' '), id: `turn-${t.id}` });
    li.dataset.id = t.id;
    const pin = el('button', {
      type: 'button', className: 'mini pin', textContent: pinned.has(t.id) ? 'unpin' : 'pin', title: 'A pinned message is recalled first whenever it is not in the history sent',
      onclick: () => { void (pinned.has(t.id) ? memory!.unpin(conversationId, t.id) : memory!.pin(conversationId, t.id)).then(renderTurns, (e) => showError(e)); },
    });
    const seen = inspection(t.id);
    const inspectButton = seen ? el('button', { type: 'button', className: 'mini inspect', textContent: 'inspect', title: 'Show what was sent with this message', onclick: () => { last = seen; inspect(seen); void renderTurns(); } }) : '';
    // The turn's text stays its last node (what a reader of the chat, and the browser tests, take as its text).
    li.append(el('span', { className: 'meta' }, `#${t.seq} · ${t.name ?? t.role} · ${t.createdAt.slice(0, 19).replace('T', ' ')} `, forkSwitch(turns, i, tree, switchBranch), pin, inspectButton, versionAction(turns, i, li, { ask, fail: (e) => showError(e, $('send-error')) })), turnImages(t.content), t.text);
    if (pinned.has(t.id)) li.classList.add('pinned');
    return li;
  }));
  $('turn-count').textContent = `${turns.length} stored · green: sent as history · dashed: recalled${evidence.size ? ' · blue: the question\'s evidence' : ''}`;
  if (memory) showEmbedded(await memory.embeddingStatus(conversationId));
  const list = $('turns');
  list.scrollTop = list.scrollHeight;
}

/** The arrows: the branch through `messageId` becomes current (the path to it, then on to the last message below it). */
function switchBranch(messageId: string): void {
  memory?.checkout(conversationId, messageId).then(refresh).catch((e: unknown) => showError(e));
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
  await ask({ id: crypto.randomUUID(), role: 'user', content: await contentOf(text, images) }, text);
}

/** After a request's message is stored: its compaction logged, the branch recall read noted, kept for "inspect". */
async function settle(ctx: Inspected, id: string, report: TurnReport): Promise<void> {
  await logCompaction(conversationId, report.compaction);
  last = { ...ctx, branch: branchNote(await branchList(), await storedTurns(), id) };
  await keepInspection(conversationId, id, last);
}

/**
 * Asks and stores: after the head (a new message), or after `parentId` — an edit's new version, or (`regenerate`) the
 * stored question `message` answered again — on a new branch beside what followed there before.
 */
async function ask(message: ChatMessage, text: string, at: Placing = {}): Promise<void> {
  await starting;
  if (!memory) throw new Error('the memory is not ready');
  if (at.regenerate && settings.provider === 'offline') throw new Error('Regenerating needs a model: choose one in Settings.');
  const where = at.parentId === undefined ? {} : { parentId: at.parentId };
  // The request moves the conversation to the parent (recall reads the path to it): a failure moves it back.
  const before = at.parentId === undefined ? null : (await branchList()).head;
  try {
    const ctx = await memory.onMessageInbound({ conversationId, message, mediaTokens: mediaRule(), ...where });
    last = ctx;
    inspect(ctx);
    if (settings.provider === 'offline') {
      // Offline: only the user's message is stored; the answer is made from memory and shown, never remembered.
      await settle(ctx, message.id!, await memory.onTurnComplete({ conversationId, messages: [message], ...where }));
      await refresh();
      liveBubble('offline · from memory alone · not stored', offlineReply(ctx, text));
      return;
    }
    await renderTurns();
    const body = liveBubble(`${settings.model} · streaming…`);
    const reply: ChatMessage = { id: crypto.randomUUID(), role: 'assistant', content: await streamReply({ ...settings, provider: settings.provider }, ctx, (delta) => { body.textContent += delta; }) };
    // A regenerated reply follows its question; anything else goes with the message it answers.
    const report = await memory.onTurnComplete(at.regenerate ? { conversationId, messages: [reply], parentId: message.id! } : { conversationId, messages: [message, reply], ...where });
    await settle(ctx, at.regenerate ? reply.id! : message.id!, report);
    for (const r of await memory.flush()) await logCompaction(conversationId, r);
    await refresh();
  } catch (e) {
    if (before !== null) { await memory.checkout(conversationId, before).catch(() => undefined); await refresh(); }
    throw e;
  }
}

$<HTMLFormElement>('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = input.value.trim();
  const images = pendingImages();
  const error = $('send-error');
  if (!text && images.length === 0) { error.textContent = 'Type a message or attach an image first.'; return; }
  error.textContent = '';
  $<HTMLButtonElement>('send').disabled = true;
  // Where the message is (sending, sent, failed): what a script or a test waits on, not a guess at how long it takes.
  document.body.dataset.send = 'sending';
  // The text and the images stay in the composer until they are stored: a refused or failed message is never lost.
  send(text, images).then(() => { if (input.value.trim() === text) input.value = ''; remove(images); document.body.dataset.send = 'sent'; }, (err: unknown) => {
    showError(refusal(err, text, images), error);
    document.body.dataset.send = 'failed';
  }).finally(() => { $<HTMLButtonElement>('send').disabled = false; });
});

// The first-visit example: ten messages sent as if typed, then a question about the second one.
$<HTMLButtonElement>('example').addEventListener('click', () => {
  const buttons = [$<HTMLButtonElement>('example'), $<HTMLButtonElement>('send')];
  for (const b of buttons) b.disabled = true;
  void (async () => {
    for (const text of [...EXAMPLE, EXAMPLE_QUESTION]) await send(text);
  })().catch((err: unknown) => showError(err, $('send-error'))).finally(() => { for (const b of buttons) b.disabled = false; });
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
  const restartNeeded = !settings || [...ENGINE_KEYS, ...SEARCH_KEYS].some((k) => settings[k] !== next[k]);
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
showMode();
restart();
setupLock({
  unlock: (passphrase) => { const opening = start(passphrase); starting = opening.catch(() => undefined); return opening; },
  rekey: async (encryption) => {
    await starting;
    if (!memory) throw new Error('the memory is not open');
    await memory.rekey(encryption);
    encrypted = encryption !== null;
    await sealRecords(encrypted);
    showStorage(memory.storage, encrypted);
  },
  lock: () => { starting = lock(); return starting; },
});
setupActions({ memory: async () => { await starting; return memory; }, conversationId: () => conversationId, storedTurns, switchTo, refresh });
setupComposer(async (id) => { await starting; return memory!.attachment(conversationId, id); }, (message) => showError({ message }, $('send-error')));
setupSync({ memory: async () => { await starting; return memory; }, settings: () => settings, conversationId: () => conversationId, switchTo, refresh });
