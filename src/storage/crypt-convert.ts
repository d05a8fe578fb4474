// A database rewritten in place, plain to encrypted or back, so that a kill at any point leaves it whole: the new
// image is written beside it and synced, then a marker file says it is complete, then it is copied over the
// database. Opening first finishes a copy a marker announces (or drops a side file without one).
import {
  SQLITE_OPEN_CREATE, SQLITE_OPEN_MAIN_DB, SQLITE_OPEN_MAIN_JOURNAL, SQLITE_OPEN_READONLY, SQLITE_OPEN_READWRITE, type RawVfs,
} from './crypt-raw.js';

const CHUNK = 1 << 20;
const sideOf = (name: string): string => `${name}-pagewise-convert`;
const markOf = (name: string): string => `${name}-pagewise-convert-ok`;

/** Writes `bytes` as the whole file `name` and syncs it (`flags`: what kind of file SQLite would call it). */
export function writeWhole(under: RawVfs, name: string, bytes: Uint8Array, flags = SQLITE_OPEN_MAIN_JOURNAL): void {
  const file = under.open(name, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | flags);
  if (!file) throw new Error(`cannot create ${name}`);
  try {
    file.truncate(0);
    for (let at = 0; at < bytes.length; at += CHUNK) file.write(at, bytes.subarray(at, Math.min(bytes.length, at + CHUNK)));
    file.sync();
  } finally { file.close(); }
}

/** The size of file `name`, or -1 when there is none. */
const sizeOf = (under: RawVfs, name: string): number => {
  const file = under.open(name, SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_JOURNAL);
  if (!file) return -1;
  try { return file.size(); } finally { file.close(); }
};

/** Copies the side file over the database, syncs it, then removes the marker and the side file. */
function finish(under: RawVfs, name: string): void {
  const side = under.open(sideOf(name), SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_JOURNAL);
  if (!side) throw new Error(`cannot open ${sideOf(name)}`);
  try {
    const target = under.open(name, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MAIN_DB);
    if (!target) throw new Error(`cannot open ${name}`);
    try {
      const size = side.size();
      for (let at = 0; at < size; at += CHUNK) target.write(at, side.read(at, CHUNK));
      target.truncate(size);
      target.sync();
    } finally { target.close(); }
  } finally { side.close(); }
  under.delete(markOf(name));
  under.delete(sideOf(name));
}

/**
 * At open: finishes a conversion whose new image is complete (its marker holds its byte), or drops one that is not
 * (a side file, or a marker created but not yet written, a kill left).
 */
export function recoverConversion(under: RawVfs, name: string): void {
  const mark = sizeOf(under, markOf(name));
  if (mark > 0) { finish(under, name); return; }
  if (mark === 0) under.delete(markOf(name));
  if (sizeOf(under, sideOf(name)) >= 0) under.delete(sideOf(name));
}

/**
 * Replaces database `name` with `image` crash-safely. `close` closes SQLite's connection to it (after the new image
 * is safe beside it); the caller reopens it afterwards.
 */
export function convertInPlace(under: RawVfs, name: string, image: Uint8Array, close: () => void): void {
  writeWhole(under, sideOf(name), image);
  writeWhole(under, markOf(name), Uint8Array.of(1));
  close();
  finish(under, name);
}
