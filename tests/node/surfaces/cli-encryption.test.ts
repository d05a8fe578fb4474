import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_SOURCE, cli, type CliRun } from '../../support/cli.js';
import { commandHelp } from '../../../src/surfaces/cli-help.js';
import { readKeyFile, refuseSecretFlags, rekeyTarget } from '../../../src/surfaces/cli-keys.js';

// Encrypted databases at the command line (tests/support/cli.ts: the CLI as a separate process): keys come from files
// or the environment, never from the command line; a wrong or missing key is a one-line error that changes no byte;
// rekey encrypts, changes the key and decrypts; the MCP server opens an encrypted file. No output of any run holds a
// key or a passphrase.
const dir = mkdtempSync(join(tmpdir(), 'pagewise-cli-crypt-'));
const LOCOMO = resolve(import.meta.dirname, '../../fixtures/locomo/priya-tom.json');
const RARE = 'Quillbramble';
const SMALL = join(dir, 'small.jsonl');
const PASSPHRASE = 'correct horse battery staple, lightly salted';
const OTHER_PASSPHRASE = 'a second passphrase for the rekey test';

/** Every secret a test made: no stdout or stderr may contain one. */
const secrets = new Set<string>([PASSPHRASE, OTHER_PASSPHRASE]);
const saved = { key: process.env.PAGEWISE_KEY, passphrase: process.env.PAGEWISE_PASSPHRASE };

beforeAll(() => {
  // A developer's own key in the environment must not change what these runs see.
  delete process.env.PAGEWISE_KEY;
  delete process.env.PAGEWISE_PASSPHRASE;
  writeFileSync(SMALL, `${JSON.stringify({ id: 'cat', messages: [{ id: 'm1', role: 'user', content: `My cat ${RARE} only eats salmon on Sundays.` }, { id: 'm2', role: 'assistant', content: 'A cat with a weekly menu.' }] })}\n`);
  writeFileSync(join(dir, 'passphrase'), `${PASSPHRASE}\n`);
  writeFileSync(join(dir, 'other-passphrase'), `${OTHER_PASSPHRASE}\n`);
});
afterAll(() => {
  for (const [name, value] of [['PAGEWISE_KEY', saved.key], ['PAGEWISE_PASSPHRASE', saved.passphrase]] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  rmSync(dir, { recursive: true, force: true });
});

/** What a run printed must hold no secret: a key as hex or base64, a passphrase. */
function clean(what: string, text: string): void {
  for (const s of secrets) expect(text.includes(s), `${what} holds a secret`).toBe(false);
}

/** `pagewise ARGS…` with `env` set for that run (undefined: unset), its output checked for secrets. */
function run(env: Record<string, string | undefined>, ...args: string[]): CliRun {
  const before = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  try {
    const r = cli(...args);
    clean(`pagewise ${args.join(' ')}: stdout`, r.out);
    clean(`pagewise ${args.join(' ')}: stderr`, r.err);
    return r;
  } finally {
    for (const [k, v] of Object.entries(before)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  }
}
const pw = (...args: string[]) => run({}, ...args);

/** Registers a key as a secret: as hex, and as base64 (both ways it may be given). */
function secret(hex: string): string {
  secrets.add(hex).add(Buffer.from(hex, 'hex').toString('base64'));
  return hex;
}

/** A new key file: made by `pagewise keygen --out` (`keygen`), or as keygen makes one (64 hex characters, a newline). */
function keyFile(name: string, keygen = false): { path: string; hex: string } {
  const path = join(dir, name);
  if (keygen) {
    const r = pw('keygen', '--out', path);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`a new key is in ${path}`);
  } else {
    writeFileSync(path, `${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')}\n`, { mode: 0o600 });
  }
  return { path, hex: secret(readFileSync(path, 'utf8').trim()) };
}

/** Every file in `folder` with its bytes (the database, and any journal, lock or side file beside it). */
function snapshot(folder: string): Map<string, string> {
  return new Map(readdirSync(folder).map((f) => [f, readFileSync(join(folder, f)).toString('base64')]));
}

const oneLine = (r: CliRun) => r.err.split('\n').filter((l) => l !== '');
const turnsOf = (r: CliRun) => (r.json().conversations as { turns: number }[]).map((c) => c.turns);

describe('pagewise on an encrypted database', () => {
  it('keygen writes a key file readable by its owner only, never over an existing one; without --out it prints a key', () => {
    const { path, hex } = keyFile('gen.key', true);
    expect(hex).toMatch(/^[0-9a-f]{64}$/);
    if (process.platform !== 'win32') expect(statSync(path).mode & 0o777).toBe(0o600);
    const again = pw('keygen', '--out', path, '--json');
    expect(again.code).toBe(1);
    expect(again.json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('never overwrites') } });
    expect(readFileSync(path, 'utf8').trim()).toBe(hex);
    // On stdout (the one output that is a key, by request): a new one each time.
    const printed = cli('keygen').out.trim();
    expect(printed).toMatch(/^[0-9a-f]{64}$/);
    expect(printed).not.toBe(hex);
  });

  it('import into an encrypted file, status says it is encrypted, retrieve with the key recalls; no stored word in the file', () => {
    const folder = join(dir, 'locomo');
    mkdirSync(folder);
    const db = join(folder, 'memory.sqlite3');
    const { path: key } = keyFile('locomo.key', true);
    const imported = pw('import', LOCOMO, '--db', db, '--key-file', key, '--embedder', 'off', '--json');
    expect(imported.code, imported.err).toBe(0);
    expect(imported.json()).toEqual({ conversations: ['priya-tom'], stored: 61 });
    const status = pw('status', '--db', db, '--key-file', key, '--json');
    expect(status.code, status.err).toBe(0);
    expect(status.json()).toMatchObject({ encrypted: true, conversations: [{ id: 'priya-tom', turns: 61 }] });
    expect(pw('status', '--db', db, '--key-file', key).out).toMatch(/\ndatabase .*memory\.sqlite3: encrypted, \d+ bytes\nusage: [\d,]+ requests?, [\d,]+ tokens? injected, [\d,]+ tokens? saved; [\d,]+ compactions?\n$/);
    const retrieved = pw('retrieve', '-c', 'priya-tom', '-m', "What is the name of Priya's cat?", '--db', db, '--key-file', key, '--embedder', 'off', '--window', '1024', '--json');
    expect(retrieved.code, retrieved.err).toBe(0);
    const manifest = (retrieved.json() as { manifest: { kind: string; sourceIds: string[] }[] }).manifest;
    expect(manifest.filter((e) => e.kind === 'recall').flatMap((e) => e.sourceIds)).toContain('D2:9'); // "Biscuit. She already knocked a plant off…"
    for (const [name, bytes] of snapshot(folder)) expect(Buffer.from(bytes, 'base64').toString('latin1'), name).not.toMatch(/Biscuit/i);
    // A plain database says so.
    const plain = join(folder, 'plain.sqlite3');
    expect(pw('status', '--db', plain, '--create', '--json').json()).toMatchObject({ conversations: [], encrypted: false });
    expect(pw('status', '--db', plain).out).toMatch(/^no conversations stored\ndatabase .*plain\.sqlite3: not encrypted, \d+ bytes\nusage: 0 requests, 0 tokens injected, 0 tokens saved; 0 compactions\n$/);
  });

  it('without a key KEY_REQUIRED, with a wrong one WRONG_KEY: one line, exit 1, and not a byte of the folder changes', () => {
    const folder = join(dir, 'refused');
    mkdirSync(folder);
    const db = join(folder, 'memory.sqlite3');
    const { path: key } = keyFile('refused.key');
    const { path: wrong } = keyFile('wrong.key');
    expect(pw('import', SMALL, '--db', db, '--key-file', key, '--embedder', 'off').code).toBe(0);
    const plain = join(folder, 'plain.sqlite3');
    expect(pw('import', SMALL, '--db', plain, '--embedder', 'off').code).toBe(0);
    const before = snapshot(folder);

    const missing = pw('status', '--db', db);
    expect(missing.code).toBe(1);
    expect(oneLine(missing)).toEqual([expect.stringMatching(/^pagewise: KEY_REQUIRED: .*memory\.sqlite3" is encrypted: open it with its key: --key-file FILE or --passphrase-file FILE/)]);
    expect(missing.out).toBe('');
    const asJson = pw('forget', '-c', 'cat', '--db', db, '--embedder', 'off', '--json');
    expect(asJson.code).toBe(1);
    expect(asJson.json()).toMatchObject({ error: { code: 'KEY_REQUIRED' } });
    for (const args of [['forget', '-c', 'cat'], ['import', SMALL], ['rekey', '--decrypt']]) {
      const r = pw(...args, '--db', db, '--key-file', wrong, '--embedder', 'off');
      expect(r.code, args.join(' ')).toBe(1);
      expect(oneLine(r), args.join(' ')).toEqual([expect.stringMatching(/^pagewise: WRONG_KEY: .*Nothing was changed/)]);
    }
    const passphrase = pw('status', '--db', db, '--passphrase-file', join(dir, 'passphrase'), '--json');
    expect(passphrase.json()).toMatchObject({ error: { code: 'WRONG_KEY', message: expect.stringContaining('it opens with a 32-byte key') } });
    // A key for a plain file: refused too, with the way to encrypt it.
    const keyed = pw('status', '--db', plain, '--key-file', key);
    expect(keyed.code).toBe(1);
    expect(oneLine(keyed)).toEqual([expect.stringMatching(/^pagewise: WRONG_KEY: .*is not encrypted.*`pagewise rekey --new-key-file FILE`/)]);
    expect(snapshot(folder)).toEqual(before);
    // The right key still opens it.
    expect(turnsOf(pw('status', '--db', db, '--key-file', key, '--json'))).toEqual([2]);
  });

  it('a key or passphrase on the command line is refused without repeating it; a file that holds no key is a usage error that never prints it', () => {
    const db = join(dir, 'flags.sqlite3');
    const { path: key, hex } = keyFile('flags.key');
    // Through the CLI: refused before anything is read, exit 2, the value not repeated (run() checks every output).
    const refused = pw('status', '--key', hex, '--db', db);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/^pagewise: --key is refused: a key on the command line lands in shell history and the process list\. Put it in a file and pass --key-file FILE, or set PAGEWISE_KEY/);
    const inline = pw(`--passphrase=${PASSPHRASE}`, 'mcp', '--db', db);
    expect(inline.code).toBe(2);
    expect(inline.err).toMatch(/^pagewise: --passphrase is refused: .*pass --passphrase-file FILE, or set PAGEWISE_PASSPHRASE/);
    // Every form of it, and no false alarm for an option's value that looks like one.
    const options = { db: { type: 'string' }, message: { type: 'string', short: 'm' } } as const;
    for (const [flag, args] of [['--key', [`--key=${hex}`]], ['--new-key', ['rekey', '--new-key', hex]], ['--peer-passphrase', ['sync', 'x', '--peer-passphrase', PASSPHRASE]], ['--new-passphrase', ['--new-passphrase']]] as const) {
      expect(() => refuseSecretFlags([...args], options), flag).toThrow(new RegExp(`^${flag} is refused: .*pass ${flag}-file FILE`));
    }
    expect(() => refuseSecretFlags(['retrieve', '-m', '--key', '--db', 'x'], options)).not.toThrow();
    // Files that are no key: 31 raw bytes, 63 hex characters, a line of text; never printed.
    const notKeys: [string, string | Buffer][] = [['text.key', `${PASSPHRASE}\n`], ['short.key', Buffer.alloc(31, 7)], ['hex63.key', hex.slice(1)]];
    for (const [name, content] of notKeys) {
      writeFileSync(join(dir, name), content);
      expect(() => readKeyFile(join(dir, name)), name).toThrow(/does not hold a key \(it has \d+ bytes\): a key file holds 32 random bytes/);
    }
    const notKey = pw('status', '--db', db, '--create', '--key-file', join(dir, 'text.key'));
    expect(notKey.code).toBe(2);
    expect(notKey.err).toMatch(/^pagewise: --key-file \S+text\.key does not hold a key \(it has 45 bytes\)/);
    // What a key file may hold: 32 raw bytes, hex, base64, with whitespace around.
    const bytes = Buffer.from(hex, 'hex');
    for (const [name, content] of [['raw.key', bytes], ['hex.key', ` ${hex.toUpperCase()}\r\n`], ['b64.key', `${bytes.toString('base64')}\n`], ['b64url.key', bytes.toString('base64url')]] as const) {
      writeFileSync(join(dir, name), content);
      expect(Buffer.from(readKeyFile(join(dir, name))).toString('hex'), name).toBe(hex);
    }
    const badEnv = run({ PAGEWISE_KEY: `${hex}00` }, 'status', '--db', db, '--create');
    expect(badEnv.code).toBe(2);
    expect(badEnv.err).toMatch(/^pagewise: PAGEWISE_KEY does not hold a key \(66 characters\)/);
    expect(badEnv.err).not.toContain(hex);
    // A key and a passphrase at once; a key file that is not there.
    expect(pw('status', '--db', db, '--key-file', key, '--passphrase-file', join(dir, 'passphrase')).code).toBe(2);
    expect(run({ PAGEWISE_KEY: hex, PAGEWISE_PASSPHRASE: PASSPHRASE }, 'status', '--db', db).err).toContain('PAGEWISE_KEY and PAGEWISE_PASSPHRASE are both set');
    expect(pw('status', '--db', db, '--key-file', join(dir, 'no-such.key'), '--json').json()).toMatchObject({ error: { code: 'NOT_FOUND', message: expect.stringContaining('no-such.key') } });
    expect(readdirSync(dir).filter((f) => f.startsWith('flags.sqlite3'))).toEqual([]);
  });

  it('PAGEWISE_KEY (hex or base64) and PAGEWISE_PASSPHRASE open a database; a key file wins over the environment', () => {
    const { path: key, hex } = keyFile('env.key');
    const db = join(dir, 'env.sqlite3');
    expect(run({ PAGEWISE_KEY: hex }, 'import', SMALL, '--db', db, '--embedder', 'off').code).toBe(0);
    expect(run({ PAGEWISE_KEY: ` ${Buffer.from(hex, 'hex').toString('base64')}\n` }, 'status', '--db', db, '--json').json()).toMatchObject({ encrypted: true, conversations: [{ id: 'cat' }] });
    // The file wins: a wrong key in the environment does not matter, nor a passphrase.
    const { hex: other } = keyFile('env-other.key');
    expect(run({ PAGEWISE_KEY: other }, 'status', '--db', db, '--key-file', key, '--json').json()).toMatchObject({ encrypted: true });
    expect(run({ PAGEWISE_PASSPHRASE: PASSPHRASE }, 'status', '--db', db, '--key-file', key, '--json').json()).toMatchObject({ encrypted: true });
    expect(run({ PAGEWISE_KEY: other }, 'status', '--db', db, '--json').json()).toMatchObject({ error: { code: 'WRONG_KEY' } });

    const pdb = join(dir, 'env-pass.sqlite3');
    expect(run({ PAGEWISE_PASSPHRASE: PASSPHRASE }, 'import', SMALL, '--db', pdb, '--embedder', 'off').code).toBe(0);
    // The passphrase file's one trailing newline is not part of it.
    expect(turnsOf(pw('status', '--db', pdb, '--passphrase-file', join(dir, 'passphrase'), '--json'))).toEqual([2]);
    expect(run({ PAGEWISE_PASSPHRASE: `${PASSPHRASE}!` }, 'status', '--db', pdb, '--json').json()).toMatchObject({ error: { code: 'WRONG_KEY' } });
  });

  it('rekey: plain to a key, the key to a passphrase, then decrypted; each step said without a key, the old one refused after', () => {
    const db = join(dir, 'rekey.sqlite3');
    expect(pw('import', SMALL, '--db', db, '--embedder', 'off').code).toBe(0);
    const { path: key } = keyFile('rekey.key');
    const passphrase = join(dir, 'other-passphrase');

    const encrypted = pw('rekey', '--db', db, '--new-key-file', key);
    expect(encrypted.code, encrypted.err).toBe(0);
    expect(encrypted.out).toMatch(/^encrypted .*rekey\.sqlite3: it opens with a key now/);
    expect(pw('status', '--db', db, '--json').json()).toMatchObject({ error: { code: 'KEY_REQUIRED' } });
    expect(readFileSync(db).toString('latin1')).not.toContain(RARE);

    const changed = pw('rekey', '--db', db, '--key-file', key, '--new-passphrase-file', passphrase, '--json');
    expect(changed.code, changed.err).toBe(0);
    expect(changed.json()).toEqual({ file: db, from: 'key', to: 'passphrase' });
    expect(pw('status', '--db', db, '--key-file', key, '--json').json()).toMatchObject({ error: { code: 'WRONG_KEY' } });
    expect(turnsOf(pw('status', '--db', db, '--passphrase-file', passphrase, '--json'))).toEqual([2]);

    const decrypted = pw('rekey', '--db', db, '--passphrase-file', passphrase, '--decrypt');
    expect(decrypted.code, decrypted.err).toBe(0);
    expect(decrypted.out).toMatch(/^decrypted .*rekey\.sqlite3: it is a plain SQLite file now/);
    expect(readFileSync(db).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
    expect(pw('status', '--db', db, '--json').json()).toMatchObject({ encrypted: false, conversations: [{ id: 'cat', turns: 2 }] });
    // rekey takes exactly one target; its options belong to it alone.
    expect(pw('rekey', '--db', db).err).toMatch(/^pagewise: rekey takes one of --new-key-file FILE, --new-passphrase-file FILE and --decrypt/);
    expect(() => rekeyTarget({ decrypt: true, 'new-key-file': key })).toThrow(/rekey takes one of/);
    expect(pw('status', '--db', db, '--decrypt').err).toContain('--decrypt is an option of pagewise rekey');
  });

  it('sync FILE: a copy of an encrypted database is made with its key; --peer-key-file opens another key\'s file', () => {
    const { path: key } = keyFile('sync.key');
    const { path: peerKey } = keyFile('sync-peer.key');
    const db = join(dir, 'sync.sqlite3');
    expect(pw('import', SMALL, '--db', db, '--key-file', key, '--embedder', 'off').code).toBe(0);
    const copy = join(dir, 'sync-copy.sqlite3');
    expect(pw('sync', copy, '--create', '--db', db, '--key-file', key, '--embedder', 'off').code).toBe(0);
    expect(pw('status', '--db', copy, '--json').json()).toMatchObject({ error: { code: 'KEY_REQUIRED' } });
    expect(turnsOf(pw('status', '--db', copy, '--key-file', key, '--json'))).toEqual([2]);
    const other = join(dir, 'sync-other.sqlite3');
    const synced = pw('sync', other, '--create', '--db', db, '--key-file', key, '--peer-key-file', peerKey, '--embedder', 'off');
    expect(synced.code, synced.err).toBe(0);
    expect(turnsOf(pw('status', '--db', other, '--key-file', peerKey, '--json'))).toEqual([2]);
  });

  it('per-command help lists --key-file and --passphrase-file; rekey and keygen have their own', () => {
    // Each command's --help prints commandHelp(command) (cli-usage.test.ts runs them all).
    for (const command of ['status', 'tags', 'branches', 'checkout', 'recall', 'retrieve', 'transform', 'compact', 'aliases', 'cost-report', 'import', 'export', 'forget', 'replay', 'sync', 'mcp', 'rekey']) {
      for (const flag of ['--key-file FILE', 'PAGEWISE_KEY', '--passphrase-file FILE', 'PAGEWISE_PASSPHRASE']) expect(commandHelp(command), `${command}: ${flag}`).toContain(flag);
    }
    expect(commandHelp('sync')).toContain('--peer-key-file FILE');
    const rekey = pw('rekey', '--help');
    expect(rekey.code).toBe(0);
    expect(rekey.out).toBe(`${commandHelp('rekey')}\n`);
    for (const flag of ['--new-key-file FILE', '--new-passphrase-file FILE', '--decrypt']) expect(rekey.out).toContain(flag);
    expect(pw('keygen', '--help').out).toMatch(/^pagewise keygen \[--out FILE\][^]*mode 0600[^]*Example:\n {2}pagewise keygen --out /);
    expect(pw('--help').out).toMatch(/rekey --new-key-file FILE[^]*keygen \[--out FILE\][^]*never --key on the command line/);
  });
});

describe('pagewise mcp on an encrypted database', () => {
  it('over stdio with --key-file: an MCP client reads a stored turn', async () => {
    const db = join(dir, 'mcp.sqlite3');
    const { path: key } = keyFile('mcp.key');
    expect(pw('import', SMALL, '--db', db, '--key-file', key, '--embedder', 'off').code).toBe(0);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', CLI_SOURCE, 'mcp', '--db', db, '--key-file', key, '--embedder', 'off'],
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (c: Buffer) => { stderr += c; });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: 'recall_context', arguments: { conversationId: 'cat', message: 'What does my cat eat?' } }) as { content: { text: string }[]; isError?: boolean };
      expect(result.isError, result.content[0]?.text).toBeFalsy();
      expect(result.content[0]!.text).toContain(`My cat ${RARE} only eats salmon on Sundays.`);
    } finally {
      await client.close();
    }
    clean('mcp stderr', stderr);
  });

  it('over HTTP with PAGEWISE_PASSPHRASE: an MCP client reads a stored turn', async () => {
    const db = join(dir, 'mcp-http.sqlite3');
    expect(pw('import', SMALL, '--db', db, '--passphrase-file', join(dir, 'passphrase'), '--embedder', 'off').code).toBe(0);
    const child = spawn(process.execPath, ['--import', 'tsx', CLI_SOURCE, 'mcp', '--db', db, '--http', '0', '--embedder', 'off'], {
      env: { ...process.env, PAGEWISE_PASSPHRASE: PASSPHRASE }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    try {
      const url = await new Promise<string>((ok, fail) => {
        child.stderr!.on('data', (c: Buffer) => { stderr += c; const m = /server at (\S+)/.exec(stderr); if (m) ok(m[1]!); });
        child.once('exit', (code) => fail(new Error(`exited ${code}: ${stderr}`)));
      });
      const client = new Client({ name: 'test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      try {
        const result = await client.callTool({ name: 'recall_context', arguments: { conversationId: 'cat', message: 'What does my cat eat?' } }) as { content: { text: string }[] };
        expect(result.content[0]!.text).toContain(RARE);
      } finally {
        await client.close();
      }
    } finally {
      if (child.exitCode === null) {
        const exited = new Promise((ok) => child.once('exit', ok));
        child.kill('SIGTERM');
        await exited;
      }
    }
    clean('mcp --http stderr', stderr);
  });
});
