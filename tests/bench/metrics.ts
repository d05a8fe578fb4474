import { queryTerms } from '../../src/text/fts-words.js';

/** The share of the answer's content words found in the context text (lower-cased). */
export function answerShare(answer: string, context: string): number {
  const words = queryTerms(answer, 64);
  if (words.length === 0) return 1;
  const text = context.toLowerCase();
  return words.filter((w) => text.includes(w)).length / words.length;
}

export function evidenceShare(evidence: readonly string[], present: ReadonlySet<string>): number | null {
  if (evidence.length === 0) return null;
  return evidence.filter((e) => present.has(e)).length / evidence.length;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function mean(values: number[]): number {
  return values.length === 0 ? NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

/** Per-category accumulation of named figures. */
export class Table {
  private rows = new Map<string, Map<string, number[]>>();
  add(category: string, column: string, value: number | null): void {
    if (value === null || Number.isNaN(value)) return;
    const row = this.rows.get(category) ?? new Map<string, number[]>();
    this.rows.set(category, row);
    const list = row.get(column) ?? [];
    row.set(column, list);
    list.push(value);
    if (category !== 'ALL') this.add('ALL', column, value);
  }
  /** Adds to one category only (not also to ALL). */
  addOnly(category: string, column: string, value: number): void {
    const row = this.rows.get(category) ?? new Map<string, number[]>();
    this.rows.set(category, row);
    row.set(column, [...(row.get(column) ?? []), value]);
  }
  sum(category: string, column: string): number {
    return (this.rows.get(category)?.get(column) ?? []).reduce((a, b) => a + b, 0);
  }
  count(category: string, column: string): number {
    return this.rows.get(category)?.get(column)?.length ?? 0;
  }
  /** A column's mean in a category (NaN when it has none). */
  mean(category: string, column: string): number {
    return mean(this.rows.get(category)?.get(column) ?? []);
  }
  print(title: string, columns: string[], digits: Record<string, number> = {}): void {
    console.log(`\n${title}`);
    const header = ['category', 'n', ...columns];
    const lines = [...this.rows.entries()].sort(([a], [b]) => (a === 'ALL' ? 1 : b === 'ALL' ? -1 : a.localeCompare(b))).map(([cat, row]) => {
      const n = Math.max(...[...row.values()].map((v) => v.length));
      return [cat, String(n), ...columns.map((c) => { const v = row.get(c); return v ? mean(v).toFixed(digits[c] ?? 3) : '—'; })];
    });
    const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
    const fmt = (cells: string[]) => '| ' + cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ') + ' |';
    console.log(fmt(header));
    console.log('|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|');
    for (const l of lines) console.log(fmt(l));
  }
}
