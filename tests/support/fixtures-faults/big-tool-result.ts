// Run in a child process with a small heap (see fault-regressions.test.ts): stores a 6,000-line, 317 KB log as a
// tool result and a message of 100,000 one-letter parts, then asks about them. Printed: OK and the heap used.
import { createMemory } from '../../../src/index.js';

const memory = await createMemory({ embedder: false, contextWindow: 8192 });
const log = Array.from({ length: 6000 }, (_, i) => `2024-05-0${1 + (i % 9)}T12:${String(i % 60).padStart(2, '0')}:00Z worker-${i % 17} job ${i} finished in ${(i * 37) % 900} ms status=${i % 97 === 0 ? 'TIMEOUT' : 'ok'}.`).join('\n');
await memory.onTurnComplete({ conversationId: 'ops', messages: [
  { role: 'user', content: 'Fetch the worker log for last week.' },
  { role: 'assistant', content: null, toolCalls: [{ id: 'call_log', type: 'function', function: { name: 'fetch_log', arguments: '{"days":7}' } }] },
  { role: 'tool', toolCallId: 'call_log', content: log },
  { role: 'assistant', content: 'The log is in; a few jobs timed out.' },
] });
for (let i = 0; i < 8; i++) {
  await memory.onTurnComplete({ conversationId: 'ops', messages: [{ role: 'user', content: `Unrelated question ${i} about lunch plans.` }, { role: 'assistant', content: `Answer ${i}: sandwiches.` }] });
}
const ctx = await memory.onMessageInbound({ conversationId: 'ops', message: { role: 'user', content: 'Which worker jobs ended with status TIMEOUT in the log?' } });
const parts = Array.from({ length: 100_000 }, (_, i) => ({ type: 'text' as const, text: 'abcdefghij'[i % 10]! }));
await memory.onTurnComplete({ conversationId: 'parts', messages: [{ role: 'user', content: parts }, { role: 'assistant', content: 'Many letters.' }] });
for (let i = 0; i < 8; i++) {
  await memory.onTurnComplete({ conversationId: 'parts', messages: [{ role: 'user', content: `Filler ${i} about the garden.` }, { role: 'assistant', content: `Reply ${i}.` }] });
}
const ctx2 = await memory.onMessageInbound({ conversationId: 'parts', message: { role: 'user', content: 'Repeat the letters a b c from my long message.' } });
await memory.close();
const partial = ctx.manifest.some((e) => (e.partialIds ?? []).length > 0);
console.log(JSON.stringify({ ok: true, partial, total: ctx.budget.total, total2: ctx2.budget.total, heapMB: Math.round(process.memoryUsage().heapUsed / 2 ** 20) }));
