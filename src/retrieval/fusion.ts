/** One ranked list of candidate units, best first, from one signal. */
export interface RankedList {
  name: string;
  units: readonly number[];
  /** This list's constant (default RRF_K): a smaller one trusts its head more. */
  k?: number;
}

/** A unit with its fused score and the lists that ranked it. */
export interface Fused {
  unit: number;
  score: number;
  lists: string[];
}

/** Reciprocal rank fusion's constant (Cormack et al. 2009): damps the head of each list. */
export const RRF_K = 60;

/** Reciprocal rank fusion: Σ over lists of 1 / (k + rank). Ties go to the newer unit. */
export function fuse(lists: readonly RankedList[], k = RRF_K): Fused[] {
  const byUnit = new Map<number, Fused>();
  for (const list of lists) {
    list.units.forEach((unit, i) => {
      const f = byUnit.get(unit) ?? { unit, score: 0, lists: [] };
      f.score += 1 / ((list.k ?? k) + i + 1);
      f.lists.push(list.name);
      byUnit.set(unit, f);
    });
  }
  return [...byUnit.values()].sort((a, b) => b.score - a.score || b.unit - a.unit);
}
