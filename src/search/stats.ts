// Search figures since the memory opened (memory.stats().search): counts, and latency over a rolling window.
import type { LatencyStats, SearchProviderReport, SearchReport, SearchStats } from '../contracts/types.js';

const WINDOW = 256;

/** The last `size` durations (WINDOW by default), and their percentiles. */
export class LatencyWindow {
  private readonly values: number[] = [];
  private next = 0;

  constructor(private readonly size = WINDOW) {}

  push(ms: number): void {
    if (this.values.length < this.size) this.values.push(ms);
    else this.values[this.next] = ms;
    this.next = (this.next + 1) % this.size;
  }

  summary(): LatencyStats {
    const sorted = [...this.values].sort((a, b) => a - b);
    const at = (q: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!);
    return { count: sorted.length, p50: at(0.5), p95: at(0.95), max: sorted.length === 0 ? 0 : sorted[sorted.length - 1]! };
  }
}

/** The counters behind `SearchStats`. */
export class SearchCounters {
  private requests = 0;
  private triggered = 0;
  private readonly by: SearchStats['triggeredBy'] = {};
  private skipped = 0;
  private failed = 0;
  private empty = 0;
  private cached = 0;
  private placed = 0;
  private readonly latency = new LatencyWindow();
  private readonly providers = new Map<string, { calls: number; failures: number; timeouts: number; latency: LatencyWindow }>();

  constructor(private readonly enabled: boolean) {}

  /** One search step (of a request, or asked for directly) and how it ended. */
  record(report: SearchReport, fromRequest: boolean): void {
    if (fromRequest) this.requests++;
    if (report.outcome === 'skipped') { this.skipped++; return; }
    this.triggered++;
    if (report.trigger.by !== 'none') this.by[report.trigger.by] = (this.by[report.trigger.by] ?? 0) + 1;
    if (report.outcome === 'failed') this.failed++;
    if (report.outcome === 'empty') this.empty++;
    if (report.cached) this.cached++;
    else this.latency.push(report.ms);
    for (const p of report.providers) this.provider(p);
  }

  /** Results a request placed. */
  placedResults(n: number): void {
    this.placed += n;
  }

  private provider(p: SearchProviderReport): void {
    let s = this.providers.get(p.name);
    if (!s) this.providers.set(p.name, (s = { calls: 0, failures: 0, timeouts: 0, latency: new LatencyWindow() }));
    s.calls++;
    if (p.outcome !== 'ok' && p.outcome !== 'empty') s.failures++;
    if (p.outcome === 'timeout') s.timeouts++;
    s.latency.push(p.ms);
  }

  stats(): SearchStats {
    return {
      enabled: this.enabled, requests: this.requests, triggered: this.triggered, triggeredBy: { ...this.by }, skipped: this.skipped, failed: this.failed,
      empty: this.empty, cached: this.cached, placed: this.placed, latencyMs: this.latency.summary(),
      providers: Object.fromEntries([...this.providers].map(([name, s]) => [name, { calls: s.calls, failures: s.failures, timeouts: s.timeouts, latencyMs: s.latency.summary() }])),
    };
  }
}
