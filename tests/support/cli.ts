// The CLI as a user runs it: a separate Node process (src/surfaces/cli.ts through tsx), its stdout, stderr and exit
// code. stdin, stdout and stderr are pipes, not a terminal.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

export const CLI_SOURCE = resolve(import.meta.dirname, '../../src/surfaces/cli.ts');

export interface CliRun {
  code: number | null;
  out: string;
  err: string;
  json: () => Record<string, unknown>;
}

/** Runs `pagewise ARGS…` in `cwd` (default: this process's) and waits for it to exit. */
export function cliIn(cwd: string | undefined, ...args: string[]): CliRun {
  // tsx by its absolute URL: a cwd outside the repository has no node_modules to find it in.
  const r = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), CLI_SOURCE, ...args], { cwd, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr, json: () => JSON.parse(r.stdout) as Record<string, unknown> };
}

/** Runs `pagewise ARGS…` and waits for it to exit. */
export const cli = (...args: string[]): CliRun => cliIn(undefined, ...args);
