// memory.export() and memory.exportDatabase(): every stored original in pagewise's portable format, and the
// database's bytes.
import { storedConversation } from './data-rows.js';
import type { DataDeps, ExportData, ExportedConversation, ExportedTurn } from './data-types.js';
import { PagewiseError } from '../contracts/errors.js';
import type { Memory } from '../contracts/memory.js';
import type { TurnRecord, TurnStore } from '../store/turn-store.js';
import { compareKeys, forkPoint, headOf, type TreeStore } from '../store/tree.js';
import type { EncryptionOptions, StorageDriver } from '../contracts/types.js';
import type { Attachment } from '../contracts/types-data.js';
import type { AttachmentInfo, AttachmentStore } from '../store/attachment-store.js';
import { toBase64 } from '../common/parts.js';
import { asksPage, cursorOf, pageBudget, readPage } from '../common/pages.js';
import type { TreeNode } from '../store/tree.js';

const MODULE = 'data';

export function exportApi(d: Pick<DataDeps, 'driver' | 'store' | 'attachments' | 'serial' | 'tree'>) {
  const { driver, store, serial } = d;
  return {
    // One implementation of both overloads: the whole export, or a page of it.
    export: ((conversationId?: string, page?: unknown): Promise<ExportData> => {
      if (asksPage(page)) return serial(() => exportPage(d, conversationId, page));
      return serial(async () => {
        const ids = conversationId === undefined
          ? (await store.conversations()).map((c) => c.id).sort()
          : [(await storedConversation(store, conversationId)).id];
        const conversations: ExportedConversation[] = [];
        for (const id of ids) conversations.push(await exportConversation(driver, store, d.tree, id));
        const aliases = conversationId === undefined
          ? (await driver.query<{ alias: string; tag: string; created_at: string }>("SELECT alias, tag, created_at FROM tag_aliases WHERE conversation_id = '' ORDER BY alias"))
            .map((a) => ({ alias: a.alias, tag: a.tag, createdAt: a.created_at }))
          : [];
        const attachments = await exportAttachments(d.attachments, ids);
        return { format: 'pagewise', version: 1, exportedAt: new Date().toISOString(), conversations, aliases, ...(attachments.length > 0 ? { attachments } : {}) };
      });
    }) as Memory['export'],

    /** The database file's bytes (a consistent copy: taken between operations). */
    exportDatabase(): Promise<Uint8Array> {
      return serial(async () => {
        if (!driver.export) {
          throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `The ${driver.name} storage cannot give its database's bytes; export the conversations with memory.export() instead.`);
        }
        return driver.export();
      });
    },

    /**
     * Changes the database's encryption key in place (crash-safe), encrypts a plain database (`encryption` given) or
     * decrypts it (`null`). Taken between operations, like an export.
     */
    rekey(encryption: EncryptionOptions | null): Promise<void> {
      return serial(async () => {
        if (encryption === undefined) {
          throw new PagewiseError('INVALID_ARGUMENT', MODULE, 'rekey() needs the new key: { key } or { passphrase }, or null to decrypt the database in place.', { path: 'encryption' });
        }
        if (!driver.rekey) {
          throw new PagewiseError('STORAGE_UNAVAILABLE', MODULE, `The ${driver.name} storage is not encrypted by pagewise and cannot be (a Durable Object's storage is encrypted at rest by Cloudflare); rekey() works on fileStorage(), sqliteWasm() and connect().`);
        }
        await driver.rekey(encryption);
      });
    },
  };
}

/** The bytes of every attachment the conversations' turns refer to, once each, by id (those not here are left out). */
async function exportAttachments(store: AttachmentStore, conversationIds: readonly string[]): Promise<Attachment[]> {
  const infos = new Map<string, AttachmentInfo>();
  for (const id of conversationIds) for (const a of await store.ofConversation(id)) infos.set(a.id, a);
  const out: Attachment[] = [];
  for (const id of [...infos.keys()].sort()) {
    const found = await store.read(id);
    if (found) out.push({ id, mediaType: found.mediaType, size: found.size, data: toBase64(found.bytes) });
  }
  return out;
}

/**
 * Every stored turn of a conversation, every branch, in the order they were written (a page of ids at a time), each
 * with where its branch starts; and the head when it is not the last turn written.
 */
async function allTurns(store: TurnStore, tree: TreeStore, conversationId: string): Promise<{ turns: ExportedTurn[]; head?: string | null }> {
  const nodes = (await tree.nodes(conversationId)).sort(compareKeys);
  const turns: ExportedTurn[] = [];
  for (let i = 0; i < nodes.length; i += 500) {
    const page = nodes.slice(i, i + 500);
    const byId = new Map((await store.byIds(conversationId, page.map((n) => n.id))).map((t) => [t.id, t]));
    for (const n of page) {
      const t = byId.get(n.id);
      // A branch follows the turn it forked after (one forgotten since: the one before it on that branch, else the start).
      if (t) turns.push({ ...exported(t), ...(n.branch !== '' ? { branch: { start: n.branch, after: forkPoint(nodes, n.branch)?.id ?? '' } } : {}) });
    }
  }
  const head = headOf(nodes, await tree.register(conversationId));
  return (head?.id ?? null) === (nodes[nodes.length - 1]?.id ?? null) ? { turns } : { turns, head: head?.id ?? null };
}

async function exportConversation(driver: StorageDriver, store: TurnStore, tree: TreeStore, conversationId: string): Promise<ExportedConversation> {
  const info = (await store.conversation(conversationId))!;
  const { turns, head } = await allTurns(store, tree, conversationId);
  const pins = await driver.query<{ turn_id: string; pinned_at: string }>('SELECT turn_id, pinned_at FROM pins WHERE conversation_id = ? ORDER BY pinned_at, turn_id', [conversationId]);
  const aliases = await driver.query<{ alias: string; tag: string; created_at: string }>("SELECT alias, tag, created_at FROM tag_aliases WHERE conversation_id = ? AND source = 'manual' ORDER BY alias", [conversationId]);
  return {
    id: conversationId, createdAt: info.createdAt, updatedAt: info.updatedAt, turns, ...(head !== undefined ? { head } : {}),
    pins: pins.map((p) => ({ messageId: p.turn_id, pinnedAt: p.pinned_at })),
    aliases: aliases.map((a) => ({ alias: a.alias, tag: a.tag, createdAt: a.created_at })),
  };
}

function exported(t: TurnRecord): ExportedTurn {
  return {
    id: t.id, role: t.role, ...(t.name !== null && t.name !== undefined ? { name: t.name } : {}), content: t.content,
    ...(t.toolCalls ? { toolCalls: t.toolCalls } : {}), ...(t.toolCallId ? { toolCallId: t.toolCallId } : {}), createdAt: t.createdAt,
    ...(t.private ? { private: true as const } : {}),
  };
}

/** A page's key: the last turn it gave, in written order (order key, origin, id: what compareKeys sorts by). */
type ExportKey = [ord: number, origin: string, id: string];
const isExportKey = (x: unknown): x is ExportKey => Array.isArray(x) && x.length === 3 && Number.isSafeInteger(x[0]) && typeof x[1] === 'string' && typeof x[2] === 'string';
// Turns read per query while a page fills.
const EXPORT_CHUNK = 256;

/** A page of an export: the conversation with some of its turns (see exportPage); `after` is what import checks. */
export type ExportPage = ExportData & { cursor: string | null; conversations: (ExportedConversation & { after?: string })[] };

const attachmentIds = (t: TurnRecord): string[] => (Array.isArray(t.content)
  ? t.content.flatMap((p) => (typeof (p as { attachment?: unknown }).attachment === 'string' ? [(p as { attachment: string }).attachment] : []))
  : []);

/**
 * One conversation's export a page of turns at a time, in the order they were written (every branch, as export has
 * them): each page holds the bytes of the attachments its turns name (a turn and its own attachments are never
 * split: a page always holds one turn, with them); the first page the conversation's aliases, the last its pins and
 * head; a page after the first names the turn it follows (`after`), so import checks that the one before is there.
 * The cursor keys on the last turn given: turns written meanwhile come on later pages.
 */
async function exportPage(d: Pick<DataDeps, 'driver' | 'store' | 'attachments' | 'tree'>, conversationId: unknown, page: { cursor: unknown; limit?: unknown }): Promise<ExportPage> {
  if (conversationId === undefined) {
    throw new PagewiseError('INVALID_ARGUMENT', MODULE, 'export() a page at a time takes one conversation: export(conversationId, { cursor: null, limit }).', { path: 'conversationId' });
  }
  const info = await storedConversation(d.store, conversationId);
  const { limit, at } = readPage('export', info.id, '', page, isExportKey);
  const nodes = (await d.tree.nodes(info.id)).sort(compareKeys);
  const start = at === null ? 0 : firstAfter(nodes, { ord: at[0], origin: at[1], id: at[2] });
  const budget = pageBudget(1024);
  const turns: ExportedTurn[] = [];
  const attachments = new Map<string, Attachment>();
  let i = start;
  fill: while (i < nodes.length && turns.length < limit) {
    const chunk = nodes.slice(i, i + Math.min(EXPORT_CHUNK, limit - turns.length));
    const byId = new Map((await d.store.byIds(info.id, chunk.map((n) => n.id))).map((t) => [t.id, t]));
    for (const n of chunk) {
      const t = byId.get(n.id)!;
      const turn = { ...exported(t), ...(n.branch !== '' ? { branch: { start: n.branch, after: forkPoint(nodes, n.branch)?.id ?? '' } } : {}) };
      const named: Attachment[] = [];
      for (const id of attachmentIds(t)) {
        if (attachments.has(id) || named.some((a) => a.id === id)) continue;
        const found = await d.attachments.read(id);
        if (found) named.push({ id, mediaType: found.mediaType, size: found.size, data: toBase64(found.bytes) });
      }
      if (!budget.fits({ turn, named })) break fill;
      turns.push(turn);
      for (const a of named) attachments.set(a.id, a);
      i++;
    }
  }
  const first = start === 0;
  const last = i >= nodes.length;
  const conversation: ExportedConversation & { after?: string } = { id: info.id, createdAt: info.createdAt, updatedAt: info.updatedAt, turns, pins: [], aliases: [] };
  if (!first) conversation.after = nodes[start - 1]!.id;
  if (first) {
    const aliases = await d.driver.query<{ alias: string; tag: string; created_at: string }>("SELECT alias, tag, created_at FROM tag_aliases WHERE conversation_id = ? AND source = 'manual' ORDER BY alias", [info.id]);
    conversation.aliases = aliases.map((a) => ({ alias: a.alias, tag: a.tag, createdAt: a.created_at }));
  }
  if (last) {
    // Pins and the head name turns of any page: they come once every turn has.
    const pins = await d.driver.query<{ turn_id: string; pinned_at: string }>('SELECT turn_id, pinned_at FROM pins WHERE conversation_id = ? ORDER BY pinned_at, turn_id', [info.id]);
    conversation.pins = pins.map((p) => ({ messageId: p.turn_id, pinnedAt: p.pinned_at }));
    const head = headOf(nodes, await d.tree.register(info.id));
    if ((head?.id ?? null) !== (nodes[nodes.length - 1]?.id ?? null)) conversation.head = head?.id ?? null;
  }
  const end = nodes[i - 1];
  return {
    format: 'pagewise', version: 1, exportedAt: new Date().toISOString(), conversations: [conversation], aliases: [],
    ...(attachments.size > 0 ? { attachments: [...attachments.values()] } : {}),
    cursor: !last && end ? cursorOf('export', info.id, '', [end.ord, end.origin, end.id] satisfies ExportKey) : null,
  };
}

/** The index of the first node after `key` in written order (nodes sorted by compareKeys). */
function firstAfter(nodes: readonly TreeNode[], key: Pick<TreeNode, 'ord' | 'origin' | 'id'>): number {
  let lo = 0;
  let hi = nodes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareKeys(nodes[mid]!, key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
