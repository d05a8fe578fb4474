// The Worker that the edge tests run in real workerd (bundled by tests/node/edge.test.ts with esbuild, served by
// Miniflare): a Durable Object class that runs the storage conformance suite and the engine on its own SQLite.
import { DurableObject } from 'cloudflare:workers';
import { storageDriverCases } from '../conformance/storage-driver.js';
import { durableObjectSql } from '../../src/storage/durable-object.js';

interface Env {
  TEST: DurableObjectNamespace<TestObject>;
}

export class TestObject extends DurableObject<Env> {
  async conformance(index: number): Promise<{ name: string; ok: boolean; error?: string }> {
    const c = storageDriverCases[index]!;
    try {
      await c.run(durableObjectSql(this.ctx.storage));
      return { name: c.name, ok: true };
    } catch (e) {
      return { name: c.name, ok: false, error: `${(e as Error).name}: ${(e as Error).message}` };
    }
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/conformance') {
      const results = [];
      // Each case gets a fresh, empty database: its own object.
      for (let i = 0; i < storageDriverCases.length; i++) results.push(await env.TEST.get(env.TEST.idFromName(`conformance-${i}`)).conformance(i));
      return Response.json(results);
    }
    return new Response('not found', { status: 404 });
  },
};
