// Retention: what a memory keeps, enforced a slice at a time. Each slice removes up to `sliceTurns` turns of one
// conversation through forget's path (data-rows' removal: the FTS rows, derived data, attachments no turn names,
// secure_delete; sync tombstones per turn, so that no replica brings them back) in one transaction, in that
// conversation's slot of the queue only: other conversations never wait, its own calls wait at most a slice. A
// slice runs in the conversation's background lane, after its compaction and vectors under way, never beside them.
// After the last slice of a pass the file is purged once (the only exclusive slot retention takes).
import type { Background } from '../common/background.js';
import { describe, parseIsoDate, validateConversationId } from '../common/messages.js';
import { pageOf } from '../common/pages.js';
import type { Atomic } from '../compaction/compactor-types.js';
import { PagewiseError } from '../contracts/errors.js';
import type { Page, RetentionLogEntry, RetentionReport } from '../contracts/types-ops.js';
import { type DueWork, type GlobalPolicy, type RetentionStore, createRetentionStore } from '../store/retention-store.js';
import { type SyncStore, createSyncStore } from '../store/sync-store.js';
import { headOf, pathTo } from '../store/tree.js';
import { type BranchDeps, settlePath } from './branches.js';
import { type Remove, createRemoval, storedConversation } from './data-rows.js';
import { RETAG_ALL_TURNS, retagPlan } from './data-forget.js';
import type { EngineQueue } from './queue.js';
import { DEFAULT_INTERVAL_MS, DEFAULT_SLICE_TURNS, type ResolvedRetention, readPolicy } from './retention-options.js';
import { optionalObject } from './support.js';

const MODULE = 'retention';
const DEFAULT_PAGE = 500;
const MAX_PAGE = 10_000;

export interface RetentionDeps extends BranchDeps {
  keyed(conversationId: string): Atomic;
  on: EngineQueue['on'];
  serial: EngineQueue['serial'];
  /** Resolves while the memory is open (ENGINE_CLOSED once closed). */
  check: EngineQueue['check'];
  background: Background;
  /** Schedules what is derived in the background (vectors; compaction when due). */
  rebuildLater(conversationId: string): void;
  /** The `retention` option, checked (null: none). */
  option: ResolvedRetention | null;
  /** Starts the background loop again (a first policy was set while none was due to be checked). */
  wake(): void;
}

const empty = (): RetentionReport => ({ turnsRemoved: 0, conversationsRemoved: [], pinnedKept: 0, entries: [], more: false });

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, message, { path });
}

/** Runs jobs in a conversation's background lane: after its compaction and vectors under way, never beside them. */
function laneRunner(background: Background) {
  let jobs = 0;
  return <T>(conversationId: string, fn: () => Promise<T>): Promise<T> => new Promise<T>((resolve, reject) => {
    const { signal } = background;
    const closed = () => reject(new PagewiseError('ENGINE_CLOSED', MODULE, 'The memory was closed; create a new one with createMemory() (or connect()).'));
    if (signal.aborted) return closed();
    signal.addEventListener('abort', closed, { once: true });
    background.later(`retention:${conversationId}:${++jobs}`, async () => {
      try {
        resolve(await fn());
      } catch (error) {
        reject(error);
      } finally {
        signal.removeEventListener('abort', closed);
      }
    }, conversationId);
  });
}

/** A page of the log: `cursor` is the last entry's position, as a string. */
async function logPage(d: RetentionDeps, rs: RetentionStore, pageArg: unknown): Promise<Page<RetentionLogEntry>> {
  const o = optionalObject(pageArg, 'page');
  const limit = o.limit ?? DEFAULT_PAGE;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    invalid('page.limit', `The page's limit must be an integer from 1 to ${MAX_PAGE.toLocaleString('en-US')} (got ${describe(limit)}); leave it out for ${DEFAULT_PAGE}.`);
  }
  const { cursor } = o;
  if (cursor !== undefined && cursor !== null && (typeof cursor !== 'string' || !/^(0|[1-9][0-9]{0,14})$/.test(cursor))) {
    invalid('page.cursor', `The cursor is not one a page of memory.retentionLog() gave (got ${describe(cursor)}); pass null (or leave it out) for the first page, then each page's own cursor.`);
  }
  const after = typeof cursor === 'string' ? Number(cursor) : 0;
  const rows = await d.serial(() => rs.log(after, limit + 1));
  const { items, more } = pageOf(rows, limit);
  return { items, cursor: more && items.length > 0 ? String(items[items.length - 1]!.seq) : null };
}

/** applyRetention's options, checked: the clock (ms) and the bound on turns. */
function readApply(arg: unknown): { nowMs: number; maxTurns: number } {
  const o = optionalObject(arg, 'options');
  const nowMs = o.now === undefined ? Date.now() : parseIsoDate(o.now, 'options.now');
  if (o.maxTurns !== undefined && (typeof o.maxTurns !== 'number' || !Number.isSafeInteger(o.maxTurns) || o.maxTurns < 1)) {
    invalid('options.maxTurns', `options.maxTurns must be a whole number of turns of at least 1, or left out for no bound (got ${describe(o.maxTurns)}).`);
  }
  return { nowMs, maxTurns: (o.maxTurns as number | undefined) ?? Number.POSITIVE_INFINITY };
}

function addTo(into: RetentionReport, r: RetentionReport): void {
  into.turnsRemoved += r.turnsRemoved;
  into.conversationsRemoved.push(...r.conversationsRemoved);
  into.pinnedKept += r.pinnedKept;
  into.entries.push(...r.entries);
}

/** Runs the functions it is given one after another (each after the last has settled). */
function oneAtATime() {
  let chain: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = chain.then(fn, fn);
    chain = run.catch(() => undefined);
    return run;
  };
}

type SliceParts = { rs: RetentionStore; sync: SyncStore; remove: Remove };

/** Removes up to `budget` of the turns `w` covers, oldest first, in one transaction; then the positions and tags. */
async function removeSome(d: RetentionDeps, { rs, sync, remove }: SliceParts, w: DueWork, budget: number): Promise<RetentionReport> {
  const { conversationId } = w;
  const rows = await rs.rows(w, budget);
  if (rows.length === 0) return empty();
  const total = await rs.turns(conversationId);
  const whole = rows.length >= total;
  // As forget: a shorter conversation is tagged again whole, a longer one only where its turns went.
  const retag = whole || total <= RETAG_ALL_TURNS ? undefined : await retagPlan(d, conversationId, rows);
  const nowIso = new Date().toISOString();
  const gone = new Set(rows.map((r) => r.id));
  // The message the conversation is at may go (all its turns old but a pinned one): it is then at the last one
  // before it on that path, as after forget.
  const nodes = whole ? [] : await d.tree.nodes(conversationId);
  const head = whole ? null : headOf(nodes, await d.tree.register(conversationId));
  const back = head && gone.has(head.id) ? [d.tree.checkoutStatement(conversationId, pathTo(nodes, head).filter((n) => !gone.has(n.id)).pop()?.id ?? '', nowIso)] : [];
  const entry: RetentionLogEntry = {
    seq: (await rs.lastSeq()) + 1, at: nowIso, conversationId, reason: w.reason, turns: rows.length, conversationRemoved: whole,
    ...(w.cutoffMs === null ? {} : { before: new Date(w.cutoffMs).toISOString() }),
  };
  // Tombstones name each turn (its id and hash): a conversation's tombstone would also take turns other devices
  // wrote offline after these, which no policy asked for.
  const extra = [sync.forgetTurnsStatement(conversationId, rows.map((r) => r.rowid), nowIso), sync.forgetHeldStatement(conversationId, [...gone]), ...back, ...rs.logStatements(entry)];
  // The conversation's updatedAt stays: trimmed for its age, it is no more recent than it was.
  await remove(conversationId, rows, whole, retag, extra, true, false);
  if (!whole) {
    await settlePath(d, conversationId);
    await d.index.indexNew(conversationId, nowIso);
  }
  return { turnsRemoved: rows.length, conversationsRemoved: whole ? [conversationId] : [], pinnedKept: 0, entries: [entry], more: false };
}

export function createRetention(d: RetentionDeps) {
  const { driver, background, option } = d;
  const rs = createRetentionStore(driver);
  const sync = createSyncStore(driver);
  const remove = createRemoval({ driver, store: d.store, uncache: d.uncache });
  const parts = { rs, sync, remove };
  const global: GlobalPolicy = { maxAgeDays: option?.maxAgeDays ?? null, idleDays: option?.idleDays ?? null, maxConversations: option?.maxConversations ?? null, keepPinned: option?.keepPinned ?? true };
  const sliceTurns = option?.sliceTurns ?? DEFAULT_SLICE_TURNS;
  const anyBound = global.maxAgeDays !== null || global.idleDays !== null || global.maxConversations !== null;
  // Conversations with a policy of their own (read once, then kept up to date by setRetention).
  let policies: number | null = null;
  const hasPolicy = async () => anyBound || (policies ??= await rs.policies()) > 0;

  // One slice at a time, whoever asks (the background, applyRetention): the log's positions are taken in order.
  const exclusive = oneAtATime();

  const inLane = laneRunner(background);
  let purgeChecked = false;

  /** One slice: up to `budget` turns of the next conversation with something due; null when nothing is. */
  const slice = (nowMs: number, budget: number): Promise<{ report: RetentionReport; conversationId: string; done: boolean } | null> => exclusive(async () => {
    const work = await rs.due(nowMs, global);
    if (!work) return null;
    return inLane(work.conversationId, () => d.keyed(work.conversationId)(async () => {
      // Again in the slot: a call on it before this one may have changed what is due.
      const now = await rs.due(nowMs, global, work.conversationId);
      const report = now ? await removeSome(d, parts, now, budget) : empty();
      if (report.conversationsRemoved.length > 0) policies = null;
      const done = !now || !(await rs.due(nowMs, global, work.conversationId));
      if (now && done) report.pinnedKept = await rs.pinnedKept(now);
      return { report, conversationId: work.conversationId, done };
    }));
  });

  /** The file without a byte of what went: once after a pass, in the exclusive slot. */
  const purge = async (): Promise<void> => {
    if (!(await rs.purgeDue())) return;
    await d.serial(async () => {
      await remove.purge();
      await rs.purged();
    });
  };

  /** Runs slices until nothing is due or `maxTurns` went; rebuilds what each conversation left needs, purges after the pass. */
  const pass = async (nowMs: number, maxTurns: number): Promise<RetentionReport> => {
    const report = empty();
    const touched = new Set<string>();
    let left = maxTurns;
    let stalled = 0;
    while (left > 0) {
      const s = await slice(nowMs, Math.min(sliceTurns, left));
      if (!s) break;
      addTo(report, s.report);
      left -= s.report.turnsRemoved;
      if (!s.report.conversationsRemoved.includes(s.conversationId) && s.report.turnsRemoved > 0) touched.add(s.conversationId);
      if (s.done && touched.delete(s.conversationId)) d.rebuildLater(s.conversationId);
      // A slice that removed nothing twice running: what is due cannot be removed now (never loops).
      stalled = s.report.turnsRemoved === 0 ? stalled + 1 : 0;
      if (stalled >= 2) break;
    }
    for (const c of touched) d.rebuildLater(c);
    report.more = (await rs.due(nowMs, global)) !== null;
    if (!report.more) await purge();
    return report;
  };

  return {
    /** Maintenance's retention task: one slice with the real clock (null: no policy, or nothing due). */
    async retention(): Promise<RetentionReport | null> {
      // A purge a pass left undone (a crash, a close before it) is done at the first slice after opening, whatever the
      // policy now: the removed turns' bytes may still be in the file.
      if (!purgeChecked) {
        await purge();
        purgeChecked = true;
      }
      if (option?.intervalMs === null || !(await hasPolicy())) return null;
      const nowMs = Date.now();
      const s = await slice(nowMs, sliceTurns);
      if (s?.done && s.report.turnsRemoved > 0 && !s.report.conversationsRemoved.includes(s.conversationId)) d.rebuildLater(s.conversationId);
      const more = s !== null && (await rs.due(nowMs, global)) !== null;
      if (!more) await purge();
      if (!s) return null;
      return { ...s.report, more };
    },

    /** When the background checks again after a pass: the option's interval (null: none, or only applyRetention()). */
    recheckMs(): number | null {
      if (option) return option.intervalMs;
      return (policies ?? 0) > 0 ? DEFAULT_INTERVAL_MS : null;
    },

    applyRetention(arg?: unknown): Promise<RetentionReport> {
      return (async () => {
        await d.check();
        const { nowMs, maxTurns } = readApply(arg);
        return (await hasPolicy()) ? pass(nowMs, maxTurns) : empty();
      })();
    },

    setRetention(conversationIdArg: unknown, policyArg: unknown): Promise<void> {
      let policy: ReturnType<typeof readPolicy> = null;
      return d.on(() => {
        const id = validateConversationId(conversationIdArg);
        policy = readPolicy(policyArg);
        return id;
      }, async (conversationId) => {
        await storedConversation(d.store, conversationId);
        const before = await hasPolicy();
        await driver.batch([rs.policyStatement(conversationId, policy, new Date().toISOString())]);
        policies = await rs.policies();
        if (!before && policies > 0) d.wake();
      });
    },

    retentionLog: (pageArg?: unknown): Promise<Page<RetentionLogEntry>> => logPage(d, rs, pageArg),
  };
}

export type Retention = ReturnType<typeof createRetention>;
