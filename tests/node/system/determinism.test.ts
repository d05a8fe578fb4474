// Deterministic recall: the same stored conversation and question give the same context, and the same conversation
// stores the same state whenever its background work happens to run. The shipped model, in-process; no network.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemory, type ManifestEntry, type Memory, type StorageDriver } from '../../../src/index.js';
import { transformersEmbedder } from '../../../src/embed/transformers.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import type { ChatMessage } from '../../../src/contracts/types.js';

let memories: Memory[] = [];
afterEach(async () => { await Promise.all(memories.map((m) => m.close())); memories = []; });

/** A driver that outlives the engine using it, so its rows can be read afterwards. */
function shared(driver: StorageDriver): StorageDriver {
  return { name: driver.name, query: (sql, params) => driver.query(sql, params), batch: (s) => driver.batch(s), close: () => undefined };
}

const adversarial = JSON.parse(readFileSync(new URL('../../bench/data/adversarial.json', import.meta.url), 'utf8')) as {
  id: string; turns: ChatMessage[]; questions: { question: string }[];
};
const NOW = new Date(Date.parse(adversarial.turns.at(-1)!.createdAt!) + 86_400_000).toISOString();
// Summaries have random ids: one is named by its level and the turns it covers.
const entry = (e: ManifestEntry) => `${e.kind}:${e.sourceIds.join(',')}${e.covers ? `#${e.level}:${e.covers.fromSeq}-${e.covers.toSeq}` : ''}`;
const stripIds = (text: string) => text.replace(/sum_[0-9a-f-]{36}/g, 'sum_*');

describe('deterministic recall', () => {
  it('gives a text the same vector whatever it is embedded beside (a run of the 8-bit model scales per run)', async () => {
    const e = transformersEmbedder({ provider: 'transformers', thread: false });
    const a = 'My vet, Dr. Alvarez, said the pup needs his booster shots in May.';
    const long = 'The slow orders query got much faster after I added a composite index on customer_id and created_at, which removed the sort.';
    const [alone] = await e.embed([a]);
    const [withShort] = await e.embed([a, 'ok']);
    const [withLong] = await e.embed([long, a, 'ok']).then((v) => v.slice(1));
    expect(Array.from(withShort!)).toEqual(Array.from(alone!));
    expect(Array.from(withLong!)).toEqual(Array.from(alone!));
    // The question path gives the stored text's vector exactly (no prefixes for this model).
    expect(Array.from(await e.embedQuery!(a))).toEqual(Array.from(alone!));
  });

  it('stores the same turn vectors whether the background embedded turn by turn or all at once', async () => {
    const turns = adversarial.turns.slice(0, 21);
    const vectorsOf = async (batches: ChatMessage[][], flushEach: boolean) => {
      const driver = await sqliteWasm()();
      const memory = await createMemory({ storage: shared(driver), compaction: false });
      memories.push(memory);
      for (const batch of batches) {
        await memory.onTurnComplete({ conversationId: 'c', messages: batch });
        if (flushEach) await memory.flush();
      }
      await memory.flush();
      const rows = await driver.query<{ ref: number; vector: Uint8Array }>("SELECT ref, vector FROM embeddings WHERE kind = 'turn' ORDER BY ref");
      return rows.map((r) => `${r.ref}:${Buffer.from(r.vector).toString('hex')}`);
    };
    // Three messages a call, each embedded before the next (runs pair turns 0+1, 2, 3+4, 5, …), against one call
    // embedded afterwards (0+1, 2+3, …): a vector depended on its run's other text.
    const threes = Array.from({ length: 7 }, (_, i) => turns.slice(i * 3, i * 3 + 3));
    const stepwise = await vectorsOf(threes, true);
    const atOnce = await vectorsOf([turns], false);
    expect(stepwise).toHaveLength(turns.length);
    expect(atOnce.filter((v, i) => v !== stepwise[i]).map((v) => v.split(':')[0])).toEqual([]);
  });

  it('gives the same manifests and text for the same conversation ingested twice, and for the same question asked twice', async () => {
    const answers = async () => {
      const memory = await createMemory({ contextWindow: 8192, reserveTokens: 1024, storage: sqliteWasm() });
      memories.push(memory);
      for (let i = 0; i < adversarial.turns.length; i += 2) {
        await memory.onTurnComplete({ conversationId: adversarial.id, messages: adversarial.turns.slice(i, i + 2) });
        await memory.flush();
      }
      const ask = async () => {
        const out: string[] = [];
        for (const q of adversarial.questions) {
          const ctx = await memory.onMessageInbound({ conversationId: adversarial.id, message: { role: 'user', content: q.question }, now: NOW });
          expect(ctx.notes ?? []).toEqual([]);
          out.push(`${ctx.manifest.map(entry).join(' | ')}\n${stripIds(ctx.prependText)}`);
        }
        return out;
      };
      return { first: await ask(), again: await ask() };
    };
    const one = await answers();
    const two = await answers();
    expect(one.again).toEqual(one.first);
    expect(two.first).toEqual(one.first);
  }, 120_000);
});
