// The few types pagewise/edge uses from workerd's `cloudflare:workers` module (apps get the full ones from
// @cloudflare/workers-types or `wrangler types`).
declare module 'cloudflare:workers' {
  interface PagewiseDurableObjectState {
    storage: import('./storage/durable-object.js').DurableObjectStorageLike & {
      kv: { get<T = unknown>(key: string): T | undefined; put(key: string, value: unknown): void; delete(key: string): boolean };
      getAlarm(): Promise<number | null>;
      setAlarm(scheduledTime: number | Date): Promise<void>;
    };
    waitUntil(promise: Promise<unknown>): void;
  }
  export abstract class DurableObject<Env = unknown> {
    protected ctx: PagewiseDurableObjectState;
    protected env: Env;
    constructor(ctx: PagewiseDurableObjectState, env: Env);
  }
  export class RpcTarget {}
}
