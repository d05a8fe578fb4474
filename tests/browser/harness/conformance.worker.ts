// Runs the StorageDriver conformance suite against sqlite-wasm on OPFS (opfs-sahpool) in a real dedicated worker.
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import { storageDriverCases } from '../../support/conformance/storage-driver.js';

self.onmessage = async () => {
  const results: { name: string; ok: boolean; error?: string }[] = [];
  const root = await navigator.storage.getDirectory();
  for (const [i, c] of storageDriverCases.entries()) {
    // A fresh pool per case: each case needs an empty database.
    const directory = `.pagewise-conformance-${i}`;
    try {
      const driver = await sqliteWasm({ vfs: 'opfs-sahpool', directory })();
      try {
        await c.run(driver);
        results.push({ name: c.name, ok: true });
      } finally {
        await driver.close();
      }
    } catch (e) {
      results.push({ name: c.name, ok: false, error: String((e as Error).message) });
    } finally {
      await root.removeEntry(directory, { recursive: true }).catch(() => undefined);
    }
  }
  postMessage({ driver: 'sqlite-wasm:opfs-sahpool', results });
};
