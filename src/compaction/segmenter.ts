/** A unit (a user turn with its replies) with its primary tags. */
export interface TaggedUnit {
  unitSeq: number;
  endSeq: number;
  tags: readonly string[];
}

/** Consecutive turns to summarize together: from `firstSeq` (the watermark or the previous segment's end + 1) to `lastSeq`. */
export interface Segment {
  firstSeq: number;
  lastSeq: number;
  units: TaggedUnit[];
  tags: string[];
}

/**
 * Groups consecutive units that share a tag with the unit before them into segments of at most `maxTurns` turns
 * (a unit longer than that is a segment of its own). A segment shorter than half of `maxTurns` takes the next unit
 * whatever its tags: with specific tags consecutive exchanges rarely share one, and a summary of one exchange
 * compresses little yet costs a row, its tag rows and its index entries (at 26,000 turns: 3.7 turns a segment, not
 * 12). Turns between units (mid-conversation system turns) go with the segment after them, so segments tile the
 * compacted range without gaps.
 */
export function segment(units: readonly TaggedUnit[], fromSeq: number, maxTurns: number): Segment[] {
  const out: Segment[] = [];
  const minTurns = Math.ceil(maxTurns / 2);
  let current: Segment | null = null;
  let prev: TaggedUnit | null = null;
  for (const u of units) {
    const shares = prev !== null && u.tags.some((t) => prev!.tags.includes(t));
    const short = current !== null && current.lastSeq - current.firstSeq + 1 < minTurns;
    if (current && (shares || short) && u.endSeq - current.firstSeq + 1 <= maxTurns) {
      current.units.push(u);
      current.lastSeq = u.endSeq;
      for (const t of u.tags) if (!current.tags.includes(t)) current.tags.push(t);
    } else {
      const firstSeq: number = current ? current.lastSeq + 1 : fromSeq;
      current = { firstSeq, lastSeq: u.endSeq, units: [u], tags: [...u.tags] };
      out.push(current);
    }
    prev = u;
  }
  return out;
}

/**
 * The fewest tags (greedy set cover) whose units cover every unit that has tags: seed 000's layer 2. Ties go to the
 * tag used more, then alphabetically, so the cover is deterministic.
 */
export function setCover(unitTags: ReadonlyMap<number, readonly string[]>): string[] {
  const byTag = new Map<string, Set<number>>();
  for (const [unit, tags] of unitTags) {
    for (const t of tags) {
      const set = byTag.get(t) ?? new Set<number>();
      set.add(unit);
      byTag.set(t, set);
    }
  }
  const uncovered = new Set([...unitTags.entries()].filter(([, tags]) => tags.length > 0).map(([u]) => u));
  const cover: string[] = [];
  while (uncovered.size > 0) {
    let best: string | null = null;
    let bestGain = 0;
    for (const [tag, units] of byTag) {
      let gain = 0;
      for (const u of units) if (uncovered.has(u)) gain++;
      if (gain > bestGain || (gain === bestGain && gain > 0 && best !== null
        && (units.size > byTag.get(best)!.size || (units.size === byTag.get(best)!.size && tag < best)))) {
        best = tag;
        bestGain = gain;
      }
    }
    if (best === null) break;
    cover.push(best);
    for (const u of byTag.get(best)!) uncovered.delete(u);
    byTag.delete(best);
  }
  return cover;
}

/**
 * A roll-up's inherited tags: of the tags its parts carry, the `limit` on the most units of the conversation (`used`),
 * ties to those on more parts, then to the earlier.
 */
export function prominent(lists: readonly (readonly string[])[], used: ReadonlyMap<string, number>, limit: number): string[] {
  const parts = new Map<string, number>();
  for (const list of lists) for (const t of new Set(list)) parts.set(t, (parts.get(t) ?? 0) + 1);
  // Map order is first appearance: a stable sort keeps it among equals.
  return [...parts].sort((a, b) => (used.get(b[0]) ?? 0) - (used.get(a[0]) ?? 0) || b[1] - a[1]).slice(0, limit).map(([t]) => t);
}

/** Runs `fn` over `items` with at most `limit` at once; results in input order. */
export function pool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R>[] {
  const results: Promise<R>[] = [];
  let running = 0;
  const waiting: (() => void)[] = [];
  const slot = (): Promise<void> => (running < limit ? (running++, Promise.resolve()) : new Promise<void>((r) => waiting.push(r)).then(() => { running++; }));
  const release = (): void => { running--; waiting.shift()?.(); };
  items.forEach((item, i) => {
    results.push(slot().then(() => fn(item, i)).finally(release));
  });
  // Failures are read by whoever awaits them; nothing is left unhandled.
  for (const r of results) r.catch(() => undefined);
  return results;
}
