import { expect, harness, openHarness, test } from './fixtures.js';

// The offline default embedder (USE-Lite on TF.js WASM) in the real worker, its weights and WASM served by the
// preview server (pagewise/vite); every request outside it is blocked and would fail the test.
test('USE-Lite in the worker recalls by meaning, reports progress, and fetches nothing from outside', async ({ page, external }) => {
  await openHarness(page);
  const h = harness(page);
  const local: string[] = [];
  page.on('request', (r) => local.push(new URL(r.url()).pathname));
  try {
    expect(await h.open({ storage: { vfs: 'memory' }, collectProgress: true, contextWindow: 4096, memoryTokens: 300, protectedRecentTurns: 0, targetTokens: 400 })).toEqual({ value: true });
    const topics = [
      'The temperature sensors post readings to the Flask API over MQTT.', 'Route the vocal mic through the compressor before the reverb bus.',
      'The training job checkpoints the model weights every epoch.', 'We moved the login page to passkeys and dropped SMS codes.',
      'We added materialized views to precompute the timeline ranking; Postgres refreshes them every five minutes.',
      'Firmware updates are signed with an ed25519 key.', 'Mix the kick drum a little quieter under the bass.',
      'The validation loss stopped improving after ten epochs.', 'Grafana shows the sensor battery levels per room.',
    ];
    const messages = [...topics, ...topics.map((t) => `${t} (again)`).slice(0, 8), 'Anything else?']
      .flatMap((content, i) => [{ role: 'user', content, id: `u${i}` }, { role: 'assistant', content: 'Noted.', id: `a${i}` }]);
    await h.call('onTurnComplete', { conversationId: 'c', messages });
    const t0 = Date.now();
    await h.call('flush');
    const embedMs = Date.now() - t0;
    const status = (await h.call('embeddingStatus', 'c')).value as { embedded: number; total: number; modelId: string; lastError: string | null };
    expect(status).toMatchObject({ modelId: 'use-lite-512', embedded: messages.length, total: messages.length, lastError: null });
    const ctx = (await h.call('onMessageInbound', { conversationId: 'c', message: { role: 'user', content: 'What did we do about the slow feed queries?' } })).value as {
      recallText: string; notes?: string[]; manifest: Array<{ kind: string; reason: string; scores: { vector?: number } }>;
    };
    expect(ctx.notes).toBeUndefined();
    expect(ctx.recallText).toContain('materialized views');
    expect(ctx.manifest.some((e) => e.kind === 'recall' && e.reason.includes('meaning') && (e.scores.vector ?? 0) > 0.25)).toBe(true);
    const progress = await h.progress();
    expect(progress.some((p) => p.type === 'model' && p.status === 'ready')).toBe(true);
    expect(progress.filter((p) => p.type === 'embedding').at(-1)).toMatchObject({ conversationId: 'c', embedded: messages.length });
    expect(local).toContain('/pagewise/use-lite/model.json');
    expect(local.some((p) => p.startsWith('/pagewise/tfjs/'))).toBe(true);
    test.info().annotations.push({ type: 'figure', description: `browser worker: ${messages.length} turns embedded in ${embedMs} ms (${(messages.length / (embedMs / 1000)).toFixed(0)} turns/s, model load included)` });
    console.log(`browser worker: ${messages.length} turns embedded in ${embedMs} ms, model load included`);
  } finally {
    await h.close();
  }
  expect(external).toEqual([]);
});
