// Bench only: USE-Lite with a disk cache of vectors by text, so reruns of the recall bench skip re-embedding
// (the first run embeds everything; its throughput is what `--only=embedding` measures, uncached).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { useLiteEmbedder } from '../../src/embed/use-lite.js';
import type { Embedder } from '../../src/types.js';

const DIR = new URL('../../node_modules/.cache/pagewise-bench/', import.meta.url);
const FILE = new URL('use-lite.bin', DIR);

export function cachedUseLite(): Embedder & { save(): void; misses: number } {
  const inner = useLiteEmbedder();
  const cache = new Map<string, Float32Array>();
  if (existsSync(FILE)) {
    const buf = readFileSync(FILE);
    for (let at = 0; at + 16 + 2048 <= buf.length; at += 16 + 2048) {
      cache.set(buf.subarray(at, at + 16).toString('hex'), new Float32Array(buf.buffer.slice(buf.byteOffset + at + 16, buf.byteOffset + at + 16 + 2048)));
    }
  }
  const key = (t: string) => createHash('md5').update(t).digest('hex');
  let dirty = false;
  const e = {
    modelId: inner.modelId, dimensions: inner.dimensions, maxBatchSize: inner.maxBatchSize, threshold: inner.threshold, misses: 0,
    load: inner.load,
    // Questions are embedded for real each time: the request path's latency is what the bench reports.
    async embedQuery(text: string, signal?: AbortSignal) {
      return (await inner.embed([text], signal))[0]!;
    },
    async embed(texts: readonly string[], signal?: AbortSignal) {
      const keys = texts.map(key);
      const missing = [...new Set(keys.filter((k) => !cache.has(k)))];
      if (missing.length > 0) {
        const byKey = new Map(texts.map((t, i) => [keys[i]!, t]));
        const vectors = await inner.embed(missing.map((k) => byKey.get(k)!), signal);
        missing.forEach((k, i) => cache.set(k, vectors[i]!));
        e.misses += missing.length;
        dirty = true;
      }
      return keys.map((k) => cache.get(k)!.slice());
    },
    save() {
      if (!dirty) return;
      mkdirSync(DIR, { recursive: true });
      const parts: Buffer[] = [];
      for (const [k, v] of cache) parts.push(Buffer.from(k, 'hex'), Buffer.from(v.buffer, v.byteOffset, v.byteLength));
      writeFileSync(FILE, Buffer.concat(parts));
      dirty = false;
    },
  };
  return e;
}
