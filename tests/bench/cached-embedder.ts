// Bench only, opt-in (--embed=cached): any embedder with a disk cache of stored texts' vectors, so reruns of the
// recall bench skip re-embedding while tuning. Questions are always embedded live. Never the default: a cache hides
// the cost users pay (it once hid a 486 ms p95 on every question); latency figures are printed with live embedding.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Embedder } from '../../src/contracts/types.js';

const DIR = new URL('../../node_modules/.cache/pagewise-bench/', import.meta.url);

/**
 * `version` names the model's bytes (the shipped model's hash): a rebuilt model with the same id must not read the
 * vectors its predecessor wrote.
 */
export function cachedEmbedder(inner: Embedder, version = ''): Embedder & { save(): void } {
  const file = new URL(`${inner.modelId.replace(/[^\w.@-]+/g, '_')}${version ? `-${version}` : ''}.bin`, DIR);
  const cache = new Map<string, Float32Array>();
  const load = () => {
    if (cache.size > 0 || !existsSync(file)) return;
    const buf = readFileSync(file);
    const width = 16 + 4 * inner.dimensions;
    for (let at = 0; at + width <= buf.length; at += width) {
      cache.set(buf.subarray(at, at + 16).toString('hex'), new Float32Array(buf.buffer.slice(buf.byteOffset + at + 16, buf.byteOffset + at + width)));
    }
  };
  const key = (t: string) => createHash('md5').update(t).digest('hex');
  let dirty = false;
  return {
    modelId: inner.modelId, get dimensions() { return inner.dimensions; }, maxBatchSize: inner.maxBatchSize, threshold: inner.threshold,
    async load() { await inner.load?.(); load(); },
    async embedQuery(text, signal) {
      return inner.embedQuery ? inner.embedQuery(text, signal) : (await inner.embed([text], signal))[0]!;
    },
    async embed(texts, signal) {
      await inner.load?.();
      load();
      const keys = texts.map(key);
      const missing = [...new Set(keys.filter((k) => !cache.has(k)))];
      if (missing.length > 0) {
        const byKey = new Map(texts.map((t, i) => [keys[i]!, t]));
        const vectors = await inner.embed(missing.map((k) => byKey.get(k)!), signal);
        missing.forEach((k, i) => cache.set(k, vectors[i]!));
        dirty = true;
      }
      return keys.map((k) => cache.get(k)!.slice());
    },
    save() {
      if (!dirty) return;
      mkdirSync(DIR, { recursive: true });
      const parts: Buffer[] = [];
      for (const [k, v] of cache) parts.push(Buffer.from(k, 'hex'), Buffer.from(v.buffer, v.byteOffset, v.byteLength));
      writeFileSync(file, Buffer.concat(parts));
      dirty = false;
    },
  };
}
