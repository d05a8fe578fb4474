import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { anthropic, openaiCompatible, type Memory } from '../../../src/index.js';
import { remoteEmbedder } from '../../../src/embed/remote.js';
import { redact, redactError } from '../../../src/text/redact.js';
import { assistant, createMemory, user } from '../../support/helpers.js';

// A key with characters that URL-encoding changes, so that its encoded echo differs from it.
const KEY = 'sk-test/Secr3t+key=42';
const ENCODED = encodeURIComponent(KEY);
const LOWER_HEX = ENCODED.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());

/**
 * What an endpoint answers, echoing the key it was sent (Authorization or x-api-key) in its body: as sent, and
 * URL-encoded in a `?key=` link placed so that the 200-character cut of an error message falls inside it.
 */
let mode: 'unauthorized' | 'down' | 'not-json' | 'echo-reply' = 'unauthorized';
let server: Server;
let base: string;

function echo(sent: string): string {
  const head = `Incorrect API key provided: ${sent}.`;
  return `${head}${' '.repeat(Math.max(0, 190 - head.length - 6))} ?key=${encodeURIComponent(KEY)} (see the docs)`;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const sent = String(req.headers.authorization ?? req.headers['x-api-key'] ?? '');
      if (mode === 'echo-reply') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ model: `m-${sent}`, choices: [{ message: { content: `you sent ${sent}` } }], content: [{ type: 'text', text: `you sent ${sent}` }] }));
        return;
      }
      res.writeHead(mode === 'unauthorized' ? 401 : mode === 'down' ? 500 : 200, { 'content-type': 'text/plain' });
      res.end(mode === 'not-json' ? `${sent} is not a JSON reply` : echo(sent));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

let memory: Memory | undefined;
afterEach(async () => { await memory?.close(); memory = undefined; mode = 'unauthorized'; });

/** Everything an error carries: message, stack, own properties, its cause chain. */
const everything = (error: unknown): string => `${inspect(error, { depth: 10, showHidden: true })}\n${String((error as Error)?.cause)}`;

/** The key's spellings (and its head, which a cut message would keep) found in `text`. */
function leaks(text: string): string[] {
  return [KEY, ENCODED, LOWER_HEX, 'sk-test'].filter((s) => text.includes(s));
}

async function failure(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

describe('configured keys are redacted from what pagewise surfaces', () => {
  it('redact() takes out the key as sent, URL-encoded (either hex case) and JSON-escaped', () => {
    const text = `a ${KEY} b ${ENCODED} c ${LOWER_HEX} d ${KEY.replace(/\//g, '\\/')}`;
    expect(redact(text, [KEY])).toBe('a [redacted] b [redacted] c [redacted] d [redacted]');
    expect(redact(text, [])).toBe(text);
    // An error's cause chain is copied with the key out of every message, stack and string property.
    const cause = Object.assign(new SyntaxError(`Unexpected token in "${KEY}"`), { code: 'E_PARSE', url: `${base}/?key=${ENCODED}` });
    const copy = redactError(new Error(`outer ${KEY}`, { cause: new Error('middle', { cause }) }), [KEY]) as Error;
    expect(leaks(everything(copy))).toEqual([]);
    expect(((copy.cause as Error).cause as Error & { code: string })).toMatchObject({ name: 'SyntaxError', code: 'E_PARSE', message: 'Unexpected token in "[redacted]"' });
  });

  it('LLM and embedding clients: a key an endpoint echoes is in no message, stack or cause', async () => {
    const transport = { baseUrl: `${base}/v1`, apiKey: KEY, maxRetries: 1, retryDelayMs: 1 };
    const clients = [
      () => openaiCompatible({ ...transport, model: 'm' }).complete({ messages: [{ role: 'user', content: 'hi' }] }),
      () => anthropic({ ...transport, provider: 'anthropic', baseUrl: base, model: 'm' }).complete({ messages: [{ role: 'user', content: 'hi' }] }),
      () => remoteEmbedder({ ...transport, provider: 'openai-compatible', model: 'e' }).embed(['hi']),
    ];
    for (const m of ['unauthorized', 'down', 'not-json'] as const) {
      mode = m;
      for (const call of clients) {
        const error = await failure(call);
        expect(error).toMatchObject({ name: 'PagewiseError' });
        expect(leaks(everything(error))).toEqual([]);
        // The echo is still shown, with the key taken out.
        expect((error as Error).message).toContain('[redacted]');
      }
    }
  });

  it('a reply that quotes the key has it taken out of its text and model name', async () => {
    mode = 'echo-reply';
    const r1 = await openaiCompatible({ baseUrl: `${base}/v1`, apiKey: KEY, model: 'm' }).complete({ messages: [{ role: 'user', content: 'hi' }] });
    const r2 = await anthropic({ provider: 'anthropic', baseUrl: base, apiKey: KEY, model: 'm' }).complete({ messages: [{ role: 'user', content: 'hi' }] });
    for (const r of [r1, r2]) {
      expect(r.text).toContain('you sent');
      expect(leaks(JSON.stringify(r))).toEqual([]);
    }
  });

  it('an engine whose embedder and LLM echo the key: not in notes, lastError, reports, exports or the database', async () => {
    memory = await createMemory({
      contextWindow: 1500, reserveTokens: 300, tagger: 'llm',
      llm: { baseUrl: `${base}/v1`, model: 'm', apiKey: KEY, maxRetries: 0 },
      embedder: { provider: 'openai-compatible', baseUrl: `${base}/v1`, model: 'e', apiKey: KEY, maxRetries: 0 },
    });
    const messages = Array.from({ length: 20 }, (_, i) => [user(`Garden question ${i}: when do I water the beans?`), assistant(`In the morning (${i}).`)]).flat();
    const report = await memory.onTurnComplete({ conversationId: 'c', messages });
    const compaction = await memory.compact('c');
    const flushed = await memory.flush();
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('When do I water the beans?') });
    const status = await memory.embeddingStatus('c');
    // The failures are reported, with the echo redacted.
    expect(ctx.notes?.join('\n')).toContain('[redacted]');
    expect(status.lastError).toContain('[redacted]');
    const surfaced = JSON.stringify({ report, compaction, flushed, ctx, status, cost: await memory.costReport(), data: await memory.export() });
    expect(leaks(surfaced)).toEqual([]);
    expect(leaks(Buffer.from(await memory.exportDatabase()).toString('latin1'))).toEqual([]);
  });
});
