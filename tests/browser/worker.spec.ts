import { storageDriverCases } from '../support/conformance/storage-driver.js';
import { expect, harness, openHarness, test } from './fixtures.js';

test('StorageDriver conformance suite passes on OPFS inside a real Worker', async ({ page, external: _ }) => {
  await openHarness(page);
  const h = harness(page);
  const report = await h.conformance();
  expect(report.driver).toBe('sqlite-wasm:opfs-sahpool');
  expect(report.results.map((r) => r.name)).toEqual(storageDriverCases.map((c) => c.name));
  for (const r of report.results) expect(r, r.name).toEqual({ name: r.name, ok: true });
  expect((await h.opfsEntries()).filter((n) => n.startsWith('.pagewise-conformance'))).toEqual([]);
});

test('turns stored on OPFS survive a reload and are retrieved by a new connect()', async ({ page, external: _ }) => {
  const directory = '.pagewise-test-reload';
  await openHarness(page);
  const h = harness(page);
  try {
    expect(await h.open({ storage: { directory } })).toEqual({ value: true });
    const messages = [
      { role: 'user', content: 'My locker combination is 31-7-22.', name: 'Dana', id: 'm1' },
      { role: 'assistant', content: 'Noted, I will remember the locker combination.', id: 'm2' },
      ...Array.from({ length: 40 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `Unrelated chatter number ${i} about the weather and lunch.`, id: `f${i}` })),
    ];
    const report = await h.call('onTurnComplete', { conversationId: 'c1', messages });
    expect(report.value).toMatchObject({ stored: 42, totalTurns: 42 });
    // The background work (compaction, vectors) done and stored: what the next connect() finds does not depend on how
    // far it got before the reload.
    expect((await h.call('flush')).error).toBeUndefined();

    await page.reload();
    await expect(page.locator('body[data-ready="true"]')).toBeAttached();
    expect(await h.open({ storage: { directory }, contextWindow: 600, reserveTokens: 100, memoryTokens: 200, protectedRecentTurns: 2 })).toEqual({ value: true });
    expect((await h.call('flush')).error).toBeUndefined();
    const turns = await h.call('turns', 'c1');
    expect((turns.value as { id: string }[]).map((t) => t.id)).toEqual(messages.map((m) => m.id));
    expect((turns.value as { name?: string }[])[0]!.name).toBe('Dana');
    const ctx = (await h.call('onMessageInbound', { conversationId: 'c1', message: { role: 'user', content: 'What is my locker combination?' } })).value as {
      recallText: string; manifest: { kind: string; sourceIds: string[] }[]; budget: { total: number; available: number };
    };
    expect(ctx.recallText).toContain('31-7-22');
    // One manifest entry per recalled turn: the best ranked is the combination itself.
    expect(ctx.manifest.find((e) => e.kind === 'recall')!.sourceIds).toEqual(['m1']);
    expect(ctx.budget.total).toBeLessThanOrEqual(ctx.budget.available);
    expect((await h.call('onTurnComplete', { conversationId: 'c1', messages: messages.slice(-2) })).value).toMatchObject({ stored: 0, skipped: 2 });
  } finally {
    await h.close();
    await h.wipe([directory]);
  }
  expect(await h.opfsEntries()).not.toContain(directory);
});

test('errors keep their code and path across the worker boundary', async ({ page, external: _ }) => {
  const directory = '.pagewise-test-errors';
  await openHarness(page);
  const h = harness(page);
  try {
    await h.open({ storage: { directory } });
    const bad = await h.call('onTurnComplete', { conversationId: 'c', messages: [{ role: 'robot', content: 'beep' }] });
    expect(bad.error).toMatchObject({ name: 'PagewiseError', code: 'INVALID_ROLE', path: 'messages[0].role' });
    expect(bad.error!.message).toMatch(/^\[pagewise\] \[messages\] messages\[0\]\.role: must be one of/);
    expect((await h.call('turns', 'c')).error).toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    const hostile = await page.evaluate(() => (globalThis as unknown as { harness: { hostile(): Promise<Record<string, { error?: { code?: string } }>> } }).harness.hostile());
    expect(hostile.symbolId!.error).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(hostile.functionContent!.error).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(hostile.loneSurrogate!.error).toMatchObject({ code: 'INVALID_CONVERSATION_ID' });
    await h.close();
    expect((await h.call('conversations')).error).toMatchObject({ message: 'harness: open() first' });
    expect((await h.open({ contextWindow: 5, storage: { directory } })).error).toMatchObject({ name: 'PagewiseError', code: 'INVALID_OPTIONS' });
  } finally {
    await h.close();
    await h.wipe([directory]);
  }
});

test('a second tab shares the first tab\'s database, and takes it over when the first closes', async ({ page, context, external: _ }) => {
  const directory = '.pagewise-test-tabs';
  await openHarness(page);
  const first = harness(page);
  const other = await context.newPage();
  await openHarness(other);
  const second = harness(other);
  const texts = async (h: ReturnType<typeof harness>) => ((await h.call('turns', 'c')).value as { text: string }[]).map((t) => t.text);
  try {
    expect(await first.open({ storage: { directory } })).toEqual({ value: true });
    // The second tab's worker cannot open the OPFS pool (one owner at a time): it reaches the first tab's.
    expect(await second.open({ storage: { directory } })).toEqual({ value: true });
    await first.call('onTurnComplete', { conversationId: 'c', messages: [{ role: 'user', content: 'hello from tab one' }] });
    expect((await second.call('onTurnComplete', { conversationId: 'c', messages: [{ role: 'user', content: 'hello from tab two' }] })).error).toBeUndefined();
    expect(await texts(first)).toEqual(['hello from tab one', 'hello from tab two']);
    expect(await texts(second)).toEqual(['hello from tab one', 'hello from tab two']);
    // Errors keep their code across both hops.
    expect((await second.call('turns', 'nope')).error).toMatchObject({ name: 'PagewiseError', code: 'CONVERSATION_NOT_FOUND' });
    // The owner goes; the second tab takes the database over and has everything.
    await first.close();
    await expect.poll(async () => (await second.call('turns', 'c')).value).toEqual(expect.arrayContaining([expect.objectContaining({ text: 'hello from tab two' })]));
    await second.call('onTurnComplete', { conversationId: 'c', messages: [{ role: 'user', content: 'tab two owns it now' }] });
    // And the first tab, opened again, now reaches the second.
    expect(await first.open({ storage: { directory } })).toEqual({ value: true });
    expect(await texts(first)).toEqual(['hello from tab one', 'hello from tab two', 'tab two owns it now']);
    // The owning tab is closed outright (no close() call): its lock goes with it, and the first tab takes over.
    await other.close();
    await expect.poll(async () => (await first.call('onTurnComplete', { conversationId: 'c', messages: [{ role: 'user', content: 'tab one again' }] })).error).toBeUndefined();
    expect(await texts(first)).toEqual(['hello from tab one', 'hello from tab two', 'tab two owns it now', 'tab one again']);
  } finally {
    await first.close();
    if (!other.isClosed()) await second.close();
    await first.wipe([directory]);
  }
});

test('a full origin quota is a typed error, nothing half-written, and the call can be sent again', async ({ page, external: _ }) => {
  const directory = '.pagewise-test-quota';
  await openHarness(page);
  const h = harness(page);
  const cdp = await page.context().newCDPSession(page);
  const origin = new URL(page.url()).origin;
  // ~60 KB a message, each word different so the full-text index grows with it.
  const message = (i: number) => ({ role: 'user', id: `m${i}`, content: Array.from({ length: 6_000 }, (_, k) => `w${i}x${k}`).join(' ') });
  try {
    expect(await h.open({ storage: { directory }, embedder: false, compaction: false })).toEqual({ value: true });
    expect((await h.call('onTurnComplete', { conversationId: 'q', messages: [message(0)] })).error).toBeUndefined();
    const { usage } = await page.evaluate(() => navigator.storage.estimate()) as { usage: number };
    await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: usage + 3 * 1024 * 1024 });
    let sent = 1;
    let error: { code?: string; message: string } | undefined;
    for (; sent < 200 && !error; sent++) error = (await h.call('onTurnComplete', { conversationId: 'q', messages: [message(sent)] })).error;
    console.log(`quota: ${sent - 1} messages accepted, then ${error?.code}: ${error?.message}`);
    expect(sent).toBeGreaterThan(3);
    expect(error, 'the quota was never reached').toBeDefined();
    expect(error).toMatchObject({ code: 'STORAGE_FULL' });
    expect(error!.message).toMatch(/quota/);
    // Room again: the failed call, sent again, stores its message once; every stored message is whole.
    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
    expect((await h.call('onTurnComplete', { conversationId: 'q', messages: [message(sent - 1)] })).error).toBeUndefined();
    const turns = (await h.call('turns', 'q')).value as { id: string; content: string }[];
    expect(turns.map((t) => t.id)).toEqual(Array.from({ length: sent }, (_, i) => `m${i}`));
    for (const t of turns) expect(t.content).toBe(message(Number(t.id.slice(1))).content);
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin }).catch(() => undefined);
    await h.close();
    await h.wipe([directory]);
  }
});

test('forget leaves no byte of the forgotten words in the OPFS files', async ({ page, external: _ }) => {
  const directory = '.pagewise-test-forget';
  const SECRET = 'Quorvex';
  await openHarness(page);
  const h = harness(page);
  try {
    expect(await h.open({ storage: { directory }, embedder: false, contextWindow: 1500, reserveTokens: 300 })).toEqual({ value: true });
    const messages = Array.from({ length: 60 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', id: `m${i}`,
      content: i === 10 || i === 11 ? `The vault word is ${SECRET}, ${SECRET} again.` : `Garden note ${i}: water the beans and check the leaves.` }));
    await h.call('onTurnComplete', { conversationId: 'c', messages });
    await h.call('compact', 'c');
    await h.close();
    // The control: the word is in the files before it is forgotten.
    expect((await h.opfsHolds(directory, SECRET)).found).toBe(true);
    expect(await h.open({ storage: { directory }, embedder: false, contextWindow: 1500, reserveTokens: 300 })).toEqual({ value: true });
    expect((await h.call('forget', { conversationId: 'c', messageIds: ['m10', 'm11'] })).value).toMatchObject({ messageIds: ['m10', 'm11'] });
    await h.close();
    const after = await h.opfsHolds(directory, SECRET);
    console.log(`forget on OPFS: ${after.bytes} bytes scanned, word found: ${after.found}`);
    expect(after.bytes).toBeGreaterThan(0);
    expect(after.found).toBe(false);
  } finally {
    await h.close();
    await h.wipe([directory]);
  }
});

test('where OPFS cannot open: STORAGE_UNAVAILABLE by default; fallback: "memory" runs in memory, says so, and works for the session', async ({ page, external: _ }) => {
  const directory = '.pagewise-test-fallback';
  await openHarness(page);
  const h = harness(page);
  try {
    // Where OPFS opens, connect() says the memory persists, and no fallback is reported (fallback asked or not).
    expect(await h.open({ storage: { directory }, fallback: 'memory' })).toEqual({ value: true });
    expect(await h.storage()).toEqual({ vfs: 'opfs-sahpool', persistent: true, fallbackReason: null });
    await h.close();
    await h.wipe([directory]);
    expect(await h.fallbacks()).toEqual([]);

    for (const noOpfs of ['throws', 'missing'] as const) {
      // Refused (the default): the typed error, naming the way out.
      const refused = await h.open({ noOpfs, storage: { directory } });
      expect(refused.error, noOpfs).toMatchObject({ name: 'PagewiseError', code: 'STORAGE_UNAVAILABLE' });
      expect(refused.error!.message).toContain('fallback: "memory"');
      expect((await h.open({ noOpfs, storage: { directory }, fallback: 'none' })).error).toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
      // A value that is neither is refused as an option, not taken as a fallback.
      expect((await h.open({ noOpfs, fallback: 'disk' as never })).error).toMatchObject({ code: 'INVALID_OPTIONS', path: 'fallback' });
    }
    expect(await h.fallbacks()).toEqual([]);

    // Accepted: in memory, reported by memory.storage and by the event, before connect() resolves.
    expect(await h.open({ noOpfs: 'throws', storage: { directory }, fallback: 'memory', contextWindow: 600, reserveTokens: 100, memoryTokens: 200, protectedRecentTurns: 2 })).toEqual({ value: true });
    const storage = await h.storage();
    expect(storage).toMatchObject({ vfs: 'memory', persistent: false });
    expect(storage!.fallbackReason).toMatch(/OPFS.*insecure/);
    expect(await h.fallbacks()).toEqual([{ ...storage, beforeResolve: true }]);
    // The memory works for the session: stored, recalled, exported.
    const messages = [
      { role: 'user', content: 'My locker combination is 31-7-22.', id: 'm1' },
      { role: 'assistant', content: 'Noted, I will remember the locker combination.', id: 'm2' },
      ...Array.from({ length: 40 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `Unrelated chatter number ${i} about the weather and lunch.`, id: `f${i}` })),
    ];
    expect((await h.call('onTurnComplete', { conversationId: 'c1', messages })).value).toMatchObject({ stored: 42 });
    const ctx = (await h.call('onMessageInbound', { conversationId: 'c1', message: { role: 'user', content: 'What is my locker combination?' } })).value as { recallText: string };
    expect(ctx.recallText).toContain('31-7-22');
    expect(((await h.call('export', 'c1')).value as { conversations: unknown[] }).conversations).toHaveLength(1);
    // Nothing went to OPFS.
    expect(await h.opfsEntries()).not.toContain(directory);
    await h.close();

    // "Missing" (an old browser) falls back the same way; after a reload the session's memory is gone, as reported.
    await page.reload();
    await expect(page.locator('body[data-ready="true"]')).toBeAttached();
    expect(await h.open({ noOpfs: 'missing', storage: { directory }, fallback: 'memory' })).toEqual({ value: true });
    expect(await h.storage()).toMatchObject({ vfs: 'memory', persistent: false, fallbackReason: expect.stringContaining('getDirectory') });
    expect(await h.fallbacks()).toHaveLength(1);
    expect((await h.call('turns', 'c1')).error).toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
  } finally {
    await h.close();
    await h.wipe([directory]);
  }
});
