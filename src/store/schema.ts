import { PagewiseError } from '../contracts/errors.js';
import { limitsOf } from '../storage/limits.js';
import type { StorageDriver } from '../contracts/types.js';
import { DEVICES_MIGRATION } from './schema-devices.js';
import { SYNC_COMPACTION_MIGRATION } from './schema-sync.js';

/**
 * Versioned migrations. Each runs in one transaction together with the version bump; a migration is never edited
 * once released, only followed by another.
 *
 * Canonical data: `conversations` and `turns` (verbatim, append-only). Everything else — the FTS index, token
 * counts, and what later versions add (tags, segments, summaries, embeddings) — is derived from `turns` and can be
 * rebuilt from it.
 */
export const MIGRATIONS: readonly (readonly string[])[] = [
  // 1: canonical store, FTS5 over text and speaker names, token-count cache.
  [
    `CREATE TABLE conversations (
      id TEXT PRIMARY KEY,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`,
    `CREATE TABLE turns (
      rowid INTEGER PRIMARY KEY,
      conversation_id TEXT NOT NULL REFERENCES conversations(id),
      seq INTEGER NOT NULL,
      id TEXT NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
      name TEXT,
      content TEXT NOT NULL,
      tool_calls TEXT,
      tool_call_id TEXT,
      created_at TEXT NOT NULL,
      created_ms INTEGER NOT NULL,
      stored_at TEXT NOT NULL,
      content_hash TEXT NOT NULL,
      text TEXT NOT NULL,
      UNIQUE (conversation_id, seq),
      UNIQUE (conversation_id, id)
    )`,
    `CREATE INDEX turns_by_hash ON turns (conversation_id, content_hash)`,
    `CREATE INDEX turns_by_time ON turns (conversation_id, created_ms)`,
    // Canonical rows are append-only: the database itself refuses edits and deletes.
    `CREATE TRIGGER turns_no_update BEFORE UPDATE ON turns BEGIN SELECT RAISE(ABORT, 'pagewise turns are append-only'); END`,
    `CREATE TRIGGER turns_no_delete BEFORE DELETE ON turns BEGIN SELECT RAISE(ABORT, 'pagewise turns are append-only'); END`,
    // Contentless: the text lives in turns; the index keeps only what ranking needs.
    `CREATE VIRTUAL TABLE turns_fts USING fts5(text, name, content='', tokenize='porter unicode61 remove_diacritics 2')`,
    `CREATE TABLE turn_tokens (
      turn_rowid INTEGER NOT NULL REFERENCES turns(rowid),
      encoding TEXT NOT NULL,
      tokens INTEGER NOT NULL,
      PRIMARY KEY (turn_rowid, encoding)
    ) WITHOUT ROWID`,
  ],
  // 2: topic tags. A unit is a user turn with the replies that follow it (seed 000's user+assistant pair).
  [
    `CREATE TABLE units (
      conversation_id TEXT NOT NULL,
      unit_seq INTEGER NOT NULL,
      end_seq INTEGER NOT NULL,
      tagger TEXT NOT NULL,
      tagged_at TEXT NOT NULL,
      PRIMARY KEY (conversation_id, unit_seq)
    ) WITHOUT ROWID`,
    `CREATE TABLE unit_tags (
      conversation_id TEXT NOT NULL,
      tag TEXT NOT NULL,
      unit_seq INTEGER NOT NULL,
      related INTEGER NOT NULL,
      PRIMARY KEY (conversation_id, tag, unit_seq)
    ) WITHOUT ROWID`,
    `CREATE INDEX unit_tags_by_unit ON unit_tags (conversation_id, unit_seq)`,
    `CREATE TABLE tags (
      conversation_id TEXT NOT NULL,
      tag TEXT NOT NULL,
      units INTEGER NOT NULL,
      first_seq INTEGER,
      last_seq INTEGER,
      last_used TEXT NOT NULL,
      PRIMARY KEY (conversation_id, tag)
    ) WITHOUT ROWID`,
    `CREATE INDEX tags_by_units ON tags (conversation_id, units DESC)`,
    `CREATE TABLE tag_aliases (
      alias TEXT PRIMARY KEY,
      tag TEXT NOT NULL,
      source TEXT NOT NULL CHECK (source IN ('manual', 'auto')),
      created_at TEXT NOT NULL
    ) WITHOUT ROWID`,
    // How many turns of a conversation use a term: the keyword tagger's notion of a rare word.
    `CREATE TABLE term_df (
      conversation_id TEXT NOT NULL,
      term TEXT NOT NULL,
      turns INTEGER NOT NULL,
      PRIMARY KEY (conversation_id, term)
    ) WITHOUT ROWID`,
  ],
  // 3: how many turns hold each indexed token, read from the full-text index itself (questions leave out tokens so
  // common that matching them would score most of the index).
  [
    `CREATE VIRTUAL TABLE turns_fts_vocab USING fts5vocab(turns_fts, 'row')`,
  ],
  // 4: compaction (seeds 000, 003, 004). The watermark is the first seq not compacted; summaries of every level and
  // kind live in one table (segments are level 1; roll-ups and the master summarize summaries; tag summaries roll
  // one tag's segments up). Pins and the LLM usage ledger are the caller's own records, the rest is derived.
  [
    `CREATE TABLE compaction_state (
      conversation_id TEXT PRIMARY KEY,
      watermark INTEGER NOT NULL,
      events INTEGER NOT NULL,
      updated_at TEXT NOT NULL
    ) WITHOUT ROWID`,
    `CREATE TABLE summaries (
      rowid INTEGER PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      conversation_id TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('segment', 'rollup', 'master', 'tag')),
      level INTEGER NOT NULL,
      tag TEXT,
      first_seq INTEGER NOT NULL,
      last_seq INTEGER NOT NULL,
      first_at TEXT NOT NULL,
      last_at TEXT NOT NULL,
      source_ids TEXT NOT NULL,
      text TEXT NOT NULL,
      tags TEXT NOT NULL,
      related TEXT NOT NULL,
      tokens INTEGER NOT NULL,
      made_by TEXT NOT NULL,
      prompt_version INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      parent_id TEXT,
      stale INTEGER NOT NULL DEFAULT 0
    )`,
    `CREATE INDEX summaries_by_level ON summaries (conversation_id, kind, level, first_seq)`,
    `CREATE INDEX summaries_by_tag ON summaries (conversation_id, tag) WHERE tag IS NOT NULL`,
    `CREATE TABLE summary_tags (
      conversation_id TEXT NOT NULL,
      tag TEXT NOT NULL,
      summary_rowid INTEGER NOT NULL,
      PRIMARY KEY (conversation_id, tag, summary_rowid)
    ) WITHOUT ROWID`,
    `CREATE VIRTUAL TABLE summaries_fts USING fts5(text, tags, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2')`,
    `CREATE TABLE pins (
      conversation_id TEXT NOT NULL,
      turn_id TEXT NOT NULL,
      pinned_at TEXT NOT NULL,
      PRIMARY KEY (conversation_id, turn_id)
    ) WITHOUT ROWID`,
    `CREATE TABLE turn_recalls (
      turn_rowid INTEGER PRIMARY KEY,
      recalls INTEGER NOT NULL,
      last_ms INTEGER NOT NULL
    )`,
    `CREATE TABLE llm_usage (
      rowid INTEGER PRIMARY KEY,
      conversation_id TEXT,
      purpose TEXT NOT NULL,
      provider TEXT NOT NULL,
      model TEXT NOT NULL,
      ok INTEGER NOT NULL,
      input_tokens INTEGER NOT NULL,
      output_tokens INTEGER NOT NULL,
      cost REAL,
      ms REAL NOT NULL,
      created_at TEXT NOT NULL
    )`,
  ],
  // 5: embeddings of turns (ref = seq) and summaries (ref = summary rowid), per model: int8 with a scale, so a
  // 512-d vector takes 512 bytes. Another model's vectors are kept apart (and removed once the new model has caught up).
  [
    `CREATE TABLE embeddings (
      conversation_id TEXT NOT NULL,
      model_id TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('turn', 'summary')),
      ref INTEGER NOT NULL,
      created_ms INTEGER NOT NULL,
      scale REAL NOT NULL,
      vector BLOB NOT NULL,
      PRIMARY KEY (conversation_id, model_id, kind, ref)
    ) WITHOUT ROWID`,
    `CREATE INDEX embeddings_by_ref ON embeddings (conversation_id, kind, ref)`,
  ],
  // 6: aliases get a scope. '' is global (manual aliases only: the CHECK keeps learned ones out of it); otherwise the
  // conversation the alias belongs to, the only one it reads and rewrites. Learned ('auto') aliases came from one
  // conversation's content and were applied to all of them, so one user's spellings rewrote another's memory.
  // Existing manual rows stay global, as they were added. Existing auto rows are dropped, not attributed: the table
  // never recorded where they were learned, and the conversations whose tags use the target are exactly the ones
  // the global alias rewrote (attributing by them would keep the leak); they are derived data, and the conversation
  // that taught one learns it again the next time the spelling comes up. Tags they already rewrote stay as they are.
  [
    `CREATE TABLE tag_aliases_scoped (
      conversation_id TEXT NOT NULL,
      alias TEXT NOT NULL,
      tag TEXT NOT NULL,
      source TEXT NOT NULL CHECK (source IN ('manual', 'auto')),
      created_at TEXT NOT NULL,
      PRIMARY KEY (conversation_id, alias),
      CHECK (source = 'manual' OR conversation_id <> '')
    ) WITHOUT ROWID`,
    `INSERT INTO tag_aliases_scoped (conversation_id, alias, tag, source, created_at)
      SELECT '', alias, tag, source, created_at FROM tag_aliases WHERE source = 'manual'`,
    `DROP TABLE tag_aliases`,
    `ALTER TABLE tag_aliases_scoped RENAME TO tag_aliases`,
  ],
  // 7: private messages (data-control issue): never sent to an LLM tagger or summarizer, never quoted in a summary.
  [
    `ALTER TABLE turns ADD COLUMN private INTEGER NOT NULL DEFAULT 0`,
  ],
  // 8: private turns found without reading every turn (a remote embedder and the LLM are not given their words).
  [
    `CREATE INDEX turns_private ON turns (conversation_id, seq) WHERE private = 1`,
  ],
  // 9: sync (issue 28). Each turn says where it was first written ('' here: this replica, whose random id is in
  // pagewise_meta), its order key there (a hybrid logical clock per conversation: the time of writing in ms, or one
  // past the largest key the conversation held then; turns stored before sync take their row id, so they come first),
  // and the replica it was received from. Every replica orders a conversation by (key, origin, id),
  // so seq becomes the local position in that converged order: it may move when turns written elsewhere arrive; every
  // other column stays verbatim (the trigger). Tombstones hold ids, hashes and the clock of the forget, never text
  // (turn_id '': the whole conversation before that clock); a receiver keeps a cursor per sender.
  [
    `ALTER TABLE turns ADD COLUMN origin TEXT NOT NULL DEFAULT ''`,
    `ALTER TABLE turns ADD COLUMN origin_ord INTEGER NOT NULL DEFAULT 0`,
    // The replica a turn was received from ('' written here): not offered back to it.
    `ALTER TABLE turns ADD COLUMN via TEXT NOT NULL DEFAULT ''`,
    `DROP TRIGGER turns_no_update`,
    `UPDATE turns SET origin_ord = rowid`,
    `CREATE INDEX turns_by_ord ON turns (conversation_id, origin_ord)`,
    `CREATE TRIGGER turns_verbatim BEFORE UPDATE OF rowid, conversation_id, id, role, name, content, tool_calls, tool_call_id, created_at, created_ms, stored_at, content_hash, text, private, origin, origin_ord, via ON turns
      BEGIN SELECT RAISE(ABORT, 'pagewise turns are append-only and verbatim: only their local position (seq) may move'); END`,
    `CREATE TABLE sync_tombstones (
      rowid INTEGER PRIMARY KEY,
      conversation_id TEXT NOT NULL,
      turn_id TEXT NOT NULL,
      content_hash TEXT NOT NULL,
      origin_ord INTEGER NOT NULL,
      forgotten_at TEXT NOT NULL,
      UNIQUE (conversation_id, turn_id, content_hash, origin_ord)
    )`,
    `CREATE TABLE sync_peers (
      peer TEXT NOT NULL,
      scope TEXT NOT NULL,
      turns INTEGER NOT NULL,
      tombstones INTEGER NOT NULL,
      updated_at TEXT NOT NULL,
      PRIMARY KEY (peer, scope)
    ) WITHOUT ROWID`,
    `CREATE TABLE sync_unpins (
      conversation_id TEXT NOT NULL,
      turn_id TEXT NOT NULL,
      unpinned_at TEXT NOT NULL,
      PRIMARY KEY (conversation_id, turn_id)
    ) WITHOUT ROWID`,
    // Manual aliases removed, with the time ('' : global): sync merges adds and removals, the later one winning.
    `CREATE TABLE sync_alias_removals (
      conversation_id TEXT NOT NULL,
      alias TEXT NOT NULL,
      removed_at TEXT NOT NULL,
      PRIMARY KEY (conversation_id, alias)
    ) WITHOUT ROWID`,
    `INSERT OR IGNORE INTO pagewise_meta (key, value) VALUES ('replica', 'r' || lower(hex(randomblob(12))))`,
    `INSERT OR IGNORE INTO pagewise_meta (key, value) VALUES ('turns:floor', (SELECT COALESCE(MAX(rowid), 0) FROM turns))`,
  ],
  // 10: attachments (images, files, audio), stored once by the SHA-256 of their bytes beside the turns that refer to
  // them (a turn's content names the id, never holds the bytes). The bytes lie in pieces by byte offset, each within
  // the storage's row limit (2 MB at the edge); an `attachments` row is written once every piece is there and the
  // hash checked, so a missing row means "not here (yet)": sync fetches it; `facts` are what the bytes say of themselves
  // (pixels, pages, duration: JSON), what a part naming it by id is counted by. `attachment_refs` is derived from the
  // turns (which attachments each refers to): forget removes an attachment no kept turn refers to.
  [
    `CREATE TABLE attachments (
      id TEXT PRIMARY KEY,
      media_type TEXT NOT NULL,
      size INTEGER NOT NULL,
      facts TEXT NOT NULL,
      created_at TEXT NOT NULL
    ) WITHOUT ROWID`,
    `CREATE TABLE attachment_chunks (
      rowid INTEGER PRIMARY KEY,
      attachment_id TEXT NOT NULL,
      start INTEGER NOT NULL,
      data BLOB NOT NULL,
      UNIQUE (attachment_id, start)
    )`,
    `CREATE TABLE attachment_refs (
      turn_rowid INTEGER NOT NULL,
      attachment_id TEXT NOT NULL,
      conversation_id TEXT NOT NULL,
      PRIMARY KEY (turn_rowid, attachment_id)
    ) WITHOUT ROWID`,
    `CREATE INDEX attachment_refs_by_id ON attachment_refs (attachment_id)`,
    `CREATE INDEX attachment_refs_by_conversation ON attachment_refs (conversation_id, attachment_id)`,
  ],
  // 11: a conversation is a tree (edits and regenerations fork it). Each turn says which branch it is on ('' the
  // conversation's first; otherwise the id of the branch's first turn) and, on every turn of a later branch, where
  // that branch starts: the id of the turn it follows ('' the conversation's start), that turn's branch and order key
  // (so a branch keeps its place when the turn it follows is forgotten). The current branch is a head: the turn the
  // conversation is at — the last turn written, unless a checkout (branch_heads, ordered by the same clock) came
  // later. seq is the position on the path to the head (0, 1, …); a turn off that path has a seq below OFF_PATH_SEQ
  // (store/tree.ts), so every read by position sees the current branch only. `histories`: 1 once a caller's history
  // began at the conversation's start (an app that sends its whole history: one without any starts over).
  [
    `ALTER TABLE turns ADD COLUMN branch TEXT NOT NULL DEFAULT ''`,
    `ALTER TABLE turns ADD COLUMN fork_after TEXT`,
    `ALTER TABLE turns ADD COLUMN fork_branch TEXT`,
    `ALTER TABLE turns ADD COLUMN fork_ord INTEGER`,
    `DROP TRIGGER turns_verbatim`,
    `CREATE TRIGGER turns_verbatim BEFORE UPDATE OF rowid, conversation_id, id, role, name, content, tool_calls, tool_call_id, created_at, created_ms, stored_at, content_hash, text, private, origin, origin_ord, via, branch, fork_after, fork_branch, fork_ord ON turns
      BEGIN SELECT RAISE(ABORT, 'pagewise turns are append-only and verbatim: only their local position (seq) may move'); END`,
    `CREATE TABLE branch_heads (
      conversation_id TEXT PRIMARY KEY,
      turn_id TEXT NOT NULL,
      ord INTEGER NOT NULL,
      origin TEXT NOT NULL,
      at TEXT NOT NULL
    ) WITHOUT ROWID`,
    `ALTER TABLE conversations ADD COLUMN histories INTEGER NOT NULL DEFAULT 0`,
  ],
  // 12: sync on real devices. A receiver keeps, with each cursor, the receipt the sender gave for it (`receipt`: the row
  // it reached, signed with the sender's `sync:secret`), so a sender finds a cursor it did not give (forged: it starts
  // over) or one that reads another history than its own (it is a copy or a restored backup of the replica the peer
  // read: it takes a new id). `sync_removed`: the row id and hash of every shareable turn forget removed (that receipt
  // still holds for them). `sync_held`: changes stamped too far ahead of this replica's clock, kept as received until
  // the clock reaches them. A renewal relabels this replica's own turns and checkouts with the id they were written
  // under ('' means the current id), the one update of a turn's origin the verbatim trigger allows.
  [
    `ALTER TABLE sync_peers ADD COLUMN receipt TEXT NOT NULL DEFAULT ''`,
    `CREATE TABLE sync_removed (
      rowid INTEGER PRIMARY KEY,
      content_hash TEXT NOT NULL
    )`,
    `CREATE TABLE sync_held (
      rowid INTEGER PRIMARY KEY,
      conversation_id TEXT NOT NULL,
      kind TEXT NOT NULL,
      turn_id TEXT NOT NULL,
      ord INTEGER NOT NULL,
      item TEXT NOT NULL,
      peer TEXT NOT NULL,
      held_at TEXT NOT NULL,
      UNIQUE (conversation_id, kind, turn_id, ord)
    )`,
    `CREATE INDEX sync_held_by_ord ON sync_held (ord)`,
    // A new database's secret is random; one that holds turns already gets its secret derived from them when it is
    // first needed (store/sync-store.ts), so copies made before this version share it and still find each other.
    `INSERT OR IGNORE INTO pagewise_meta (key, value) SELECT 'sync:secret', lower(hex(randomblob(32))) WHERE NOT EXISTS (SELECT 1 FROM turns)`,
    `DROP TRIGGER turns_verbatim`,
    `CREATE TRIGGER turns_verbatim BEFORE UPDATE OF rowid, conversation_id, id, role, name, content, tool_calls, tool_call_id, created_at, created_ms, stored_at, content_hash, text, private, origin_ord, via, branch, fork_after, fork_branch, fork_ord ON turns
      BEGIN SELECT RAISE(ABORT, 'pagewise turns are append-only and verbatim: only their local position (seq) may move'); END`,
    `CREATE TRIGGER turns_origin BEFORE UPDATE OF origin ON turns WHEN OLD.origin <> '' OR NEW.origin = ''
      BEGIN SELECT RAISE(ABORT, 'pagewise turns are append-only and verbatim: a turn written here is only ever labelled with the id it was written under'); END`,
  ],
  // 13: a memory that runs for years. Retention's policies and log, what each peer has read of this
  // replica (tombstones are compacted once all have), usage counters per conversation. No existing row is rewritten:
  // the migration costs the same on 100,000 turns as on none.
  [
    // A conversation's own retention (memory.setRetention): days, NULL for the option's, -1 for none. The log says
    // what retention removed and why, never any text.
    `CREATE TABLE retention_policies (conversation_id TEXT PRIMARY KEY, max_age_days REAL, idle_days REAL, keep_pinned INTEGER, set_at TEXT NOT NULL) WITHOUT ROWID`,
    `CREATE TABLE retention_log (seq INTEGER PRIMARY KEY, at TEXT NOT NULL, conversation_id TEXT NOT NULL, reason TEXT NOT NULL, turns INTEGER NOT NULL,
      conversation_removed INTEGER NOT NULL, before TEXT)`,
    // memory.stats()'s counters (engine/usage.ts), kept where an evicted Durable Object finds them: one row per figure.
    `CREATE TABLE usage_counters (conversation_id TEXT NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY (conversation_id, name)) WITHOUT ROWID`,
    // Which tagger (name@version) made each conversation's tag index (engine/rebuild-tags.ts): one of another
    // signature is tagged again in the background. A conversation with none counts as the configured tagger's.
    `CREATE TABLE tag_signatures (conversation_id TEXT PRIMARY KEY, signature TEXT NOT NULL) WITHOUT ROWID`,
    // Tombstone compaction and resync (store/schema-sync.ts).
    ...SYNC_COMPACTION_MIGRATION,
  ],
  // 14: sync on real devices, continued (store/schema-devices.ts). Only order keys stored too far ahead are rewritten.
  DEVICES_MIGRATION,
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Brings the database to SCHEMA_VERSION; refuses a database written by a newer pagewise. */
export async function migrate(driver: StorageDriver): Promise<void> {
  // A driver's declared limits are checked first: the stores size every statement to them.
  limitsOf(driver);
  await driver.batch([{ sql: 'CREATE TABLE IF NOT EXISTS pagewise_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)' }]);
  const rows = await driver.query<{ value: string }>("SELECT value FROM pagewise_meta WHERE key = 'schema_version'");
  const current = rows.length > 0 ? Number(rows[0]!.value) : 0;
  if (current > SCHEMA_VERSION) {
    throw new PagewiseError('STORAGE_ERROR', 'schema',
      `The database has schema version ${current}, newer than this pagewise (${SCHEMA_VERSION}). Upgrade pagewise.`);
  }
  for (let v = current; v < SCHEMA_VERSION; v++) {
    await driver.batch([
      ...MIGRATIONS[v]!.map((sql) => ({ sql })),
      { sql: "INSERT OR REPLACE INTO pagewise_meta (key, value) VALUES ('schema_version', ?)", params: [String(v + 1)] },
    ]);
  }
}
