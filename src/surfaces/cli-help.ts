// The CLI's help: `pagewise --help` (every command in a line) and `pagewise COMMAND --help` (that command's usage,
// options and an example). Printing help opens no database.

/** A bad command line: the CLI prints the message and the usage, and exits 2. */
export class UsageError extends Error {}

export const USAGE = `pagewise <command> [options]

Commands (a database file: --db, default ./pagewise.sqlite3):
  status                       conversations with their turns, tags and summaries
  tags                         the tags of --conversation, most used first
  branches ID                  the branches of conversation ID (edits and regenerations fork it): a table, * current
  checkout ID MESSAGE_ID       make the branch through MESSAGE_ID current (what recall reads); nothing is deleted
  recall TAG                   the turns of --conversation that carry TAG
  retrieve -m TEXT             what memory would page in for TEXT (JSON: manifest, budget, dropped)
  transform -m TEXT            the assembled context for TEXT (the messages to send)
  compact                      compact --conversation now
  aliases list|suggest|add ALIAS TAG
  cost-report                  LLM usage per conversation and purpose
  config validate FILE         check a JSON file of options
  import FILE                  LoCoMo, LongMemEval, OpenAI-style JSONL chat logs, or pagewise's export
  export [-o FILE]             every stored original (--conversation: one) in pagewise's portable format
  forget [--message ID]… [--tag TAG]   forget --conversation, or some of its messages
  replay FILE                  import a benchmark file, ask its questions, print the evidence found
  search QUERY                 search the web (--search SPEC) and print the results as a model reads them
  sync URL|FILE                with a sync endpoint (--token, or PAGEWISE_SYNC_TOKEN) or another database file
  rekey --new-key-file FILE|--new-passphrase-file FILE|--decrypt   encrypt --db, change its key, or decrypt it
  keygen [--out FILE]          a new random key (64 hex characters) for --key-file: to FILE (mode 0600) or stdout
  mcp [--http PORT]            an MCP server on the database: stdio, or Streamable HTTP at http://HOST:PORT/mcp
                               --host ADDR (default 127.0.0.1) · --token TOKEN, or PAGEWISE_MCP_TOKEN (better: a flag
                               shows in the process list): every request must send Authorization: Bearer TOKEN;
                               required unless HOST is loopback (127.0.0.0/8, ::1, localhost) · Host and Origin must
                               name localhost or HOST (DNS rebinding), else 403: --allow-host NAME, --allow-origin
                               ORIGIN (repeatable) accept more

Options: --db PATH · --conversation/-c ID · --json · --config FILE (engine options as JSON) ·
         --embedder default|off · --window N (contextWindow) · --create: a database file (--db, sync's FILE) that
         does not exist is made; without it only import, replay and mcp make one, the others refuse
Encrypted databases: --key-file FILE (32 bytes: raw, 64 hex characters or base64) or --passphrase-file FILE, else
         PAGEWISE_KEY (hex or base64) or PAGEWISE_PASSPHRASE; never --key on the command line (shell history, ps)
Web search (retrieve, transform, search, mcp): --search SPEC (repeatable): searxng=URL, brave, tavily (keys from
         BRAVE_API_KEY, TAVILY_API_KEY, or brave=@FILE, tavily=@FILE; never a key on the command line) ·
         --search-trigger auto|keywords|llm|always · --search-timeout MS. Queries are anonymized before they leave
Exit codes: 0 done · 1 pagewise refused or failed (the error's code is printed) · 2 bad command line
pagewise COMMAND --help: that command's usage, options and an example`;

/** Option lines shared by several commands, by name. */
const OPTION: Record<string, string> = {
  db: '--db PATH              the database file (default ./pagewise.sqlite3); one that does not exist is refused',
  dbMakes: '--db PATH              the database file (default ./pagewise.sqlite3), made when it does not exist',
  create: '--create               make the --db file when it does not exist (a new, empty memory)',
  conversation: '-c, --conversation ID  the conversation (pagewise status lists them)',
  json: '--json                 the result as JSON (errors too: { error: { code, message } })',
  key: '--key-file FILE        the key of an encrypted database: 32 bytes, raw, as 64 hex characters or base64\n                         (pagewise keygen makes one); or PAGEWISE_KEY (hex or base64)',
  passphrase: '--passphrase-file FILE its passphrase instead: the file\'s text (one trailing newline removed); or\n                         PAGEWISE_PASSPHRASE. A file wins over the environment; never a key on the command line',
  engine: '--config FILE          engine options as a JSON object · --embedder default|off · --window N (contextWindow)',
  search: '--search SPEC          a web search provider (repeatable): searxng=URL; brave or tavily, the key from\n'
    + '                         BRAVE_API_KEY or TAVILY_API_KEY, or from a file: brave=@FILE, tavily=@FILE (never a key\n'
    + '                         on the command line); BRAVE_BASE_URL, TAVILY_BASE_URL: another endpoint. More: --config\'s\n'
    + '                         "search" object',
  searchHow: '--search-trigger auto|keywords|llm|always  what decides to search (default auto) · --search-timeout MS\n'
    + '                         the longest a request waits for it (default 5000)',
};

interface CommandHelp {
  usage: string;
  about: string;
  /** Names in OPTION, or whole lines of the command's own. */
  options: string[];
  example: string;
}

/** How a command opens its database file: the key of an encrypted one. */
const KEY = ['key', 'passphrase'];
const READS = ['db', 'create', ...KEY, 'json'];

const COMMAND_HELP: Record<string, CommandHelp> = {
  status: { usage: 'status', about: 'The conversations stored, each with its turns, tags, summaries and when it last changed; the bytes stored and what memory injected and saved. --json adds every figure of memory.stats() (tokens by kind, recall by signal, compactions, latency, errors, queues).', options: READS, example: 'pagewise status --json --db memory.sqlite3' },
  tags: { usage: 'tags -c ID', about: 'The tags of a conversation, most used first, with how many units carry each.', options: ['conversation', ...READS], example: 'pagewise tags -c priya-tom --db memory.sqlite3' },
  branches: { usage: 'branches ID', about: 'The branches of a conversation (edits and regenerations fork it) as a table; * marks the current one.', options: ['-c, --conversation ID  the conversation, instead of ID', ...READS], example: 'pagewise branches priya-tom --db memory.sqlite3' },
  checkout: { usage: 'checkout ID MESSAGE_ID', about: 'Makes the branch through MESSAGE_ID current: what recall reads from now on. Nothing is deleted.', options: ['-c, --conversation ID  the conversation (then MESSAGE_ID alone)', ...READS, 'engine'], example: 'pagewise checkout priya-tom D2:9 --db memory.sqlite3' },
  recall: { usage: 'recall TAG -c ID', about: 'The turns of a conversation that carry TAG, as a model would read them.', options: ['conversation', ...READS], example: 'pagewise recall biscuit -c priya-tom --db memory.sqlite3' },
  retrieve: { usage: 'retrieve -c ID -m TEXT', about: 'What memory would page in for the new message TEXT: the manifest (what and why), the budget, what was dropped.', options: ['conversation', '-m, --message TEXT     the new message', ...READS, 'engine', 'search', 'searchHow'], example: `pagewise retrieve -c priya-tom -m "What is the name of Priya's cat?" --window 1024 --db memory.sqlite3` },
  transform: { usage: 'transform -c ID -m TEXT', about: 'The assembled context for the new message TEXT: the messages to send to the model.', options: ['conversation', '-m, --message TEXT     the new message', ...READS, 'engine', 'search', 'searchHow'], example: `pagewise transform -c priya-tom -m "What is the name of Priya's cat?" --window 1024 --db memory.sqlite3` },
  compact: { usage: 'compact -c ID', about: 'Compacts a conversation now: older turns summarized (every turn is kept verbatim).', options: ['conversation', ...READS, 'engine'], example: 'pagewise compact -c priya-tom --db memory.sqlite3' },
  aliases: { usage: 'aliases list | aliases suggest | aliases add ALIAS TAG', about: 'Tag aliases: list them, suggest likely ones (tags one or two edits apart), or add one (its scope\'s stored tags are rewritten).', options: ['-c, --conversation ID  that conversation\'s aliases only (default: every conversation)', ...READS], example: 'pagewise aliases add db database --db memory.sqlite3' },
  'cost-report': { usage: 'cost-report', about: 'LLM usage (calls, input and output tokens) per conversation and purpose.', options: ['-c, --conversation ID  that conversation only', ...READS], example: 'pagewise cost-report --db memory.sqlite3' },
  config: { usage: 'config validate FILE', about: 'Checks a JSON file of engine options (as createMemory() takes them). Opens no database.', options: ['json'], example: 'pagewise config validate options.json' },
  import: { usage: 'import FILE', about: 'Stores a LoCoMo or LongMemEval file, an OpenAI-style JSONL chat log, or pagewise\'s export. The file is checked whole first: a bad one stores nothing and makes no database. Progress on stderr.', options: ['-c, --conversation ID  only that conversation of the file', 'dbMakes', ...KEY, 'json', 'engine'], example: 'pagewise import chats.jsonl --db memory.sqlite3' },
  export: { usage: 'export [-o FILE]', about: 'Every stored original in pagewise\'s portable format (JSON), to stdout or FILE; pagewise import restores it.', options: ['-c, --conversation ID  that conversation only', '-o, --output FILE      write to FILE', ...READS], example: 'pagewise export -o backup.json --db memory.sqlite3' },
  forget: { usage: 'forget -c ID [--message ID]… [--tag TAG]', about: 'Forgets a conversation, some of its messages, or every exchange carrying a tag; nothing of them is left in the file.', options: ['conversation', '--message ID           that message (repeatable)', '--tag TAG              every exchange carrying TAG', ...READS, 'engine'], example: 'pagewise forget -c priya-tom --message D1:3 --db memory.sqlite3' },
  replay: { usage: 'replay FILE', about: 'Imports a benchmark file (LoCoMo, LongMemEval), asks its questions and prints the share of their evidence each context held. Without --db it runs in memory and leaves no file.', options: ['-c, --conversation ID  only that conversation of the file', '--db PATH              store into this database file (made when it does not exist)', ...KEY, 'json', 'engine'], example: 'pagewise replay locomo.json --window 1024' },
  search: {
    usage: 'search QUERY --search SPEC…',
    about: 'Searches the web for QUERY: anonymized first (emails, phone numbers, addresses, ids, and with -c the conversation\'s private words and people, taken out), every provider asked at once, each result\'s page fetched and reduced to its main text. Prints the results as a model reads them (a <web-results> block, as data); on stderr, the query exactly as sent and to whom. Exit code 1 when every provider failed or nothing was left to send. Without --db and -c it runs in memory and opens no file.',
    options: ['search', '--search-timeout MS    the longest it waits for the providers and pages (default 5000)', '-c, --conversation ID  keep that conversation\'s private words and people out of the query', 'db', ...KEY, 'json', 'engine'],
    example: 'pagewise search "node 24 release notes" --search searxng=https://searx.example.org',
  },
  sync: { usage: 'sync URL|FILE', about: 'Syncs the database with a sync endpoint (https://…/v1/pagewise/sync) or another database file: what each lacks moves both ways. Progress on stderr, what moved on stdout.', options: ['--token TOKEN          the endpoint\'s token, or PAGEWISE_SYNC_TOKEN (better: a flag shows in the process list)', '-c, --conversation ID  that conversation only', 'db', '--create               make --db, or FILE, when it does not exist', ...KEY,
    '--peer-key-file FILE   the key of FILE when it is not --db\'s (default: FILE opens, or is made, with --db\'s key)',
    '--peer-passphrase-file FILE  FILE\'s passphrase instead', 'json', 'engine'], example: 'PAGEWISE_SYNC_TOKEN=tok-alice pagewise sync https://memory.example.workers.dev/v1/pagewise/sync --db memory.sqlite3' },
  mcp: {
    usage: 'mcp [--http PORT [--host ADDR] [--token TOKEN] [--allow-host NAME]… [--allow-origin ORIGIN]…]',
    about: 'An MCP server on the database: over stdio (for the client that starts it), or Streamable HTTP at http://HOST:PORT/mcp.',
    options: [
      '--http PORT            listen on PORT instead of stdio',
      '--host ADDR            the address to listen on (default 127.0.0.1)',
      '--token TOKEN          every request must send Authorization: Bearer TOKEN (required unless ADDR is loopback);\n                         or PAGEWISE_MCP_TOKEN (better: a flag shows in the process list)',
      '--allow-host NAME      accept this Host too (repeatable; default localhost names and ADDR, else 403)',
      '--allow-origin ORIGIN  accept this browser Origin too (repeatable)',
      'dbMakes', ...KEY, 'engine',
      'search', 'searchHow', '                       with --search, the web_search tool too',
    ],
    example: 'pagewise mcp --db memory.sqlite3 --http 3333',
  },
  rekey: {
    usage: 'rekey (--new-key-file FILE | --new-passphrase-file FILE | --decrypt)',
    about: 'Encrypts a plain database file in place, changes the key of an encrypted one (the old key stops opening it), or decrypts it back to a plain SQLite file. Open it with its current key as every command does; prints what it did, never a key. Keep the new key: without it the database cannot be opened.',
    options: [
      '--new-key-file FILE    the new key (32 bytes: raw, hex or base64; pagewise keygen --out FILE makes one)',
      '--new-passphrase-file FILE  a new passphrase instead: the file\'s text (one trailing newline removed)',
      '--decrypt              make it a plain SQLite file again',
      'db', ...KEY, 'json',
    ],
    example: 'pagewise rekey --db memory.sqlite3 --new-key-file memory.key',
  },
  keygen: {
    usage: 'keygen [--out FILE]',
    about: 'A new random 32-byte key as 64 hex characters: written to FILE (readable by you only, mode 0600; an existing file is never overwritten), or printed on stdout. Opens no database.',
    options: ['--out FILE             write the key to FILE instead of stdout', 'json'],
    example: 'pagewise keygen --out memory.key',
  },
};

/** A command's own help (usage, what it does, options, an example), or undefined for a command there is none of. */
export function commandHelp(command: string): string | undefined {
  const help = Object.hasOwn(COMMAND_HELP, command) ? COMMAND_HELP[command] : undefined;
  if (help === undefined) return undefined;
  return [
    `pagewise ${help.usage} [options]`,
    '',
    help.about,
    '',
    'Options:',
    ...help.options.map((o) => `  ${OPTION[o] ?? o}`),
    '',
    'Example:',
    `  ${help.example}`,
    '',
    'pagewise --help: every command · exit codes: 0 done, 1 refused or failed (the error\'s code is printed), 2 bad command line',
  ].join('\n');
}
