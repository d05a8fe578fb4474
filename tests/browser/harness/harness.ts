// Exposes the client API to Playwright. page.evaluate() cannot return live objects or keep an error's `code`, so
// calls go through `harness.call(...)`, which answers { value } or { error: { name, code, path, message } }.
import { connect, type ConnectedMemory, type ConnectOptions, type Memory, type StorageStatus } from '../../../src/client.js';

type Outcome = { value?: unknown; error?: { name: string; code?: string; path?: string; message: string } };

let memory: ConnectedMemory | undefined;
// A non-extractable key the page keeps (as an app would in IndexedDB): the worker gets it, its bytes stay unreadable.
let cryptoKey: CryptoKey | undefined;
const progress: object[] = [];
// What onStorageFallback was given, and when (before or after connect() resolved).
const fallbacks: (StorageStatus & { beforeResolve: boolean })[] = [];

async function settle(fn: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { value: await fn() };
  } catch (e) {
    const err = e as { name: string; code?: string; path?: string; message: string };
    return { error: { name: err.name, code: err.code, path: err.path, message: err.message } };
  }
}

const harness = {
  /** `noOpfs`: run the worker in which OPFS cannot open (no-opfs.worker.ts): getDirectory `throws` or is `missing`. */
  open: (options: ConnectOptions & { collectProgress?: boolean; noOpfs?: 'throws' | 'missing'; keyHex?: string; cryptoKey?: boolean } = {}) => settle(async () => {
    const { collectProgress, noOpfs, keyHex, cryptoKey: useCryptoKey, ...rest } = options;
    // Bytes and CryptoKeys cannot come through page.evaluate's JSON: a key as hex, or the page's own CryptoKey.
    if (keyHex) rest.encryption = { key: new Uint8Array(keyHex.match(/../g)!.map((h) => parseInt(h, 16))) };
    if (useCryptoKey) rest.encryption = { key: cryptoKey ??= await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']) };
    if (noOpfs) rest.worker = new Worker(new URL('./no-opfs.worker.ts', import.meta.url), { type: 'module', name: `no-opfs:${noOpfs}` });
    let resolved = false;
    rest.onStorageFallback = (status) => { fallbacks.push({ ...status, beforeResolve: !resolved }); };
    // Progress callbacks cannot come through page.evaluate: the harness collects them for the test to read.
    if (collectProgress) {
      rest.onModelProgress = (p) => { progress.push({ type: 'model', ...p }); };
      rest.onEmbeddingProgress = (p) => { progress.push({ type: 'embedding', ...p }); };
    }
    memory = await connect(rest);
    resolved = true;
    return true;
  }),
  progress: () => progress,
  /** `memory.storage` of the open memory. */
  storage: () => memory?.storage,
  fallbacks: () => fallbacks,
  call: (method: keyof Memory, ...args: unknown[]) => settle(async () => {
    if (!memory) throw new Error('harness: open() first');
    return (memory[method] as (...a: unknown[]) => Promise<unknown>)(...args);
  }),
  /** Inputs that cannot be written in page.evaluate's JSON: a symbol, a function, a lone surrogate. */
  hostile: async () => {
    const m = memory;
    if (!m) throw new Error('harness: open() first');
    return {
      symbolId: await settle(() => m.onTurnComplete({ conversationId: Symbol('x') as never, messages: [{ role: 'user', content: 'x' }] })),
      functionContent: await settle(() => m.onTurnComplete({ conversationId: 'h', messages: [{ role: 'user', content: (() => 1) as never }] })),
      loneSurrogate: await settle(() => m.onTurnComplete({ conversationId: 'X\uD800', messages: [{ role: 'user', content: 'x' }] })),
    };
  },
  /** memory.rekey() to the page's non-extractable CryptoKey (made on first use). */
  rekeyCryptoKey: () => settle(async () => {
    if (!memory) throw new Error('harness: open() first');
    cryptoKey ??= await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
    await memory.rekey({ key: cryptoKey });
    return true;
  }),
  close: () => settle(async () => { await memory?.close(); memory = undefined; return true; }),
  /** Runs the StorageDriver conformance suite on OPFS inside a dedicated worker. */
  conformance: () => new Promise<unknown>((resolve, reject) => {
    const worker = new Worker(new URL('./conformance.worker.ts', import.meta.url), { type: 'module' });
    worker.onmessage = (e) => { worker.terminate(); resolve(e.data); };
    worker.onerror = (e) => { worker.terminate(); reject(new Error(e.message)); };
    worker.postMessage('run');
  }),
  /** Deletes OPFS directories (fixtures clean up after themselves). */
  wipe: async (directories: string[]) => {
    const root = await navigator.storage.getDirectory();
    for (const d of directories) await root.removeEntry(d, { recursive: true }).catch(() => undefined);
    return true;
  },
  /** Whether any file under an OPFS directory holds `word` (any case) in its bytes, and how many bytes were read. */
  opfsHolds: async (directory: string, word: string) => {
    const root = await navigator.storage.getDirectory();
    const needle = word.toLowerCase();
    let bytes = 0;
    let found = false;
    const walk = async (dir: FileSystemDirectoryHandle): Promise<void> => {
      for await (const [, handle] of (dir as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
        if (handle.kind === 'directory') { await walk(handle as FileSystemDirectoryHandle); continue; }
        const data = new Uint8Array(await (await (handle as FileSystemFileHandle).getFile()).arrayBuffer());
        bytes += data.length;
        // Latin-1 keeps every byte as one character: an ASCII word is found wherever its bytes are.
        let text = '';
        for (let i = 0; i < data.length; i += 65_536) text += String.fromCharCode(...data.subarray(i, i + 65_536));
        if (text.toLowerCase().includes(needle)) found = true;
      }
    };
    await walk(await root.getDirectoryHandle(directory));
    return { found, bytes };
  },
  /**
   * Every file under an OPFS directory: its name, size and SHA-256, and which of `words` (any case) and of `runs`
   * (16-byte runs as hex) its bytes hold.
   */
  opfsScan: async (directory: string, words: string[], runs: string[] = []) => {
    const root = await navigator.storage.getDirectory();
    const wanted = new Set(runs);
    const out: { name: string; size: number; sha256: string; words: string[]; runs: number }[] = [];
    const walk = async (dir: FileSystemDirectoryHandle, prefix: string): Promise<void> => {
      for await (const [name, handle] of (dir as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
        if (handle.kind === 'directory') { await walk(handle as FileSystemDirectoryHandle, `${prefix}${name}/`); continue; }
        const data = new Uint8Array(await (await (handle as FileSystemFileHandle).getFile()).arrayBuffer());
        let text = '';
        for (let i = 0; i < data.length; i += 65_536) text += String.fromCharCode(...data.subarray(i, i + 65_536));
        const lower = text.toLowerCase();
        let hits = 0;
        if (wanted.size > 0) {
          const hex = Array.from(data, (b) => b.toString(16).padStart(2, '0')).join('');
          for (let i = 0; i + 32 <= hex.length; i += 2) if (wanted.has(hex.slice(i, i + 32))) hits++;
        }
        const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', data));
        out.push({ name: `${prefix}${name}`, size: data.length, sha256: Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join(''),
          words: words.filter((w) => lower.includes(w.toLowerCase())), runs: hits });
      }
    };
    await walk(await root.getDirectoryHandle(directory), '');
    return out.sort((a, b) => a.name.localeCompare(b.name));
  },
  /** The stored vectors of an OPFS database (opened in a worker of its own with `keyHex`), as hex. */
  vectorsOf: (directory: string, keyHex: string) => new Promise<unknown>((resolve, reject) => {
    const worker = new Worker(new URL('./vectors.worker.ts', import.meta.url), { type: 'module' });
    worker.onmessage = (e) => { worker.terminate(); resolve(e.data); };
    worker.onerror = (e) => { worker.terminate(); reject(new Error(e.message)); };
    worker.postMessage({ directory, keyHex });
  }),
  /** Names at the OPFS root, to check that fixtures left nothing behind. */
  opfsEntries: async () => {
    const root = await navigator.storage.getDirectory() as FileSystemDirectoryHandle & { keys(): AsyncIterable<string> };
    const names: string[] = [];
    for await (const name of root.keys()) names.push(name);
    return names;
  },
};

(globalThis as unknown as { harness: typeof harness }).harness = harness;
document.body.dataset.ready = 'true';
