// Alarms a test lets run: past the allowance an alarm does no work and comes again shortly, so the state between two
// alarms stays still while the test reads it, however fast or slow the machine. And the routes the test Workers that
// count alarms share: a Memory method by name, an object's alarm log, its allowance.
import { memoryStub, type MemoryNamespaceLike } from '../../../src/edge.js';
import { json } from './json.js';

interface GateStorage {
  kv: { get<T>(key: string): T | undefined; put(key: string, value: unknown): void; delete(key: string): unknown };
  setAlarm(at: number): Promise<void>;
}

const ALLOWED = 'test:allowed';

/** Whether this alarm may do its work (using one of the allowance); held, it is set again 100 ms later. */
export async function alarmAllowed(storage: GateStorage): Promise<boolean> {
  const left = storage.kv.get<number>(ALLOWED);
  if (left !== undefined && left <= 0) {
    await storage.setAlarm(Date.now() + 100);
    return false;
  }
  if (left !== undefined) storage.kv.put(ALLOWED, left - 1);
  return true;
}

/** Lets `alarms` more alarms run (null: any number; 0: none). */
export function allowAlarms(storage: GateStorage, alarms: number | null): void {
  if (alarms === null) storage.kv.delete(ALLOWED);
  else storage.kv.put(ALLOWED, alarms);
}

/** An object that counts its alarms: its log, and its allowance (as `allowAlarms` takes it). */
export interface GatedObject<Log> { log(): Promise<Log>; allow(alarms: number | null): Promise<void> }

/**
 * The routes: POST /call/:object/:method (body: the arguments, a JSON array), GET /log/:object, POST /allow/:object
 * (body: how many alarms may run from now; null: any number).
 */
export async function gatedFetch<Log>(request: Request, namespace: MemoryNamespaceLike): Promise<Response> {
  const url = new URL(request.url);
  const object = (name: string) => namespace.get(namespace.idFromName(name) as never) as unknown as GatedObject<Log>;
  const m = /^\/call\/([^/]+)\/(\w+)$/.exec(url.pathname);
  if (m && request.method === 'POST') {
    const memory = memoryStub(namespace, decodeURIComponent(m[1]!)) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    const args = await request.json() as unknown[];
    return json(() => memory[m[2]!]!(...args));
  }
  const log = /^\/log\/([^/]+)$/.exec(url.pathname);
  if (log) return Response.json(await object(decodeURIComponent(log[1]!)).log());
  const allow = /^\/allow\/([^/]+)$/.exec(url.pathname);
  if (allow && request.method === 'POST') {
    await object(decodeURIComponent(allow[1]!)).allow(await request.json() as number | null);
    return new Response(null, { status: 204 });
  }
  return new Response('not found', { status: 404 });
}
