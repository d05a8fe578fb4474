import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The official MCP conformance suite (@modelcontextprotocol/conformance, pinned devDependency) against the server a
// user starts: the built CLI, `pagewise mcp --db FILE --http PORT`, on a temporary database. The suite needs
// Node ≥ 22 (fs.globSync); on Node 20 this file is skipped and `npm run test:node24` (CI runs it) runs it.
const root = resolve(import.meta.dirname, '../../..');
const cli = resolve(root, 'dist/src/surfaces/cli.js');
const suite = resolve(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const major = Number(process.versions.node.split('.')[0]);

// The scenarios that test what any MCP server must do, all of which pagewise must pass:
const SCENARIOS = [
  'server-initialize',
  'ping',
  'logging-set-level',
  'tools-list',
  // Calls a tool pagewise does not have: what it checks is the error answer (an isError result with a message).
  'tools-call-error',
  'resources-list',
  'prompts-list',
  'dns-rebinding-protection',
];
// The others do not apply, because each needs something pagewise does not have or do:
//   completion-complete: the fixture prompt test_prompt_with_arguments (pagewise's completions: tests/node/surfaces/mcp.test.ts)
//   tools-call-simple-text, -image, -audio, -embedded-resource, -mixed-content: fixture tools (test_simple_text, …)
//   tools-call-with-logging, tools-call-with-progress: fixture tools (pagewise's logging and progress: mcp.test.ts)
//   tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults, elicitation-sep1330-enums: fixture
//     tools that ask the client to sample or elicit; pagewise never does
//   json-schema-2020-12: the fixture tool json_schema_2020_12_tool
//   server-sse-polling: the fixture tool test_reconnection and resumable streams (an event store)
//   server-sse-multiple-streams: a session id; pagewise's HTTP server is stateless, so the scenario only warns
//   resources-read-text, -read-binary, resources-templates-read: fixture resources (test://static-text, …)
//   resources-subscribe, resources-unsubscribe: subscriptions, which pagewise does not offer
//   prompts-get-simple, -with-args, -embedded-resource, -with-image: fixture prompts (test_simple_prompt, …)

describe.skipIf(major < 22)('the MCP conformance suite against `pagewise mcp --http` (Node ≥ 22; on Node 20: npm run test:node24)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pagewise-conformance-'));
  let server: ChildProcess;
  let url = '';

  beforeAll(async () => {
    expect(existsSync(cli), 'dist/src/surfaces/cli.js is missing: run `npm run build` first').toBe(true);
    server = spawn(process.execPath, [cli, 'mcp', '--db', join(dir, 'memory.sqlite3'), '--http', '0', '--embedder', 'off'], { stdio: ['ignore', 'ignore', 'pipe'] });
    url = await new Promise<string>((ok, fail) => {
      let err = '';
      server.stderr!.on('data', (chunk: Buffer) => {
        err += chunk;
        const found = /pagewise MCP server at (\S+)/.exec(err);
        if (found) ok(found[1]!);
      });
      server.once('exit', (code) => fail(new Error(`the server exited (${code}) before listening: ${err}`)));
    });
  });

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((ok) => server.once('exit', ok));
      server.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(SCENARIOS)('%s', (scenario) => {
    // Run from the temporary directory: nothing the suite writes lands in the repository.
    const run = spawnSync(process.execPath, [suite, 'server', '--url', url, '--scenario', scenario], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/Passed:\s*[1-9]\d*\/\d+, 0 failed/);
  });
});
