// memory.import()'s first step without the store (see data-import.ts): the caller's data read and checked whole,
// in slices that yield to the event loop, and copied; and what an export page (export with a cursor) adds: a page
// after the first names the turn it follows (`after`), and its branches, pins and head may name turns of the pages
// before it, which must be stored (checked with the store, in checkStored).
import { checkId, checkObject } from './support.js';
import { PagewiseError } from '../contracts/errors.js';
import { contentHash, describe, readArray, readRecord, validateConversationId, validateMessage } from '../common/messages.js';
import { spelling } from '../tags/tag-canonicalizer.js';
import type { ChatMessage } from '../contracts/types.js';
import type { Place } from '../store/tree.js';
import { readTree } from './data-tree.js';
import { hasOwnSafe } from '../common/pages.js';

const MODULE = 'data';
// A slice of work between two yields: at most this long, and at most this many items (in workerd the clock stands
// still while code runs, so there the count is what ends a slice).
export const SLICE_MS = 12;
const SLICE_ITEMS = 2000;

export interface Planned {
  id: string;
  path: string;
  messages: ChatMessage[];
  hashes: string[];
  pins: { id: string; at: string | undefined }[];
  /** How many of `messages` are stored already, and the seq of the first one to write. */
  stored: number;
  from: number;
  /** Stored turns before the imported ones (the pages before this one). */
  before: number;
  /** Each message's branch (undefined: the first), and the head the export names. */
  places: (Place | undefined)[];
  head: string | null | undefined;
  /** An export page: the turn it follows (null: the first page), and the turns it names that earlier pages hold. */
  page: { after: string | null; outside: Set<string> } | null;
}

export interface PlannedAlias { alias: unknown; tag: unknown; conversationId: string | null; path: string }

export const breathe = () => new Promise<void>((ok) => setTimeout(ok, 0));

export function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path} ${message}`, { path });
}

/** Ends a slice when it has run SLICE_MS or SLICE_ITEMS items. */
function slicer() {
  let start = performance.now();
  let items = 0;
  return {
    due: () => ++items >= SLICE_ITEMS || performance.now() - start >= SLICE_MS,
    async next() {
      await breathe();
      start = performance.now();
      items = 0;
    },
  };
}

/** Whether a message fits the storage's row limit: MESSAGE_TOO_LARGE (as append would throw it), or null. */
export type RowCheck = (conversationId: string, message: ChatMessage, path: string) => PagewiseError | null;

/** A conversation's turns, validated in slices. */
async function readTurns(raw: unknown[], path: string, maxBytes: number, conversationId: string, rowCheck: RowCheck, maxAttachmentBytes: number): Promise<ChatMessage[]> {
const messages: ChatMessage[] = new Array(raw.length);
const ids = new Set<string>();
const slice = slicer();
for (let i = 0; i < raw.length; i++) {
  const m = validateMessage(raw[i], `${path}[${i}]`, maxBytes, maxAttachmentBytes);
  if (m.id === undefined || m.createdAt === undefined) invalid(`${path}[${i}]`, 'needs its id and createdAt, as memory.export() writes them.');
  if (ids.has(m.id)) invalid(`${path}[${i}].id`, `repeats message id ${describe(m.id)}.`);
  // The same check as append's, here where nothing is written yet (a chunk that failed it would undo the others).
  const tooLarge = rowCheck(conversationId, m, `${path}[${i}]`);
  if (tooLarge) throw tooLarge;
  ids.add(m.id);
  messages[i] = m;
  if (slice.due()) await slice.next();
}
return messages;
}

/** Content hashes, a slice at a time: only once every conversation passed (an invalid import fails sooner). */
export async function hashTurns(c: Planned): Promise<void> {
for (let from = 0; from < c.messages.length; from += SLICE_ITEMS) {
  const part = await Promise.all(c.messages.slice(from, from + SLICE_ITEMS).map(contentHash));
  for (const [k, h] of part.entries()) c.hashes[from + k] = h;
  await breathe();
}
}

function readAliases(value: unknown, path: string, conversationId: string | null): PlannedAlias[] {
  if (value === undefined) return [];
  const list = readArray(value, path, 'INVALID_ARGUMENT', MODULE);
  if (!list) invalid(path, `must be an array (got ${describe(value)}).`);
  return list.map((raw, i) => {
    const a = readRecord(raw, `${path}[${i}]`, 'INVALID_ARGUMENT', MODULE);
    if (!a) invalid(`${path}[${i}]`, `must be { alias, tag } (got ${describe(raw)}).`);
    // Spelling here, before the turns are hashed; loops with the stored aliases where they are added.
    spelling(a.alias, `${path}[${i}].alias`, 'db');
    spelling(a.tag, `${path}[${i}].tag`, 'database');
    return { alias: a.alias, tag: a.tag, conversationId, path: `${path}[${i}]` };
  });
}

/** Step 1 without the store: the caller's data, checked whole and copied. */
export async function readImport(data: unknown, maxBytes: number, rowCheck: RowCheck, maxAttachmentBytes: number): Promise<{ conversations: Planned[]; aliases: PlannedAlias[] }> {
const o = checkObject(data, 'import');
const paged = hasOwnSafe(o, 'cursor');
if (o.format !== 'pagewise' || o.version !== 1) {
  invalid('data', `is not pagewise's export format version 1 (format ${describe(o.format)}, version ${describe(o.version)}); pass what memory.export() returned.`);
}
const list = readArray(o.conversations, 'data.conversations', 'INVALID_ARGUMENT', MODULE);
if (!list) invalid('data.conversations', `must be an array (got ${describe(o.conversations)}).`);
const conversations: Planned[] = [];
const aliases: PlannedAlias[] = [];
const seen = new Set<string>();
for (const [c, raw] of list.entries()) {
  const path = `data.conversations[${c}]`;
  const conv = readRecord(raw, path, 'INVALID_ARGUMENT', MODULE);
  if (!conv) invalid(path, `must be a conversation { id, turns, pins, aliases } as memory.export() writes it (got ${describe(raw)}).`);
  const id = validateConversationId(conv.id, `${path}.id`);
  if (seen.has(id)) invalid(`${path}.id`, `repeats conversation ${describe(id)}.`);
  seen.add(id);
  const turns = readArray(conv.turns, `${path}.turns`, 'INVALID_ARGUMENT', MODULE);
  if (!turns) invalid(`${path}.turns`, `must be an array (got ${describe(conv.turns)}).`);
  const messages = await readTurns(turns, `${path}.turns`, maxBytes, id, rowCheck, maxAttachmentBytes);
  // An export page (it carries its cursor): `after` is the turn of the page before that this one follows.
  const page = paged ? { after: conv.after === undefined ? null : checkId(conv.after, `${path}.after`), outside: new Set<string>() } : null;
  const ids = new Set(messages.map((m) => m.id!));
  const pinList = conv.pins === undefined ? [] : readArray(conv.pins, `${path}.pins`, 'INVALID_ARGUMENT', MODULE);
  if (!pinList) invalid(`${path}.pins`, `must be an array (got ${describe(conv.pins)}).`);
  const pins = pinList.map((p, i) => {
    const pin = readRecord(p, `${path}.pins[${i}]`, 'INVALID_ARGUMENT', MODULE);
    if (!pin) invalid(`${path}.pins[${i}]`, `must be { messageId, pinnedAt } (got ${describe(p)}).`);
    const messageId = checkId(pin.messageId, `${path}.pins[${i}].messageId`);
    if (!ids.has(messageId) && page) page.outside.add(messageId);
    else if (!ids.has(messageId)) invalid(`${path}.pins[${i}].messageId`, `names no message of the conversation (${describe(messageId)}).`);
    const at = typeof pin.pinnedAt === 'string' && !Number.isNaN(Date.parse(pin.pinnedAt)) ? new Date(pin.pinnedAt).toISOString() : undefined;
    return { id: messageId, at };
  });
  aliases.push(...readAliases(conv.aliases, `${path}.aliases`, id));
  const tree = page ? readPageTree(turns, messages.map((m) => m.id!), conv.head, path, page.outside) : readTree(turns, messages.map((m) => m.id!), conv.head, path);
  conversations.push({ id, path, messages, hashes: new Array(messages.length), pins, stored: 0, from: 0, before: 0, ...tree, page });
}
aliases.push(...readAliases(o.aliases, 'data.aliases', null));
return { conversations, aliases };
}


/**
 * readTree for an export page: a branch may start after a turn of an earlier page, and the head may be one. Those
 * ids go to `outside` (checked against the store before anything is written); the rest is readTree's check.
 */
function readPageTree(raw: readonly unknown[], ids: readonly string[], head: unknown, path: string, outside: Set<string>): { places: (Place | undefined)[]; head: string | null | undefined } {
  const here = new Set(ids);
  const forks = new Map<number, string>();
  const local = raw.map((t, i) => {
    const turn = readRecord(t, `${path}.turns[${i}]`, 'INVALID_ARGUMENT', MODULE);
    const b = turn && turn.branch !== undefined ? readRecord(turn.branch, `${path}.turns[${i}].branch`, 'INVALID_ARGUMENT', MODULE) : null;
    if (!turn || !b || typeof b.after !== 'string' || b.after === '' || here.has(b.after)) return t;
    forks.set(i, b.after);
    outside.add(b.after);
    // Read as a branch from the start here; its real fork point is put back below.
    return { ...turn, branch: { ...b, after: '' } };
  });
  const headElsewhere = typeof head === 'string' && !here.has(head);
  if (headElsewhere) outside.add(head);
  const tree = readTree(local, ids, headElsewhere ? undefined : head, path);
  const places = tree.places.map((p, i) => (p && forks.has(i) ? { ...p, forkAfter: forks.get(i)! } : p));
  return { places, head: headElsewhere ? head : tree.head };
}
