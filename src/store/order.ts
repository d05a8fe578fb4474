// Where a turn stands: its row id (what sync cursors read by), its order key (the clock every replica orders a
// conversation by) and its position (seq: the place on the path to the conversation's head, or off it).

/**
 * The row id a new turn gets: past every row id a turn ever had. Sync reads a replica's turns after a row id (its
 * cursor), so an id freed by forget must never be given again: forget records the highest it removed ('turns:floor').
 */
export const NEXT_ROWID = `(SELECT MAX(COALESCE(MAX(rowid), 0), COALESCE((SELECT CAST(value AS INTEGER) FROM pagewise_meta WHERE key = 'turns:floor'), 0)) + 1 FROM turns)`;

/**
 * The largest order key the format accepts: keys are times in ms, and this is the last time a JavaScript Date holds
 * (year 275760), below 2^53. A received key above it is refused; an ordinary write never steps past it. Keys stored
 * past it (or a year ahead) before schema 12 bounded them are rewritten by migration 14 (store/schema-devices.ts).
 */
export const MAX_ORD = 8_640_000_000_000_000;

/**
 * A new turn's order key (schema 9): the time of writing in ms, or one past the conversation's largest key when that
 * is later — of its turns, of the clocks its forgets carry and of its last checkout (a hybrid logical clock: a turn
 * written here sorts after every turn this replica held then, counts as written after every forget it had heard of,
 * and after the branch the user switched to) — and never past MAX_ORD. Received keys are bounded by the receiver's
 * clock (sync holds one stamped too far ahead), so the clock cannot be pushed far into the future by a peer. Binds
 * what `nextOrdParams` gives.
 */
export const NEXT_ORD = `MIN(${MAX_ORD}, MAX(?, (SELECT COALESCE(MAX(origin_ord), 0) + 1 FROM turns WHERE conversation_id = ?),
  (SELECT COALESCE(MAX(origin_ord), 0) + 1 FROM sync_tombstones WHERE conversation_id = ?),
  (SELECT COALESCE(MAX(ord), 0) + 1 FROM branch_heads WHERE conversation_id = ?)))`;

/** NEXT_ORD's parameters: the time of writing (ms), then the conversation. */
export const nextOrdParams = (nowMs: number, conversationId: string): [number, string, string, string] => [nowMs, conversationId, conversationId, conversationId];

/** This replica's id (schema 9 made it). */
export const REPLICA = "(SELECT value FROM pagewise_meta WHERE key = 'replica')";

/** A turn's origin as it travels ('' in the row means this replica). */
export const ORIGIN = `CASE origin WHEN '' THEN ${REPLICA} ELSE origin END`;

/**
 * Positions: the path to the head holds seq 0, 1, …; a turn off it (another branch) holds OFF_PATH_SEQ − rowid, so
 * every read by position (`seq >= 0`, a range, the last few) sees the current branch only, and seq stays unique.
 */
export const OFF_PATH_SEQ = -(2 ** 40);

/** The seq of a turn off the path, as SQL over its row (`rowid`). */
export const OFF_PATH = `(${OFF_PATH_SEQ} - rowid)`;
