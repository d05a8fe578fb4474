// OpenTelemetry with the real SDKs registered as the app would: a span per Memory call through the global tracer, the
// durations, tokens and errors through the global meter — and nothing personal in either (no message text, no
// conversation id in clear).
import { metrics, trace, SpanStatusCode } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/contracts/types.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

class CollectingReader extends MetricReader {
  constructor() { super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE }); }
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const reader = new CollectingReader();
const meterProvider = new MeterProvider({ readers: [reader] });
trace.setGlobalTracerProvider(tracerProvider);
metrics.setGlobalMeterProvider(meterProvider);
afterAll(async () => {
  trace.disable();
  metrics.disable();
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
});

const SECRET_ID = 'patient-4471-maria-lopez';
const SECRET_TEXT = 'My psychiatrist Dr. Okafor moved my appointment to Thursday the 14th';

async function metricPoints(name: string) {
  const { resourceMetrics } = await reader.collect();
  const metric = resourceMetrics.scopeMetrics.filter((s) => s.scope.name === 'pagewise').flatMap((s) => s.metrics).find((x) => x.descriptor.name === name);
  return (metric?.dataPoints ?? []) as DataPoint<unknown>[];
}

describe('OpenTelemetry', () => {
  it('a span per hook call with figures and no personal data; durations, tokens and errors as metrics', async () => {
    const m = await createMemory({ contextWindow: 2048 });
    const budgets: number[] = [];
    let messageTokens = 0;
    for (const [i, id] of [SECRET_ID, SECRET_ID, 'other-conversation'].entries()) {
      const q = user(`${SECRET_TEXT} (${i})`);
      const ctx = await m.onMessageInbound({ conversationId: id, message: q });
      budgets.push(ctx.budget.total);
      messageTokens += ctx.budget.message;
      await m.onTurnComplete({ conversationId: id, messages: [q, assistant(`Noted, ${SECRET_TEXT.toLowerCase()}.`)] });
    }
    await expect(m.onMessageInbound({ conversationId: SECRET_ID, message: { role: 'user', content: 7 } as unknown as ChatMessage })).rejects.toMatchObject({ code: 'INVALID_CONTENT' });
    await m.close();

    const finished = spans.getFinishedSpans();
    const named = (n: string) => finished.filter((s) => s.name === n);
    const inbound = named('pagewise.onMessageInbound');
    const turns = named('pagewise.onTurnComplete');
    expect(inbound).toHaveLength(4);
    expect(turns).toHaveLength(3);
    expect(named('pagewise.close')).toHaveLength(1);
    // Figures of the call, not its content.
    expect(inbound.slice(0, 3).map((s) => s.attributes['pagewise.tokens.total'])).toEqual(budgets);
    for (const s of inbound.slice(0, 3)) {
      expect(s.status.code).toBe(SpanStatusCode.OK);
      expect(s.attributes).toMatchObject({ 'pagewise.method': 'onMessageInbound', 'pagewise.outcome': 'ok' });
      expect(typeof s.attributes['pagewise.tokens.memory']).toBe('number');
      expect(typeof s.attributes['pagewise.tokens.saved']).toBe('number');
    }
    for (const s of turns) expect(s.attributes).toMatchObject({ 'pagewise.method': 'onTurnComplete', 'pagewise.outcome': 'ok', 'pagewise.turns.stored': 2 });
    // The failed call: an error status with its code only.
    const failed = inbound[3]!;
    expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: 'INVALID_CONTENT' });
    expect(failed.attributes).toMatchObject({ 'pagewise.outcome': 'error', 'pagewise.error.code': 'INVALID_CONTENT' });
    // One conversation's spans share a hash; another's differs; the id itself appears nowhere.
    const hash = (s: ReadableSpan) => s.attributes['pagewise.conversation.hash'];
    expect(hash(inbound[0]!)).toMatch(/^[0-9a-f]{16}$/);
    expect(new Set([inbound[0], inbound[1], turns[0], turns[1], failed].map((s) => hash(s!))).size).toBe(1);
    expect(hash(inbound[2]!)).not.toBe(hash(inbound[0]!));
    const dump = JSON.stringify(finished.map((s) => ({ name: s.name, attributes: s.attributes, status: s.status, events: s.events, links: s.links })));
    for (const secret of [SECRET_ID, 'other-conversation', 'psychiatrist', 'Okafor', 'Thursday']) expect(dump).not.toContain(secret);

    // Metrics: the durations per method and outcome, tokens by kind, errors by code.
    const durations = await metricPoints('pagewise.call.duration');
    const countOf = (method: string, outcome: string) => durations.filter((p) => p.attributes['pagewise.method'] === method && p.attributes['pagewise.outcome'] === outcome)
      .reduce((n, p) => n + (p.value as Histogram).count, 0);
    expect(countOf('onMessageInbound', 'ok')).toBe(3);
    expect(countOf('onMessageInbound', 'error')).toBe(1);
    expect(countOf('onTurnComplete', 'ok')).toBe(3);
    const injected = await metricPoints('pagewise.tokens.injected');
    expect(injected.find((p) => p.attributes['pagewise.kind'] === 'message')?.value).toBe(messageTokens);
    const errors = await metricPoints('pagewise.errors');
    expect(errors.map((p) => [p.attributes, p.value])).toEqual([[{ 'pagewise.method': 'onMessageInbound', 'pagewise.error.code': 'INVALID_CONTENT' }, 1]]);
  });

  it('the telemetry option: its own tracer instead of the global one, or false for none', async () => {
    const mine = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(mine)] });
    spans.reset();
    const own = await createMemory({ telemetry: { tracer: provider.getTracer('app') } });
    await own.onMessageInbound({ conversationId: 'c1', message: user('Hello there') });
    await own.close();
    expect(mine.getFinishedSpans().map((s) => s.name)).toEqual(['pagewise.onMessageInbound', 'pagewise.close']);
    expect(spans.getFinishedSpans()).toHaveLength(0);
    const none = await createMemory({ telemetry: false });
    await none.onMessageInbound({ conversationId: 'c1', message: user('Hello there') });
    await none.close();
    expect(spans.getFinishedSpans()).toHaveLength(0);
    await expect(createMemory({ telemetry: 'yes' as never })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', path: 'telemetry' });
    await provider.shutdown();
  });
});
