// The buttons that act on the open conversation: filler turns, compact now, a new conversation, forget this one, export.
import type { ConnectedMemory } from '../src/client.js';
import type { ChatMessage, StoredTurn } from '../src/contracts/types.js';
import { $, el } from './dom.js';
import { logCompaction } from './records.js';
import { showError } from './status.js';

export interface ActionHooks {
  /** The memory once it is started (undefined while it is locked or could not start). */
  memory(): Promise<ConnectedMemory | undefined>;
  conversationId(): string;
  storedTurns(): Promise<StoredTurn[]>;
  switchTo(id: string): Promise<void>;
  refresh(): Promise<void>;
}

const FILLER = ['the weather this week', 'a new pasta recipe', 'weekend hiking plans', 'a podcast episode', 'the football match', 'repainting the kitchen', 'a sci-fi novel', 'learning the guitar'];

async function seed(hooks: ActionHooks): Promise<void> {
  const memory = await hooks.memory();
  if (!memory) return;
  const conversationId = hooks.conversationId();
  const base = (await hooks.storedTurns()).length;
  const messages: ChatMessage[] = Array.from({ length: 20 }, (_, i) => {
    const topic = FILLER[(base + i) % FILLER.length]!;
    return [
      { role: 'user' as const, content: `Small talk ${base + i}: what do you think about ${topic}?` },
      { role: 'assistant' as const, content: `I like ${topic}; there is always something new in it.` },
    ];
  }).flat();
  await logCompaction(conversationId, (await memory.onTurnComplete({ conversationId, messages })).compaction);
  await hooks.refresh();
}

async function compact(hooks: ActionHooks): Promise<void> {
  const memory = await hooks.memory();
  if (!memory) return;
  const conversationId = hooks.conversationId();
  const report = await memory.compact(conversationId);
  await logCompaction(conversationId, report);
  $('compaction').textContent = report ? `compacted ${report.turnsCompacted} turns into ${report.summariesMade} summaries; ${report.tokensFreed} tokens freed` : 'nothing to compact yet';
  await hooks.refresh();
}

async function forgetOpen(hooks: ActionHooks): Promise<void> {
  const memory = await hooks.memory();
  const conversationId = hooks.conversationId();
  if (!memory || !confirm(`Forget "${conversationId}" with everything derived from it?`)) return;
  await memory.forget({ conversationId }).catch((e: { code?: string }) => { if (e.code !== 'CONVERSATION_NOT_FOUND') throw e; });
  const rest = await memory.conversations();
  await hooks.switchTo(rest[0]?.id ?? 'demo');
}

async function exportAll(hooks: ActionHooks): Promise<void> {
  const memory = await hooks.memory();
  if (!memory) return;
  const data = await memory.export();
  const a = el('a', { href: URL.createObjectURL(new Blob([JSON.stringify(data)], { type: 'application/json' })), download: 'pagewise-export.json' });
  a.click();
  URL.revokeObjectURL(a.href);
}

export function setupActions(hooks: ActionHooks): void {
  $<HTMLButtonElement>('seed').addEventListener('click', () => { seed(hooks).catch((e) => showError(e)); });
  $<HTMLButtonElement>('compact').addEventListener('click', () => { compact(hooks).catch((e) => showError(e, $('compaction'))); });
  $<HTMLButtonElement>('new-conversation').addEventListener('click', () => { void hooks.switchTo(`chat-${Date.now().toString(36)}`); });
  $<HTMLButtonElement>('delete-conversation').addEventListener('click', () => { forgetOpen(hooks).catch((e) => showError(e)); });
  $<HTMLButtonElement>('export').addEventListener('click', () => { exportAll(hooks).catch((e) => showError(e)); });
}
