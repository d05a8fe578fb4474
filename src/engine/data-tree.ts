// The tree in pagewise's portable format: each turn on a branch other than the conversation's first says where its
// branch starts (`branch: { start, after }`), and a conversation whose head is not its last turn says which it is.
// Reading it back (an import) and moving the imported conversation to its head.
import { PagewiseError } from '../contracts/errors.js';
import { describe, readRecord } from '../common/messages.js';
import { compareKeys, headOf, type HeadRegister, type Place } from '../store/tree.js';
import { moveTo, type BranchDeps } from './branches.js';
import type { Statement } from '../contracts/types.js';

const MODULE = 'data';

function invalid(path: string, message: string): never {
  throw new PagewiseError('INVALID_ARGUMENT', MODULE, `${path} ${message}`, { path });
}

/**
 * Each turn's place (undefined: the first branch) and the head, checked: a branch's `after` is '' (the start) or a
 * message before it in the list; every turn of a branch says the same; the head names a message of the conversation.
 */
export function readTree(raw: readonly unknown[], ids: readonly string[], head: unknown, path: string): { places: (Place | undefined)[]; head: string | null | undefined } {
  const index = new Map(ids.map((id, i) => [id, i]));
  const starts = new Map<string, string>();
  const places = raw.map((t, i): Place | undefined => {
    const value = (t as { branch?: unknown } | null)?.branch;
    if (value === undefined) return undefined;
    const at = `${path}.turns[${i}].branch`;
    const b = readRecord(value, at, 'INVALID_ARGUMENT', MODULE);
    if (!b || typeof b.start !== 'string' || b.start === '' || typeof b.after !== 'string') invalid(at, `must be { start, after } as memory.export() writes it: its branch's first message id and the message it follows ('' : the start) (got ${describe(value)}).`);
    const before = b.after === '' ? -1 : index.get(b.after);
    if (before === undefined || before >= i) invalid(`${at}.after`, `must name a message before this one (or be '' for the conversation's start; got ${describe(b.after)}).`);
    if ((starts.get(b.start) ?? b.after) !== b.after) invalid(`${at}.after`, `differs from another message of branch ${describe(b.start)}.`);
    starts.set(b.start, b.after);
    return { branch: b.start, forkAfter: b.after, forkBranch: null, forkOrd: null };
  });
  if (head !== undefined && head !== null && (typeof head !== 'string' || !index.has(head))) invalid(`${path}.head`, `must be the id of one of the conversation's messages, or null (got ${describe(head)}).`);
  return { places, head: head as string | null | undefined };
}

/**
 * The statements that move an imported conversation to its head (the export's, else its last message written), for
 * the import's last transaction. Resolves with whether turns left the path (what was tagged there is made again).
 */
export async function importedHead(d: BranchDeps, conversationId: string, head: string | null | undefined, nowIso: string): Promise<{ statements: Statement[]; moved: boolean }> {
  const nodes = await d.tree.nodes(conversationId);
  const register: HeadRegister | null = head === undefined ? null : { turnId: head ?? '', ord: Number.MAX_SAFE_INTEGER, origin: '', at: nowIso };
  const target = register ? headOf(nodes, register) : nodes.sort(compareKeys)[nodes.length - 1] ?? null;
  const move = await moveTo(d, conversationId, nodes, target);
  return { statements: [...move.statements, ...(head !== undefined ? [d.tree.checkoutStatement(conversationId, head ?? '', nowIso)] : [])], moved: move.moved };
}
