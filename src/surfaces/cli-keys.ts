// The keys of encrypted databases at the command line: read from files (--key-file, --passphrase-file) or the
// environment (PAGEWISE_KEY, PAGEWISE_PASSPHRASE), never from the command line itself (shell history, the process
// list); `pagewise keygen` makes a key file and `pagewise rekey` encrypts, changes the key of, or decrypts a database.
// No message here repeats a key, a passphrase or a key file's content.
import { closeSync, openSync, readSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { PagewiseError } from '../contracts/errors.js';
import type { Memory } from '../contracts/memory.js';
import type { EncryptionOptions } from '../contracts/types.js';
import { UsageError } from './cli-help.js';

/** The flags that would put a secret on the command line: refused, whatever their value. */
const SECRET_FLAG = /^(new-|peer-)?(key|passphrase)$/;
/** A key file holds a few dozen bytes; a passphrase file a line. Reading stops past these (`--key-file /dev/urandom`). */
export const MOST_KEY_FILE = 4096;
const MOST_PASSPHRASE_FILE = 64 * 1024;
const MAKE_ONE = 'pagewise keygen --out FILE makes one';

/**
 * Refuses `--key`, `--passphrase` (and their `new-`/`peer-` forms, `--key=…` too) before anything else reads the
 * command line: a secret there lands in shell history and in `ps`. Values of other options (`-m "--key"`) are not
 * flags. The message never repeats the value.
 */
export function refuseSecretFlags(argv: string[], options: NonNullable<ParseArgsConfig['options']>): void {
  const { tokens } = parseArgs({ args: argv, options, strict: false, allowPositionals: true, tokens: true });
  const flag = tokens.find((t) => t.kind === 'option' && SECRET_FLAG.test(t.name));
  if (flag?.kind !== 'option') return;
  const prefix = flag.name.replace(/(key|passphrase)$/, '');
  const what = flag.name.endsWith('key') ? 'key' : 'passphrase';
  const env = prefix === '' ? `, or set ${what === 'key' ? 'PAGEWISE_KEY' : 'PAGEWISE_PASSPHRASE'}` : '';
  throw new UsageError(`--${flag.name} is refused: a ${what} on the command line lands in shell history and the process list. Put it in a file and pass --${prefix}${what}-file FILE${env}${what === 'key' ? ` (${MAKE_ONE})` : ''}.`);
}

/** A file's bytes, at most `most` of them (more: undefined); NOT_FOUND and the like name the path, never content. */
export function readBounded(path: string, most: number, flag: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new PagewiseError('NOT_FOUND', 'cli', `There is no file "${resolve(path)}" (${flag}): check the path.`, { cause: e, path: flag });
    throw new PagewiseError('STORAGE_UNAVAILABLE', 'cli', `Cannot read "${resolve(path)}" (${flag}, ${code ?? 'error'}): make it readable by you.`, { cause: e, path: flag });
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(Math.min(4096, most + 1 - total));
      let n: number;
      try {
        n = readSync(fd, chunk, 0, chunk.length, null);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EISDIR') throw new PagewiseError('INVALID_ARGUMENT', 'cli', `"${resolve(path)}" (${flag}) is a directory: pass the path of a file.`, { cause: e, path: flag });
        throw new PagewiseError('STORAGE_UNAVAILABLE', 'cli', `Cannot read "${resolve(path)}" (${flag}, ${code ?? 'error'}): make it readable by you.`, { cause: e, path: flag });
      }
      if (n === 0) return Buffer.concat(chunks, total);
      chunks.push(chunk.subarray(0, n));
      total += n;
      if (total > most) return undefined;
    }
  } finally {
    closeSync(fd);
  }
}

/** 32 key bytes from text: 64 hex characters, or base64 (standard or URL-safe) of 32 bytes; else undefined. */
function keyFromText(text: string): Uint8Array | undefined {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return new Uint8Array(Buffer.from(t, 'hex'));
  if (/^[A-Za-z0-9+/]{43}=?$/.test(t) || /^[A-Za-z0-9_-]{43}=?$/.test(t)) {
    const bytes = Buffer.from(t, 'base64');
    if (bytes.length === 32) return new Uint8Array(bytes);
  }
  return undefined;
}

/** The key in a key file: exactly 32 raw bytes, or their hex or base64 (surrounding whitespace ignored). */
export function readKeyFile(path: string, flag = '--key-file'): Uint8Array {
  const bytes = readBounded(path, MOST_KEY_FILE, flag);
  if (bytes?.length === 32) return new Uint8Array(bytes);
  const key = bytes === undefined ? undefined : keyFromText(bytes.toString('latin1'));
  if (key) return key;
  const size = bytes === undefined ? `more than ${MOST_KEY_FILE} bytes` : `${bytes.length} bytes`;
  throw new UsageError(`${flag} ${path} does not hold a key (it has ${size}): a key file holds 32 random bytes, raw or as 64 hex characters or base64 (${MAKE_ONE}).`);
}

/** The passphrase in a passphrase file: its text, a leading BOM and one trailing newline removed. */
export function readPassphraseFile(path: string, flag = '--passphrase-file'): string {
  const bytes = readBounded(path, MOST_PASSPHRASE_FILE, flag);
  if (bytes === undefined) throw new UsageError(`${flag} ${path} is longer than ${MOST_PASSPHRASE_FILE / 1024} KiB: a passphrase file holds the passphrase, on one line.`);
  const text = bytes.toString('utf8').replace(/^\uFEFF/, '').replace(/\r?\n$/, '');
  if (text === '') throw new UsageError(`${flag} ${path} is empty: write the passphrase in it.`);
  return text;
}

/** The key flags of one database: the files named, and whether the environment may supply them. */
export interface KeySources {
  keyFile?: string | undefined;
  passphraseFile?: string | undefined;
  /** The flags' names, for messages: `--key-file` and `--passphrase-file`, or sync's `--peer-…` ones. */
  flags?: [key: string, passphrase: string];
  /** PAGEWISE_KEY and PAGEWISE_PASSPHRASE; left out where the environment does not apply. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The encryption a database opens with: a key file or passphrase file (a file wins over the environment), else
 * PAGEWISE_KEY (hex or base64 of 32 bytes) or PAGEWISE_PASSPHRASE (empty ones are unset); undefined for none.
 * Both a key and a passphrase is a usage error.
 *
 * @example
 * fileStorage(path, { encryption: databaseKey({ keyFile: v['key-file'], passphraseFile: v['passphrase-file'], env: process.env }) })
 */
export function databaseKey(s: KeySources): EncryptionOptions | undefined {
  const [keyFlag, passphraseFlag] = s.flags ?? ['--key-file', '--passphrase-file'];
  if (s.keyFile !== undefined && s.passphraseFile !== undefined) throw new UsageError(`${keyFlag} and ${passphraseFlag}: give one, a database opens with a key or with a passphrase.`);
  if (s.keyFile !== undefined) return { key: readKeyFile(s.keyFile, keyFlag) };
  if (s.passphraseFile !== undefined) return { passphrase: readPassphraseFile(s.passphraseFile, passphraseFlag) };
  const key = s.env?.PAGEWISE_KEY || undefined;
  const passphrase = s.env?.PAGEWISE_PASSPHRASE || undefined;
  if (key !== undefined && passphrase !== undefined) throw new UsageError('PAGEWISE_KEY and PAGEWISE_PASSPHRASE are both set: unset one, a database opens with a key or with a passphrase (or pass --key-file or --passphrase-file, which win over them).');
  if (passphrase !== undefined) return { passphrase };
  if (key === undefined) return undefined;
  const bytes = keyFromText(key);
  if (!bytes) throw new UsageError(`PAGEWISE_KEY does not hold a key (${key.trim().length} characters): set it to 32 random bytes as 64 hex characters or base64 (${MAKE_ONE}).`);
  return { key: bytes };
}

/** `pagewise keygen [--out FILE]`: a new random key as hex, to FILE (mode 0600, never over an existing file) or stdout. */
export function keygen(out: string | undefined, json: boolean): number {
  const hex = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex');
  if (out === undefined) {
    process.stdout.write(`${json ? JSON.stringify({ key: hex }) : hex}\n`);
    return 0;
  }
  try {
    writeFileSync(out, `${hex}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new PagewiseError('INVALID_ARGUMENT', 'cli', `"${resolve(out)}" exists: keygen never overwrites a file (it may be the key of a database). Pass a new path, or remove that file first.`, { cause: e, path: '--out' });
    throw new PagewiseError('STORAGE_UNAVAILABLE', 'cli', `Cannot write "${resolve(out)}" (${code ?? (e as Error).message}): pass a path in a folder you can write to.`, { cause: e, path: '--out' });
  }
  process.stdout.write(`${json ? JSON.stringify({ file: out }) : `a new key is in ${out} (readable by you only): pass it as --key-file ${out}, and keep a copy somewhere safe; without it an encrypted database cannot be opened`}\n`);
  return 0;
}

/** What rekey makes of the database: a new key, a new passphrase, or a plain file (--decrypt). */
export interface RekeyTarget {
  next: EncryptionOptions | null;
}

/** rekey's target from its flags: exactly one of --new-key-file, --new-passphrase-file and --decrypt. */
export function rekeyTarget(v: { 'new-key-file'?: string | undefined; 'new-passphrase-file'?: string | undefined; decrypt?: boolean | undefined }): RekeyTarget {
  const given = [v['new-key-file'] !== undefined, v['new-passphrase-file'] !== undefined, v.decrypt === true].filter(Boolean).length;
  if (given !== 1) throw new UsageError('rekey takes one of --new-key-file FILE, --new-passphrase-file FILE and --decrypt (and the current key as every command does: --key-file, --passphrase-file, PAGEWISE_KEY, PAGEWISE_PASSPHRASE).');
  if (v.decrypt) return { next: null };
  return { next: databaseKey({ keyFile: v['new-key-file'], passphraseFile: v['new-passphrase-file'], flags: ['--new-key-file', '--new-passphrase-file'] })! };
}

type Kind = 'plain' | 'key' | 'passphrase';
const kindOf = (e: EncryptionOptions | null | undefined): Kind => (!e ? 'plain' : e.passphrase !== undefined ? 'passphrase' : 'key');

/**
 * `pagewise rekey`: the open database (`encrypted` before, `current` the key it opened with) encrypted, given a new
 * key or passphrase, or decrypted, in place; prints what it did (never a key).
 */
export async function rekey(memory: Memory, file: string, encrypted: boolean, current: EncryptionOptions | undefined, target: RekeyTarget, json: boolean): Promise<number> {
  const from: Kind = encrypted ? kindOf(current) : 'plain';
  const to = kindOf(target.next);
  if (from !== 'plain' || to !== 'plain') await memory.rekey(target.next);
  const with_ = (k: Kind) => (k === 'key' ? 'a key' : 'a passphrase');
  const text = from === 'plain' && to === 'plain' ? `${file} is not encrypted: nothing to decrypt, nothing changed`
    : to === 'plain' ? `decrypted ${file}: it is a plain SQLite file now, opened without a key`
      : from === 'plain' ? `encrypted ${file}: it opens with ${with_(to)} now, and without it not at all`
        : `changed the ${from} of ${file}: it opens with the new ${to} now, the old ${from} no longer opens it`;
  process.stdout.write(`${json ? JSON.stringify({ file, from, to }) : text}\n`);
  return 0;
}

export type KeyFlags = Parameters<typeof rekeyTarget>[0] & { 'key-file'?: string | undefined; 'passphrase-file'?: string | undefined; 'peer-key-file'?: string | undefined; 'peer-passphrase-file'?: string | undefined };

/**
 * The keys a command opens with: --db's (a file, else the environment), rekey's new one, and sync FILE's (its own
 * --peer-… file, else --db's: a copy of an encrypted database is encrypted too). A database in memory has none.
 */
export function commandKeys(command: string, inMemory: boolean, v: KeyFlags): { encryption?: EncryptionOptions | undefined; rekey?: RekeyTarget; peer?: EncryptionOptions | undefined } {
  if (inMemory) {
    if (v['key-file'] !== undefined || v['passphrase-file'] !== undefined) throw new UsageError('replay without --db runs in memory and writes no file: --key-file and --passphrase-file are for a database file (--db PATH).');
    return {};
  }
  const encryption = databaseKey({ keyFile: v['key-file'], passphraseFile: v['passphrase-file'], env: process.env });
  if (command === 'rekey') return { encryption, rekey: rekeyTarget(v) };
  if (command !== 'sync') return { encryption };
  const own = v['peer-key-file'] !== undefined || v['peer-passphrase-file'] !== undefined;
  return { encryption, peer: own ? databaseKey({ keyFile: v['peer-key-file'], passphraseFile: v['peer-passphrase-file'], flags: ['--peer-key-file', '--peer-passphrase-file'] }) : encryption };
}
