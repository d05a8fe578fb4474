// Memory keeps every part: an image sent in turn 3 is stored once (by content hash), recalled as a reference 200
// turns later and sent again on request, exported and imported, synced to the edge (real workerd, its row limit)
// and back, and forgotten without a byte of it left in the database file. Bad parts get typed errors and change
// nothing stored.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemory as create, remoteMemory, type Memory } from '../../../src/index.js';
import { fileStorage } from '../../../src/node.js';
import { bundleTestWorker, startTestWorker } from '../../support/edge-worker.js';
import { assistant, createMemory, user } from '../../support/helpers.js';
import { b64, pdf, png } from '../../fixtures/media.js';
import type { ChatMessage, ContentPart, StoredTurn } from '../../../src/contracts/types.js';

const dir = mkdtempSync(join(tmpdir(), 'pagewise-attachments-'));
const MARK = 'Zyqvorth-floorplan-7731';
// A 320×240 PNG whose tEXt chunk carries the marker: what the file scan looks for.
const PLAN = png(320, 240, 7, MARK);
const PLAN_ID = Buffer.from(await crypto.subtle.digest('SHA-256', PLAN as Uint8Array<ArrayBuffer>)).toString('hex');
const caught = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e as { name?: string; code?: string; path?: string; message: string });
const imageOf = (t: StoredTurn | undefined) => (Array.isArray(t?.content) ? t.content.find((p) => p.type === 'image') : undefined) as (ContentPart & { attachment?: string }) | undefined;

/** A conversation of `after` exchanges of small talk after three turns, the third carrying the floor plan. */
function conversation(after: number): ChatMessage[][] {
  const out: ChatMessage[][] = [[user('We are renting a flat in Lisbon for the conference.'), assistant('Great, which area?')]];
  out.push([user([{ type: 'text', text: 'Here is the floor plan of the Alfama flat.' }, { type: 'image', data: `data:image/png;base64,${b64(PLAN)}`, name: 'floorplan.png', caption: 'two bedrooms, a balcony over the river, the kitchen by the entrance' }] as never),
    assistant('The balcony room gets the morning light.')]);
  for (let i = 0; i < after; i++) out.push([user(`Small talk ${i}: the weather on day ${i} and what we might cook for dinner.`), assistant(`Day ${i}: sunny; grilled sardines or a bean stew.`)]);
  return out;
}

let mf: Miniflare;
let base = '';
beforeAll(async () => {
  mf = await startTestWorker(dir, await bundleTestWorker(dir), { CLIENT_TOKENS: 'client:u1' });
  base = (await mf.ready).href.replace(/\/$/, '');
}, 120_000);
afterAll(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('an image through the life of a conversation', () => {
  it('stored once, recalled 200 turns later as a reference and sent again on request, exported, imported, synced to the edge and back, forgotten without a byte left', async () => {
    const path = join(dir, 'laptop.sqlite3');
    const onDisk = () => existsSync(path) && readFileSync(path).toString('latin1').includes(MARK);
    const laptop = await create({ embedder: false, storage: fileStorage(path), contextWindow: 4096 });
    let phone: Memory | undefined;
    let restored: Memory | undefined;
    try {
      for (const [i, exchange] of conversation(100).entries()) {
        await laptop.onTurnComplete({ conversationId: 'trip', messages: exchange });
        // The same image again later (its bytes, not a data URL): stored once.
        if (i === 51) await laptop.onTurnComplete({ conversationId: 'trip', messages: [user([{ type: 'text', text: 'The plan again, for the landlord.' }, { type: 'image', data: PLAN, mediaType: 'image/png' }] as never)] });
      }
      const turns = await laptop.turns('trip', { limit: 1000 });
      expect(turns).toHaveLength(205);
      const repeat = turns.find((t) => t.text.startsWith('The plan again'))!;
      const third = turns[2]!;
      expect(imageOf(third)).toEqual({ type: 'image', attachment: PLAN_ID, name: 'floorplan.png', caption: 'two bedrooms, a balcony over the river, the kitchen by the entrance', mediaType: 'image/png', size: PLAN.length, width: 320, height: 240 });
      expect(imageOf(repeat)!.attachment).toBe(PLAN_ID);
      expect(third.text).toBe(`Here is the floor plan of the Alfama flat.\n[image "floorplan.png" (image/png, ${Math.round(PLAN.length / 1024)} KB): two bedrooms, a balcony over the river, the kitchen by the entrance]`);
      expect(onDisk()).toBe(true);
      const file = readFileSync(path).toString('latin1');
      expect(file.split(MARK).length - 1).toBe(1);

      // 200 turns later: the recall block names the image (kind, name, type, size, caption, the excerpt's date).
      const ask = { conversationId: 'trip', message: user('Which room of the Alfama flat has the balcony over the river?') };
      const ctx = await laptop.onMessageInbound(ask);
      expect(ctx.recallText).toContain('[image "floorplan.png" (image/png');
      expect(ctx.recallText).toMatch(/<excerpt>\n\[\d{4}-\d\d-\d\d \d\d:\d\d\] [^<]*user: Here is the floor plan/);
      expect(JSON.stringify(ctx.messages)).not.toContain(b64(PLAN).slice(0, 200));
      // Asked for, the image itself comes back, counted by OpenAI's tile rule (320×240: one tile).
      const again = await laptop.onMessageInbound({ ...ask, recallAttachments: true });
      const sent = again.messages.at(-2)!;
      expect(again.sources.at(-2)).toEqual({ kind: 'memory' });
      expect((sent.content as ContentPart[]).find((p) => p.type === 'image')).toMatchObject({ type: 'image', attachment: PLAN_ID, data: b64(PLAN) });
      const entry = again.manifest.find((e) => e.kind === 'attachments')!;
      expect(entry.sourceIds).toContain(third.id);
      expect(entry.tokens).toBeGreaterThan(85 + 170);
      expect(again.budget.total).toBeLessThanOrEqual(again.budget.available);
      // With Anthropic's rule the same image costs ceil(320 × 240 / 750) = 103 tokens (plus the note around it).
      const claude = await laptop.onMessageInbound({ ...ask, recallAttachments: true, mediaTokens: 'anthropic' });
      expect(claude.manifest.find((e) => e.kind === 'attachments')!.tokens).toBe(entry.tokens - 255 + 103);

      // Exported once, imported into an empty memory: the same turns, the same bytes.
      const data = await laptop.export('trip');
      expect(data.attachments).toEqual([{ id: PLAN_ID, mediaType: 'image/png', size: PLAN.length, data: b64(PLAN) }]);
      restored = await createMemory();
      await restored.import(JSON.parse(JSON.stringify(data)));
      expect(await restored.turns('trip', { limit: 1000 })).toEqual(turns);
      expect((await restored.attachment('trip', PLAN_ID)).data).toBe(b64(PLAN));
      expect(await restored.import(JSON.parse(JSON.stringify(data)))).toMatchObject({ turns: 0, skipped: 205 });

      // Up to the edge and down to a phone that never saw it: the bytes travel once, by id.
      const edge = remoteMemory(`${base}/v1/pagewise/sync`, { token: 'client' });
      const up = await laptop.sync(edge);
      expect(up).toMatchObject({ pushed: 205, attachments: 1 });
      phone = await createMemory();
      const down = await phone.sync(edge);
      expect(down).toMatchObject({ pulled: 205, attachments: 1 });
      expect(await phone.turns('trip', { limit: 1000 })).toEqual(turns.map((t) => expect.objectContaining({ id: t.id, content: t.content, text: t.text })));
      expect((await phone.attachment('trip', PLAN_ID)).data).toBe(b64(PLAN));
      expect(await phone.sync(edge)).toMatchObject({ pulled: 0, pushed: 0, attachments: 0 });

      // Forgotten: while another turn refers to the image it stays; with the last one it goes, and no byte is left.
      await laptop.forget({ conversationId: 'trip', messageIds: [third.id] });
      expect((await laptop.attachment('trip', PLAN_ID)).size).toBe(PLAN.length);
      await laptop.forget({ conversationId: 'trip', messageIds: [repeat.id] });
      expect((await caught(laptop.attachment('trip', PLAN_ID))).code).toBe('NOT_FOUND');
      expect(onDisk()).toBe(false);
      await laptop.close();
      expect(onDisk()).toBe(false);
      expect(existsSync(`${path}-journal`) && readFileSync(`${path}-journal`).toString('latin1').includes(MARK)).toBe(false);
    } finally {
      await laptop.close();
      await phone?.close();
      await restored?.close();
    }
  });

  it('an attachment over the edge\'s 2 MB row limit travels in pieces, and a forget there removes every piece', async () => {
    // 1,200 × 800 pixels stored uncompressed: 2.9 MB.
    const big = png(1200, 800, 9);
    expect(big.length).toBeGreaterThan(2_000_000);
    const laptop = await createMemory();
    const phone = await createMemory();
    try {
      await laptop.onTurnComplete({ conversationId: 'scan', messages: [user([{ type: 'text', text: 'The scanned lease.' }, { type: 'image', data: big, mediaType: 'image/png' }] as never)] });
      const edge = remoteMemory(`${base}/v1/pagewise/sync`, { token: 'client' });
      const up = await laptop.sync(edge, { conversations: ['scan'], batchBytes: 600_000 });
      expect(up.attachments).toBe(1);
      // Each batch within what was asked (a piece is 512 KiB at most): the bytes needed several.
      expect(up.batches).toBeGreaterThanOrEqual(5);
      const down = await phone.sync(edge, { conversations: ['scan'] });
      expect(down.attachments).toBe(1);
      const [turn] = await phone.turns('scan');
      expect((await phone.attachment('scan', imageOf(turn)!.attachment!)).data).toBe(b64(big));
      const onEdge = async () => (await (await mf.dispatchFetch('http://edge.test/call/user/user%3Au1/attachment', { method: 'POST', body: JSON.stringify(['scan', imageOf(turn)!.attachment]) })).json()) as { value?: { size: number }; error?: { code: string } };
      expect((await onEdge()).value?.size).toBe(big.length);
      // A forget on the phone reaches the edge as a tombstone: the turn goes there, and every piece of its image.
      await phone.forget({ conversationId: 'scan' });
      expect((await phone.sync(edge, { conversations: ['scan'] })).forgotten).toBe(1);
      expect((await onEdge()).error?.code).toBe('NOT_FOUND');
    } finally {
      await laptop.close();
      await phone.close();
    }
  });
});

describe('the README\'s example', () => {
  it('stores the plan and the reasoning as the README shows them', async () => {
    const memory = await createMemory();
    try {
      const planBytes = png(640, 480, 3);
      await memory.onTurnComplete({ conversationId: 'c1', messages: [
        { role: 'user', content: [
          { type: 'text', text: 'Here is the floor plan of the flat.' },
          { type: 'image', data: planBytes, mediaType: 'image/png', name: 'plan.png', caption: 'two bedrooms, a balcony over the river' },
        ] },
        { role: 'assistant', content: [
          { type: 'reasoning', text: 'The balcony faces east…', signature: 'EqQB…' },
          { type: 'text', text: 'The balcony room gets the morning light.' },
        ] },
      ] });
      const [plan] = await memory.turns('c1');
      const part = (plan!.content as ContentPart[])[1] as ContentPart & { attachment: string };
      expect(Object.keys(part)).toEqual(['type', 'attachment', 'name', 'caption', 'mediaType', 'size', 'width', 'height']);
      const { data } = await memory.attachment('c1', part.attachment);
      expect(data).toBe(b64(planBytes));
      expect(plan!.text).toBe(`Here is the floor plan of the flat.\n[image "plan.png" (image/png, ${Math.round(planBytes.length / 1024)} KB): two bedrooms, a balcony over the river]`);
    } finally {
      await memory.close();
    }
  });
});

describe('tags come from what was said of an attachment', () => {
  it('its name and caption, not its kind, type, size or extension', async () => {
    const memory = await createMemory();
    try {
      for (let i = 0; i < 12; i++) {
        await memory.onTurnComplete({ conversationId: 't', messages: [user([{ type: 'text', text: `Photo ${i} of the garden roses.` }, { type: 'image', data: png(40, 40, i), mediaType: 'image/png', name: `orchard-${i}.png`, caption: 'the old apple tree in bloom' }] as never), assistant(`The roses look healthy in photo ${i}.`)] });
      }
      const tags = (await memory.tags('t')).map((t) => t.tag);
      expect(tags).toContain('apple-tree');
      expect(tags).toContain('orchard-3');
      for (const noise of ['image', 'png', 'image-png', 'kb']) expect(tags).not.toContain(noise);
      expect((await memory.topics('t')).map((t) => t.tag)).not.toContain('image');
    } finally {
      await memory.close();
    }
  });
});

describe('import', () => {
  it('a hand-written file whose turn carries its image\'s bytes: stored as an attachment; an id the file does not carry is refused nowhere but kept missing', async () => {
    const memory = await createMemory({ storage: (await import('../../../src/storage/sqlite-wasm.js')).sqliteWasm({ limits: { maxRowBytes: 100_000 } }) });
    try {
      // 200 kB of image in a turn of a storage whose rows hold 100 kB: the bytes go apart, the row holds the id.
      const image = png(260, 260, 4);
      expect(image.length).toBeGreaterThan(200_000);
      const data = { format: 'pagewise', version: 1, exportedAt: '2026-01-01T00:00:00Z', aliases: [], conversations: [{ id: 'h', turns: [
        { id: 'u1', role: 'user', createdAt: '2026-01-01T00:00:00Z', content: [{ type: 'text', text: 'A scan.' }, { type: 'image', data: b64(image), mediaType: 'image/png' }] },
        { id: 'u2', role: 'user', createdAt: '2026-01-01T00:01:00Z', content: [{ type: 'text', text: 'Another, from elsewhere.' }, { type: 'image', attachment: 'b'.repeat(64), mediaType: 'image/png', size: 10 }] },
      ] }] };
      expect(await memory.import(data as never)).toMatchObject({ turns: 2 });
      const [scan, other] = await memory.turns('h');
      expect((await memory.attachment('h', imageOf(scan)!.attachment!)).data).toBe(b64(image));
      expect(imageOf(other)!.attachment).toBe('b'.repeat(64));
      expect((await memory.syncState('')).missing).toEqual([{ id: 'b'.repeat(64), from: 0 }]);
    } finally {
      await memory.close();
    }
  });
});

describe('many attachments in one sync', () => {
  it('moves every attachment in one run, batch after batch within batchBytes; the next run moves none; an attachment the sender lacks too is not asked for forever', async () => {
    const laptop = await createMemory();
    const phone = await createMemory();
    const tablet = await createMemory();
    try {
      const images = Array.from({ length: 12 }, (_, i) => png(180, 180, 100 + i, `photo ${i}`));
      for (const [i, image] of images.entries()) {
        await laptop.onTurnComplete({ conversationId: 'album', messages: [user([{ type: 'text', text: `Photo ${i} of the album.` }, { type: 'image', data: image, mediaType: 'image/png' }] as never), assistant(`Lovely photo ${i}.`)] });
      }
      const first = await laptop.sync(phone, { batchBytes: 200_000 });
      expect(first).toMatchObject({ pushed: 24, attachments: 12 });
      // Each image is ~97 kB: two to a batch of 200 kB at most, so at least six batches of bytes.
      expect(first.batches).toBeGreaterThanOrEqual(6);
      for (const [i, t] of (await phone.turns('album')).filter((x) => x.role === 'user').entries()) {
        expect((await phone.attachment('album', imageOf(t)!.attachment!)).data).toBe(b64(images[i]!));
      }
      expect(await laptop.sync(phone)).toMatchObject({ pushed: 0, pulled: 0, attachments: 0 });
      // The tablet syncs with the phone before the phone has the bytes of a new image: it gets the turn, and the bytes
      // later from the laptop; meanwhile a sync with the phone ends (nothing to fetch there), and reports it missing.
      await laptop.onTurnComplete({ conversationId: 'album', messages: [user([{ type: 'text', text: 'One more.' }, { type: 'image', data: png(90, 90, 7), mediaType: 'image/png' }] as never)] });
      const onlyTurns = await phone.applySync(await laptop.syncChanges({ to: (await phone.syncState('')).replica, cursor: (await phone.syncState((await laptop.syncState('')).replica)).cursor }));
      expect(onlyTurns.missing).toHaveLength(1);
      const partial = await tablet.sync(phone);
      expect(partial.pulled).toBe(25);
      expect(partial.attachments).toBe(12);
      expect((await tablet.syncState('')).missing).toHaveLength(1);
      expect((await tablet.sync(laptop)).attachments).toBe(1);
      expect((await tablet.syncState('')).missing).toBeUndefined();
    } finally {
      await Promise.all([laptop.close(), phone.close(), tablet.close()]);
    }
  });
});

describe('bad parts: typed errors, nothing stored', () => {
  const cases: [string, unknown, string][] = [
    ['an unknown part type', { type: 'video', data: 'AAAA' }, 'INVALID_CONTENT'],
    ['an image without data, url or attachment', { type: 'image', name: 'x.png' }, 'INVALID_CONTENT'],
    ['both data and url', { type: 'image', data: b64(PLAN), url: 'https://example.com/x.png' }, 'INVALID_CONTENT'],
    ['a malformed data URL (no base64)', { type: 'image', data: 'data:image/png,not-base64' }, 'INVALID_CONTENT'],
    ['a data URL with broken base64', { type: 'image', data: 'data:image/png;base64,iVBOR w0K' }, 'INVALID_CONTENT'],
    ['bytes that are no image, without a media type', { type: 'image', data: b64(new TextEncoder().encode('hello world!')) }, 'INVALID_CONTENT'],
    ['a PDF sent as an image', { type: 'image', data: b64(pdf(1)), mediaType: 'application/pdf' }, 'INVALID_CONTENT'],
    ['a javascript: URL', { type: 'image', url: 'javascript:alert(1)' }, 'INVALID_CONTENT'],
    ['an attachment id that is not stored', { type: 'image', attachment: 'a'.repeat(64) }, 'INVALID_CONTENT'],
    ['a reasoning part without text', { type: 'reasoning', signature: 'x' }, 'INVALID_CONTENT'],
    ['an image over maxAttachmentBytes', { type: 'image', data: b64(png(200, 200)), mediaType: 'image/png' }, 'ATTACHMENT_TOO_LARGE'],
  ];
  it.each(cases)('%s', async (_what, part, code) => {
    const memory = await createMemory({ maxAttachmentBytes: 100_000 });
    try {
      await memory.onTurnComplete({ conversationId: 'c', messages: [user('before')] });
      const error = await caught(memory.onTurnComplete({ conversationId: 'c', messages: [user('kept?'), user([{ type: 'text', text: 'look' }, part] as never)] }));
      expect(error).toMatchObject({ name: 'PagewiseError', code });
      expect(error.path).toMatch(/^messages\[1\]\.content\[1\]/);
      expect(error.message).toMatch(/\[pagewise\]/);
      expect((await memory.turns('c')).map((t) => t.text)).toEqual(['before']);
      // The same input as the question itself is refused the same way.
      expect((await caught(memory.onMessageInbound({ conversationId: 'c', message: user([part] as never) }))).code).toBe(code);
    } finally {
      await memory.close();
    }
  });
});

describe('images count by the provider\'s documented rule, and the budget holds', () => {
  // Independent of the engine's code: the rules as OpenAI's and Anthropic's documentation state them.
  const openaiImage = (w: number, h: number) => {
    const fit = Math.min(1, 2048 / Math.max(w, h));
    const [w1, h1] = [w * fit, h * fit];
    const short = Math.min(1, 768 / Math.min(w1, h1));
    return 85 + 170 * Math.ceil((w1 * short) / 512) * Math.ceil((h1 * short) / 512);
  };
  const anthropicImage = (w: number, h: number) => {
    const s = Math.min(1, 1568 / Math.max(w, h));
    const [w1, h1] = [w * s, h * s];
    return Math.min(1600, Math.ceil((w1 * h1) / 750));
  };
  const sizes: [number, number][] = [[800, 600], [1600, 1200], [64, 64], [300, 2000]];

  for (const rule of ['openai', 'anthropic'] as const) {
    it(`${rule}: each image of the history and the new message costs what the rule says; total ≤ available`, async () => {
      const memory = await createMemory({ contextWindow: 16_000 });
      try {
        const history: ChatMessage[] = sizes.flatMap(([w, h], i) => [
          user([{ type: 'text', text: `Photo ${i} of the garden.` }, { type: 'image', data: png(w, h, i), mediaType: 'image/png' }] as never),
          assistant(`A nice photo, number ${i}.`),
        ]);
        const message = user([{ type: 'text', text: 'And this one?' }, { type: 'image', data: b64(png(1024, 1024, 99)), mediaType: 'image/png' }] as never);
        const ctx = await memory.onMessageInbound({ conversationId: 'g', message, history, mediaTokens: rule });
        const plain = await memory.onMessageInbound({ conversationId: 'g', message: user('And this one?'), history: history.map((m) => ({ ...m, content: (Array.isArray(m.content) ? m.content.filter((p) => p.type === 'text') : m.content) as never })), mediaTokens: rule });
        const cost = rule === 'openai' ? openaiImage : anthropicImage;
        const images = [...sizes, [1024, 1024] as [number, number]].reduce((n, [w, h]) => n + cost(w, h), 0);
        // The same request without its images, plus the images by the documented rule: exactly.
        expect(ctx.budget.total - plain.budget.total).toBe(images);
        expect(ctx.budget.estimated).toBe(0);
        expect(ctx.budget.total).toBeLessThanOrEqual(ctx.budget.available);
        // Sent as given (the caller's base64 stays base64; bytes stay bytes).
        expect((ctx.messages.at(-1)!.content as ContentPart[])[1]).toMatchObject({ type: 'image', data: b64(png(1024, 1024, 99)) });
      } finally {
        await memory.close();
      }
    });
  }

  it('an image by URL, a PDF and audio are counted as estimates, never as zero, and the manifest says so', async () => {
    const memory = await createMemory();
    try {
      const message = user([{ type: 'text', text: 'Look at these.' }, { type: 'image', url: 'https://example.com/a.jpg' }, { type: 'file', data: b64(pdf(4)), mediaType: 'application/pdf', name: 'lease.pdf' }] as never);
      const ctx = await memory.onMessageInbound({ conversationId: 'e', message });
      const entry = ctx.manifest.find((e) => e.kind === 'message')!;
      // 1,445 (an OpenAI image of unknown size, its most) + 4 pages × 3,000.
      expect(entry.estimatedTokens).toBe(1445 + 12_000);
      expect(ctx.budget.estimated).toBe(1445 + 12_000);
      expect(entry.tokens).toBeGreaterThan(1445 + 12_000);
    } finally {
      await memory.close();
    }
  });
});
