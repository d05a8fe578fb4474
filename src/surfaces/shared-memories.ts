// Which memory objects the HTTP surfaces serve, and to whom: a proxy given one memory object keeps every caller's
// conversations in it (keyed `user:conversation`), while a sync endpoint given one memory object hands all of it to
// every caller it authenticates. The same object behind both would give each user everyone's conversations, so
// whichever surface is built second refuses it, in either order. Weak sets: a registry that keeps no memory alive.
import { PagewiseError } from '../contracts/errors.js';

/** Memories a proxy serves to several callers from one object. */
const servedByProxy = new WeakSet<object>();
/** Memories a sync endpoint serves whole to whoever it authenticates. */
const servedWhole = new WeakSet<object>();

const PER_USER = '`memory: (user) => …` that returns one memory per user (e.g. (user) => memoryStub(env.MEMORY_USERS, \'user:\' + encodeURIComponent(user)))';

/** Marks `memory` as the proxy's one memory for all callers; INVALID_OPTIONS when a sync endpoint serves it whole. */
export function claimForProxy(memory: object): void {
  if (servedWhole.has(memory)) {
    throw new PagewiseError('INVALID_OPTIONS', 'proxy', `This memory is already served whole by a syncEndpoint, which hands all of it to every user it authenticates; a proxy keeping several users' conversations in it would let each of them sync everyone's. Give syncEndpoint ${PER_USER}, or give the proxy a memory of its own.`, { path: 'memory' });
  }
  servedByProxy.add(memory);
}

/** Marks `memory` as one person's memory behind a sync endpoint; INVALID_OPTIONS when a proxy serves it to several callers. */
export function claimForSync(memory: object): void {
  if (servedByProxy.has(memory)) {
    throw new PagewiseError('INVALID_OPTIONS', 'sync-http', `This memory is the one a memoryProxy keeps every caller's conversations in; served whole by syncEndpoint, each authenticated user would pull everyone's conversations. Pass ${PER_USER}.`, { path: 'memory' });
  }
  servedWhole.add(memory);
}

/** The users a proxy served each memory object to (from its memory function too: checked when served, not only built). */
const proxyUsers = new WeakMap<object, Set<string>>();

/** Notes that the proxy served `memory` to `user` (null: a caller without a user). */
export function noteProxyUse(memory: object, user: string | null): void {
  const users = proxyUsers.get(memory) ?? new Set<string>();
  if (users.size < 2) users.add(user ?? '\u0000anonymous');
  proxyUsers.set(memory, users);
}

/**
 * Refuses to serve `memory` whole to `user` through a sync endpoint when a proxy in this process has kept another
 * caller's conversations in it (the memory reached through functions on both sides, where construction cannot see it).
 */
export function checkSyncServes(memory: object, user: string): void {
  const users = proxyUsers.get(memory);
  if (users && [...users].some((u) => u !== user)) {
    throw new PagewiseError('STORAGE_ERROR', 'sync-http', `The memory this endpoint's \`memory\` returned for this user also holds other users' conversations (a memoryProxy keeps them there); it is not served. Return one memory per user: ${PER_USER}.`);
  }
}
