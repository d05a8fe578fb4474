// What a relayPeer holds while it syncs: the way to its relay (HTTP or RPC), the keys, the relay's id and the last log
// position it heard of; and the places every sealed blob is bound to. What is sealed where:
//   check                          a constant: the key check the first device leaves on a new relay
//   log:<seq>:<eid>:<device>       a log entry: one pushed batch's tombstones and turns
//   cursor:<slot>:<device>         how far the relay has read a device (its cursor, under a conversation filter)
//   state:<slot>:<device>          that device's pins, manual aliases and checkouts as its last batch carried them
//   ref:<key>                      an attachment: its id and media type
//   piece:<key>:<start>            a piece of an attachment's bytes
// `slot` and `key` are HMACs of the conversation filter and of the attachment's id; `device` is a replica id.
import { PagewiseError } from '../contracts/errors.js';
import { describe } from '../common/messages.js';
import { fromBase64, toBase64 } from '../common/parts.js';
import type { SyncMissing } from '../contracts/types-sync.js';
import type { RelayMissing, RelayStateAnswer, RelayTarget } from '../storage/relay-protocol.js';
import { relayKeys, wrongKey, type RelayKeys } from './relay-crypto.js';
import { httpRelay } from './relay-transport.js';

const MODULE = 'sync-relay';
const CHECK = 'pagewise relay key check v1';
const utf8 = new TextEncoder();
const text = new TextDecoder();

export class RelaySession {
  readonly url: string | null;
  readonly keys: RelayKeys;
  /** The relay's id, once an answer gave it. */
  relay: string | null = null;
  /** The last log position heard of (where a push is sealed for: the one after). */
  end = 0;
  readonly #transport: RelayTarget;

  constructor(target: string | RelayTarget, options: Record<string, unknown>) {
    this.keys = relayKeys(options.key, () => this.relay!);
    if (typeof target === 'string') {
      const http = httpRelay(target, options);
      this.url = http.url;
      this.#transport = http;
    } else if (typeof (target as Partial<RelayTarget> | null)?.call === 'function') {
      this.url = null;
      this.#transport = { call: (op, args) => target.call(op, args) };
    } else {
      throw new PagewiseError('INVALID_OPTIONS', MODULE, `relayPeer's target is the relay endpoint's URL, or a relay object's stub (relayStub(env.RELAY, name)) (got ${describe(target)}).`, { path: 'target' });
    }
  }

  /** One operation; an answer from another relay than the one this sync started with stops it (`fresh`: any). */
  async call<T extends { relay: string }>(op: string, args: unknown, fresh = false): Promise<T> {
    const answer = await this.#transport.call(op, args) as T;
    if (typeof answer?.relay !== 'string') throw new PagewiseError('STORAGE_ERROR', MODULE, `The relay answered ${op} without its id: check that the target is a pagewise relay and that both sides run the same pagewise version.`);
    if (!fresh && this.relay !== null && answer.relay !== this.relay) {
      throw new PagewiseError('STORAGE_ERROR', MODULE, 'The relay was replaced during this sync (its id changed): run the sync again; it starts over with the new relay.');
    }
    return answer;
  }

  seal(value: unknown, place: string): string {
    return toBase64(this.keys.seal(utf8.encode(JSON.stringify(value)), place));
  }

  open<T>(blob: string, place: string): T {
    return JSON.parse(text.decode(this.keys.open(fromBase64(blob), place))) as T;
  }

  slotOf(filter: string[] | null): string {
    return this.keys.name(`slot\n${JSON.stringify(filter)}`);
  }

  keyOf(attachment: string): string {
    return this.keys.name(`attachment\n${attachment}`);
  }

  missingOf(list: readonly RelayMissing[]): SyncMissing[] {
    return list.map((m) => ({ id: this.open<{ id: string }>(m.ref, `ref:${m.key}`).id, from: m.have }));
  }

  /** The relay's state (its id, its key check — sealed by the first device that used it, opened by every other). */
  async meet(args: Record<string, unknown>): Promise<RelayStateAnswer> {
    const s = await this.call<RelayStateAnswer>('state', args, true);
    this.relay = s.relay;
    this.end = s.end;
    const check = s.check ?? (await this.call<{ relay: string; check: string }>('check', { blob: this.seal(CHECK, 'check') })).check;
    if (this.open<string>(check, 'check') !== CHECK) throw wrongKey();
    return s;
  }

  /** The relay's id, asked for (and its key checked) when no answer gave it yet. */
  async ensure(): Promise<string> {
    return this.relay ?? (await this.meet({})).relay;
  }
}
