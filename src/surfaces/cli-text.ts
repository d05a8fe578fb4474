// The CLI's words: counts with their nouns in agreement, and the progress of a long command on stderr.

/**
 * A number with its noun, singular for one: `count(1, 'conversation')` → "1 conversation", `count(2, 'summary',
 * 'summaries')` → "2 summaries".
 *
 * @example
 * count(conversations.length, 'conversation')
 */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}

/** Where progress goes: process.stderr, or anything with its shape. */
export interface ProgressStream {
  isTTY?: boolean | undefined;
  write(text: string): unknown;
}

export interface Progress {
  /** What is done so far: on a terminal the line shows it (rewritten in place); elsewhere it is kept for the end. */
  update(text: string): void;
  /** The last line: `text` when given (the command finished), else the last update is left as it was. */
  end(text?: string): void;
}

/** A terminal's line is rewritten at most this often (a fast import would otherwise flood it). */
const TTY_INTERVAL_MS = 100;

/**
 * Progress lines of one command, prefixed with `label`. On a terminal: one line, rewritten in place as the work goes
 * on. Elsewhere (a pipe, a log file, CI): a line when it starts (`start`, when given) and one when it ends — a log
 * gets no line per step.
 *
 * @example
 * const p = progress(process.stderr, 'import', `${count(total, 'batch', 'batches')} to store`);
 * p.update(`${done}/${total} batches`);
 * p.end(`${total}/${total} batches`);
 */
export function progress(stream: ProgressStream, label: string, start?: string, now: () => number = Date.now): Progress {
  const tty = stream.isTTY === true;
  let shown = 0;
  let pending = false;
  let last: string | undefined;
  if (start !== undefined) stream.write(tty ? `\r\x1b[K${label}: ${start}` : `${label}: ${start}\n`);
  let lineOpen = tty && start !== undefined;
  return {
    update(text) {
      last = text;
      if (!tty) return;
      const t = now();
      if (lineOpen && t - shown < TTY_INTERVAL_MS) { pending = true; return; }
      stream.write(`\r\x1b[K${label}: ${text}`);
      shown = t;
      pending = false;
      lineOpen = true;
    },
    end(text) {
      const final = text ?? (pending ? last : undefined);
      if (tty) {
        if (final !== undefined) stream.write(`\r\x1b[K${label}: ${final}\n`);
        else if (lineOpen) stream.write('\n');
      } else if (text !== undefined) {
        stream.write(`${label}: ${text}\n`);
      }
      lineOpen = false;
    },
  };
}
