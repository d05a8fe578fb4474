// Trains pagewise's ranking weights from labelled conversations: every recall candidate's features (the engine's own,
// through `ranking.onCandidates`) with the question's evidence turns as labels, fitted by a listwise softmax
// (each question's candidates compete for its evidence), L2-regularized, by full-batch Adam from zero for a fixed
// number of steps: the same data gives the same weights, bit for bit.
// Used by tests/bench/ranking.ts (`npm run bench -- --only=ranking --write`: the shipped weights, from the dev sets)
// and tests/bench/retrain.ts (your own labelled conversations).
import type { RankingWeights } from '../../src/contracts/types-options.js';
import { FEATURES } from '../../src/retrieval/ranking.js';

/** One labelled question: its candidates' feature rows and which of them are evidence. */
export interface Example {
  set: string;
  rows: number[][];
  labels: boolean[];
}

export interface TrainOptions {
  /** L2 penalty on the weights. */
  l2?: number;
  steps?: number;
  /** Only these features may get weight (the others stay 0). */
  features?: readonly string[];
}

/** Weights in FEATURES order. Each set weighs the same in the loss (a large set does not drown a small one). */
export function train(examples: readonly Example[], o: TrainOptions = {}): Float64Array {
  // 0.01: chosen by leave-one-set-out figures among 0.001, 0.01 and 0.05 (tests/bench/ranking.ts --l2s).
  const l2 = o.l2 ?? 0.01;
  const steps = o.steps ?? 400;
  const d = FEATURES.length;
  const allowed = FEATURES.map((f) => !o.features || o.features.includes(f));
  const usable = examples.filter((e) => e.labels.some(Boolean) && e.rows.length > 1);
  if (usable.length === 0) throw new Error('no question has its evidence among its candidates: nothing to learn from (are the evidence ids the turns\' ids?)');
  const perSet = new Map<string, number>();
  for (const e of usable) perSet.set(e.set, (perSet.get(e.set) ?? 0) + 1);
  const sets = perSet.size;
  const w = new Float64Array(d);
  const m = new Float64Array(d);
  const v = new Float64Array(d);
  const lr = 0.05, b1 = 0.9, b2 = 0.999;
  for (let step = 1; step <= steps; step++) {
    const g = new Float64Array(d);
    for (const e of usable) {
      const weight = 1 / (perSet.get(e.set)! * sets);
      const s = e.rows.map((r) => r.reduce((n, x, j) => n + x * w[j]!, 0));
      const max = Math.max(...s);
      const ex = s.map((x) => Math.exp(x - max));
      const sum = ex.reduce((a, b) => a + b, 0);
      const pos = e.labels.filter(Boolean).length;
      e.rows.forEach((r, i) => {
        const coef = weight * (ex[i]! / sum - (e.labels[i] ? 1 / pos : 0));
        for (let j = 0; j < d; j++) g[j] = g[j]! + coef * r[j]!;
      });
    }
    for (let j = 0; j < d; j++) {
      if (!allowed[j]) continue;
      const gj = g[j]! + l2 * w[j]!;
      m[j] = b1 * m[j]! + (1 - b1) * gj;
      v[j] = b2 * v[j]! + (1 - b2) * gj * gj;
      w[j] = w[j]! - (lr * (m[j]! / (1 - b1 ** step))) / (Math.sqrt(v[j]! / (1 - b2 ** step)) + 1e-8);
    }
  }
  return w;
}

/** The listwise loss of `w` on examples (mean over questions with evidence among their candidates). */
export function loss(examples: readonly Example[], w: Float64Array): number {
  let total = 0, n = 0;
  for (const e of examples) {
    if (!e.labels.some(Boolean)) continue;
    const s = e.rows.map((r) => r.reduce((a, x, j) => a + x * w[j]!, 0));
    const max = Math.max(...s);
    const lse = max + Math.log(s.reduce((a, x) => a + Math.exp(x - max), 0));
    const pos = e.labels.filter(Boolean).length;
    total += s.reduce((a, x, i) => a + (e.labels[i] ? (lse - x) / pos : 0), 0);
    n++;
  }
  return n === 0 ? NaN : total / n;
}

/** The weights as the JSON file the library reads (`ranking.weights`, or src/retrieval/ranking-weights.json). */
export function toJson(w: Float64Array, trainedOn: string): RankingWeights {
  const weights: Record<string, number> = {};
  FEATURES.forEach((f, j) => { if (w[j] !== 0) weights[f] = Number(w[j]!.toFixed(4)); });
  return { format: 'pagewise-ranking/1', trainedOn, weights };
}
