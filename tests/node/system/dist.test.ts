import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');

// The published package must work from plain Node: no bundler, no browser, no TypeScript loader.
describe('dist', () => {
  it('is built (npm run build) and its exports map points at real files', () => {
    const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { exports: Record<string, { import: string; types: string } | string> };
    for (const [key, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string') continue;
      expect(existsSync(resolve(root, target.import)), `${key} → ${target.import}`).toBe(true);
      expect(existsSync(resolve(root, target.types)), `${key} → ${target.types}`).toBe(true);
    }
  });

  it('runs the API from dist/src/index.js in a plain Node process', () => {
    const script = `
      const { createMemory } = await import('pagewise');
      const m = await createMemory({ contextWindow: 2048 });
      await m.onTurnComplete({ conversationId: 'c', messages: [{ role: 'user', content: 'the launch code is 0000' }, { role: 'assistant', content: 'ok' }] });
      const ctx = await m.onMessageInbound({ conversationId: 'c', message: { role: 'user', content: 'what is the launch code?' } });
      const err = await m.onMessageInbound({ conversationId: '', message: { role: 'user', content: 'x' } }).catch((e) => e);
      await m.flush();
      const status = await m.embeddingStatus('c');
      await m.close();
      console.log(JSON.stringify({ n: ctx.messages.length, total: ctx.budget.total, code: err.code, embedded: status.embedded, of: status.total }));`;
    // The process must end by itself once the engine is closed (a referenced model thread or message port kept it
    // alive: a CLI that never returns). The timeout only turns such a hang into a failure.
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 120_000 });
    expect(JSON.parse(out.trim().split('\n').at(-1)!)).toMatchObject({ n: 3, code: 'INVALID_CONVERSATION_ID', embedded: 2, of: 2 });
  }, 150_000);
});
