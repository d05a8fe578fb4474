/** What reconciliation compares: a caller id when there is one, and the content hash. */
export interface MessageKey {
  id?: string;
  contentHash: string;
}

/** Whether a stored message is the incoming one: the same id, or — where ids do not tell — the same content. */
export function sameMessage(stored: Required<MessageKey>, incoming: MessageKey): boolean {
  if (incoming.id !== undefined && stored.id === incoming.id) return true;
  // An id the engine made (`pw_…`) never matches a caller id, so such a pair is compared by content.
  if (incoming.id !== undefined && !stored.id.startsWith('pw_')) return false;
  return stored.contentHash === incoming.contentHash;
}

/**
 * How many leading incoming messages are already stored at the end of the conversation: the longest suffix of
 * `storedTail` equal to a prefix of `incoming`. Callers send the whole history or its tail; either way the
 * overlap is what was stored before and the rest is new. Without ids, re-sending an identical exchange as if new
 * is indistinguishable from re-sending the stored tail: give messages ids to tell them apart.
 */
export function storedOverlap(storedTail: readonly Required<MessageKey>[], incoming: readonly MessageKey[]): number {
  const max = Math.min(storedTail.length, incoming.length);
  for (let k = max; k > 0; k--) {
    const start = storedTail.length - k;
    let ok = true;
    for (let i = 0; i < k; i++) {
      if (!sameMessage(storedTail[start + i]!, incoming[i]!)) { ok = false; break; }
    }
    if (ok) return k;
  }
  return anchoredOverlap(storedTail, incoming);
}

/**
 * Fallback when the incoming list does not start inside the stored tail — a whole history whose older part the
 * caller edited or trimmed. Anchor on the last place where the stored tail's last two (or more) messages appear in
 * order; what follows is new. Without such an anchor everything is new.
 */
function anchoredOverlap(storedTail: readonly Required<MessageKey>[], incoming: readonly MessageKey[]): number {
  const last = storedTail.length - 1;
  const need = Math.min(2, storedTail.length);
  if (need === 0) return 0;
  for (let p = incoming.length - 1; p >= need - 1; p--) {
    let run = 0;
    while (run <= p && run <= last && sameMessage(storedTail[last - run]!, incoming[p - run]!)) run++;
    if (run >= need) return p + 1;
  }
  return 0;
}
