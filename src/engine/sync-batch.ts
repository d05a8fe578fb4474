// A sync batch as applySync receives it: another replica's data, so caller input like any other. Every field is
// checked and copied before anything is written; a bad batch is a typed error and changes nothing.
import { checkId, checkObject } from './support.js';
import { MISSING_PER_ASK, readCursor, readReplicaId } from './sync-changes.js';
import { PagewiseError } from '../contracts/errors.js';
import { MAX_BATCH_TURNS, readConversationFilter } from '../common/sync.js';
import { DEFAULT_MAX_ATTACHMENT_BYTES, contentHash, describe, messageText, parseIsoDate, readArray, readRecord, storedContent, validateConversationId, validateMessage } from '../common/messages.js';
import { decodeAttachment, isAttachmentPart } from '../common/parts.js';
import type { ChatMessage } from '../contracts/types.js';
import type { SyncAlias, SyncAttachmentPiece, SyncBatch, SyncHead, SyncPin, SyncTombstone, SyncTurn } from '../contracts/types-sync.js';
import type { Place } from '../store/tree.js';
import { MAX_ORD } from '../store/order.js';
import { pacer, type Pace } from '../common/pace.js';

const MODULE = 'sync';
const MAX_TOMBSTONES = 10_000;
const MAX_PINS = 100_000;
// The reader's slice, shorter than other passes' (YIELD_MS): reading copies the whole batch, and the collections it
// causes (or an endpoint's parse of the body, ~30 ms for 3.6 MB of pins) add to what another user's call waits behind.
const READ_MS = 25;

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path} ${message}`, { path });
}

/** A received turn, checked: its message as the engine stores it, its text and its verified hash. */
export interface IncomingTurn extends SyncTurn {
  message: ChatMessage;
  text: string;
  createdMs: number;
  /** Its branch, as stored. */
  place: Place;
  /** The replica it was received from, when not the batch's sender (a held turn released later). */
  via?: string;
}

export interface ReadBatch extends Omit<SyncBatch, 'turns' | 'attachments' | 'heads'> {
  turns: IncomingTurn[];
  heads: SyncHead[];
  pieces: IncomingPiece[];
}

const iso = (value: unknown, path: string): string => new Date(parseIsoDate(value, path)).toISOString();
const int = (value: unknown, path: string, min: number): number => {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) invalid(path, `must be a whole number of at least ${min} (got ${describe(value)}).`);
  return value;
};
/** An order key: a time in ms no later than MAX_ORD (one past it would push every later write past what the format holds). */
const ordOf = (value: unknown, path: string): number => {
  const n = int(value, path, 0);
  if (n > MAX_ORD) invalid(path, `is ${n}, past the largest order key (${MAX_ORD}, the last time a Date holds): no replica writes one; the batch was not applied.`);
  return n;
};
const hash = (value: unknown, path: string): string => {
  if (typeof value !== 'string' || !/^[0-9a-f]{64}$/.test(value)) invalid(path, `must be a SHA-256 in hex, as syncChanges() gives it (got ${describe(value)}).`);
  return value;
};
function list(value: unknown, path: string, max: number): unknown[] {
  const l = readArray(value, path, 'INVALID_ARGUMENT', MODULE);
  if (!l) invalid(path, `must be an array (got ${describe(value)}).`);
  if (l.length > max) invalid(path, `holds ${l.length} items; a batch holds at most ${max}. Ask syncChanges() for smaller batches.`);
  return l;
}
const record = (value: unknown, path: string): Record<string, unknown> => {
  const r = readRecord(value, path, 'INVALID_ARGUMENT', MODULE);
  if (!r) invalid(path, `must be an object (got ${describe(value)}).`);
  return r;
};

function readTombstone(raw: unknown, path: string): SyncTombstone {
  const t = record(raw, path);
  const conversationId = validateConversationId(t.conversationId, `${path}.conversationId`);
  const forgottenAt = iso(t.forgottenAt, `${path}.forgottenAt`);
  const ord = ordOf(t.ord, `${path}.ord`);
  if (t.id === undefined) return { conversationId, ord, forgottenAt };
  return { conversationId, id: checkId(t.id, `${path}.id`), contentHash: hash(t.contentHash, `${path}.contentHash`), ord, forgottenAt };
}

export async function readTurn(raw: unknown, path: string, maxBytes: number): Promise<IncomingTurn> {
  const t = record(raw, path);
  const conversationId = validateConversationId(t.conversationId, `${path}.conversationId`);
  const { conversationId: _c, contentHash: given, origin, ord, private: isPrivate, branch, fork, ...fields } = t;
  if (isPrivate !== undefined) invalid(`${path}.private`, 'is set: private turns never leave the replica they were written on.');
  const checked = validateMessage(fields, path, maxBytes);
  if (checked.id === undefined || checked.createdAt === undefined) invalid(path, 'needs its id and createdAt, as syncChanges() gives them.');
  // Attachments travel by id, apart from the turns: a turn carrying bytes is not one syncChanges() wrote.
  if (Array.isArray(checked.content) && checked.content.some((p) => isAttachmentPart(p) && p.attachment === undefined && p.url === undefined)) {
    invalid(`${path}.content`, 'carries an attachment\'s bytes; in a sync batch a turn names its attachments by id (their bytes travel apart).');
  }
  // As this replica writes it (the same JSON every replica stores).
  const message = { ...checked, id: checked.id, createdAt: checked.createdAt, content: (await storedContent(checked.content)).content };
  const contentHashGiven = hash(given, `${path}.contentHash`);
  if ((await contentHash(message)) !== contentHashGiven) invalid(`${path}.contentHash`, `does not match the message ${describe(message.id)} (changed on the way); nothing was applied.`);
  const turn: IncomingTurn = {
    conversationId, id: message.id, role: message.role, content: message.content, createdAt: message.createdAt, contentHash: contentHashGiven,
    origin: readReplicaId(origin, `${path}.origin`), ord: ordOf(ord, `${path}.ord`),
    message, text: messageText(message), createdMs: Date.parse(message.createdAt), place: readPlace(branch, fork, path),
  };
  if (message.name !== undefined) turn.name = message.name;
  if (message.toolCalls !== undefined) turn.toolCalls = message.toolCalls;
  if (message.toolCallId !== undefined) turn.toolCallId = message.toolCallId;
  return turn;
}

/** A checked turn as it travels again (a held one is kept so, and read again when released). */
export function wireTurn(t: IncomingTurn): SyncTurn {
  const { message: _m, text: _t, createdMs: _c, place: p, via: _v, ...wire } = t;
  const out: SyncTurn = { ...wire };
  if (p.branch !== '') out.branch = { start: p.branch, after: p.forkAfter ?? '' };
  if (p.forkBranch !== null && p.forkOrd !== null) out.fork = { branch: p.forkBranch, ord: p.forkOrd };
  return out;
}

/** A turn's branch as it travels (`branch: { start, after }`, `fork: { branch, ord }`); absent: the first branch. */
function readPlace(branch: unknown, fork: unknown, path: string): Place {
  if (branch === undefined) return { branch: '', forkAfter: null, forkBranch: null, forkOrd: null };
  const b = record(branch, `${path}.branch`);
  const start = checkId(b.start, `${path}.branch.start`);
  const after = b.after === '' ? '' : checkId(b.after, `${path}.branch.after`);
  if (fork === undefined) return { branch: start, forkAfter: after, forkBranch: null, forkOrd: null };
  const f = record(fork, `${path}.fork`);
  const forkBranch = f.branch === '' ? '' : checkId(f.branch, `${path}.fork.branch`);
  return { branch: start, forkAfter: after, forkBranch, forkOrd: ordOf(f.ord, `${path}.fork.ord`) };
}

function readHead(raw: unknown, path: string): SyncHead {
  const h = record(raw, path);
  return {
    conversationId: validateConversationId(h.conversationId, `${path}.conversationId`), messageId: h.messageId === '' ? '' : checkId(h.messageId, `${path}.messageId`),
    ord: ordOf(h.ord, `${path}.ord`), origin: readReplicaId(h.origin, `${path}.origin`), at: iso(h.at, `${path}.at`),
  };
}

function readPin(raw: unknown, path: string): SyncPin {
  const p = record(raw, path);
  if (typeof p.pinned !== 'boolean') invalid(`${path}.pinned`, `must be true or false (got ${describe(p.pinned)}).`);
  return { conversationId: validateConversationId(p.conversationId, `${path}.conversationId`), messageId: checkId(p.messageId, `${path}.messageId`), pinned: p.pinned, at: iso(p.at, `${path}.at`) };
}

function readAlias(raw: unknown, path: string): SyncAlias {
  const a = record(raw, path);
  const text = (v: unknown, at: string) => {
    if (typeof v !== 'string' || v.length === 0 || v.length > 256) invalid(at, `must be an alias's spelling (got ${describe(v)}).`);
    return v;
  };
  if (a.removed !== undefined && a.removed !== true) invalid(`${path}.removed`, `must be true or left out (got ${describe(a.removed)}).`);
  return {
    conversationId: a.conversationId === null ? null : validateConversationId(a.conversationId, `${path}.conversationId`),
    alias: text(a.alias, `${path}.alias`), tag: a.removed ? '' : text(a.tag, `${path}.tag`), createdAt: iso(a.createdAt, `${path}.createdAt`),
    ...(a.removed ? { removed: true as const } : {}),
  };
}

/** A piece of an attachment's bytes, checked and decoded (its hash is checked once the attachment is whole). */
export interface IncomingPiece extends Omit<SyncAttachmentPiece, 'data'> {
  bytes: Uint8Array;
}

function readPiece(raw: unknown, path: string): IncomingPiece {
  const p = record(raw, path);
  hash(p.id, `${path}.id`);
  // An attachment over this replica's limit is refused when applied (not the batch): its pieces are checked as pieces.
  const size = int(p.size, `${path}.size`, 1);
  const start = int(p.start, `${path}.start`, 0);
  const { bytes, mediaType } = decodeAttachment(p.data, p.mediaType, path, Math.min(size, DEFAULT_MAX_ATTACHMENT_BYTES * 4));
  if (start + bytes.length > size) invalid(`${path}.data`, `runs past the attachment's size (${start} + ${bytes.length} > ${size}).`);
  return { id: p.id as string, mediaType, size, start, bytes };
}

/** Each item read in order, handing the event loop back now and then (a batch may hold 100,000 pins). */
async function readAll<T>(items: readonly unknown[], read: (item: unknown, i: number) => T, pace: Pace, weight: number): Promise<T[]> {
  const out: T[] = [];
  for (const [i, item] of items.entries()) {
    out.push(read(item, i));
    await pace(weight);
  }
  return out;
}

/** The batch, checked whole and copied (turns hashed and verified); INVALID_ARGUMENT at the first bad field. */
export async function readBatch(raw: unknown, maxBytes: number): Promise<ReadBatch> {
  const b = checkObject(raw, 'applySync');
  if (b.format !== 'pagewise-sync' || b.version !== 1) invalid('batch', `is not a pagewise sync batch version 1 (format ${describe(b.format)}, version ${describe(b.version)}); pass what syncChanges() returned.`);
  if (typeof b.more !== 'boolean') invalid('batch.more', `must be true or false (got ${describe(b.more)}).`);
  const pace = pacer(READ_MS);
  const turns: IncomingTurn[] = [];
  const seen = new Set<string>();
  for (const [i, t] of list(b.turns, 'batch.turns', MAX_BATCH_TURNS).entries()) {
    const turn = await readTurn(t, `batch.turns[${i}]`, maxBytes);
    const key = JSON.stringify([turn.conversationId, turn.id]);
    if (seen.has(key)) invalid(`batch.turns[${i}].id`, `repeats message ${describe(turn.id)} of conversation ${describe(turn.conversationId)}.`);
    seen.add(key);
    turns.push(turn);
    await pace(1);
  }
  const small = 1 / 64;
  return {
    format: 'pagewise-sync', version: 1, from: readReplicaId(b.from, 'batch.from'), to: readReplicaId(b.to, 'batch.to'),
    conversations: readConversationFilter(b.conversations, 'batch.conversations') ?? null, cursor: readCursor(b.cursor, 'batch.cursor'), more: b.more,
    tombstones: await readAll(list(b.tombstones, 'batch.tombstones', MAX_TOMBSTONES), (t, i) => readTombstone(t, `batch.tombstones[${i}]`), pace, small),
    turns,
    pins: await readAll(list(b.pins, 'batch.pins', MAX_PINS), (p, i) => readPin(p, `batch.pins[${i}]`), pace, small),
    aliases: await readAll(list(b.aliases, 'batch.aliases', MAX_PINS), (a, i) => readAlias(a, `batch.aliases[${i}]`), pace, small),
    heads: b.heads === undefined ? [] : await readAll(list(b.heads, 'batch.heads', MAX_PINS), (h, i) => readHead(h, `batch.heads[${i}]`), pace, small),
    pieces: b.attachments === undefined ? [] : list(b.attachments, 'batch.attachments', MISSING_PER_ASK).map((p, i) => readPiece(p, `batch.attachments[${i}]`)),
  };
}
