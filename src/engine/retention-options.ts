// The `retention` option and a conversation's own policy (memory.setRetention), read once and checked: what the
// engine enforces (engine/retention.ts) is always a resolved, valid policy.
import { PagewiseError } from '../contracts/errors.js';
import { describe, readRecord } from '../common/messages.js';

/** The background re-checks the policy this often unless the option says otherwise (an hour). */
export const DEFAULT_INTERVAL_MS = 3_600_000;
/** Turns removed per slice unless the option says otherwise. */
export const DEFAULT_SLICE_TURNS = 512;
/** At most this many turns per slice (one transaction: at the edge, one alarm's CPU). */
export const MAX_SLICE_TURNS = 10_000;
/** A hundred years: a bound past it keeps everything anyway. */
const MAX_DAYS = 36_500;

/** The `retention` option with its defaults filled in. */
export interface ResolvedRetention {
  maxAgeDays: number | null;
  maxConversations: number | null;
  idleDays: number | null;
  keepPinned: boolean;
  /** null: only memory.applyRetention() enforces it. */
  intervalMs: number | null;
  sliceTurns: number;
}

/**
 * A conversation's own policy as stored: each bound its own (a number, or null for none) or the option's
 * (undefined); keepPinned likewise.
 */
export interface ConversationPolicy {
  maxAgeDays?: number | null;
  idleDays?: number | null;
  keepPinned?: boolean;
}

type Fail = (path: string, message: string) => never;

const optionError: Fail = (path, message) => {
  throw new PagewiseError('INVALID_OPTIONS', 'options', `\`${path}\` ${message}`, { path });
};
const argumentError: Fail = (path, message) => {
  throw new PagewiseError('INVALID_ARGUMENT', 'retention', `${path} ${message}`, { path });
};

function days(value: unknown, path: string, fail: Fail): number | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_DAYS) {
    fail(path, `must be a number of days above 0 and at most ${MAX_DAYS.toLocaleString('en-US')} (fractions allowed), or null for no bound (got ${describe(value)}).`);
  }
  return value;
}

function integer(value: unknown, path: string, min: number, max: number, fail: Fail, hint: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    fail(path, `must be an integer from ${min.toLocaleString('en-US')} to ${max.toLocaleString('en-US')}${hint} (got ${describe(value)}).`);
  }
  return value;
}

function keys(record: Record<string, unknown>, allowed: readonly string[], path: string, fail: Fail, extra = ''): void {
  for (const key of Object.keys(record)) {
    if (!allowed.includes(key)) fail(`${path}.${key}`, `is not a retention setting${extra}; the settings are ${allowed.join(', ')}.`);
  }
}

const OPTION_KEYS = ['maxAgeDays', 'maxConversations', 'idleDays', 'keepPinned', 'intervalMs', 'sliceTurns'] as const;
const POLICY_KEYS = ['maxAgeDays', 'idleDays', 'keepPinned'] as const;

/** The `retention` option, checked (INVALID_OPTIONS with its path); null when it is left out. */
export function readRetention(value: unknown): ResolvedRetention | null {
  if (value === undefined || value === null) return null;
  const r = readRecord(value, 'retention', 'INVALID_OPTIONS', 'options');
  if (!r) optionError('retention', `must be an object such as { maxAgeDays: 30 } (got ${describe(value)}).`);
  keys(r, OPTION_KEYS, 'retention', optionError);
  const maxConversations = r.maxConversations === undefined || r.maxConversations === null ? null
    : integer(r.maxConversations, 'retention.maxConversations', 1, Number.MAX_SAFE_INTEGER, optionError, ', or null for no bound');
  if (r.keepPinned !== undefined && typeof r.keepPinned !== 'boolean') optionError('retention.keepPinned', `must be true or false (got ${describe(r.keepPinned)}).`);
  const intervalMs = r.intervalMs === undefined ? DEFAULT_INTERVAL_MS : r.intervalMs === null ? null
    : integer(r.intervalMs, 'retention.intervalMs', 1, 2 ** 31 - 1, optionError, ' ms, or null to enforce only when memory.applyRetention() is called');
  return {
    maxAgeDays: days(r.maxAgeDays, 'retention.maxAgeDays', optionError) ?? null,
    maxConversations,
    idleDays: days(r.idleDays, 'retention.idleDays', optionError) ?? null,
    keepPinned: r.keepPinned ?? true,
    intervalMs,
    sliceTurns: r.sliceTurns === undefined ? DEFAULT_SLICE_TURNS : integer(r.sliceTurns, 'retention.sliceTurns', 1, MAX_SLICE_TURNS, optionError, ''),
  };
}

/** setRetention's policy, checked (INVALID_ARGUMENT with its path): null removes the conversation's own. */
export function readPolicy(value: unknown): ConversationPolicy | null {
  if (value === null) return null;
  const r = value === undefined ? undefined : readRecord(value, 'policy', 'INVALID_ARGUMENT', 'retention');
  if (!r) argumentError('policy', `must be an object such as { maxAgeDays: 30 }, or null to remove the conversation's own policy (got ${describe(value)}).`);
  if (Object.hasOwn(r, 'maxConversations')) argumentError('policy.maxConversations', 'is a bound on all conversations: set it in the `retention` option, not per conversation.');
  keys(r, POLICY_KEYS, 'policy', argumentError, ' of a conversation');
  if (r.keepPinned !== undefined && typeof r.keepPinned !== 'boolean') argumentError('policy.keepPinned', `must be true or false, or left out for the option's (got ${describe(r.keepPinned)}).`);
  const policy: ConversationPolicy = {};
  const age = days(r.maxAgeDays, 'policy.maxAgeDays', argumentError);
  const idle = days(r.idleDays, 'policy.idleDays', argumentError);
  if (age !== undefined) policy.maxAgeDays = age;
  if (idle !== undefined) policy.idleDays = idle;
  if (typeof r.keepPinned === 'boolean') policy.keepPinned = r.keepPinned;
  return policy;
}
