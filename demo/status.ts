// The status bar: errors in plain words, where the memory lives, the embedding model's load.
import type { StorageStatus } from '../src/client.js';
import type { ModelProgress } from '../src/contracts/types.js';
import { readable } from './settings.js';
import { $, el } from './dom.js';

export const statusEl = $('status');

export function showError(e: unknown, where: HTMLElement = statusEl): void {
  const code = (e as { code?: unknown } | null)?.code;
  const span = el('span', { className: 'error', textContent: readable(e) });
  // The code stays at hand for developers (and tests) without being the first thing a person reads.
  if (typeof code === 'string') { span.dataset.code = code; span.title = code; }
  where.replaceChildren(span);
}

/** Where the memory lives. In memory only (OPFS could not open): a banner no one can miss. */
export function showStorage(storage: StorageStatus): void {
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

const modelEl = $('model');
const modelBar = $<HTMLProgressElement>('model-progress');

/** The embedding model's load (23 MB the first time, then from the HTTP cache): progress, then ready. */
export function showModel(p: ModelProgress): void {
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
