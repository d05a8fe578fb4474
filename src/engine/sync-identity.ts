// Who this replica is, proven by its history. A receiver keeps, with the cursor of how far it has read a sender, the
// sender's receipt: the rows the cursor reached (the last turn's row id and hash, the last tombstone), signed with a
// secret that never leaves the sender's database. When the cursor comes back:
//   - no receipt, or one this replica did not sign for this cursor (forged, or from before receipts): the sender
//     starts over from the beginning — the receiver skips what it has, so a forged cursor costs one resend and never
//     stops a turn or a forget from travelling;
//   - a signed receipt naming rows this replica's history does not hold: the receipt was given by another database
//     with the same id and secret — this one is a copy of it (a copied file, a restored backup) — so this replica
//     takes a new id (renew): every peer then reads it from the start, and it gets every turn written under the old id.
// A receipt can be lost — replaced by a forged cursor, by an old batch applied again, by its twin's receipt — so the
// peer also shows the newest turns it received from this id (SyncState.received): one this history neither holds nor
// ever removed is the same proof (sync-changes.ts checks both). And a replica that renewed tells every peer the ids it
// left; a peer tells whoever still answers to one of them that it is a twin (SyncState.twin), and it renews too.
import { PagewiseError } from '../contracts/errors.js';
import type { SyncStore } from '../store/sync-store.js';
import type { SyncCursor, SyncRenewal, SyncTombstone } from '../contracts/types-sync.js';
import type { StorageDriver } from '../contracts/types.js';
import { fromBase64Url, toBase64Url, toHex } from '../common/parts.js';

const MODULE = 'sync';
const VERSION = 'r1';

/**
 * What a receipt names: the last turn row read (id, hash) and the last tombstone row read, or null at 0. A tombstone
 * without its content: the floor a resync's pull passed (rows compacted here, none of them sent).
 */
export interface ReceiptRows {
  turn: { rowid: number; hash: string } | null;
  tombstone: { rowid: number; tombstone: SyncTombstone | null } | null;
}

/** A cursor as this replica finds it: from the start, one it gave, one it did not, or one of another history. */
export type CursorVerdict = { kind: 'start' } | { kind: 'ok'; rows: ReceiptRows } | { kind: 'unknown' } | { kind: 'diverged' };

const keys = new Map<string, Promise<CryptoKey>>();

function keyOf(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    const bytes = new Uint8Array(secret.length / 2);
    for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(secret.slice(i * 2, i * 2 + 2), 16);
    key = crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
    if (keys.size > 64) keys.clear();
    keys.set(secret, key);
  }
  return key;
}


/**
 * Whom a receipt is for: this replica (the sender), the receiver and the conversation filter the cursor was read
 * with — a receipt given to one receiver, or for some conversations, is not one for another (replayed, it would
 * silence what lies below it).
 */
export interface ReceiptScope {
  replica: string;
  receiver: string;
  conversations: readonly string[] | null;
}

/** What is signed: whom it is for, the cursor's two numbers, and the rows they reached. */
const signed = (scope: ReceiptScope, cursor: SyncCursor, body: string): string =>
  [VERSION, scope.replica, scope.receiver, JSON.stringify(scope.conversations), cursor.turns, cursor.tombstones, body].join('\n');

/** The receipt for `cursor` (the rows it reached), signed by this replica. */
export async function signReceipt(secret: string, scope: ReceiptScope, cursor: SyncCursor, rows: ReceiptRows): Promise<string> {
  const body = JSON.stringify([
    rows.turn ? [rows.turn.rowid, rows.turn.hash] : null,
    rows.tombstone ? [rows.tombstone.rowid, rows.tombstone.tombstone] : null,
  ]);
  const mac = await crypto.subtle.sign('HMAC', await keyOf(secret), new TextEncoder().encode(signed(scope, cursor, body)));
  return `${VERSION}.${toBase64Url(body)}.${toHex(mac)}`;
}

/** The rows a receipt names, when this replica signed it for exactly this cursor; otherwise null. */
async function openReceipt(secret: string, scope: ReceiptScope, cursor: SyncCursor): Promise<ReceiptRows | null> {
  const parts = (cursor.receipt ?? '').split('.');
  if (parts.length !== 3 || parts[0] !== VERSION || !/^[0-9a-f]{64}$/.test(parts[2]!)) return null;
  const body = fromBase64Url(parts[1]!);
  if (body === null) return null;
  const mac = Uint8Array.from(parts[2]!.match(/../g)!, (h) => parseInt(h, 16));
  if (!(await crypto.subtle.verify('HMAC', await keyOf(secret), mac, new TextEncoder().encode(signed(scope, cursor, body))))) return null;
  try {
    const [turn, tombstone] = JSON.parse(body) as [[number, string] | null, [number, SyncTombstone | null] | null];
    return {
      turn: turn ? { rowid: turn[0], hash: turn[1] } : null,
      tombstone: tombstone ? { rowid: tombstone[0], tombstone: tombstone[1] } : null,
    };
  } catch {
    return null;
  }
}

/**
 * How this replica finds a cursor `receiver` says it reached, read with that filter: see the top of this file. `as`:
 * an id this replica left, when the cursor was read of it under that id (its receipt is signed with that id's secret).
 */
export async function verifyCursor(sync: SyncStore, cursor: SyncCursor, receiver: string, conversations: readonly string[] | null, as?: string): Promise<CursorVerdict> {
  if (cursor.turns === 0 && cursor.tombstones === 0) return { kind: 'start' };
  const secret = as === undefined ? await sync.secret() : await sync.secretOf(as);
  if (secret === null) return { kind: 'unknown' };
  const rows = await openReceipt(secret, { replica: as ?? (await sync.replica()), receiver, conversations }, cursor);
  // Signed for other numbers than the cursor's own, or naming nothing where the cursor is past 0: not one given here.
  if (!rows || (rows.turn?.rowid ?? 0) !== cursor.turns || (rows.tombstone?.rowid ?? 0) !== cursor.tombstones) return { kind: 'unknown' };
  if (rows.turn && !(await sync.hasTurnRow(rows.turn.rowid, rows.turn.hash))) return { kind: 'diverged' };
  if (rows.tombstone && !(await hadTombstone(sync, rows.tombstone))) return { kind: 'diverged' };
  return { kind: 'ok', rows };
}

/** Whether this history holds the tombstone row a receipt names, or held it and compacted it (at or below the floor). */
async function hadTombstone(sync: SyncStore, t: NonNullable<ReceiptRows['tombstone']>): Promise<boolean> {
  if (t.tombstone && (await sync.hasTombstoneRow(t.rowid, t.tombstone))) return true;
  return t.rowid <= (await sync.floor()).rowid;
}

const randomHex = (bytes: number): string => toHex(crypto.getRandomValues(new Uint8Array(bytes)));

/** This replica takes a new id and secret (one transaction); its own turns keep the id they were written under. */
export async function renew(driver: StorageDriver, sync: SyncStore, reason: SyncRenewal['reason']): Promise<SyncRenewal> {
  const previous = await sync.replica();
  const replica = `r${randomHex(12)}`;
  try {
    await driver.batch(sync.renewStatements(previous, replica, randomHex(32), reason, new Date().toISOString()));
  } catch (cause) {
    throw new PagewiseError('STORAGE_ERROR', MODULE, `This replica found it is a copy of another (${reason}) but could not take a new id; nothing was synced. Run the sync again.`, { cause });
  }
  return { previous, replica, reason };
}
