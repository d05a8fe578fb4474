// npx tsx tests/bench/attachments.ts [--exchanges=200] [--every=10] [--kb=250]
// (on Node 20: node tests/supported-node.mjs node_modules/tsx/dist/cli.mjs tests/bench/attachments.ts …)
//
// Images in a chat, as a user feels them, live (fresh files, nothing cached):
//  1. a chat replayed on a database file: N exchanges, every k-th user message carrying a PNG of about K kB (each a
//     distinct image, its pixels stored uncompressed, so its bytes are what is stored); ms per onTurnComplete with and without an
//     image, ms per onMessageInbound at the end, the file's size against the images' bytes; then the same images sent
//     again in new turns (stored once: what the file grows by);
//  2. the proxy: the whole conversation sent as history with every image as a data: URL (what a chat app sends each
//     time), through memoryProxy to a local upstream, against the same conversation without its images: ms per request
//     (p50 of 10) and the bytes in and forwarded;
//  3. sync of that file to an empty one in the same process, and export + import: ms, bytes, attachments.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemory, memoryProxy, proxyConversationKey, type Memory } from '../../src/index.js';
import { fileStorage } from '../../src/storage/node-file.js';
import type { ChatMessage } from '../../src/contracts/types.js';
import { png } from '../fixtures/media.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const EXCHANGES = Number(args.get('exchanges') ?? 200);
const EVERY = Number(args.get('every') ?? 10);
const KB = Number(args.get('kb') ?? 250);
const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const mb = (b: number) => `${(b / 1e6).toFixed(2)} MB`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const time = async <T>(fn: () => Promise<T>): Promise<[T, number]> => { const t = performance.now(); const v = await fn(); return [v, performance.now() - t]; };

/** A distinct PNG of about `kb` kB (its pixels stored uncompressed, so the bytes stored are the image's). */
function image(kb: number, seed: number): Uint8Array {
  const side = Math.round(Math.sqrt((kb * 1000) / 3));
  return png(side, side, seed, `bench image ${seed}`);
}

function exchanges(images: Uint8Array[]): ChatMessage[][] {
  const out: ChatMessage[][] = [];
  for (let i = 0; i < EXCHANGES; i++) {
    const text = `Exchange ${i}: notes on the renovation, room ${i % 12}, the budget line ${i * 7} and the tiles we liked.`;
    const image = i % EVERY === 0 ? images[i / EVERY] : undefined;
    out.push([
      { role: 'user', content: image ? [{ type: 'text', text }, { type: 'image', data: image, mediaType: 'image/png', name: `photo-${i}.png` }] : text },
      { role: 'assistant', content: `Noted for exchange ${i}: room ${i % 12} keeps the ${['green', 'white', 'terracotta'][i % 3]} tiles.` },
    ]);
  }
  return out;
}

async function replay(dir: string, chat: ChatMessage[][], images: Uint8Array[]) {
  const path = join(dir, 'chat.sqlite3');
  const memory = await createMemory({ embedder: false, storage: fileStorage(path) });
  const withImage: number[] = [];
  const without: number[] = [];
  for (const exchange of chat) {
    const [, t] = await time(() => memory.onTurnComplete({ conversationId: 'c', messages: exchange }));
    (Array.isArray(exchange[0]!.content) ? withImage : without).push(t);
  }
  const inbound: number[] = [];
  for (let i = 0; i < 10; i++) inbound.push((await time(() => memory.onMessageInbound({ conversationId: 'c', message: { role: 'user', content: `Which tiles did room ${i} keep, and what was in photo-${i * EVERY}.png?` } })))[1]);
  await memory.flush();
  const size = statSync(path).size;
  const imageBytes = images.reduce((n, b) => n + b.length, 0);
  console.log(`1. replay of ${EXCHANGES} exchanges, ${images.length} images of ${mb(images[0]!.length)} (${mb(imageBytes)} in all), on a database file:`);
  console.log(`   onTurnComplete with an image p50 ${ms(median(withImage))} ms (max ${ms(Math.max(...withImage))}), without p50 ${ms(median(without))} ms; onMessageInbound at the end p50 ${ms(median(inbound))} ms`);
  console.log(`   file ${mb(size)} for ${mb(imageBytes)} of images (${((size - imageBytes) / 1e6).toFixed(2)} MB the rest)`);
  // The same images again in new turns: stored once.
  for (const [k, image] of images.entries()) await memory.onTurnComplete({ conversationId: 'c', messages: [{ role: 'user', content: [{ type: 'text', text: `Again, photo ${k}.` }, { type: 'image', data: image, mediaType: 'image/png' }] }] });
  console.log(`   the ${images.length} images sent again in new turns: the file grew by ${mb(statSync(path).size - size)}`);
  return { memory, path };
}

async function proxy(memory: Memory, chat: ChatMessage[][]) {
  const upstream = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (c: Buffer) => { bytes += c.length; });
    req.on('end', () => {
      forwarded.push(bytes);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] }));
    });
  });
  const forwarded: number[] = [];
  await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', ok));
  const handler = memoryProxy({ memory, conversationOf: () => proxyConversationKey('bench', 'p'), openai: { baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1` } });
  const wire = (m: ChatMessage) => (typeof m.content === 'string' ? m : { role: m.role, content: (m.content as { type: string; text?: string; data?: Uint8Array }[]).map((p) => (p.type === 'text' ? p : { type: 'image_url', image_url: { url: `data:image/png;base64,${Buffer.from(p.data!).toString('base64')}` } })) });
  const history = chat.flat().map(wire);
  const plain = chat.flat().map((m) => (typeof m.content === 'string' ? m : { role: m.role, content: (m.content as { type: string; text?: string }[]).filter((p) => p.type === 'text') }));
  const run = async (messages: unknown[], label: string) => {
    const body = JSON.stringify({ model: 'gpt-4.1', messages: [...messages, { role: 'user', content: 'And the bathroom tiles?' }] });
    const times: number[] = [];
    forwarded.length = 0;
    for (let i = 0; i < 10; i++) {
      const [res, t] = await time(() => handler(new Request('http://proxy.test/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body })));
      await res.text();
      times.push(t);
    }
    console.log(`   ${label}: p50 ${ms(median(times))} ms per request (max ${ms(Math.max(...times))}); ${mb(body.length)} in, ${mb(median(forwarded))} forwarded`);
  };
  console.log(`2. the proxy, the whole conversation as history each time (${history.length + 1} messages):`);
  await run(plain, 'without images');
  await run(history, `with its ${chat.filter((e) => Array.isArray(e[0]!.content)).length} images as data: URLs`);
  await new Promise<void>((ok) => upstream.close(() => ok()));
}

async function travel(dir: string, memory: Memory) {
  const other = await createMemory({ embedder: false, storage: fileStorage(join(dir, 'other.sqlite3')) });
  const [report, t] = await time(() => memory.sync(other));
  console.log(`3. sync to an empty file in the same process: ${ms(t)} ms, ${report.pushed} turns, ${report.attachments} attachments, ${report.batches} batches, ${mb(report.bytes)} as JSON`);
  const [again, t2] = await time(() => memory.sync(other));
  console.log(`   again: ${ms(t2)} ms, ${again.pushed + again.pulled} turns, ${again.attachments} attachments`);
  const [data, te] = await time(() => memory.export());
  const json = JSON.stringify(data);
  const fresh = await createMemory({ embedder: false, storage: fileStorage(join(dir, 'imported.sqlite3')) });
  const [, ti] = await time(() => fresh.import(JSON.parse(json)));
  console.log(`   export ${ms(te)} ms (${mb(json.length)} of JSON, ${data.attachments?.length ?? 0} attachments once each); import into an empty file ${ms(ti)} ms`);
  await Promise.all([other.close(), fresh.close()]);
}

const dir = mkdtempSync(join(tmpdir(), 'pagewise-bench-attachments-'));
try {
  console.log(`attachments bench: ${cpus().length} cores, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}, Node ${process.versions.node}`);
  const images = Array.from({ length: Math.ceil(EXCHANGES / EVERY) }, (_, i) => image(KB, i + 1));
  const chat = exchanges(images);
  const { memory } = await replay(dir, chat, images);
  await proxy(memory, chat);
  await travel(dir, memory);
  await memory.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
