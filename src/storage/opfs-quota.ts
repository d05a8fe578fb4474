// An OPFS write that failed: the origin's quota used up (STORAGE_FULL), or another I/O error.
import { PagewiseError } from '../contracts/errors.js';

const MODULE = 'sqlite-wasm';

// What the quota probe writes: the most a transaction of pagewise's usually grows the database by.
const PROBE_BYTES = 256 * 1024;

/**
 * A failed OPFS write is STORAGE_FULL when the origin has no room left: the access handle's write threw
 * QuotaExceededError, which the VFS reports as a plain I/O error. Told apart by writing a probe file of the size a
 * transaction needs (the quota is enforced on writes; `estimate()` may not show an enterprise or emulated limit).
 */
export async function quotaCheck(error: PagewiseError): Promise<PagewiseError> {
  const storage = (globalThis.navigator as Navigator | undefined)?.storage;
  if (!storage?.getDirectory) return error;
  const name = '.pagewise-quota-probe';
  let full = false;
  try {
    const root = await storage.getDirectory();
    try {
      const writable = await (await root.getFileHandle(name, { create: true })).createWritable();
      await writable.write(new Uint8Array(PROBE_BYTES));
      await writable.close();
    } finally {
      await root.removeEntry(name).catch(() => undefined);
    }
  } catch (probe) {
    full = (probe as { name?: unknown })?.name === 'QuotaExceededError';
  }
  if (!full) return error;
  const estimate = await storage.estimate?.().catch(() => undefined);
  const used = estimate?.usage === undefined ? '' : ` (${(estimate.usage / 1e6).toFixed(1)} MB used)`;
  return new PagewiseError('STORAGE_FULL', MODULE,
    `The browser's storage quota for this site is used up${used}; the write was rolled back. Free space (memory.forget(), or other data of this site), or ask for persistent storage with navigator.storage.persist().`,
    { cause: error });
}

