// memory.export() and memory.exportDatabase(): every stored original in pagewise's portable format, and the
// database's bytes.
import { storedConversation } from './data-rows.js';
import type { DataDeps, ExportData, ExportedConversation, ExportedTurn } from './data-types.js';
import { PagewiseError } from '../contracts/errors.js';
import type { TurnRecord, TurnStore } from '../store/turn-store.js';
import { compareKeys, forkPoint, headOf, type TreeStore } from '../store/tree.js';
import type { EncryptionOptions, StorageDriver } from '../contracts/types.js';
import type { Attachment } from '../contracts/types-data.js';
import type { AttachmentInfo, AttachmentStore } from '../store/attachment-store.js';
import { toBase64 } from '../common/parts.js';

const MODULE = 'data';

export function exportApi(d: Pick<DataDeps, 'driver' | 'store' | 'attachments' | 'serial' | 'tree'>) {
  const { driver, store, serial } = d;
  return {
    export(conversationId?: string): Promise<ExportData> {
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
    },

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
