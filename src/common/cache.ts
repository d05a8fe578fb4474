/**
 * A map that keeps the `limit` most recently used entries: per-conversation caches stay bounded however many
 * conversation ids an engine sees.
 */
export class Lru<K, V> {
  private readonly map = new Map<K, V>();
  constructor(private readonly limit: number) {}

  get size(): number { return this.map.size; }

  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  has(key: K): boolean { return this.map.has(key); }

  set(key: K, value: V): this {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.limit) this.map.delete(this.map.keys().next().value!);
    return this;
  }

  delete(key: K): boolean { return this.map.delete(key); }

  clear(): void { this.map.clear(); }
}

/** Conversations each per-conversation cache keeps (turn counts, speakers, aliases, vocabularies, hints, pressure). */
export const CACHED_CONVERSATIONS = 256;
