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
