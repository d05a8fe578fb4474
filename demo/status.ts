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

/** Where the memory lives, and whether it is encrypted. In memory only (OPFS could not open): a banner no one can miss. */
export function showStorage(storage: StorageStatus, encrypted: boolean): void {
  const banner = $('storage-banner');
  document.body.dataset.storage = storage.persistent === false ? 'memory' : 'opfs';
  if (storage.persistent === false) {
    statusEl.textContent = 'ready · in memory only: nothing survives a reload';
    banner.hidden = false;
    banner.replaceChildren(el('strong', { textContent: 'Memory will not survive a reload. ' }),
      'This browser could not open its storage (OPFS — a private window or an old browser?), so this session runs in memory: everything you add is gone when you reload or close the tab. Export a conversation to keep it.',
      el('span', { className: 'small reason', textContent: ` (${storage.fallbackReason ?? 'no OPFS'})` }));
  } else {
    statusEl.textContent = `ready · SQLite on OPFS in a worker: kept across reloads · ${encrypted ? 'encrypted with a passphrase' : 'not encrypted'}`;
    banner.hidden = true;
  }
}

const modelEl = $('model');
const modelBar = $<HTMLProgressElement>('model-progress');

// Each file fetched, with the share of the bytes requested so far when its first bytes came (two may interleave).
const started = new Map<string, number>();

/**
 * The embedding model's load — tokenizer and config files, the weights (23 MB the first time, then from the HTTP
 * cache), the ONNX runtime, then starting it — shown part by part, then ready. An event's share counts the bytes of
 * the files requested so far, which the next file lowers: every small file read 1 (100%) before the weights were even
 * asked for, and the last one's 1 comes before the runtime has started. So what is shown is the file under way and
 * how much of it has arrived (the share gained since its first bytes, over what was left), never a 100% of the load:
 * a file complete reads "fetched", and "ready" is said only once the model has answered.
 */
export function showModel(p: ModelProgress): void {
  if (p.status === 'ready') {
    started.clear();
    modelEl.textContent = `embedding model: ready (all-MiniLM-L6-v2 on ${p.device ?? 'wasm'}, in its own worker)`;
    modelBar.value = 1;
    modelBar.hidden = true;
    document.body.dataset.model = 'ready';
    return;
  }
  const share = p.progress ?? 0;
  const file = p.file?.split('/').pop();
  if (file && !started.has(file)) started.set(file, share);
  const from = file ? started.get(file)! : 0;
  const part = share >= 1 || from >= 1 ? 1 : Math.max(0, (share - from) / (1 - from));
  // A file complete: what comes next (another file, or the runtime starting) is not known, so the bar has no value.
  if (part < 1) modelBar.value = part;
  else modelBar.removeAttribute('value');
  modelEl.textContent = `embedding model: loading${!file ? '…' : part < 1 ? ` · ${file} ${Math.floor(part * 100)}%` : ` · ${file} fetched…`}`;
  modelBar.hidden = false;
  document.body.dataset.model = 'loading';
}
