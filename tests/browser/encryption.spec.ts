import { expect, harness, openHarness, test } from './fixtures.js';

// Encryption at rest in Chromium: the engine in its worker on OPFS (opfs-sahpool) through the encrypting VFS, with
// the real encoder's vectors. Every byte of every file the pool holds is read back from the page.
const RARE = ['Quillbramble', 'Zorvathian', 'Pemmicanfjord', 'Ostrilux'];
const MESSAGES = [
  `My grandmother's village is called ${RARE[0]}, high in the hills.`, 'A lovely name for a hill village.',
  `The ${RARE[1]} protocol uses three handshakes before any payload.`, 'Three handshakes: noted.',
  `We booked the cabin at ${RARE[2]} for the second week of June.`, 'The cabin is booked for June.',
  `My cat ${RARE[3]} only eats salmon on Sundays.`, 'A cat with a weekly menu.',
].map((content, i) => ({ role: i % 2 ? 'assistant' : 'user', content, id: `m${i}` }));
const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

test('OPFS encrypted: no file holds a stored word or a 16-byte run of a vector; the key recalls them; a wrong key changes no byte', async ({ page, external: _ }) => {
  const directory = '.pagewise-test-crypt';
  const control = '.pagewise-test-crypt-plain';
  const keyHex = hex(crypto.getRandomValues(new Uint8Array(32)));
  await openHarness(page);
  const h = harness(page);
  try {
    // The control: the same conversation without a key is readable in the files, so the scan below can fail.
    expect(await h.open({ storage: { directory: control } })).toEqual({ value: true });
    await h.call('onTurnComplete', { conversationId: 'travel', messages: MESSAGES });
    await h.close();
    expect((await h.opfsScan(control, RARE)).flatMap((f) => f.words)).toEqual(expect.arrayContaining(RARE));

    expect(await h.open({ storage: { directory }, keyHex })).toEqual({ value: true });
    expect((await h.call('onTurnComplete', { conversationId: 'travel', messages: MESSAGES })).value).toMatchObject({ stored: MESSAGES.length });
    expect((await h.call('flush')).error).toBeUndefined();
    expect((await h.call('embeddingStatus', 'travel')).value).toMatchObject({ embedded: MESSAGES.length, total: MESSAGES.length, lastError: null });
    // While open (the journal may be there) and after close.
    expect((await h.opfsScan(directory, RARE)).flatMap((f) => f.words)).toEqual([]);
    await h.close();

    const read = await h.vectorsOf(directory, keyHex);
    expect(read.error).toBeUndefined();
    expect(read.vectors!.length).toBeGreaterThanOrEqual(MESSAGES.length);
    const runs = read.vectors!.flatMap((v) => Array.from({ length: v.length / 2 - 15 }, (_, i) => v.slice(i * 2, i * 2 + 32)));
    const files = await h.opfsScan(directory, [...RARE, 'travel', 'SQLite format 3'], runs);
    expect(files.reduce((n, f) => n + f.size, 0)).toBeGreaterThan(100_000);
    for (const f of files) expect({ name: f.name, words: f.words, runs: f.runs }).toEqual({ name: f.name, words: [], runs: 0 });

    // A wrong key and no key: typed errors, every file byte-identical.
    const wrong = await h.open({ storage: { directory }, keyHex: 'ab'.repeat(32) });
    expect(wrong.error).toMatchObject({ name: 'PagewiseError', code: 'WRONG_KEY' });
    expect(wrong.error!.message).not.toContain(keyHex);
    expect((await h.open({ storage: { directory } })).error).toMatchObject({ code: 'KEY_REQUIRED' });
    expect((await h.open({ storage: { directory }, encryption: { passphrase: 'guess', kdf: { memoryKiB: 1024, iterations: 1 } } })).error).toMatchObject({ code: 'WRONG_KEY' });
    expect(await h.opfsScan(directory, [])).toEqual(files.map((f) => ({ ...f, words: [], runs: 0 })));

    // The right key: the conversation is there for the next request.
    expect(await h.open({ storage: { directory }, keyHex })).toEqual({ value: true });
    const ctx = (await h.call('onMessageInbound', { conversationId: 'travel', message: { role: 'user', content: 'Which protocol needs three handshakes before the payload?' } })).value as { messages: unknown[] };
    expect(JSON.stringify(ctx.messages)).toContain(`The ${RARE[1]} protocol uses three handshakes`);

    // rekey in the worker: to a passphrase; the old key stops working.
    await h.close();
    expect(await h.open({ storage: { directory }, keyHex })).toEqual({ value: true });
    expect((await h.call('rekey', { passphrase: 'correct horse battery', kdf: { memoryKiB: 1024, iterations: 1 } })).error).toBeUndefined();
    await h.close();
    expect((await h.open({ storage: { directory }, keyHex })).error).toMatchObject({ code: 'WRONG_KEY' });
    expect(await h.open({ storage: { directory }, encryption: { passphrase: 'correct horse battery' } })).toEqual({ value: true });
    expect(((await h.call('turns', 'travel')).value as unknown[]).length).toBe(MESSAGES.length);
    // Decrypted in place: a plain SQLite database again, which opens without a key.
    expect((await h.call('rekey', null)).error).toBeUndefined();
    await h.close();
    expect((await h.opfsScan(directory, [RARE[1]!])).flatMap((f) => f.words)).toEqual([RARE[1]]);
    expect(await h.open({ storage: { directory } })).toEqual({ value: true });
    expect((await h.call('rekey', { key: 'not bytes' })).error).toMatchObject({ code: 'INVALID_ARGUMENT' });
    // Encrypted in place again, under a non-extractable CryptoKey the page keeps (as an app would in IndexedDB).
    expect(await h.rekeyCryptoKey()).toEqual({ value: true });
    await h.close();
    expect((await h.open({ storage: { directory } })).error).toMatchObject({ code: 'KEY_REQUIRED' });
    expect(await h.open({ storage: { directory }, cryptoKey: true })).toEqual({ value: true });
    expect(((await h.call('turns', 'travel')).value as unknown[]).length).toBe(MESSAGES.length);
    expect((await h.opfsScan(directory, RARE)).flatMap((f) => f.words)).toEqual([]);
  } finally {
    await h.close();
    await h.wipe([directory, control]);
  }
});

test('a second tab reaches an encrypted database the first has open only with its key', async ({ page, context, external: _ }) => {
  const directory = '.pagewise-test-crypt-tabs';
  const keyHex = hex(crypto.getRandomValues(new Uint8Array(32)));
  await openHarness(page);
  const first = harness(page);
  const other = await context.newPage();
  await openHarness(other);
  const second = harness(other);
  try {
    expect(await first.open({ storage: { directory }, keyHex })).toEqual({ value: true });
    await first.call('onTurnComplete', { conversationId: 'c', messages: [{ role: 'user', content: 'sealed hello' }] });
    // The first tab owns the pool: the second reaches it through the first, after presenting the key.
    expect((await second.open({ storage: { directory } })).error).toMatchObject({ code: 'KEY_REQUIRED' });
    expect((await second.open({ storage: { directory }, keyHex: 'cd'.repeat(32) })).error).toMatchObject({ code: 'WRONG_KEY' });
    expect(await second.open({ storage: { directory }, keyHex })).toEqual({ value: true });
    expect(((await second.call('turns', 'c')).value as { text: string }[]).map((t) => t.text)).toEqual(['sealed hello']);
  } finally {
    await second.close();
    await first.close();
    await first.wipe([directory]);
  }
});
