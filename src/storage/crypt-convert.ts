// A database rewritten in place, plain to encrypted or back, so that a kill at any point leaves it whole: the new
// image is written beside it and synced, then a marker file says it is complete, then it is copied over the
// database. Opening first finishes a copy a marker announces (or drops a side file without one).
import { SQLITE_OPEN_CREATE, SQLITE_OPEN_READONLY, SQLITE_OPEN_READWRITE, type RawVfs } from './crypt-raw.js';

const SQLITE_OPEN_MAIN_JOURNAL = 0x800;
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

const exists = (under: RawVfs, name: string): boolean => {
  const file = under.open(name, SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_JOURNAL);
  if (!file) return false;
  try { return file.size() > 0; } finally { file.close(); }
};

/** Copies the side file over the database, syncs it, then removes the marker and the side file. */
function finish(under: RawVfs, name: string): void {
  const side = under.open(sideOf(name), SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_JOURNAL);
  if (!side) throw new Error(`cannot open ${sideOf(name)}`);
  try {
    const target = under.open(name, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | 0x100);
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

/** At open: finishes a conversion whose new image is complete, or drops one that is not. */
export function recoverConversion(under: RawVfs, name: string): void {
  if (exists(under, markOf(name))) finish(under, name);
  else if (exists(under, sideOf(name))) under.delete(sideOf(name));
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
