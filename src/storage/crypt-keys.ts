// Keys of an encrypted database: what the app gives (32 key bytes, an AES-GCM CryptoKey, or a passphrase stretched
// with Argon2id from @noble/hashes), the random data key the pages are sealed with, and the key slots that hold the
// data key sealed under the app's key. Nothing here logs or puts a key into a message.
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { argon2idAsync } from '@noble/hashes/argon2.js';
import { PagewiseError } from '../contracts/errors.js';
import type { EncryptionOptions } from '../contracts/types.js';
import { type Header, type KeySlot, MODULE, SLOT_KIND, randomBytes, slotAad } from './crypt-format.js';

/** Argon2id's cost for a new passphrase slot: OWASP's minimum for Argon2id (19 MiB, 2 passes, 1 lane). */
export const DEFAULT_KDF = { memoryKiB: 19_456, iterations: 2, parallelism: 1 } as const;
// What a file may ask of this device when it is opened: a damaged or crafted header must not exhaust it.
const MOST_MEMORY_KIB = 1 << 18;
const MOST_ITERATIONS = 16;

/** The app's key, checked: one of the three kinds, and the Argon2id cost for a new passphrase slot. */
export interface ReadKey {
  kind: 'key' | 'passphrase' | 'cryptoKey';
  bytes?: Uint8Array;
  passphrase?: string;
  cryptoKey?: CryptoKey;
  kdf: { memoryKiB: number; iterations: number; parallelism: number };
}


const isCryptoKey = (v: unknown): v is CryptoKey =>
  typeof CryptoKey === 'function' ? v instanceof CryptoKey : Object.prototype.toString.call(v) === '[object CryptoKey]';

/** Reads `encryption` options, or undefined when there are none. Messages never repeat the key. */
export function readEncryption(value: unknown, path = 'encryption', errorCode: 'INVALID_OPTIONS' | 'INVALID_ARGUMENT' = 'INVALID_OPTIONS'): ReadKey | undefined {
  const invalid = (at: string, message: string): never => {
    throw new PagewiseError(errorCode, MODULE, `${at} ${message}`, { path: at });
  };
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) invalid(path, 'must be an object: { key } (32 random bytes or an AES-GCM CryptoKey) or { passphrase }.');
  const o = value as EncryptionOptions & Record<string, unknown>;
  for (const k of Object.keys(o)) if (!['key', 'passphrase', 'kdf'].includes(k)) invalid(`${path}.${k}`, 'is not an encryption option: use key, passphrase or kdf.');
  if ((o.key === undefined) === (o.passphrase === undefined)) invalid(path, 'needs exactly one of `key` (32 random bytes, or an AES-GCM CryptoKey) and `passphrase` (a string).');
  const kdf: ReadKey['kdf'] = { ...DEFAULT_KDF };
  if (o.kdf !== undefined) {
    if (typeof o.kdf !== 'object' || o.kdf === null) invalid(`${path}.kdf`, 'must be an object: { memoryKiB, iterations }.');
    const { memoryKiB, iterations } = o.kdf;
    if (memoryKiB !== undefined && (!Number.isInteger(memoryKiB) || memoryKiB < 1024 || memoryKiB > MOST_MEMORY_KIB)) invalid(`${path}.kdf.memoryKiB`, `must be a whole number from 1024 to ${MOST_MEMORY_KIB} (default ${DEFAULT_KDF.memoryKiB}).`);
    if (iterations !== undefined && (!Number.isInteger(iterations) || iterations < 1 || iterations > MOST_ITERATIONS)) invalid(`${path}.kdf.iterations`, `must be a whole number from 1 to ${MOST_ITERATIONS} (default ${DEFAULT_KDF.iterations}).`);
    if (memoryKiB !== undefined) kdf.memoryKiB = memoryKiB;
    if (iterations !== undefined) kdf.iterations = iterations;
  }
  if (o.passphrase !== undefined) {
    if (typeof o.passphrase !== 'string' || o.passphrase.length === 0) invalid(`${path}.passphrase`, 'must be a non-empty string.');
    return { kind: 'passphrase', passphrase: o.passphrase.normalize('NFC'), kdf };
  }
  if (isCryptoKey(o.key)) {
    const k = o.key;
    if (k.algorithm.name !== 'AES-GCM' || !k.usages.includes('encrypt') || !k.usages.includes('decrypt')) {
      invalid(`${path}.key`, 'must be an AES-GCM CryptoKey with the usages encrypt and decrypt, e.g. crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]).');
    }
    return { kind: 'cryptoKey', cryptoKey: k, kdf };
  }
  if (!(o.key instanceof Uint8Array) || o.key.byteLength !== 32) {
    invalid(`${path}.key`, `must be 32 random bytes (a Uint8Array, e.g. crypto.getRandomValues(new Uint8Array(32))) or an AES-GCM CryptoKey; got ${o.key instanceof Uint8Array ? `${o.key.byteLength} bytes` : typeof o.key}.`);
  }
  return { kind: 'key', bytes: new Uint8Array(o.key as Uint8Array), kdf };
}

type SlotFields = Pick<KeySlot, 'generation' | 'kind' | 'kdf' | 'salt'>;

async function kek(key: ReadKey, slot: SlotFields): Promise<Uint8Array> {
  if (key.kind === 'key') return key.bytes!;
  const { memoryKiB: m, iterations: t, parallelism: p } = slot.kdf;
  return argon2idAsync(new TextEncoder().encode(key.passphrase!), slot.salt, { m, t, p, dkLen: 32 });
}

/** Seals `dek` under the app's key in a new slot of generation `generation`. */
export async function makeSlot(key: ReadKey, fileId: Uint8Array, dek: Uint8Array, generation: number): Promise<KeySlot> {
  const fields: SlotFields = {
    generation,
    kind: SLOT_KIND[key.kind],
    kdf: key.kind === 'passphrase' ? key.kdf : { memoryKiB: 0, iterations: 0, parallelism: 0 },
    salt: key.kind === 'passphrase' ? randomBytes(16) : new Uint8Array(16),
  };
  const nonce = randomBytes(24);
  const aad = slotAad(fileId, fields);
  let wrapped: Uint8Array;
  if (key.kind === 'cryptoKey') {
    wrapped = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv: nonce.slice(0, 12), additionalData: aad as Uint8Array<ArrayBuffer>, tagLength: 128 }, key.cryptoKey!, dek as Uint8Array<ArrayBuffer>));
  } else {
    wrapped = xchacha20poly1305(await kek(key, fields), nonce, aad).encrypt(dek);
  }
  return { ...fields, nonce, wrapped };
}

/** The data key from the slot the app's key opens, and that slot's index; WRONG_KEY when none opens. */
export async function unlock(header: Header, key: ReadKey): Promise<{ dek: Uint8Array; slot: number }> {
  const order = header.slots.map((s, i) => ({ s, i })).filter((x): x is { s: KeySlot; i: number } => x.s !== undefined)
    .sort((a, b) => b.s.generation - a.s.generation);
  const kinds = new Set(order.map((x) => x.s.kind));
  for (const { s, i } of order) {
    if (s.kind !== SLOT_KIND[key.kind]) continue;
    if (s.kind === SLOT_KIND.passphrase && (s.kdf.memoryKiB < 8 || s.kdf.memoryKiB > MOST_MEMORY_KIB || s.kdf.iterations < 1 || s.kdf.iterations > MOST_ITERATIONS || s.kdf.parallelism < 1 || s.kdf.parallelism > 16)) continue;
    const aad = slotAad(header.fileId, s);
    try {
      const dek = s.kind === SLOT_KIND.cryptoKey
        ? new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: s.nonce.slice(0, 12), additionalData: aad as Uint8Array<ArrayBuffer>, tagLength: 128 }, key.cryptoKey!, s.wrapped as Uint8Array<ArrayBuffer>))
        : xchacha20poly1305(await kek(key, s), s.nonce, aad).decrypt(s.wrapped);
      if (dek.length === 32) return { dek, slot: i };
    } catch { /* not this slot's key */ }
  }
  const needs = [...kinds].map((k) => (k === SLOT_KIND.passphrase ? 'a passphrase' : k === SLOT_KIND.cryptoKey ? 'a CryptoKey' : 'a 32-byte key')).join(' or ');
  throw new PagewiseError('WRONG_KEY', MODULE, `The ${key.kind === 'passphrase' ? 'passphrase' : 'key'} given does not open this encrypted database${needs ? ` (it opens with ${needs})` : ''}. Nothing was changed; open it with the key it was written with.`);
}

/** A header and data key for a new encrypted database. */
export async function newHeader(key: ReadKey, pageSize: number): Promise<{ header: Header; dek: Uint8Array }> {
  const dek = randomBytes(32);
  const fileId = randomBytes(16);
  return { header: { pageSize, fileId, slots: [await makeSlot(key, fileId, dek, 1), undefined] }, dek };
}
