import { expect, harness, openHarness, test } from './fixtures.js';

const TOPICS = [
  'The temperature sensors post readings to the Flask API over MQTT.', 'Route the vocal mic through the compressor before the reverb bus.',
  'The training job checkpoints the model weights every epoch.', 'We moved the login page to passkeys and dropped SMS codes.',
  'We added materialized views to precompute the timeline ranking; Postgres refreshes them every five minutes.',
  'Firmware updates are signed with an ed25519 key.', 'Mix the kick drum a little quieter under the bass.',
  'The validation loss stopped improving after ten epochs.', 'Grafana shows the sensor battery levels per room.',
];

// The default embedder (the shipped all-MiniLM-L6-v2 on transformers.js, WASM) in its own worker beside the engine's,
// its files and the ONNX runtime served by the preview server (pagewise/vite); every request outside it is blocked
// and would fail the test.
test('all-MiniLM-L6-v2 in the browser recalls a paraphrase by meaning, reports load progress, and fetches nothing from outside', async ({ page, external }) => {
  await openHarness(page);
  const h = harness(page);
  const local: string[] = [];
  page.on('request', (r) => local.push(new URL(r.url()).pathname));
  try {
    let t = Date.now();
    expect(await h.open({ storage: { vfs: 'memory' }, collectProgress: true, contextWindow: 4096, memoryTokens: 300, protectedRecentTurns: 0, targetTokens: 400 })).toEqual({ value: true });
    // connect() preloads the model: the first question finds it ready (or waits for the load under way).
    await h.call('onMessageInbound', { conversationId: 'warm', message: { role: 'user', content: 'hello' } });
    const loadMs = Date.now() - t;
    const messages = [...TOPICS, ...TOPICS.map((x) => `${x} (again)`).slice(0, 8), 'Anything else?']
      .flatMap((content, i) => [{ role: 'user', content, id: `u${i}` }, { role: 'assistant', content: 'Noted.', id: `a${i}` }]);
    await h.call('onTurnComplete', { conversationId: 'c', messages });
    await h.call('flush');
    const status = (await h.call('embeddingStatus', 'c')).value as { embedded: number; total: number; modelId: string; lastError: string | null };
    expect(status).toMatchObject({ modelId: 'transformers:all-MiniLM-L6-v2@q8', embedded: messages.length, total: messages.length, lastError: null });
    // No content word shared with the stored turn ("feed"/"timeline", "slow queries"/"materialized views … precompute").
    const ctx = (await h.call('onMessageInbound', { conversationId: 'c', message: { role: 'user', content: 'What did we do about the slow feed queries?' } })).value as {
      recallText: string; notes?: string[]; manifest: Array<{ kind: string; reason: string; scores: { vector?: number } }>;
    };
    expect(ctx.notes).toBeUndefined();
    expect(ctx.recallText).toContain('materialized views');
    expect(ctx.manifest.some((e) => e.kind === 'recall' && e.reason.includes('meaning') && (e.scores.vector ?? 0) > 0.3)).toBe(true);
    const progress = await h.progress();
    expect(progress.some((p) => p.type === 'model' && p.status === 'loading' && typeof p.progress === 'number')).toBe(true);
    expect(progress.some((p) => p.type === 'model' && p.status === 'ready')).toBe(true);
    expect(progress.filter((p) => p.type === 'embedding').at(-1)).toMatchObject({ conversationId: 'c', embedded: messages.length });
    expect(local).toContain('/pagewise/models/all-MiniLM-L6-v2/onnx/model_quantized.onnx');
    expect(local.some((p) => p.startsWith('/pagewise/ort/') && p.endsWith('.wasm'))).toBe(true);

    // Throughput in the browser: chat-sized turns embedded by the background queue.
    const bulk = Array.from({ length: 256 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', id: `b${i}`, content: `${TOPICS[i % TOPICS.length]} Item ${i}: we checked it again on day ${i % 30} and wrote down what changed.` }));
    t = Date.now();
    await h.call('onTurnComplete', { conversationId: 'bulk', messages: bulk });
    await h.call('flush');
    const embedMs = Date.now() - t;
    const bulkStatus = (await h.call('embeddingStatus', 'bulk')).value as { embedded: number; total: number };
    expect(bulkStatus.embedded).toBe(bulkStatus.total);
    const figure = `browser (WASM, one thread): model load ${loadMs} ms; ${bulkStatus.total} texts (${bulk.length} turns + the summaries compaction wrote) embedded in ${embedMs} ms (${(bulkStatus.total / (embedMs / 1000)).toFixed(0)} texts/s)`;
    test.info().annotations.push({ type: 'figure', description: figure });
    console.log(figure);
  } finally {
    await h.close();
  }
  expect(external).toEqual([]);
});
