// OpenTelemetry: a span per Memory call and the metrics memory.stats() counts, through the app's tracer and meter
// (the global API's when not given: no-ops until the app registers a provider). Nothing personal leaves: no message
// text, no conversation id — only a salted hash of it, which tells one conversation's spans apart within one process.
import { type Attributes, type Meter, type Span, SpanStatusCode, type Tracer, metrics, trace } from '@opentelemetry/api';
import { Lru } from '../common/cache.js';

/** The telemetry option: the tracer and meter to use (default the global API's), or false for none. */
export type TelemetryOption = { tracer?: Tracer; meter?: Meter } | false | undefined;

const NAME = 'pagewise';

export interface CallSpan {
  /** Adds attributes (numbers and codes only) once the call's figures are known. */
  set(attributes: Attributes): void;
  /** Ends the span: ok, or with the error's code as its status; with the conversation the call was about, hashed. */
  end(errorCode?: string, conversationId?: string | null): Promise<void>;
}

export interface Telemetry {
  start(method: string): CallSpan;
  duration(method: string, ms: number, errorCode?: string): void;
  tokens(kind: string, n: number): void;
  saved(n: number): void;
}

const NONE: CallSpan = { set: () => undefined, end: async () => undefined };

export function createTelemetry(option: TelemetryOption): Telemetry | null {
  if (option === false) return null;
  const tracer = option?.tracer ?? trace.getTracer(NAME);
  // The meter's instruments are made now: a MeterProvider registered after createMemory is not seen (spans are).
  const meter = option?.meter ?? metrics.getMeter(NAME);
  const durations = meter.createHistogram('pagewise.call.duration', { unit: 'ms', description: 'Duration of a pagewise Memory call' });
  const injected = meter.createCounter('pagewise.tokens.injected', { unit: '{token}', description: 'Tokens the assembled requests carried, by kind' });
  const saved = meter.createCounter('pagewise.tokens.saved', { unit: '{token}', description: 'Stored history tokens not sent (see memory.stats().usage.tokens.saved)' });
  const errors = meter.createCounter('pagewise.errors', { description: 'Memory calls that threw, by method and error code' });
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const hashes = new Lru<string, Promise<string>>(1024);
  const hashOf = (id: string): Promise<string> => {
    let h = hashes.get(id);
    if (!h) {
      const bytes = new TextEncoder().encode(id);
      const input = new Uint8Array(salt.length + bytes.length);
      input.set(salt);
      input.set(bytes, salt.length);
      h = crypto.subtle.digest('SHA-256', input).then((d) => [...new Uint8Array(d).slice(0, 8)].map((b) => b.toString(16).padStart(2, '0')).join(''));
      hashes.set(id, h);
    }
    return h;
  };

  return {
    start(method) {
      const span: Span = tracer.startSpan(`${NAME}.${method}`, { attributes: { 'pagewise.method': method } });
      if (!span.isRecording()) {
        span.end();
        return NONE;
      }
      return {
        set: (attributes) => { span.setAttributes(attributes); },
        async end(errorCode, conversationId) {
          const h = conversationId ? await hashOf(conversationId).catch(() => null) : null;
          if (h) span.setAttribute('pagewise.conversation.hash', h);
          span.setAttribute('pagewise.outcome', errorCode ? 'error' : 'ok');
          // The code only: an error's message may quote the caller's input.
          if (errorCode) {
            span.setAttribute('pagewise.error.code', errorCode);
            span.setStatus({ code: SpanStatusCode.ERROR, message: errorCode });
          } else span.setStatus({ code: SpanStatusCode.OK });
          span.end();
        },
      };
    },
    duration(method, ms, errorCode) {
      durations.record(ms, { 'pagewise.method': method, 'pagewise.outcome': errorCode ? 'error' : 'ok' });
      if (errorCode) errors.add(1, { 'pagewise.method': method, 'pagewise.error.code': errorCode });
    },
    tokens(kind, n) {
      if (n > 0) injected.add(n, { 'pagewise.kind': kind });
    },
    saved(n) {
      if (n > 0) saved.add(n);
    },
  };
}
