// Branches in the chat: a message with alternatives (an edit, a regenerated reply) shows "‹ 2 of 3 ›" and switches
// between them; a user message can be edited in place, an assistant reply regenerated; the inspector names the branch
// recall read. Everything is written with textContent.
import type { BranchList } from '../src/contracts/types-branches.js';
import type { ChatMessage, StoredTurn } from '../src/contracts/types.js';
import { el } from './dom.js';
import { readable } from './settings.js';

/** The alternatives of the message at `i` of the current path (the fork after the message before it), or null. */
export function forkAt(path: readonly StoredTurn[], i: number, list: BranchList): { k: number; n: number; starts: string[] } | null {
  const after = i > 0 ? path[i - 1]!.id : null;
  const id = path[i]!.id;
  const fork = list.forks.find((f) => f.after === after && f.starts.includes(id));
  return fork ? { k: fork.starts.indexOf(id) + 1, n: fork.starts.length, starts: fork.starts } : null;
}

/** "‹ 2 of 3 ›" for the message at `i` of the current path, where it has alternatives; `go` checks one out. */
export function forkSwitch(path: readonly StoredTurn[], i: number, list: BranchList, go: (messageId: string) => void): HTMLElement | '' {
  const fork = forkAt(path, i, list);
  if (!fork) return '';
  const { k, n, starts } = fork;
  const arrow = (to: number, text: string, label: string) => el('button', {
    type: 'button', className: `mini fork-${to < k ? 'prev' : 'next'}`, textContent: text, title: label, ariaLabel: label, disabled: to < 1 || to > n,
    onclick: () => go(starts[to - 1]!),
  });
  const span = el('span', { className: 'fork', title: `This message has ${n} versions (edits or regenerations); the arrows switch branch` },
    arrow(k - 1, '‹', 'previous version'), el('span', { className: 'fork-count', textContent: `${k} of ${n}` }), arrow(k + 1, '›', 'next version'));
  return span;
}

/** The content of an edited user message: the new text, with the original's images and files kept. */
export function editedContent(original: StoredTurn['content'], text: string): ChatMessage['content'] {
  if (!Array.isArray(original)) return text;
  const kept = original.filter((p) => p.type !== 'text');
  return kept.length === 0 ? text : [{ type: 'text', text }, ...kept];
}

/**
 * The inline editor of a user message: a textarea with its text (or `draft`'s, with the error it met), Save and
 * Cancel. `save` sends the new version (a new branch); its errors show in the editor, and the text typed stays there.
 */
export function editForm(turn: StoredTurn, draft: { text: string; error: string } | null, save: (text: string) => Promise<void>, close: () => void): HTMLFormElement {
  const area = document.createElement('textarea');
  const value = draft?.text ?? turn.text;
  Object.assign(area, { className: 'edit-text', value, rows: Math.min(8, Math.max(2, value.split('\n').length)) });
  area.setAttribute('aria-label', 'edited message');
  const error = el('span', { className: 'error', role: 'alert', textContent: draft?.error ?? '' });
  const saveButton = el('button', { type: 'submit', className: 'mini edit-save', textContent: 'Save' });
  const form = el('form', { className: 'edit' }, area, el('div', { className: 'row' }, saveButton,
    el('button', { type: 'button', className: 'mini edit-cancel', textContent: 'Cancel', onclick: close }), error));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = area.value.trim();
    // The same text again is no edit.
    if (!text || text === turn.text.trim()) { if (text) close(); else error.textContent = 'Type the new message, or cancel.'; return; }
    saveButton.disabled = true;
    error.textContent = '';
    save(text).catch((e: unknown) => { error.textContent = readable(e); }).finally(() => { saveButton.disabled = false; });
  });
  queueMicrotask(() => area.focus());
  return form;
}

/**
 * The inspector's line on the branch recall read: which version of the conversation (the last fork on the path to
 * the request's message, `k of n` at its number), and where the path recall read ends (its head). `path`: the current
 * branch's turns; `newId`: the request's stored message on it (what recall read is the path before it), or null when
 * the message was not stored (recall read the whole path).
 */
export function branchNote(list: BranchList, path: readonly StoredTurn[], newId: string | null): string {
  const at = newId === null ? -1 : path.findIndex((t) => t.id === newId);
  const end = at < 0 ? path.length : at;
  let fork: { i: number; k: number; n: number } | null = null;
  for (let i = 0; i < Math.min(path.length, end + 1); i++) {
    const f = forkAt(path, i, list);
    if (f) fork = { i, k: f.k, n: f.n };
  }
  const head = end > 0 ? path[end - 1]! : null;
  const which = fork ? `Branch ${fork.k} of ${fork.n} at message #${path[fork.i]!.seq}` : `Branch: the only one${list.forks.length ? ' on this path' : ''} (no edit or regeneration before this message)`;
  const read = head ? `recall read #0–#${head.seq} (head ${head.id.slice(0, 8)}…)` : 'recall read nothing before it (the conversation starts over)';
  return `${which} · ${read}${list.branches.length > 1 ? ` · ${list.branches.length} branches in this conversation` : ''}`;
}

/** Where a message goes (main.ts's ask): after `parentId`; `regenerate`: the stored question answered again. */
export interface Placing { parentId?: string | null; regenerate?: boolean }

/** How the chat's version actions reach the engine: ask (and store), and show an error. */
export interface Versions {
  ask(message: ChatMessage, text: string, at: Placing): Promise<void>;
  fail(e: unknown): void;
}

/**
 * A user message's "edit" (its new version follows the message before it: a new branch) and an assistant reply's
 * "regenerate" (the question before it answered again: a new branch after the question).
 */
export function versionAction(turns: readonly StoredTurn[], i: number, li: HTMLElement, versions: Versions): HTMLElement | '' {
  const t = turns[i]!;
  const parentOf = (j: number) => (j > 0 ? turns[j - 1]!.id : null);
  function open(target: HTMLElement, draft: { text: string; error: string } | null): void {
    if (target.querySelector('form.edit')) return;
    const form = editForm(t, draft, save, () => form.remove());
    target.append(form);
  }
  // A failed edit leaves the conversation as it was, re-rendered: the editor opens again there, with the text typed.
  function save(text: string): Promise<void> {
    return versions.ask({ id: crypto.randomUUID(), role: 'user', content: editedContent(t.content, text) }, text, { parentId: parentOf(i) }).catch((e: unknown) => {
      const again = document.getElementById(`turn-${t.id}`);
      if (again && again !== li) open(again, { text, error: readable(e) });
      throw e;
    });
  }
  if (t.role === 'user') {
    return el('button', {
      type: 'button', className: 'mini edit', textContent: 'edit', title: 'Edit this message: the new version starts a new branch; this one stays (the arrows switch back)',
      onclick: () => open(li, null),
    });
  }
  const question = turns[i - 1];
  if (t.role !== 'assistant' || question?.role !== 'user') return '';
  const button = el('button', {
    type: 'button', className: 'mini regenerate', textContent: 'regenerate', title: 'Answer the message before it again: the new reply starts a new branch; this one stays',
    onclick: () => {
      button.disabled = true;
      // The stored question itself (its id): recall reads the path to it, without the reply it had.
      const asked: ChatMessage = { id: question.id, role: 'user', content: question.content, ...(question.name ? { name: question.name } : {}), ...(question.private ? { private: true } : {}) };
      versions.ask(asked, question.text, { parentId: parentOf(i - 1), regenerate: true }).catch((e: unknown) => { button.disabled = false; versions.fail(e); });
    },
  });
  return button;
}
