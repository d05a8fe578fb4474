#!/usr/bin/env node
// The pagewise command line (`npx pagewise …`): a memory on a database file, from a shell or a script.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createMemory, type Memory } from '../engine/engine.js';
import { isPagewiseError, PagewiseError } from '../contracts/errors.js';
import type { StorageDriver } from '../contracts/types-storage.js';
import { type ImportedConversation, type ImportFile, readImportFile } from './formats.js';
import { renderContext, renderJson } from '../text/render.js';
import { useJsTiktoken } from '../tokens/js-tiktoken.js';
import { resolveOptions } from '../engine/options.js';
import { fileStorage } from '../storage/node-file.js';
import type { MemoryOptions } from '../contracts/types.js';
import { databaseFile, syncCommand } from './cli-sync.js';
import { branchCommands } from './cli-branches.js';
import { commandHelp, USAGE, UsageError } from './cli-help.js';
import { count, progress } from './cli-text.js';
import { commandKeys, keygen, refuseSecretFlags, rekey } from './cli-keys.js';
import { mcp, mcpFlags } from './cli-mcp.js';
import { checkSearchCommand, refuseSearchKeys, SEARCH_OPTIONS, searchCommand, searchOption } from './cli-search.js';

const IMPORT_FILE = "a LoCoMo or LongMemEval file, an OpenAI-style JSONL chat log, or pagewise's export (pagewise export -o FILE)";

const options = {
  db: { type: 'string' },
  conversation: { type: 'string', short: 'c' },
  json: { type: 'boolean' },
  config: { type: 'string' },
  embedder: { type: 'string' },
  window: { type: 'string' },
  message: { type: 'string', short: 'm', multiple: true },
  tag: { type: 'string' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
  create: { type: 'boolean' },
  http: { type: 'string' },
  host: { type: 'string' },
  token: { type: 'string' },
  'allow-host': { type: 'string', multiple: true },
  'allow-origin': { type: 'string', multiple: true },
  'key-file': { type: 'string' },
  'passphrase-file': { type: 'string' },
  'peer-key-file': { type: 'string' },
  'peer-passphrase-file': { type: 'string' },
  'new-key-file': { type: 'string' },
  'new-passphrase-file': { type: 'string' },
  decrypt: { type: 'boolean' },
  out: { type: 'string' },
  ...SEARCH_OPTIONS,
} as const;

/** Options of one command only: given to another, a usage error (not silently ignored). */
const OWN_OPTIONS: [command: string, names: (keyof typeof options)[]][] = [
  ['rekey', ['new-key-file', 'new-passphrase-file', 'decrypt']],
  ['sync', ['peer-key-file', 'peer-passphrase-file']],
  ['keygen', ['out']],
];

/**
 * A file the command reads, as text. A leading BOM is the file's encoding mark (Windows editors write one), not
 * content: JSON.parse would refuse it.
 */
function readInput(path: string, expected: string): string {
  try {
    return readFileSync(path, 'utf8').replace(/^\uFEFF/, '');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new PagewiseError('NOT_FOUND', 'cli', `There is no file "${resolve(path)}": pass the path of ${expected}.`, { cause: e });
    if (code === 'EISDIR') throw new PagewiseError('INVALID_ARGUMENT', 'cli', `"${resolve(path)}" is a directory: pass the path of ${expected}.`, { cause: e });
    throw new PagewiseError('STORAGE_UNAVAILABLE', 'cli', `Cannot read "${resolve(path)}" (${(e as Error).message}): make it readable, or pass another file.`, { cause: e });
  }
}

const OPTIONS_FILE = 'a JSON file of engine options, e.g. {"contextWindow": 8000}';

/** Engine options from a JSON file: an object, as createMemory() takes them. */
function readOptionsFile(path: string): MemoryOptions {
  const raw = readInput(path, OPTIONS_FILE);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (e) {
    throw new PagewiseError('INVALID_OPTIONS', 'cli', `${path} is not JSON (${(e as Error).message}): write ${OPTIONS_FILE}.`, { cause: e });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    const got = Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : `a ${typeof parsed}`;
    throw new PagewiseError('INVALID_OPTIONS', 'cli', `${path} holds ${got}, but engine options are a JSON object: write ${OPTIONS_FILE}.`);
  }
  return parsed as MemoryOptions;
}

function out(json: boolean, value: unknown, text: () => string): void {
  process.stdout.write(`${json ? JSON.stringify(value, null, 2) : text()}\n`);
}

async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true; args: string[] }>>;
  // A key on the command line is refused before anything else reads it (shell history, the process list).
  refuseSecretFlags(argv, options);
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { values: v, positionals } = parsed;
  refuseSearchKeys(v.search);
  const [command, ...rest] = positionals;
  // `pagewise COMMAND --help` and `pagewise help COMMAND`: that command's own help; nothing is opened.
  const helpOf = command === 'help' ? rest[0] : v.help ? command : undefined;
  if (helpOf !== undefined) {
    const help = commandHelp(helpOf);
    if (help === undefined) throw new UsageError(`unknown command "${helpOf}"`);
    process.stdout.write(`${help}\n`);
    return 0;
  }
  if (v.help || !command || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command || v.help ? 0 : 2;
  }
  for (const [owner, names] of OWN_OPTIONS) {
    const stray = names.find((n) => v[n] !== undefined);
    if (stray !== undefined && command !== owner) throw new UsageError(`--${stray} is an option of pagewise ${owner} (pagewise ${owner} --help).`);
  }
  checkSearchCommand(command, v);
  const json = v.json === true;
  const engineOptions = (): MemoryOptions => {
    const base = v.config ? readOptionsFile(v.config) : {};
    if (v.embedder === 'off') base.embedder = false;
    else if (v.embedder !== undefined && v.embedder !== 'default') throw new UsageError(`--embedder is "default" or "off" (got "${v.embedder}").`);
    if (v.window !== undefined) {
      if (!/^\d+$/.test(v.window)) throw new UsageError(`--window is a number of tokens (got "${v.window}").`);
      base.contextWindow = Number(v.window);
    }
    const search = searchOption(command, v, base.search);
    if (search) base.search = search;
    else delete base.search;
    return base;
  };
  const conversation = (): string => {
    if (!v.conversation) throw new UsageError(`${command} needs --conversation ID (pagewise status lists them).`);
    return v.conversation;
  };
  const text = (): string => {
    const m = v.message?.join('\n');
    if (!m) throw new UsageError(`${command} needs -m TEXT (the new message).`);
    return m;
  };

  if (command === 'config') {
    if (rest[0] !== 'validate' || !rest[1]) throw new UsageError('config validate FILE');
    const config = readOptionsFile(rest[1]);
    resolveOptions(config);
    out(json, { valid: true }, () => `${rest[1]}: valid`);
    return 0;
  }

  if (command === 'keygen') return keygen(v.out ?? v.output, json);
  if (command !== 'mcp' && command !== 'sync' && command !== 'rekey' && !COMMANDS.has(command)) throw new UsageError(`unknown command "${command}"`);
  if (command === 'sync' && !rest[0]) throw new UsageError('sync URL|FILE: a sync endpoint (https://…/v1/pagewise/sync) or another database file');
  // Checked before the database opens: a server that would run unguarded must not start at all.
  const served = command === 'mcp' ? await mcpFlags(v) : undefined;
  const engine = engineOptions();
  // Bad options are refused as such before any file is looked at (not as a missing database).
  const limits = resolveOptions(engine);
  // Read and checked whole before the database opens: a missing or malformed file leaves no new database behind.
  const input = (command === 'import' || command === 'replay') && rest[0] ? readImportFile(readInput(rest[0], IMPORT_FILE), rest[0], limits) : undefined;
  // replay without --db works in memory: a benchmark run leaves no file behind.
  // So does search without --db and --conversation: a web search needs no stored conversation.
  const inMemory = (command === 'replay' || (command === 'search' && !v.conversation)) && !v.db;
  // The keys are read and checked before the database opens, as are rekey's new one and sync FILE's.
  const keys = commandKeys(command, inMemory, v);
  // A mistyped --db must not become a new, empty database (nor sync's FILE a copy of this one): only on purpose.
  const creates = v.create === true || command === 'import' || command === 'replay' || command === 'mcp';
  const path = v.db ?? 'pagewise.sqlite3';
  const file = inMemory ? undefined : fileStorage(databaseFile(path, creates, v.db === undefined ? 'the default --db' : '--db'), keys.encryption ? { encryption: keys.encryption } : {});
  // The driver made, for what the memory does not say: whether the file is encrypted.
  const opened: { driver?: StorageDriver } = {};
  const storage = file && (async () => (opened.driver = await file()));
  const memory = await createMemory({ ...engine, ...(storage ? { storage } : {}) });
  const encrypted = opened.driver?.encrypted === true;
  try {
    if (command === 'mcp') return await mcp(memory, served, engine.search !== undefined);
    if (command === 'rekey') return await rekey(memory, path, encrypted, keys.encryption, keys.rekey!, json);
    const peer = keys.peer ? { encryption: keys.peer } : {};
    if (command === 'sync') return await syncCommand(memory, rest[0]!, { json, given: v.conversation, token: v.token, openFile: (other) => createMemory({ ...engineOptions(), storage: fileStorage(databaseFile(other, v.create === true, 'sync FILE'), peer) }) });
    return await COMMANDS.get(command)!(memory, { json, conversation, text, output: v.output, messages: v.message, tag: v.tag, given: v.conversation, input, database: { path, encrypted } }, rest, command);
  } finally {
    await memory.close();
  }
}

interface Context {
  json: boolean;
  conversation: () => string;
  text: () => string;
  output?: string | undefined;
  messages?: string[] | undefined;
  tag?: string | undefined;
  given?: string | undefined;
  /** import's and replay's FILE, read and checked. */
  input?: ImportFile | undefined;
  /** The --db file, and whether it is encrypted at rest. */
  database: { path: string; encrypted: boolean };
}

/** A command on an open memory: its exit code. */
type Command = (memory: Memory, c: Context, rest: string[], command: string) => Promise<number>;

const COMMANDS = new Map<string, Command>([
  ['status', status],
  ['tags', async (memory, c) => {
    const tags = await memory.tags(c.conversation());
    out(c.json, tags, () => tags.map((t) => `${t.tag}\t${t.units}`).join('\n'));
    return 0;
  }],
  ['recall', async (memory, c, rest) => {
    if (!rest[0]) throw new UsageError('recall TAG');
    const result = await memory.callTool('pagewise_expand', { tag: rest[0] }, { conversationId: c.conversation() });
    out(c.json, result, () => result.content);
    return 0;
  }],
  ['retrieve', assembled],
  ['transform', assembled],
  ['compact', async (memory, c) => {
    const report = await memory.compact(c.conversation());
    out(c.json, report, () => (report ? `compacted ${count(report.turnsCompacted, 'turn')} into ${count(report.summariesMade, 'summary', 'summaries')}; ${count(report.tokensFreed, 'token')} freed` : 'nothing to compact'));
    return 0;
  }],
  ['aliases', aliases],
  ['cost-report', async (memory, c) => {
    const report = await memory.costReport(c.given);
    out(c.json, report, () => [...report.lines.map((l) => `${l.conversationId ?? '-'}\t${l.purpose}\t${count(l.calls, 'call')}\t${l.inputTokens} in\t${l.outputTokens} out`), `total: ${count(report.total.calls, 'call')}`].join('\n'));
    return 0;
  }],
  ['export', exportCommand],
  ['forget', async (memory, c) => {
    const report = await memory.forget({ conversationId: c.conversation(), ...(c.messages ? { messageIds: c.messages } : {}), ...(c.tag ? { tag: c.tag } : {}) });
    out(c.json, report, () => `forgot ${count(report.messageIds.length, 'message')}${report.conversationRemoved ? ' (the conversation is gone)' : ''}; ${count(report.summaries, 'summary', 'summaries')} to rebuild`);
    return 0;
  }],
  ['import', importFile],
  ['replay', importFile],
  ['search', searchCommand],
  ...branchCommands((message) => new UsageError(message)),
]);

async function status(memory: Memory, c: Context): Promise<number> {
  const conversations = await memory.conversations();
  const rows: (typeof conversations[number] & { tags: number; summaries: number })[] = [];
  for (const conv of conversations) {
    rows.push({ ...conv, tags: (await memory.tags(conv.id)).length, summaries: (await memory.summaries(conv.id)).length });
  }
  const { path, encrypted } = c.database;
  // Usage and health (memory.stats()): the counters persisted with the database, the rest since this process opened it.
  const stats = await memory.stats();
  const { usage } = stats;
  out(c.json, { conversations: rows, encrypted, stats }, () => [
    ...(rows.length === 0 ? ['no conversations stored'] : rows.map((r) => `${r.id}\t${count(r.turns, 'turn')}\t${count(r.tags, 'tag')}\t${count(r.summaries, 'summary', 'summaries')}\tupdated ${r.updatedAt}`)),
    `database ${path}: ${encrypted ? 'encrypted' : 'not encrypted'}${stats.bytes === null ? '' : `, ${count(stats.bytes, 'byte')}`}`,
    `usage: ${count(usage.calls.onMessageInbound, 'request')}, ${count(usage.tokens.memory, 'token')} injected, ${count(usage.tokens.saved, 'token')} saved; ${count(usage.compaction.runs, 'compaction')}`,
  ].join('\n'));
  return 0;
}

/** retrieve and transform: what memory would page in for -m TEXT, or the whole assembled context. */
async function assembled(memory: Memory, c: Context, _rest: string[], command: string): Promise<number> {
  const ctx = await memory.onMessageInbound({ conversationId: c.conversation(), message: { role: 'user', content: c.text() } });
  if (command === 'retrieve') {
    const { manifest, budget, dropped, matchedTags, broad, temporal } = ctx;
    // --json: exact values for scripts (ids round-trip); otherwise the text a model may be shown, neutralized.
    const report = { matchedTags, broad, temporal, budget, manifest, dropped, ...(ctx.search ? { search: ctx.search } : {}) };
    out(c.json, report, () => renderJson(report));
  } else {
    out(c.json, { prependText: ctx.prependText, messages: ctx.messages, ...(ctx.search ? { search: ctx.search } : {}) }, () => renderContext(ctx));
  }
  return 0;
}

async function aliases(memory: Memory, c: Context, rest: string[]): Promise<number> {
  const { json } = c;
  const scope = c.given ? { conversationId: c.given } : undefined;
  if (rest[0] === 'list') {
    const list = await memory.aliases.list(scope);
    out(json, list, () => list.map((a) => `${a.alias} → ${a.tag} (${a.source})`).join('\n'));
  } else if (rest[0] === 'suggest') {
    const list = await memory.aliases.suggest(50, scope);
    out(json, list, () => list.map((s) => JSON.stringify(s)).join('\n'));
  } else if (rest[0] === 'add' && rest[1] && rest[2]) {
    const added = await memory.aliases.add(rest[1], rest[2], scope);
    out(json, added, () => `${added.alias} → ${added.tag}`);
  } else {
    throw new UsageError('aliases list | aliases suggest | aliases add ALIAS TAG');
  }
  return 0;
}

async function exportCommand(memory: Memory, c: Context): Promise<number> {
  const data = await memory.export(c.given);
  const textOut = JSON.stringify(data);
  if (c.output) {
    writeFileSync(c.output, textOut);
    out(c.json, { file: c.output, conversations: data.conversations.length }, () => `${count(data.conversations.length, 'conversation')} → ${c.output}`);
  } else {
    process.stdout.write(`${textOut}\n`);
  }
  return 0;
}

/** import and replay: pagewise's export restored, or a benchmark or chat-log file stored batch by batch (replay then asks its questions). */
async function importFile(memory: Memory, c: Context, rest: string[], command: string): Promise<number> {
  const { json } = c;
  if (!rest[0] || c.input === undefined) throw new UsageError(`${command} FILE`);
  if (c.input.kind === 'pagewise') {
    if (command === 'replay') throw new PagewiseError('INVALID_ARGUMENT', 'cli', `${rest[0]} is pagewise's export, which holds no questions: replay a LoCoMo or LongMemEval file (pagewise import restores an export).`);
    const report = await memory.import(c.input.data);
    out(json, report, () => `${count(report.turns, 'message')} stored in ${count(report.conversations.length, 'conversation')} (${report.skipped} already there)`);
    return 0;
  }
  let conversations = c.input.conversations;
  if (c.given) conversations = conversations.filter((x) => x.id === c.given);
  const total = conversations.reduce((n, x) => n + x.batches.length, 0);
  // Progress on stderr (stdout stays the result): a live line on a terminal, a first and a last line in a log.
  const shown = progress(process.stderr, command, `${count(total, 'batch', 'batches')} of messages in ${count(conversations.length, 'conversation')} to store`);
  let done = 0;
  let stored = 0;
  let finished = false;
  try {
    for (const conv of conversations) {
      for (const batch of conv.batches) {
        stored += (await memory.onTurnComplete({ conversationId: conv.id, messages: batch })).stored;
        shown.update(`${++done}/${total} batches`);
      }
    }
    await memory.flush();
    finished = true;
  } finally {
    shown.end(finished ? `${done}/${total} batches, ${count(stored, 'message')} stored` : undefined);
  }
  if (command === 'import') {
    out(json, { conversations: conversations.map((x) => x.id), stored }, () => `${count(stored, 'message')} stored in ${count(conversations.length, 'conversation')}`);
    return 0;
  }
  return replay(memory, conversations, json);
}

/** Asks a benchmark's questions and prints the share of their evidence the context held. */
async function replay(memory: Memory, conversations: ImportedConversation[], json: boolean): Promise<number> {
  const results: { conversationId: string; question: string; evidence: string[]; found: string[] }[] = [];
  for (const conv of conversations) {
    for (const q of conv.questions) {
      const ctx = await memory.onMessageInbound({ conversationId: conv.id, message: { role: 'user', content: q.question }, ...(q.now ? { now: q.now } : {}) });
      const present = new Set(ctx.manifest.filter((e) => e.kind !== 'message').flatMap((e) => e.sourceIds));
      results.push({ conversationId: conv.id, question: q.question, evidence: q.evidence, found: q.evidence.filter((e) => present.has(e)) });
    }
  }
  const scored = results.filter((r) => r.evidence.length > 0);
  const share = scored.reduce((n, r) => n + r.found.length / r.evidence.length, 0) / Math.max(1, scored.length);
  out(json, { questions: results.length, evidenceShare: Number(share.toFixed(3)), results }, () => [
    ...results.map((r) => `${r.evidence.length === 0 ? '-' : `${r.found.length}/${r.evidence.length}`}\t${r.conversationId}\t${r.question}`),
    `evidence found: ${share.toFixed(3)} over ${count(scored.length, 'question')} with evidence`,
  ].join('\n'));
  return 0;
}

// The engine's errors say how to fix things in API terms; at the command line the fix is a command.
const CLI_WORDS: [string, string][] = [
  ['memory.conversations()', '`pagewise status`'],
  ['memory.export()', '`pagewise export`'],
  ['memory.turns()', '`pagewise export -c ID`'],
  ['memory.tags()', '`pagewise tags -c ID`'],
  ['memory.branches()', '`pagewise branches ID`'],
  ['memory.forget()', '`pagewise forget`'],
  ['memory.close()', 'stop the process that holds it'],
  ['open it with its key (encryption: { key } or { passphrase })', 'open it with its key: --key-file FILE or --passphrase-file FILE (or PAGEWISE_KEY, PAGEWISE_PASSPHRASE)'],
  ['Open it without `encryption`, then call memory.rekey({ key }) or memory.rekey({ passphrase }) to encrypt it in place', 'Open it without --key-file, --passphrase-file, PAGEWISE_KEY and PAGEWISE_PASSPHRASE, or encrypt it in place first with `pagewise rekey --new-key-file FILE`'],
];
const inCliWords = (message: string): string => CLI_WORDS.reduce((m, [api, cli]) => m.split(api).join(cli), message);

useJsTiktoken();
main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (error: unknown) => {
  const json = process.argv.includes('--json');
  if (error instanceof UsageError) {
    process.stderr.write(`pagewise: ${error.message}\n\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const e = isPagewiseError(error) ? error : new PagewiseError('STORAGE_ERROR', 'cli', String((error as Error)?.message ?? error));
  const message = inCliWords(e.message);
  if (json) process.stdout.write(`${JSON.stringify({ error: { code: e.code, message, ...(e.path ? { path: e.path } : {}) } })}\n`);
  process.stderr.write(`pagewise: ${e.code}: ${message}\n`);
  process.exitCode = 1;
});
