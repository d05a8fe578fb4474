// After a change of embedding model, the maintenance report shows the vectors' rebuild over every conversation (done
// of total for the current model), and each slice hands the newest conversation still waiting to the embedding queue.
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import type { Memory } from '../../../src/index.js';
import type { Embedder, StorageDriver } from '../../../src/contracts/types.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

/** A bag-of-words embedder (the embedding tests' own): `modelId` names the model whose space its vectors are in. */
function hashed(modelId: string): Embedder {
  return {
    modelId, dimensions: 64, maxBatchSize: 8, threshold: 0.1,
    async embed(texts: readonly string[]) {
      return texts.map((t) => {
        const v = new Float32Array(64);
        for (const w of t.toLowerCase().match(/[a-z]+/g) ?? []) v[[...w].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 64, 7)]! += 1;
        return v;
      });
    },
  };
}

/** The driver stays open when an engine closes: the next engine opens the same database, as after a restart. */
const shared = (d: StorageDriver): StorageDriver => ({ name: d.name, query: (s, p) => d.query(s, p), batch: (s) => d.batch(s), close: () => undefined });

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; });

describe('vectors after a change of model', () => {
  it('reports done of total for the new model and hands conversations to the queue newest first', async () => {
    const driver = await sqliteWasm()();
    memory = await createMemory({ embedder: hashed('model-a'), storage: shared(driver), maintenance: 'manual' });
    for (const c of ['va', 'vb', 'vc']) {
      await memory.onTurnComplete({ conversationId: c, messages: Array.from({ length: 12 }, (_, i) => [user(`Step ${i} of ${c}: the greenhouse valves.`), assistant(`Noted step ${i} of ${c}.`)]).flat() });
    }
    await memory.flush();
    await memory.close();

    memory = await createMemory({ embedder: hashed('model-b'), storage: shared(driver), maintenance: 'manual' });
    const order = (await memory.conversations()).map((c) => c.id);
    const handed: string[] = [];
    for (let more = true; more;) {
      const report = await memory.maintain();
      const v = report.rebuilds.find((r) => r.kind === 'vectors');
      if (v?.conversationId && !handed.includes(v.conversationId)) handed.push(v.conversationId);
      if (handed.length === 1) expect(v).toMatchObject({ done: 0, total: 72 });
      more = report.more;
    }
    // Newest first: the order the slices named them in is the conversations' (last updated first), each of them.
    expect(handed).toEqual(order);
    await memory.flush();
    for (const c of order) expect(await memory.embeddingStatus(c)).toMatchObject({ modelId: 'model-b', embedded: 24, total: 24 });
    // Everything current: nothing left to report, and the other model's vectors are gone.
    expect((await memory.maintain()).rebuilds).toEqual([]);
    expect(await driver.query("SELECT COUNT(*) AS n FROM embeddings WHERE model_id = 'model-a'")).toEqual([{ n: 0 }]);
    await memory.close();
    memory = undefined;
    await driver.close();
  });
});
