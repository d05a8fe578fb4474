// The Worker of tests/node/edge/sync-relay.test.ts, bundled there with esbuild and served by Miniflare (real workerd):
// each user's PagewiseRelay object behind relayEndpoint (bearer tokens from CLIENT_TOKENS), and /rpc/:object, which
// runs one relay operation on an object through relayStub (Workers RPC), for relayPeer(stub) from the test.
import { PagewiseRelay, bearerAuth, relayEndpoint, relayStub, type MemoryNamespaceLike } from '../../../src/edge.js';
import { json } from './json.js';

interface Env {
  RELAY: MemoryNamespaceLike;
  CLIENT_TOKENS: string;
}

export class Relay extends PagewiseRelay<Env> {}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const rpc = /^\/rpc\/([^/]+)$/.exec(new URL(request.url).pathname);
    if (rpc) {
      const { op, args } = await request.json() as { op: string; args: unknown };
      return json(() => Promise.resolve(relayStub(env.RELAY, decodeURIComponent(rpc[1]!)).call(op, args)));
    }
    return relayEndpoint<Env>({
      relay: (user, e) => relayStub(e.RELAY, `user:${encodeURIComponent(user)}`),
      authenticate: bearerAuth(env.CLIENT_TOKENS),
    })(request, env);
  },
};
