// memory.export() and memory.exportDatabase(): every stored original in pagewise's portable format, and the
// database's bytes.
import { storedConversation } from './data-rows.js';
import type { DataDeps, ExportData, ExportedConversation, ExportedTurn } from './data-types.js';
import { PagewiseError } from '../contracts/errors.js';
import type { TurnRecord, TurnStore } from '../store/turn-store.js';
import type { StorageDriver } from '../contracts/types.js';
import type { Attachment } from '../contracts/types-data.js';
import type { AttachmentInfo, AttachmentStore } from '../store/attachment-store.js';
import { toBase64 } from '../common/parts.js';

const MODULE = 'data';

export function exportApi(d: Pick<DataDeps, 'driver' | 'store' | 'attachments' | 'serial'>) {
  const { driver, store, serial } = d;
  return {
    export(conversationId?: string): Promise<ExportData> {
      return serial(async () => {
        const ids = conversationId === undefined
          ? (await store.conversations()).map((c) => c.id).sort()
          : [(await storedConversation(store, conversationId)).id];
        const conversations: ExportedConversation[] = [];
        for (const id of ids) conversations.push(await exportConversation(driver, store, id));
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

/** Every stored turn of a conversation, in order, read a page at a time. */
async function allTurns(store: TurnStore, conversationId: string): Promise<TurnRecord[]> {
  const out: TurnRecord[] = [];
  for (let from = 0; ; ) {
    const page = await store.range(conversationId, from, 1000);
    if (page.length === 0) return out;
    out.push(...page);
    from = page[page.length - 1]!.seq + 1;
  }
}

async function exportConversation(driver: StorageDriver, store: TurnStore, conversationId: string): Promise<ExportedConversation> {
  const info = (await store.conversation(conversationId))!;
  const turns = (await allTurns(store, conversationId)).map(exported);
  const pins = await driver.query<{ turn_id: string; pinned_at: string }>('SELECT turn_id, pinned_at FROM pins WHERE conversation_id = ? ORDER BY pinned_at, turn_id', [conversationId]);
  const aliases = await driver.query<{ alias: string; tag: string; created_at: string }>("SELECT alias, tag, created_at FROM tag_aliases WHERE conversation_id = ? AND source = 'manual' ORDER BY alias", [conversationId]);
  return {
    id: conversationId, createdAt: info.createdAt, updatedAt: info.updatedAt, turns,
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
