// A conversation as a tree: edits and regenerations fork it, and memory follows the branch the user is on.

/** One branch: the turns from where it forks to its tip. The conversation's first branch forks from nowhere. */
export interface BranchInfo {
  /** The id of its first message (where it differs from the branch it forks from). */
  start: string;
  /** The message it follows: the last one it shares with the branch it forks from; null at the conversation's start. */
  forkAfter: string | null;
  /** The id of its last message. */
  tip: string;
  /** Its own messages (not those it shares with the branches before it). */
  turns: number;
  /** When its first and last messages were written (their `createdAt`). */
  firstAt: string;
  lastAt: string;
  /** The head (the message the conversation is at) is on it. */
  current: boolean;
  /** How many of its messages are on the path to the head (the current branch and the stretches of others it continues). */
  onPath: number;
}

/** `memory.branches()`: the tree of a conversation. */
export interface BranchList {
  conversationId: string;
  /**
   * The message the conversation is at: the last message written, unless `checkout` (or a history sent) chose another
   * since. null when nothing is stored, or when the next message starts the conversation over.
   */
  head: string | null;
  /** Every branch, first written first. */
  branches: BranchInfo[];
  /**
   * Every place with alternatives (an edited message, a regenerated reply): the message they follow (null: the start)
   * and the first message of each alternative, first written first — what a chat shows as "2 of 3".
   */
  forks: { after: string | null; starts: string[] }[];
}
