import { describe, it } from 'vitest';
import { sqliteWasm } from '../../src/storage/sqlite-wasm.js';
import { storageDriverCases } from '../conformance/storage-driver.js';

describe('StorageDriver conformance: sqlite-wasm in memory (Node)', () => {
  for (const c of storageDriverCases) {
    it(c.name, async () => {
      const driver = await sqliteWasm({ vfs: 'memory' })();
      try { await c.run(driver); } finally { await driver.close(); }
    });
  }
});
