// `pagewise branches ID` and `pagewise checkout ID MESSAGE_ID`: a conversation as a tree (edits and regenerations
// fork it), as a table on stdout (--json: memory.branches() as it is), and the switch to another branch.
import type { Memory } from '../contracts/memory.js';
import type { BranchList } from '../contracts/types-branches.js';
import { inline } from '../common/as-data.js';
import { count } from './cli-text.js';

export interface BranchCommandContext {
  json: boolean;
  /** --conversation, when the id is not given as the first argument. */
  given?: string | undefined;
}

/** A command on an open memory: its exit code. */
export type BranchCommand = (memory: Memory, c: BranchCommandContext, rest: string[]) => Promise<number>;

/** Columns padded to their widest cell, two spaces apart (the last one unpadded). */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd());
}

/**
 * The tree in words: the head, one row per branch (`*`: the current one), then the places with alternatives. Ids are
 * shown on one line each (inline): a stored id is data, not terminal output.
 */
export function describeBranches(list: BranchList): string {
  const id = (x: string | null) => (x === null ? '(start)' : inline(x));
  const rows = [
    ['', 'START', 'FORKS AFTER', 'TIP', 'TURNS', 'ON PATH', 'FIRST', 'LAST'],
    ...list.branches.map((b) => [b.current ? '*' : '', id(b.start), id(b.forkAfter), id(b.tip), String(b.turns), String(b.onPath), b.firstAt, b.lastAt]),
  ];
  const forks = list.forks.map((f) => `  after ${id(f.after)}: ${f.starts.map(id).join(' | ')} (${count(f.starts.length, 'alternative')})`);
  return [
    `conversation ${inline(list.conversationId)}: ${count(list.branches.length, 'branch', 'branches')}, head ${list.head === null ? '(none)' : inline(list.head)}`,
    ...table(rows),
    forks.length > 0 ? 'forks:' : 'forks: none (no message was edited or regenerated)',
    ...forks,
  ].join('\n');
}

function print(json: boolean, list: BranchList, text: () => string): number {
  process.stdout.write(`${json ? JSON.stringify(list, null, 2) : text()}\n`);
  return 0;
}

/** The commands, with the error a bad command line raises (the CLI's, exit code 2). */
export function branchCommands(usage: (message: string) => Error): [string, BranchCommand][] {
  const conversation = (command: string, c: BranchCommandContext, rest: string[]): string => {
    const id = rest[0] ?? c.given;
    if (!id) throw usage(`${command} needs a conversation id: pagewise ${command} ID${command === 'checkout' ? ' MESSAGE_ID' : ''} (pagewise status lists them).`);
    return id;
  };
  return [
    ['branches', async (memory, c, rest) => {
      const list = await memory.branches(conversation('branches', c, rest));
      return print(c.json, list, () => describeBranches(list));
    }],
    ['checkout', async (memory, c, rest) => {
      // With --conversation the message id may come first.
      const [conversationId, messageId] = rest.length >= 2 ? [rest[0]!, rest[1]!] : [conversation('checkout', c, []), rest[0]];
      if (!messageId) throw usage('checkout needs the id of a message on the branch to switch to: pagewise checkout ID MESSAGE_ID (pagewise branches ID lists them).');
      const list = await memory.checkout(conversationId, messageId);
      return print(c.json, list, () => `now on the branch through ${inline(messageId)} (head ${list.head === null ? '(none)' : inline(list.head)})\n${describeBranches(list)}`);
    }],
  ];
}
