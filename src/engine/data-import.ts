// memory.import(): pagewise's portable format back into the store, all or nothing, without holding the event loop
// or the engine's queue for the length of a large import.
//
// Atomicity, in chunks. The storage seam runs one transaction per batch and has no transaction that spans awaits
// (Durable Object SQL refuses BEGIN; its transactionSync cannot await). Holding one open transaction, or the queue,
// for a 10⁶-turn import would stop every other call for its whole length, and that is what this avoids. So:
//   1. Everything the caller gave is checked first, in slices that yield to the event loop, before anything is
//      written: shapes, messages, ids, pins, aliases (spelling and loops), and the stored turns each conversation
//      must start with. A bad import is refused having written nothing.
//   2. Then the writes, in short transactions each in its own slot of the queue, so other calls (other
//      conversations' reads and writes) run between them. The first slot checks the aliases (before it writes, and
//      in the slot that adds them, so no other call changes the stored ones in between), records a journal (in
//      pagewise_meta) of what the import writes, and adds the aliases; each chunk of turns updates the journal in
//      its own transaction; the last slot writes the pins and deletes the journal. That deletion is the commit.
//   3. A failure after the journal (a storage error, or another call that changed an importing conversation in
//      between, which each chunk checks for) removes what the journal lists, as forget() removes turns; a crash
//      leaves the journal, and the next createMemory() on that storage removes it the same way.
// Between chunks a reader of an importing conversation sees the turns written so far; they stay only if the import
// completes. Aliases are restored through the alias API: tags and alias chains an imported alias rewrote stay
// rewritten, as after aliases.remove().
import type { DataDeps, ExportData, ImportReport, TurnRow } from './data-types.js';
import { PagewiseError } from '../contracts/errors.js';
import { describe, messageText } from '../common/messages.js';
import { utf8Bytes } from '../storage/limits.js';
import { type NewTurn, turnRowError } from '../store/turn-store.js';
import type { NewAttachment } from '../store/attachment-store.js';
import { sentMessageText } from '../tokens/message-cost.js';
import { readAttachments, toStored } from './attachments.js';
import { resolve, spelling } from '../tags/tag-canonicalizer.js';
import { SLICE_MS, breathe, hashTurns, invalid, readImport, type Planned, type PlannedAlias, type RowCheck } from './data-import-read.js';
import { countCacheKey } from '../tokens/chat-format.js';
import type { MaybePromise, Statement } from '../contracts/types.js';
import { compareKeys } from '../store/tree.js';
import { importedHead } from './data-tree.js';

const MODULE = 'data';
// Turns per write transaction: starts small, then sized to take about SLICE_MS (tagging is most of a chunk's time).
const FIRST_CHUNK = 32;
const MAX_CHUNK = 512;
const JOURNAL = 'import:';

export interface ImportDeps extends DataDeps {
  /** Rows of a conversation (`where` appended to its condition), as `remove` takes them. */
  turnRows: (conversationId: string, where?: string, params?: unknown[]) => MaybePromise<TurnRow[]>;
  /** Removes rows and what is derived from them, as forget does. */
  remove: (conversationId: string, rows: TurnRow[], whole: boolean) => Promise<number>;
}

interface Journal {
  conversations: { id: string; from: number; written: number }[];
  /** Each alias the import adds, with the manual alias it replaced (restored if the import is undone). */
  aliases: { alias: string; conversationId: string | null; previous: { tag: string; createdAt: string } | null }[];
}

function changed(conversationId: string): PagewiseError {
  return new PagewiseError('ID_CONFLICT', MODULE,
    `Conversation ${describe(conversationId)} was changed by another call while it was being imported; nothing was imported. Import it again once those calls are done.`);
}

async function state(d: ImportDeps, conversationId: string) {
  const [row] = await d.driver.query<{ n: number; last: number }>('SELECT COUNT(*) AS n, COALESCE(MAX(CASE WHEN seq >= 0 THEN seq END), -1) AS last FROM turns WHERE conversation_id = ?', [conversationId]);
  return { n: Number(row?.n ?? 0), last: Number(row?.last ?? -1) };
}

/**
 * Step 1 with the store: what is stored of each conversation (every branch, in written order) must be the start of
 * the imported one. An export page's turns start after its `after` instead (the pages before it are stored), and may
 * be stored already (the same page again, or an earlier one: nothing new).
 */
async function checkStored(d: ImportDeps, c: Planned): Promise<void> {
  await d.resume(async () => {
    const nodes = (await d.tree.nodes(c.id)).sort(compareKeys);
    const start = c.page?.after ? nodes.findIndex((n) => n.id === c.page!.after) + 1 : 0;
    if (c.page) checkPage(c, nodes, start);
    c.before = start;
    for (const s of nodes.slice(start)) {
      const i = c.stored;
      const m = c.messages[i];
      if (!m && c.page) {
        c.before = nodes.length - c.stored;
        break;
      }
      if (!m || m.id !== s.id || c.hashes[i] !== s.hash) {
        throw new PagewiseError('ID_CONFLICT', MODULE,
          `Conversation ${describe(c.id)} is stored with other messages than the import has (stored message ${i}: ${describe(s.id)}, imported: ${describe(m?.id)}); nothing was imported. Import it under another conversation id, or forget the stored one first.`,
          { path: `${c.path}.turns[${i}]` });
      }
      c.stored++;
    }
    c.from = (await state(d, c.id)).last + 1;
  });
}

/** An export page's checks against the store: the page before it is there, and so is every turn it names from earlier pages. */
function checkPage(c: Planned, nodes: readonly { id: string }[], start: number): void {
  if (c.page!.after !== null && start === 0) {
    throw new PagewiseError('ID_CONFLICT', MODULE,
      `Conversation ${describe(c.id)}'s page follows message ${describe(c.page!.after)}, which is not stored; nothing was imported. Import the pages in the order export() gave them, from the first.`,
      { path: `${c.path}.after` });
  }
  const stored = new Set(nodes.map((n) => n.id));
  for (const id of c.page!.outside) {
    if (!stored.has(id)) {
      throw new PagewiseError('ID_CONFLICT', MODULE,
        `Conversation ${describe(c.id)}'s page names message ${describe(id)} (a branch's start, a pin or the head) that neither it nor the stored pages hold; nothing was imported. Import the pages in the order export() gave them, from the first.`,
        { path: c.path });
    }
  }
}

/** Step 1 for aliases, against the aliases stored now: each as aliases.add() will take it, in order. */
async function checkAliases(d: ImportDeps, aliases: PlannedAlias[]): Promise<Journal['aliases']> {
  const stored = await d.canonicalizer.list(undefined);
  const global = new Map(stored.map((a) => [a.alias, a.tag]));
  const locals = new Map<string, { manual: Map<string, string>; auto: Map<string, string>; rows: typeof stored }>();
  const out: Journal['aliases'] = [];
  for (const a of aliases) {
    const alias = spelling(a.alias, `${a.path}.alias`, 'db');
    const wanted = spelling(a.tag, `${a.path}.tag`, 'database');
    let l = a.conversationId === null ? undefined : locals.get(a.conversationId);
    if (a.conversationId !== null && !l) {
      const rows = (await d.canonicalizer.list({ conversationId: a.conversationId })).filter((r) => r.conversationId === a.conversationId);
      l = { manual: new Map(rows.filter((r) => r.source === 'manual').map((r) => [r.alias, r.tag])), auto: new Map(rows.filter((r) => r.source === 'auto').map((r) => [r.alias, r.tag])), rows };
      locals.set(a.conversationId, l);
    }
    const tag = resolve(l ? [l.manual, global, l.auto] : [global], wanted);
    if (tag === alias) invalid(`${a.path}.tag`, `reads as ${describe(alias)}, the alias itself (once canonical, or through the aliases before it), so this alias would make a loop; drop it from the import.`);
    if (!out.some((x) => x.alias === alias && x.conversationId === a.conversationId)) {
      const before = (l ? l.rows : stored).find((r) => r.alias === alias && r.source === 'manual');
      out.push({ alias, conversationId: a.conversationId, previous: before ? { tag: before.tag, createdAt: before.createdAt } : null });
    }
    // As aliases.add() leaves them: chains to the alias point past it; an auto alias of that spelling is replaced.
    const map = l ? l.manual : global;
    for (const [k, v] of map) if (v === alias) map.set(k, tag);
    map.set(alias, tag);
    l?.auto.delete(alias);
  }
  return out;
}

/** Undoes what a journal lists: turns by seq range (`idAt` narrows them to the import's own), then aliases. */
async function undo(d: ImportDeps, key: string, journal: Journal, idAt?: (conversationId: string, seq: number) => string | undefined): Promise<void> {
  const now = new Date().toISOString();
  for (const e of journal.conversations) {
    const rows = (await d.turnRows(e.id, ' AND seq >= ? AND seq < ?', [e.from, e.from + e.written])).filter((r) => !idAt || idAt(e.id, r.seq) === r.id);
    if (rows.length === 0) continue;
    const whole = rows.length >= (await state(d, e.id)).n;
    await d.remove(e.id, rows, whole);
    if (!whole) {
      await d.index.indexNew(e.id, now);
      d.rebuildLater(e.id);
    }
  }
  for (const a of [...journal.aliases].reverse()) {
    const scope = a.conversationId === null ? undefined : { conversationId: a.conversationId };
    try {
      if (a.previous) await d.canonicalizer.add(a.alias, a.previous.tag, scope, a.previous.createdAt);
      else await d.canonicalizer.remove(a.alias, scope);
    } catch (error) {
      // Restoring is best effort where the aliases changed since; a storage error keeps the journal for next time.
      if (!(error instanceof PagewiseError) || error.code !== 'INVALID_ARGUMENT') throw error;
    }
  }
  await d.driver.batch([{ sql: 'DELETE FROM pagewise_meta WHERE key = ?', params: [key] }]);
}

/**
 * The journal is one row, rewritten with each chunk: refused before the first write when, with every count at its
 * end, it would be over the storage's row limit (2 MB at the edge: some 20,000 conversations in one import).
 */
function checkJournal(d: ImportDeps, journal: Journal, fresh: Planned[]): void {
  const full: Journal = { ...journal, conversations: journal.conversations.map((e, i) => ({ ...e, written: fresh[i]!.messages.length })) };
  const bytes = utf8Bytes(JSON.stringify(full)) + 256;
  if (bytes > d.store.limits.maxRowBytes) {
    invalid('data.conversations', `is too much for one import on the ${d.driver.name} storage: its journal (${fresh.length} conversations, ${journal.aliases.length} aliases) would be a row of ${bytes} bytes, over the ${d.store.limits.maxRowBytes}-byte row limit; nothing was imported. Import the conversations in several smaller imports.`);
  }
}

/** Step 2: the writes, chunk by chunk (see the top of this file). */
async function write(d: ImportDeps, plan: Planned[], aliases: PlannedAlias[], blobs: Map<string, NewAttachment>, report: ImportReport): Promise<void> {
  const { driver, store } = d;
  const key = `${JOURNAL}${crypto.randomUUID()}`;
  const fresh = plan.filter((c) => c.messages.length > c.stored);
  const journal: Journal = { conversations: fresh.map((c) => ({ id: c.id, from: c.from, written: 0 })), aliases: [] };
  const byId = new Map(plan.map((c) => [c.id, c]));
  const idAt = (conversationId: string, seq: number) => {
    const c = byId.get(conversationId)!;
    return c.messages[c.stored + seq - c.from]?.id;
  };
  const now = new Date().toISOString();
  let journaled = false;
  const unchanged = async (c: Planned, written: number) => {
    const s = await state(d, c.id);
    if (s.n !== c.before + c.stored + written || s.last !== c.from + written - 1) throw changed(c.id);
  };
  try {
    await d.resume(async () => {
      journal.aliases = await checkAliases(d, aliases);
      // An import with nothing new (a re-import) writes nothing, its pins aside.
      if (fresh.length === 0 && aliases.length === 0) return;
      checkJournal(d, journal, fresh);
      await driver.batch([{ sql: 'INSERT INTO pagewise_meta (key, value) VALUES (?, ?)', params: [key, JSON.stringify(journal)] }]);
      journaled = true;
      for (const a of aliases) await d.canonicalizer.add(a.alias, a.tag, a.conversationId === null ? undefined : { conversationId: a.conversationId }, now);
    });
    const tok = await d.tokenizer();
    const countKey = countCacheKey(tok);
    for (const [n, c] of fresh.entries()) {
      const entry = journal.conversations[n]!;
      let size = FIRST_CHUNK;
      while (c.stored + entry.written < c.messages.length) {
        await breathe();
        const took = await d.resume(async () => {
          const started = performance.now();
          await unchanged(c, entry.written);
          const first = c.stored + entry.written;
          const turns: NewTurn[] = await Promise.all(c.messages.slice(first, first + size).map(async (raw, k) => {
            // Attachments by id; the bytes the export carries go with the first turn that names them.
            const { message, refs, attachments: carried } = await toStored(raw, d.attachments);
            const text = messageText(message);
            const createdMs = Date.parse(message.createdAt!);
            // The bytes a turn carries itself (a hand-written file), or the export's, by id.
            const attachments = [...carried, ...refs.flatMap((id) => (blobs.has(id) ? [blobs.get(id)!] : []))];
            const place = c.places[first + k];
            return { message, refs, attachments, id: message.id!, text, contentHash: c.hashes[first + k]!, createdAt: new Date(createdMs).toISOString(), createdMs, tokens: tok.count(sentMessageText(message)), ...(place ? { place } : {}) };
          }));
          const statements: Statement[] = store.appendStatements(c.id, c.from + entry.written, turns, countKey, now);
          // The journal counts the chunk in the chunk's own transaction; an undo after a failed batch looks one
          // chunk further, keeping only rows with the import's ids at their seqs.
          entry.written += turns.length;
          statements.push({ sql: 'UPDATE pagewise_meta SET value = ? WHERE key = ?', params: [JSON.stringify(journal), key] });
          try {
            await driver.batch(statements);
          } finally {
            store.uncache(c.id);
          }
          await d.index.indexNew(c.id, now);
          return performance.now() - started;
        });
        size = Math.max(1, Math.min(MAX_CHUNK, Math.round(size * SLICE_MS / Math.max(took, 1))));
      }
      report.conversations.push(c.id);
      report.turns += c.messages.length - c.stored;
    }
    await breathe();
    const moved: string[] = [];
    await d.resume(async () => {
      const statements: Statement[] = [];
      // Branches: the conversation moves to its head (the journal's seq ranges hold until this transaction).
      for (const c of fresh) {
        // (A page's turns are written after the path the pages before it left: it always moves to its head.)
        if (c.head === undefined && !c.places.some(Boolean) && !c.page) continue;
        const move = await importedHead(d, c.id, c.head, now);
        statements.push(...move.statements);
        if (move.moved) moved.push(c.id);
      }
      for (const c of plan) {
        if (c.pins.length === 0) continue;
        await unchanged(c, fresh.includes(c) ? c.messages.length - c.stored : 0);
        for (const p of c.pins) statements.push({ sql: 'INSERT OR IGNORE INTO pins (conversation_id, turn_id, pinned_at) VALUES (?, ?, ?)', params: [c.id, p.id, p.at ?? now] });
      }
      if (journaled) statements.push({ sql: 'DELETE FROM pagewise_meta WHERE key = ?', params: [key] });
      if (statements.length > 0) await driver.batch(statements);
      for (const id of moved) {
        d.uncache(id);
        await d.index.indexNew(id, now);
      }
    });
  } catch (error) {
    if (journaled) {
      await d.settle().catch(() => undefined);
      // Left in place when this fails too: the next createMemory() on the storage undoes it.
      await d.resume(() => undo(d, key, journal, idAt)).catch(() => undefined);
    }
    throw error;
  }
  for (const c of fresh) d.rebuildLater(c.id);
}

/** The import as a function of the data-control dependencies (see the top of this file). */
export function importApi(d: ImportDeps) {
  return {
    import(data: ExportData): Promise<ImportReport> {
      return (async () => {
        // Admission in call order (and ENGINE_CLOSED once closed); the rest runs in slots of its own.
        await d.serial(async () => undefined);
        const rowCheck: RowCheck = (conversationId, m, path) => turnRowError(d.store.limits, d.driver.name, conversationId, m.id!, m, messageText(m), path);
        const { conversations, aliases } = await readImport(data, d.maxMessageBytes, rowCheck, d.maxAttachmentBytes);
        const blobs = await readAttachments((data as { attachments?: unknown } | null)?.attachments, d.maxAttachmentBytes);
        for (const c of conversations) await hashTurns(c);
        for (const c of conversations) await checkStored(d, c);
        const report: ImportReport = { conversations: [], turns: 0, skipped: conversations.reduce((n, c) => n + c.stored, 0) };
        await write(d, conversations, aliases, blobs, report);
        return report;
      })();
    },

    /** Undoes the imports a crash interrupted (their journals are still there). Runs before the engine's first call. */
    async recoverImports(): Promise<void> {
      const rows = await d.driver.query<{ key: string; value: string }>('SELECT key, value FROM pagewise_meta WHERE key LIKE ?', [`${JOURNAL}%`]);
      for (const r of rows) await undo(d, r.key, JSON.parse(r.value) as Journal);
    },
  };
}
