// Opens an OPFS database with its key in a dedicated worker of its own and answers its stored vectors (as hex), for
// encryption.spec.ts to look for in the files' bytes.
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';

self.onmessage = async (e: MessageEvent<{ directory: string; keyHex: string }>) => {
  try {
    const key = new Uint8Array(e.data.keyHex.match(/../g)!.map((h) => parseInt(h, 16)));
    const driver = await sqliteWasm({ vfs: 'opfs-sahpool', directory: e.data.directory, encryption: { key } })();
    try {
      const rows = await driver.query<{ vector: Uint8Array }>('SELECT vector FROM embeddings');
      postMessage({ vectors: rows.map((r) => Array.from(r.vector, (b) => b.toString(16).padStart(2, '0')).join('')) });
    } finally {
      await driver.close();
    }
  } catch (error) {
    postMessage({ error: String((error as Error).message) });
  }
};
