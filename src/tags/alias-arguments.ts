import { PagewiseError, isPagewiseError } from '../contracts/errors.js';
import { checkWellFormed, describe, validateConversationId } from '../common/messages.js';
import { slug } from './canonicalize.js';

// The arguments of the alias API, checked before anything is read or stored.
const MODULE = 'aliases';
/** The longest alias or tag accepted, in UTF-16 code units (a canonical tag is cut to 64 characters). */
export const MAX_ALIAS_LENGTH = 128;
const DEFAULT_SUGGESTIONS = 50;

export function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path}: ${message}`, { path });
}

/** A caller's alias or tag, canonical; anything that names no tag is INVALID_ARGUMENT. */
export function spelling(value: unknown, path: string, example: string): string {
  if (typeof value !== 'string') invalid(path, `must be a string such as "${example}" (got ${describe(value)}).`);
  if (value.length > MAX_ALIAS_LENGTH) {
    invalid(path, `is ${value.length} characters long, over ${MAX_ALIAS_LENGTH}: pass the tag's name (a word or a few), such as "${example}".`);
  }
  checkWellFormed(value, 'INVALID_ARGUMENT', path, MODULE);
  const canonical = slug(value);
  if (canonical === '') invalid(path, `has no letters or digits (got ${describe(value)}), so it names no tag. Pass a word such as "${example}".`);
  return canonical;
}

/** The optional last argument `{ conversationId }`: the conversation, or null for every conversation. */
export function scopeOf(value: unknown, method: string): string | null {
  if (value === undefined) return null;
  const hint = `${method} takes an optional { conversationId } as its last argument (leave it out for every conversation)`;
  let field: PropertyDescriptor | undefined;
  try {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) invalid('scope', `${hint}; got ${describe(value)}.`);
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) invalid('scope', `${hint}; got an object that is not a plain object.`);
    for (const key of Reflect.ownKeys(value)) {
      // A misspelt key must not turn a per-conversation alias into a global one.
      if (key !== 'conversationId') invalid('scope', `${hint}; ${typeof key === 'string' ? describe(key) : 'a symbol'} is not an option.`);
    }
    field = Object.getOwnPropertyDescriptor(value, 'conversationId');
  } catch (error) {
    // A Proxy whose traps throw (or a revoked one).
    if (isPagewiseError(error)) throw error;
    invalid('scope', `${hint}; got an object that cannot be read.`);
  }
  if (field === undefined) return null;
  if (!('value' in field)) invalid('scope.conversationId', 'must be a plain property holding a string, not a getter.');
  return field.value === undefined ? null : validateConversationId(field.value, 'scope.conversationId');
}

export function limitOf(value: unknown): number {
  if (value === undefined) return DEFAULT_SUGGESTIONS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    invalid('limit', `must be an integer ≥ 1 (got ${describe(value)}); leave it out for ${DEFAULT_SUGGESTIONS}.`);
  }
  return value;
}
