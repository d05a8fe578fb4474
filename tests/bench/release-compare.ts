// npm run bench -- --only=release --against=../pagewise-fdf74cc — the chat replay (tests/bench/chat-replay.ts: LoCoMo
// as a chat, live embedding) in this tree and in another checkout (a worktree of an earlier release:
// `git worktree add ../pagewise-fdf74cc fdf74cc`, its node_modules installed or linked), alternating A B A B, each
// run a fresh process, so that a slower machine moment hits both. Prints each run's p95 and the ratios.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

interface Figures { inbound: number; complete: number }

function run(tree: string): Figures {
  const out = spawnSync(process.execPath, ['--import', 'tsx', 'tests/bench/run.ts', '--only=chat'], { cwd: tree, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const line = /embeddings live\s+onMessageInbound p50 [\d.]+ ms, p95 ([\d.]+) ms.*onTurnComplete p50 [\d.]+ ms, p95 ([\d.]+) ms/.exec(out.stdout);
  if (!line) throw new Error(`no chat replay figures from ${tree}:\n${out.stdout.slice(-2000)}\n${out.stderr.slice(-2000)}`);
  return { inbound: Number(line[1]), complete: Number(line[2]) };
}

export function releaseCompare(args: Map<string, string>): void {
  const against = args.get('against');
  if (!against) throw new Error('--against=PATH: a checkout of the release to compare with (git worktree add ../pagewise-fdf74cc fdf74cc)');
  const here = resolve(import.meta.dirname, '../..');
  const rounds = Number(args.get('rounds') ?? 2);
  const rows: { round: number; main: Figures; release: Figures }[] = [];
  for (let r = 1; r <= rounds; r++) {
    const release = run(resolve(against));
    const main = run(here);
    rows.push({ round: r, main, release });
    console.log(`round ${r}: onMessageInbound p95 release ${release.inbound} ms, this tree ${main.inbound} ms (×${(main.inbound / release.inbound).toFixed(2)}) · onTurnComplete p95 release ${release.complete} ms, this tree ${main.complete} ms (×${(main.complete / release.complete).toFixed(2)})`);
  }
  const worst = (k: keyof Figures) => Math.max(...rows.map((x) => x.main[k] / x.release[k]));
  console.log(`\nChat replay with live embedding, this tree against ${against}, ${rounds} rounds alternating: worst ratio onMessageInbound ×${worst('inbound').toFixed(2)}, onTurnComplete ×${worst('complete').toFixed(2)} (aim ≤ 1.00: no slower)`);
}
