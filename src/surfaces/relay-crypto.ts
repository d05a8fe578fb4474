// The relay's cryptography, on the devices only: XChaCha20-Poly1305 with a random 24-byte nonce per blob, and
// associated data that binds each blob to its relay, its kind and its place (a log position, a device's slot, an
// attachment's piece), so that the server cannot move a blob to another slot, or replay it there, undetected. Names
// the server stores things under (a conversation filter's slot, an attachment) are HMACs it cannot invert. Two keys
// are derived from the caller's with HKDF-SHA-256; the caller's key itself is used for nothing else and never leaves.
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { PagewiseError } from '../contracts/errors.js';
import { SEAL_OVERHEAD } from '../storage/relay-protocol.js';

const MODULE = 'sync-relay';
const utf8 = new TextEncoder();
const SALT = utf8.encode('pagewise relay v1');

/** What a relay's devices do with their key: seal and open blobs, and name things opaquely. */
export interface RelayKeys {
  /** `plain` sealed for `place` (its kind and position, e.g. `log:7:<device>:<eid>`): nonce ‖ ciphertext ‖ tag. */
  seal(plain: Uint8Array, place: string): Uint8Array;
  /** The bytes sealed for `place`; WRONG_KEY when this key did not seal them there. */
  open(sealed: Uint8Array, place: string): Uint8Array;
  /** An opaque name for `label`: HMAC-SHA-256 under a derived key, 64 hex digits. */
  name(label: string): string;
}

/** The error for a blob this key does not open. */
export function wrongKey(cause?: unknown): PagewiseError {
  return new PagewiseError('WRONG_KEY', MODULE, 'The relay\'s data was written with another key than this one, or changed on the server: pass the key this relay was first used with (the same on every device). What it was in was not applied.', cause === undefined ? undefined : { cause });
}

/**
 * The keys of a relay from the caller's 32 bytes (a copy is taken: changing the array afterwards changes nothing).
 * Anything else is INVALID_OPTIONS, without a word of what was given.
 */
export function relayKeys(key: unknown, relayOf: () => string): RelayKeys {
  if (!(key instanceof Uint8Array) || key.length !== 32) {
    const what = key instanceof Uint8Array ? `a Uint8Array of ${key.length} bytes` : key === undefined ? 'nothing' : `a ${key === null ? 'null' : typeof key}`;
    throw new PagewiseError('INVALID_OPTIONS', MODULE, `options.key must be the relay's key: a Uint8Array of 32 random bytes (crypto.getRandomValues(new Uint8Array(32))), the same on every device, kept where the relay cannot read it (got ${what}).`, { path: 'key' });
  }
  const master = Uint8Array.from(key);
  const sealKey = hkdf(sha256, master, SALT, utf8.encode('seal'), 32);
  const nameKey = hkdf(sha256, master, SALT, utf8.encode('name'), 32);
  master.fill(0);
  const ad = (place: string) => utf8.encode(`pagewise-relay/1\n${relayOf()}\n${place}`);
  return {
    seal(plain, place) {
      const nonce = crypto.getRandomValues(new Uint8Array(24));
      const sealed = xchacha20poly1305(sealKey, nonce, ad(place)).encrypt(plain);
      const out = new Uint8Array(nonce.length + sealed.length);
      out.set(nonce);
      out.set(sealed, nonce.length);
      return out;
    },
    open(sealed, place) {
      try {
        if (sealed.length < SEAL_OVERHEAD) throw new Error('too short');
        return xchacha20poly1305(sealKey, sealed.subarray(0, 24), ad(place)).decrypt(sealed.subarray(24));
      } catch (cause) {
        throw wrongKey(cause);
      }
    },
    name(label) {
      return Array.from(hmac(sha256, nameKey, utf8.encode(label)), (b) => b.toString(16).padStart(2, '0')).join('');
    },
  };
}
