import type { Memory } from './memory.js';
import type { AliasApi } from './types-data.js';

/**
 * The Memory API's methods, listed once. Every transport — the worker client, the worker server, a tab reaching
 * another tab's worker, a Durable Object stub — derives its object from this list with `forwardMemory`, so a new
 * method is added here and in the engine, nowhere else. `close` is each transport's own, and so is `sync` (it runs
 * where it is called, over the three sync methods: `withSync` in common/sync.ts adds it).
 */
export const MEMORY_METHODS = [
  'onMessageInbound', 'onTurnComplete', 'conversations', 'turns', 'branches', 'checkout', 'attachment', 'tags', 'topics', 'compact', 'flush', 'summaries',
  'regenerateSummaries', 'pin', 'unpin', 'pins', 'tools', 'callTool', 'embeddingStatus', 'costReport', 'stats', 'webSearch', 'forget',
  'applyRetention', 'setRetention', 'retentionLog', 'maintain',
  'export', 'import', 'exportDatabase', 'rekey', 'syncState', 'syncChanges', 'applySync',
] as const satisfies readonly (keyof Memory)[];

/** `memory.aliases`'s methods. */
export const ALIAS_METHODS = ['add', 'remove', 'list', 'suggest'] as const satisfies readonly (keyof AliasApi)[];

// Compile-time: a Memory method missing from the list is a type error here.
type Missing = Exclude<keyof Memory, 'close' | 'sync' | 'aliases' | (typeof MEMORY_METHODS)[number]> | Exclude<keyof AliasApi, (typeof ALIAS_METHODS)[number]>;
const complete: [Missing] extends [never] ? true : Missing = true;
void complete;

/** A method's place: `['turns']`, or `['aliases', 'add']`. */
export type MethodPath = readonly [string] | readonly ['aliases', string];

/** The Memory API without `close` and `sync`, every method sent to `call` with its path and arguments. */
export function forwardMemory(call: (path: MethodPath, args: unknown[]) => Promise<unknown>): Omit<Memory, 'close' | 'sync'> {
  const out: Record<string, unknown> = {};
  for (const name of MEMORY_METHODS) out[name] = (...args: unknown[]) => call([name], args);
  const aliases: Record<string, unknown> = {};
  for (const name of ALIAS_METHODS) aliases[name] = (...args: unknown[]) => call(['aliases', name], args);
  out.aliases = aliases;
  return out as unknown as Omit<Memory, 'close' | 'sync'>;
}

/** Calls the method at `path` on an object with the Memory API (an engine, a Comlink remote, an RPC stub). */
export function invokeMemory(target: unknown, path: MethodPath, args: unknown[]): Promise<unknown> {
  // Member calls, not fn.apply(): on a Comlink remote `.apply` would name a remote property.
  if (path.length === 2) return Promise.resolve((target as { aliases: Record<string, (...a: unknown[]) => unknown> }).aliases[path[1]]!(...args));
  return Promise.resolve((target as Record<string, (...a: unknown[]) => unknown>)[path[0]]!(...args));
}
