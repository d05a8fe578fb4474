// The code samples of README.md and docs/ (docs/contributing/samples.md says what counts and how they run): read with
// markdown-it, the parser VitePress renders the pages with, so that a block the site shows is the block that runs.
// A sample's files are written under .samples/<runtime>/<slug>/ inside the repository (gitignored), so that
// `pagewise` resolves to the built package (.samples/node_modules/pagewise) and every other import to the
// repository's node_modules, as in a project that installed it. tests/support/samples-run.ts runs Node and
// edge samples, tests/browser/samples.spec.ts browser ones.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import MarkdownIt from 'markdown-it';
import type Token from 'markdown-it/lib/token.mjs';
import { parse, printParseErrorCode, type ParseError } from 'jsonc-parser';

export type Runtime = 'node' | 'browser' | 'edge';
export const RUNTIMES: readonly Runtime[] = ['node', 'browser', 'edge'];
/** The languages that run; every other block is shown only. */
export const RUN_LANGUAGES: readonly string[] = ['ts', 'typescript', 'js', 'javascript'];

export interface SampleFile {
  /** Its path in the sample's folder: the title in the info string (```ts [worker.ts]), else main.ts / main.js. */
  name: string;
  /** The info string's first word, lower case (`ts`, `jsonc`). */
  lang: string;
  code: string;
  /** 1-based line of its opening fence. */
  line: number;
  /** A TypeScript or JavaScript block. */
  runs: boolean;
  /** Named by its info string (an untitled entry is main.ts, or what wrangler.jsonc's "main" says). */
  titled: boolean;
}

export interface Claim { text: string; line: number }
export interface SampleRequest {
  method: string; path: string; body: string; line: number;
  /** The status the page says it answers (`… → 401`); else any 2xx. */
  status: number | null;
}

export interface Sample {
  /** `<file>:<line>`: the page and the line of the entry's opening fence. */
  id: string;
  file: string;
  line: number;
  runtime: Runtime;
  /** The group's blocks (one for a lone block); `entry` names the first TypeScript or JavaScript one. */
  files: SampleFile[];
  entry: string;
  /** Every `// → text` of its TypeScript and JavaScript files. */
  claims: Claim[];
  /** The `<!-- request: … -->` comments after it (edge samples). */
  requests: SampleRequest[];
  /** What makes it unrunnable as written (its test fails with these). */
  problems: string[];
}

/** A comment or group the rules cannot place (a `sample:` comment before no fence, a request after no sample). */
export interface PageProblem { id: string; message: string }

export interface Extracted { samples: Sample[]; problems: PageProblem[] }

const SAMPLE_COMMENT = /^<!--\s*sample:\s*(.*?)\s*-->$/;
const REQUEST_COMMENT = /^<!--\s*request:\s*(.*?)\s*-->$/;
const CLAIM = /\/\/\s*→\s?(.*)$/;
const EXTENSION: Record<string, string> = { ts: 'ts', typescript: 'ts', js: 'js', javascript: 'js' };

/** `:::` lines (VitePress containers) as one token each: `::: code-group` opens (info set), `:::` closes. */
function containerMarkers(md: MarkdownIt): void {
  md.block.ruler.before('fence', 'container_marker', (state, startLine, _endLine, silent) => {
    if (state.sCount[startLine]! - state.blkIndent >= 4) return false;
    const text = state.src.slice(state.bMarks[startLine]! + state.tShift[startLine]!, state.eMarks[startLine]);
    const m = /^(:{3,})(.*)$/.exec(text);
    if (!m) return false;
    if (silent) return true;
    const token = state.push('container_marker', '', 0);
    token.markup = m[1]!;
    token.info = m[2]!.trim();
    token.map = [startLine, startLine + 1];
    state.line = startLine + 1;
    return true;
  }, { alt: ['paragraph', 'reference', 'blockquote', 'list'] });
}

const parser = new MarkdownIt({ html: true });
containerMarkers(parser);

/** `ts [worker.ts] {1,3}` → lang `ts`, title `worker.ts`; `ts:line-numbers` → `ts`. */
export function parseInfo(info: string): { lang: string; title: string | null } {
  const lang = (/^[A-Za-z0-9_+-]*/.exec(info.trim())?.[0] ?? '').toLowerCase();
  const title = /\[([^\]]*)\]/.exec(info)?.[1]?.trim() || null;
  return { lang, title };
}

/** A relative path inside the sample's folder: no `..`, no absolute path, no odd characters. */
function safeName(name: string): boolean {
  return /^[A-Za-z0-9_.@-]+(\/[A-Za-z0-9_.@-]+)*$/.test(name) && !name.split('/').some((p) => p === '..' || p === '.');
}

function claimsOf(file: SampleFile): Claim[] {
  if (!file.runs) return [];
  const out: Claim[] = [];
  file.code.split('\n').forEach((text, i) => {
    const m = CLAIM.exec(text);
    const claim = m?.[1]?.trim();
    if (claim) out.push({ text: claim, line: file.line + 1 + i });
  });
  return out;
}

/** JSON with comments and trailing commas (wrangler.jsonc), read by jsonc-parser (the parser VS Code uses for it). */
export function parseJsonc(text: string): unknown {
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true });
  const first = errors[0];
  if (first) throw new Error(`${printParseErrorCode(first.error)} at character ${first.offset}`);
  return value;
}

/**
 * `POST /chat {"message":"hi"}` → method, path, body (the rest of the line, maybe empty); a trailing `→ 401` is the
 * status the request must answer (else any 2xx).
 */
export function parseRequest(text: string, line: number): SampleRequest | string {
  const expected = /\s*→\s*(\d{3})\s*$/.exec(text);
  const rest = expected ? text.slice(0, expected.index) : text;
  const m = /^([A-Z]+)\s+(\/\S*)(?:\s+([\s\S]*))?$/.exec(rest.trim());
  if (!m) return `request comment "${text}" is not "METHOD /path body [→ status]"`;
  return { method: m[1]!, path: m[2]!, body: m[3]?.trim() ?? '', line, status: expected ? Number(expected[1]) : null };
}

interface Block { token: Token; runtime: { value: string; line: number } | null }

const WRANGLER = /^wrangler\.jsonc?$/;

/** An untitled entry takes the name wrangler.jsonc's "main" gives it (the README's lone block and its config). */
function nameEntry(sample: Sample): void {
  const config = sample.files.find((f) => WRANGLER.test(f.name));
  const entry = sample.files[0]!;
  if (!config || entry.titled) return;
  let main: unknown;
  try { main = (parseJsonc(config.code) as { main?: unknown }).main; } catch { return; /* the runner says so */ }
  if (typeof main !== 'string' || !safeName(main.replace(/^\.\//, ''))) return;
  entry.name = main.replace(/^\.\//, '');
  sample.entry = entry.name;
}

function fileOf(token: Token, index: number): { file: SampleFile; problem?: string } {
  const { lang, title } = parseInfo(token.info);
  const runs = RUN_LANGUAGES.includes(lang);
  const line = token.map![0] + 1;
  const fallback = runs && index === 0 ? `main.${EXTENSION[lang]}` : `${lang || 'text'}-${line}.txt`;
  const name = title ?? fallback;
  const file = { name, lang, code: token.content, line, runs, titled: title !== null };
  if (runs && index > 0 && !title) return { file, problem: `the ${lang} block at line ${line} has no file name ([name.ts] in its info string)` };
  if (runs && !safeName(name)) return { file, problem: `"${name}" (line ${line}) is not a relative file path` };
  if (runs && !/\.(m|c)?(t|j)sx?$/.test(name)) return { file, problem: `"${name}" (line ${line}) names no .ts or .js file` };
  return { file };
}

/** One sample from a lone block or a code group; null when none of its blocks runs. */
function sampleOf(path: string, blocks: Token[], runtime: Block['runtime']): Sample | null {
  const first = blocks.findIndex((t) => RUN_LANGUAGES.includes(parseInfo(t.info).lang));
  if (first < 0) return null;
  const problems: string[] = [];
  // The entry first: it is named main.ts when untitled, the others need their titles.
  const ordered = [blocks[first]!, ...blocks.filter((_, i) => i !== first)];
  const files: SampleFile[] = [];
  ordered.forEach((t, i) => {
    const { file, problem } = fileOf(t, i);
    if (problem) problems.push(problem);
    if (files.some((f) => f.name === file.name)) problems.push(`two blocks are named "${file.name}"`);
    files.push(file);
  });
  let value: Runtime = 'node';
  if (runtime) {
    if ((RUNTIMES as string[]).includes(runtime.value)) value = runtime.value as Runtime;
    else problems.push(`<!-- sample: ${runtime.value} --> (line ${runtime.line}): the runtime is one of ${RUNTIMES.join(', ')}`);
  }
  const entry = files[0]!;
  const sample = {
    id: `${path}:${entry.line}`, file: path, line: entry.line, runtime: value, files, entry: entry.name,
    claims: files.flatMap(claimsOf), requests: [], problems,
  };
  nameEntry(sample);
  return sample;
}

/** The samples of one markdown page; `path` is how the page is named (`docs/guide/node.md`). */
export function extractSamples(markdown: string, path: string): Extracted {
  const tokens = parser.parse(markdown, {});
  const samples: Sample[] = [];
  const problems: PageProblem[] = [];
  const problem = (line: number, message: string) => problems.push({ id: `${path}:${line}`, message });
  let pending: { value: string; line: number; end: number } | null = null;
  let group: { blocks: Token[]; runtime: Block['runtime']; line: number } | null = null;
  const containers: string[] = [];
  // The sample that request comments may follow, while only comments have come after it.
  let last: Sample | null = null;
  const take = (start: number): Block['runtime'] => {
    const p = pending;
    pending = null;
    return p && p.end === start ? { value: p.value, line: p.line } : null;
  };
  const finish = (s: Sample | null) => { if (s) samples.push(s); last = s; };
  for (const token of tokens) {
    const start = token.map?.[0] ?? -1;
    if (pending && start >= 0 && start !== pending.end) {
      problem(pending.line, `<!-- sample: ${pending.value} --> is not on the line just before a fence or ::: code-group`);
      pending = null;
    }
    if (token.type === 'html_block') {
      const text = token.content.trim();
      const s = SAMPLE_COMMENT.exec(text);
      const r = REQUEST_COMMENT.exec(text);
      if (s) { pending = { value: s[1]!, line: start + 1, end: token.map![1] }; last = null; continue; }
      if (r) {
        const request = parseRequest(r[1]!, start + 1);
        const target = last as Sample | null;
        if (!target) problem(start + 1, 'a request comment follows no sample (it goes after the closing fence or :::)');
        else if (typeof request === 'string') target.problems.push(`line ${start + 1}: ${request}`);
        else target.requests.push(request);
        continue;
      }
      last = null;
      continue;
    }
    if (token.type === 'container_marker') {
      if (token.info) {
        containers.push(token.info);
        if (token.info.split(/\s/)[0] === 'code-group') group = { blocks: [], runtime: take(start), line: start + 1 };
        else if (take(start)) problem(start + 1, `a sample comment before "::: ${token.info}" (only code groups take one)`);
        last = null;
      } else if (containers.length > 0) {
        const closed = containers.pop()!;
        if (closed.split(/\s/)[0] === 'code-group' && group) {
          const g = group;
          group = null;
          finish(sampleOf(path, g.blocks, g.runtime));
          continue;
        }
        last = null;
      }
      continue;
    }
    if (token.type === 'fence') {
      if (group && containers.at(-1)?.split(/\s/)[0] === 'code-group') { group.blocks.push(token); take(start); continue; }
      const runtime = take(start);
      // Where code groups do not render (GitHub), a [wrangler.jsonc] block right after an edge sample is its config.
      const config = fileOf(token, 1).file;
      const prev = last as Sample | null;
      if (!runtime && prev?.runtime === 'edge' && WRANGLER.test(config.name) && config.titled && !prev.files.some((f) => WRANGLER.test(f.name))) {
        prev.files.push(config);
        nameEntry(prev);
        continue;
      }
      const s = sampleOf(path, [token], runtime);
      if (!s && runtime) problem(runtime.line, `<!-- sample: ${runtime.value} --> comes before a ${parseInfo(token.info).lang || 'plain'} block, which does not run`);
      finish(s);
      continue;
    }
    // Paragraphs and headings end what a request comment may follow; the tokens inside them carry no map.
    if (token.map) last = null;
  }
  if (pending) problem((pending as { line: number }).line, 'a sample comment at the end of the page');
  if (group) problem((group as { line: number }).line, '::: code-group is never closed');
  return { samples, problems };
}

/** README.md and docs/**\/*.md, the generated docs/api/ and dot folders (VitePress' cache) left out. */
export function samplePages(root: string): string[] {
  const pages = ['README.md'];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(dir, e.name);
      const rel = relative(root, p).split(sep).join('/');
      if (e.name.startsWith('.') || e.name === 'node_modules' || rel === 'docs/api') continue;
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.md')) pages.push(rel);
    }
  };
  walk(join(root, 'docs'));
  return pages;
}

/** Every sample of the repository at `root`, page by page. */
export function findSamples(root: string): Extracted {
  const out: Extracted = { samples: [], problems: [] };
  for (const page of samplePages(root)) {
    const { samples, problems } = extractSamples(readFileSync(join(root, page), 'utf8'), page);
    out.samples.push(...samples);
    out.problems.push(...problems);
  }
  return out;
}

/** A folder name for the sample: `docs/guide/node.md:42` → `docs-guide-node-md-42`. */
export function slug(sample: Pick<Sample, 'id'>): string {
  return sample.id.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '');
}

/**
 * The claims the output lacks, as lines for a failure message. Claims are found in order, each on a later line of the
 * output than the one before it; a short claim (three characters or fewer: `4`, `[]`) must be the whole line, so that
 * `// → 4` is not satisfied by a 4 somewhere in a longer line.
 */
export function missingClaims(sample: Sample, output: string): string[] {
  const lines = output.split('\n').map((l) => l.trim());
  const missing: string[] = [];
  let at = 0;
  for (const c of sample.claims) {
    const found = lines.findIndex((l, i) => i >= at && (c.text.length <= 3 ? l === c.text : l.includes(c.text)));
    if (found < 0) {
      const anywhere = lines.some((l) => (c.text.length <= 3 ? l === c.text : l.includes(c.text)));
      missing.push(`${sample.file}:${c.line}: claims "${c.text}", ${anywhere ? 'found only before the claim above it' : 'not in the output'}`);
    } else at = found + 1;
  }
  return missing;
}

export const ROOT = resolve(import.meta.dirname, '../..');
/** Only a safety net for a sample that never ends (a server left listening): the machine may be slow and busy. */
export const SAFETY_NET_MS = 5 * 60_000;

/** What samples read to reach a model: the local double (tests/support/upstream.ts, started with `reply`). */
export type ModelEnv = Record<'OPENAI_BASE_URL' | 'OPENAI_API_KEY' | 'ANTHROPIC_BASE_URL' | 'ANTHROPIC_API_KEY', string>;
export const MODEL_REPLY = '(model reply)';
export const modelEnv = (base: string): ModelEnv => ({
  OPENAI_BASE_URL: `${base}/v1`, OPENAI_API_KEY: 'sk-sample-key', ANTHROPIC_BASE_URL: base, ANTHROPIC_API_KEY: 'sk-ant-sample-key',
});

/** A sample that failed: the message names it by file:line and says why. */
export class SampleFailure extends Error {
  override name = 'SampleFailure';
}

export const tail = (text: string, max = 6000) => (text.length > max ? `…${text.slice(-max)}` : text);
export const fail = (sample: Sample, why: string): never => { throw new SampleFailure(`${sample.id} (${sample.runtime} sample) ${why}`); };

/**
 * The package as a project that installed it has it: .samples/node_modules/pagewise holds the repository's
 * package.json and a link to its dist/, so that `pagewise/…` resolves through the package's "exports" to the build.
 * (A sample cannot use the package's self-reference: it would sit in the repository's package scope, whose
 * `"sideEffects": false` lets bundlers drop the sample's own statements.)
 */
function installPackage(): void {
  const dir = join(ROOT, '.samples', 'node_modules', 'pagewise');
  mkdirSync(dir, { recursive: true });
  const manifest = readFileSync(join(ROOT, 'package.json'), 'utf8');
  if (!existsSync(join(dir, 'package.json')) || readFileSync(join(dir, 'package.json'), 'utf8') !== manifest) {
    const temp = join(dir, `package.json.${process.pid}`);
    writeFileSync(temp, manifest);
    renameSync(temp, join(dir, 'package.json'));
  }
  try {
    symlinkSync(join(ROOT, 'dist'), join(dir, 'dist'), 'dir');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
}

/** A sample's own package scope, unless it brings its package.json: an ES module project, like the guides' own. */
const SAMPLE_PACKAGE = `${JSON.stringify({ name: 'pagewise-sample', private: true, type: 'module' }, null, 2)}\n`;

/** The folder a sample runs in, .samples/<runtime>/<slug>/, emptied, with its files and a package.json written. */
export function writeSample(sample: Sample): string {
  installPackage();
  const dir = join(ROOT, '.samples', sample.runtime, slug(sample));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), SAMPLE_PACKAGE);
  for (const f of sample.files) {
    mkdirSync(dirname(join(dir, f.name)), { recursive: true });
    writeFileSync(join(dir, f.name), f.code);
  }
  return dir;
}

/** Fails the sample unless its output holds every `// → text` claim. */
export function checkClaims(sample: Sample, output: string): void {
  const missing = missingClaims(sample, output);
  if (missing.length) fail(sample, `printed what it does not claim:\n${missing.join('\n')}\n--- output ---\n${tail(output) || '(nothing)'}`);
}
