// The model of tests/node/engine/sync-property.test.ts and its replicas: what each must store after any interleaving of
// writes, forgets, pins, aliases, syncs and faulty devices (a disk restored from an old backup, a copied database file,
// a clock a year ahead or two hours behind). Order keys are the engine's own, read back after every write and forget,
// so a forget covers exactly the turns of its conversation stamped below its clock, wherever they were written. A turn
// stamped more than SKEW_MS ahead of a receiver's clock is held aside there (not stored, not passed on); a forget
// stamped so is clamped: taken as made when it arrives, at the receiver's clock (read back after the sync).
import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { fileStorage } from '../../src/storage/node-file.js';
import type { Memory } from '../../src/index.js';
import type { SyncBatch, SyncPeer, SyncReport } from '../../src/contracts/types-sync.js';
import { createMemory } from './helpers.js';
import { at } from './sync-harness.js';

/** maxClockSkewMs, the engine's default (the Durable Object's too). */
export const SKEW_MS = 600_000;
export const HOUR = 3_600_000;
export const YEAR = 365 * 24 * HOUR;
/** The conversation of bulk pins and of per-conversation aliases: written once a run, never forgotten. */
export const BULK_C = 'c4';
/** Replica 2 is the Durable Object (its clock is workerd's: never moved); 0, 1 and copies of them (3, 4) are files. */
export const DO = 2;

export interface ModelTurn {
  id: string; c: string; private: boolean;
  /** Its order key: the writer's hybrid logical clock when it was written. */
  ord: number;
  marker: string; // a word that occurs in this turn's text only
  /** The turns of the conversation the writer held when it wrote this one (it must sort after each). */
  before: string[];
}

/** A forget as it travels: a whole conversation (no id) or one message, at the forget's clock. */
interface Tombstone { c: string; id?: string; ord: number }

/** What one replica's database holds, as far as sync goes (a backup copies it; a restore puts it back). */
export interface ReplicaState {
  /** Turns stored; received stamped too far ahead (held aside: not stored); held aside, then let go by a forget here. */
  held: Set<string>;
  aside: Set<string>;
  dropped: Set<string>;
  /** Tombstones stored (made here, or received), by number; tombstones received stamped too far ahead (clamped). */
  known: Set<number>;
  clamped: Set<number>;
  pins: Map<string, { pinned: boolean; at: number }>;
  /** Manual aliases and their removals, by `scope \0 alias` ('' scope: global). */
  aliases: Map<string, { tag: string; removed: boolean; at: number }>;
}

const copy = (s?: ReplicaState): ReplicaState => ({
  held: new Set(s?.held), aside: new Set(s?.aside), dropped: new Set(s?.dropped), known: new Set(s?.known), clamped: new Set(s?.clamped),
  pins: new Map([...(s?.pins ?? [])].map(([k, v]) => [k, { ...v }])), aliases: new Map([...(s?.aliases ?? [])].map(([k, v]) => [k, { ...v }])),
});
const byNumber = (a: string, b: string) => Number(a.slice(1)) - Number(b.slice(1));

export class Model {
  readonly turns = new Map<string, ModelTurn>();
  readonly tombstones: Tombstone[] = [];
  readonly replicas: ReplicaState[] = [copy(), copy(), copy()];
  /** Turns a restore took from the only replica that held them (written after the backup, never synced). */
  readonly lost = new Set<string>();
  /** The largest order key not stamped ahead: the next write or forget must come later by the clock. */
  horizon = 0;
  /** Forgets clamped by the last syncs: on which replica, which tombstone (its clock a placeholder), not before when. */
  pending: { r: number; k: number; from: number }[] = [];
  #next = 0;
  #clock = 0;

  #state = (r: number): ReplicaState => this.replicas[r]!;
  heldIn = (r: number, c: string): string[] => [...this.#state(r).held].filter((id) => this.turns.get(id)!.c === c).sort(byNumber);
  /** Every turn the replica holds, in a stable order (what `pick` indexes), but those of `except`. */
  heldAll = (r: number, except?: string): string[] => [...this.#state(r).held].filter((id) => this.turns.get(id)!.c !== except).sort(byNumber);
  /** Whether the conversation is stored on the replica (its row lives while a turn of it does). */
  exists = (r: number, c: string): boolean => [...this.#state(r).held].some((id) => this.turns.get(id)!.c === c);

  /** The largest order key the replica knows in the conversation: of its turns and its tombstones. */
  maxKey(r: number, c: string): number {
    const s = this.#state(r);
    const keys = [...[...s.held].map((id) => this.turns.get(id)!), ...[...s.known].map((k) => this.tombstones[k]!)].filter((x) => x.c === c).map((x) => x.ord);
    return Math.max(0, ...keys);
  }

  #note = (ord: number) => { if (ord <= Date.now() + SKEW_MS) this.horizon = Math.max(this.horizon, ord); };

  /** Turns written on `r` at clock `now`, with the keys the engine gives: one past the largest it knows, or now. */
  write(r: number, c: string, privacy: readonly boolean[], now: number): ModelTurn[] {
    const before = this.heldIn(r, c);
    let ord = Math.max(now, this.maxKey(r, c) + 1);
    return privacy.map((p, k) => {
      const n = this.#next++;
      const turn = { id: `t${n}`, c, private: p, ord: ord++, marker: `quz${n.toString(36).padStart(4, '0')}vox`, before: [...before, ...Array.from({ length: k }, (_, i) => `t${n - k + i}`)] };
      this.turns.set(turn.id, turn);
      this.#state(r).held.add(turn.id);
      return turn;
    });
  }

  /** The keys the engine gave (`ords`: the shareable turns' as read back); one write's keys run one apart. */
  settleOrds(written: readonly ModelTurn[], ords: ReadonlyMap<string, number>): void {
    const k = written.findIndex((t) => ords.has(t.id));
    if (k >= 0) written.forEach((t, i) => { t.ord = ords.get(written[k]!.id)! - k + i; });
    for (const t of written) this.#note(t.ord);
  }

  /** A new tombstone's number (one stored on two replicas alike is one row in each: it covers the same turns). */
  #tombstone(t: Tombstone): number {
    this.#note(t.ord);
    return this.tombstones.push(t) - 1;
  }

  /** A clamped forget's clock, as the receiver stored it. */
  settleClamp(k: number, ord: number): void {
    this.tombstones[k]!.ord = ord;
    this.#note(ord);
  }

  #remove(s: ReplicaState, ids: Iterable<string>): void {
    for (const id of ids) {
      s.held.delete(id);
      s.pins.delete(id);
    }
  }

  /** A forget of the whole conversation on `r`, at clock `ord`: every turn of it stored there goes, and held ones for good. */
  forgetConversation(r: number, c: string, ord: number): void {
    const s = this.#state(r);
    s.known.add(this.#tombstone({ c, ord }));
    this.#remove(s, this.heldIn(r, c));
    for (const id of [...s.aside].filter((x) => this.turns.get(x)!.c === c)) { s.aside.delete(id); s.dropped.add(id); }
  }

  /** A forget of one message on `r` (`ord`: its tombstone's clock; a private turn's forget leaves none). */
  forgetMessage(r: number, id: string, ord: number | undefined): void {
    if (ord !== undefined) this.#state(r).known.add(this.#tombstone({ c: this.turns.get(id)!.c, id, ord }));
    this.#remove(this.#state(r), [id]);
  }

  /** A pin or unpin at the next tick: a pin of a pinned message keeps its time (the engine's INSERT OR IGNORE). */
  pin(r: number, id: string, pinned: boolean): void {
    const at = ++this.#clock;
    if (!pinned || !this.#state(r).pins.get(id)?.pinned) this.#state(r).pins.set(id, { pinned, at });
  }

  /** aliases.add (`tag`), or aliases.remove (null: recorded only where the alias is), at the next tick. */
  alias(r: number, scope: string | null, alias: string, tag: string | null): void {
    const at = ++this.#clock;
    const aliases = this.#state(r).aliases;
    const key = `${scope ?? ''}\u0000${alias}`;
    if (tag !== null) aliases.set(key, { tag, removed: false, at });
    else if (aliases.get(key)?.removed === false) aliases.set(key, { tag: '', removed: true, at });
  }

  /** The aliases of a scope on `r` (not removed), sorted. */
  aliasesIn(r: number, scope: string | null): string[] {
    const prefix = `${scope ?? ''}\u0000`;
    return [...this.#state(r).aliases].filter(([k, a]) => k.startsWith(prefix) && !a.removed).map(([k]) => k.slice(prefix.length)).sort();
  }

  backup = (r: number): ReplicaState => copy(this.#state(r));

  /** The replica's disk is replaced by a backup: what it stored since, and no other replica has, is lost. */
  restore(r: number, backup: ReplicaState): void {
    const before = this.#state(r).held;
    this.replicas[r] = copy(backup);
    for (const id of before) if (!this.replicas.some((s) => s.held.has(id) || s.aside.has(id))) this.lost.add(id);
  }

  /** A new replica on a copy of `r`'s database; its number. */
  clone(r: number): number {
    return this.replicas.push(copy(this.#state(r))) - 1;
  }

  /** Whether a tombstone stored on `r` covers the turn: its conversation's, or its own, stamped after it. */
  covered(r: number, id: string): boolean {
    const t = this.turns.get(id)!;
    return [...this.#state(r).known].some((k) => {
      const f = this.tombstones[k]!;
      return f.c === t.c && (f.id === undefined || f.id === id) && t.ord < f.ord;
    });
  }

  /**
   * One direction of a sync: tombstones (one stamped past `bound` taken as made `now`, once), the turns `to` lacks
   * (held aside when stamped past `bound`), pin states (the later wins, a tie pins; the same state, later, brings its
   * time) and manual aliases (the later wins, its time too; a conversation's only where it is stored). Returns how
   * many turns were newly held aside.
   */
  #transfer(from: number, to: number, now: number): number {
    const [f, s, bound] = [this.#state(from), this.#state(to), now + SKEW_MS];
    let aside = 0;
    for (const k of f.known) {
      if (s.known.has(k) || s.clamped.has(k)) continue;
      if (this.tombstones[k]!.ord <= bound) s.known.add(k);
      else {
        s.clamped.add(k);
        const clamped = this.#tombstone({ ...this.tombstones[k]!, ord: now });
        s.known.add(clamped);
        this.pending.push({ r: to, k: clamped, from: now });
      }
    }
    this.#remove(s, [...s.held].filter((id) => this.covered(to, id)));
    for (const id of [...s.aside]) if (this.covered(to, id)) s.aside.delete(id);
    for (const id of f.held) {
      const t = this.turns.get(id)!;
      if (t.private || s.held.has(id) || s.aside.has(id) || s.dropped.has(id) || this.covered(to, id)) continue;
      if (t.ord <= bound) s.held.add(id);
      else {
        s.aside.add(id);
        aside++;
      }
    }
    for (const [id, p] of f.pins) {
      const mine = s.pins.get(id);
      if (this.turns.get(id)!.private || !s.held.has(id) || (mine && (p.at < mine.at || (p.at === mine.at && (p.pinned === mine.pinned || !p.pinned))))) continue;
      s.pins.set(id, { ...p });
    }
    for (const [key, a] of f.aliases) {
      const scope = key.slice(0, key.indexOf('\u0000'));
      const mine = s.aliases.get(key);
      if ((scope !== '' && !this.exists(to, scope)) || (mine && a.at <= mine.at)) continue;
      s.aliases.set(key, { ...a });
    }
    return aside;
  }

  /** `i.sync(j)` at `now`: pull what j has, then push what i has. Returns how many turns were newly held aside. */
  sync(i: number, j: number, now = Date.now()): number {
    return this.#transfer(j, i, now) + this.#transfer(i, j, now);
  }

  /** How many turns the replica holds aside (its syncState().held). */
  asideCount = (r: number): number => this.#state(r).aside.size;
  pinnedIn = (r: number, c: string): string[] => this.heldIn(r, c).filter((id) => this.#state(r).pins.get(id)?.pinned).sort();

  /** Manual alias states, as `scope/alias → tag` (or `(removed)`), sorted. */
  aliasStates(r: number): string[] {
    return [...this.#state(r).aliases].map(([k, a]) => `${k.replace('\u0000', '/')} → ${a.removed ? '(removed)' : a.tag}`).sort();
  }
}

// ---- The replicas: Node memories on files, copies of them, and the Durable Object ----

/** A method of the Durable Object `name`: its value, or its error thrown with its code. */
export type ObjectCall = <T>(name: string, method: string, args: unknown[]) => Promise<T>;

const openFile = (file: string): Promise<Memory> => createMemory({ storage: fileStorage(file) });

export class Replicas {
  /** Per replica: its database file and memory (null: the Durable Object). */
  readonly files: (string | null)[] = [];
  readonly memories: (Memory | null)[] = [];
  /** Per file replica: the bytes of its last backup, and what the model held then. */
  readonly backups = new Map<number, { bytes: Uint8Array; state: ReplicaState }>();
  readonly object: string;

  constructor(readonly dir: string, readonly run: number, readonly call: ObjectCall) {
    this.object = `user-${run}`;
  }

  get count(): number { return this.files.length; }

  /** Replicas 0 and 1 on new files (each backed up while empty), and the Durable Object. */
  async open(model: Model): Promise<void> {
    for (const r of [0, 1]) {
      this.files.push(join(this.dir, `r${this.run}-${r}.sqlite3`));
      this.memories.push(await openFile(this.files[r]!));
      this.backups.set(r, { bytes: await this.memory(r).exportDatabase(), state: model.backup(r) });
    }
    this.files.push(null);
    this.memories.push(null);
  }

  fileReplicas = (): number[] => this.files.flatMap((f, r) => (f === null ? [] : [r]));

  memory(r: number): Memory {
    if (!this.memories[r]) throw new Error(`replica ${r} has no open memory`);
    return this.memories[r];
  }

  /** A Memory method on replica r. */
  on<T>(r: number, method: string, ...args: unknown[]): Promise<T> {
    if (r === DO) return this.call<T>(this.object, method, args);
    return (this.memory(r) as unknown as Record<string, (...a: unknown[]) => Promise<T>>)[method]!(...args);
  }

  /** The replica as a sync peer (the Durable Object's three sync methods, batches as plain JSON). */
  peer(r: number): SyncPeer {
    if (r !== DO) return this.memory(r);
    const call = <T>(method: string, args: unknown[]) => this.call<T>(this.object, method, args);
    return {
      syncState: (peer, conversations, options) => call('syncState', options ? [peer, conversations ?? null, options] : conversations ? [peer, conversations] : [peer]),
      syncChanges: (request) => call('syncChanges', [request]),
      applySync: (batch) => call('applySync', [batch]),
    };
  }

  /** `i.sync(j)`; the Durable Object never runs a sync (the other side runs it: the same exchange). */
  sync(i: number, j: number, batchTurns?: number): Promise<SyncReport> {
    const options = batchTurns === undefined ? undefined : { batchTurns };
    return i === DO ? this.memory(j).sync(this.peer(i), options) : this.memory(i).sync(this.peer(j), options);
  }

  /** Closes file replica r and opens it again: on `bytes` when given (a backup restored); copied to `copy` meanwhile. */
  async reopen(r: number, bytes?: Uint8Array, copy?: string): Promise<void> {
    await this.memory(r).close();
    this.memories[r] = null;
    if (bytes) writeFileSync(this.files[r]!, bytes);
    if (copy) copyFileSync(this.files[r]!, copy);
    this.memories[r] = await openFile(this.files[r]!);
  }

  /** A new replica on a copy of r's file (copied while r is closed); its number. */
  async clone(r: number): Promise<number> {
    const file = join(this.dir, `r${this.run}-${this.count}.sqlite3`);
    await this.reopen(r, undefined, file);
    this.files.push(file);
    this.memories.push(await openFile(file));
    return this.count - 1;
  }

  /** Closes every memory; with `remove`, deletes their files. */
  async close(remove = false): Promise<void> {
    for (const [r, m] of this.memories.entries()) {
      this.memories[r] = null;
      await m?.close().catch(() => undefined);
    }
    if (remove) for (const f of this.files) if (f) rmSync(f, { force: true });
  }
}

// ---- Writes and forgets, on a clock moved or not, their order keys read back ----

/** Waits for the clock to pass `ms` (by 2): what comes next in the run comes later by the clock. */
export async function after(ms: number): Promise<void> {
  while (Date.now() <= ms + 1) await new Promise((ok) => setTimeout(ok, 1));
}

/** A conversation's shareable turns and tombstones on replica r, with their keys (a sync from the start reads them). */
const changesOf = (reps: Replicas, r: number, c: string) =>
  reps.on<SyncBatch>(r, 'syncChanges', { to: 'rmodel', cursor: { turns: 0, tombstones: 0 }, conversations: [c], maxTurns: 2000 });

/** Turns written on replica r, its clock `skew` ms off (a file replica's: Date is frozen there for the write). */
export async function writeTurns(reps: Replicas, model: Model, r: number, c: string, privacy: readonly boolean[], skew = 0): Promise<void> {
  const now = Date.now() + skew;
  const written = model.write(r, c, privacy, now);
  const predicted = written[0]!.ord;
  const messages = written.map((t, k) => ({
    id: t.id, role: k % 2 === 0 ? 'user' : 'assistant', content: `Note ${t.marker} about ${c}, written on replica ${r}.`, ...(t.private ? { private: true } : {}),
  }));
  const write = () => reps.on(r, 'onTurnComplete', { conversationId: c, messages });
  await (r === DO ? write() : at(now, write));
  const ords = new Map((await changesOf(reps, r, c)).turns.map((t) => [t.id, t.ord]));
  model.settleOrds(written, ords);
  // The engine's clock may be later than the model's (a checkout counts too), never earlier.
  expect(written[0]!.ord, `the order key of ${written[0]!.id}`).toBeGreaterThanOrEqual(predicted);
  for (const t of written) if (!t.private) expect(ords.get(t.id), `the order key of ${t.id}`).toBe(t.ord);
  await after(Math.max(model.horizon, Date.now() + messages.length));
}

/** A forget of the whole conversation on replica r, its clock `skew` ms off; the forget's clock read back. */
export async function forgetConversation(reps: Replicas, model: Model, r: number, c: string, skew = 0): Promise<void> {
  const forget = () => reps.on(r, 'forget', { conversationId: c });
  await (r !== DO && skew !== 0 ? at(Date.now() + skew, forget) : forget());
  const ord = Math.max(...(await changesOf(reps, r, c)).tombstones.filter((t) => t.id === undefined).map((t) => t.ord));
  expect(ord, `the clock of the forget of ${c} on replica ${r}`).toBeGreaterThan(model.maxKey(r, c));
  model.forgetConversation(r, c, ord);
  await after(model.horizon);
}

/** A forget of one message on replica r; its tombstone's clock read back (a private turn leaves none). */
export async function forgetMessage(reps: Replicas, model: Model, r: number, id: string): Promise<void> {
  const t = model.turns.get(id)!;
  await reps.on(r, 'forget', { conversationId: t.c, messageIds: [id] });
  const ord = t.private ? undefined : (await changesOf(reps, r, t.c)).tombstones.find((x) => x.id === id)?.ord;
  if (!t.private) expect(ord, `the tombstone of ${id} on replica ${r}`).toBeGreaterThan(t.ord);
  model.forgetMessage(r, id, ord);
  await after(model.horizon);
}

/** Reads back the clocks of the forgets the last syncs clamped: the receiver took it as made when it first came (by any path). */
export async function settleClamps(reps: Replicas, model: Model): Promise<void> {
  const until = Date.now();
  for (const p of model.pending.splice(0)) {
    const t = model.tombstones[p.k]!;
    const ords = (await changesOf(reps, p.r, t.c)).tombstones.filter((x) => x.id === t.id && x.ord <= until).map((x) => x.ord);
    expect(ords.length, `a forget of ${t.c} ${t.id ?? ''} from a clock ahead, taken as made on replica ${p.r}`).toBeGreaterThan(0);
    model.settleClamp(p.k, Math.min(...ords));
  }
}
