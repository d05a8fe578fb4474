// The house's shape, measured with the project's own TypeScript parser: import cycles among the source files, files
// directly in src/, functions over a length, files over a length. Used by tests/node/system/architecture.test.ts and, to
// print the figures, `npx tsx tests/architecture.ts`.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '..');
/** What the package is built from (tests and the demo are not the library). */
export const SOURCE_DIRS = ['src', 'worker'];

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return walk(path);
    return /\.(ts|js|mjs)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

export function sourceFiles(): string[] {
  return SOURCE_DIRS.flatMap((d) => walk(join(ROOT, d))).sort();
}

const parse = (file: string) => ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);

/** Relative imports of a file (static imports, re-exports, `import type` included, and `import('…')` of a literal). */
function importsOf(file: string, files: Set<string>): string[] {
  const out = new Set<string>();
  const add = (spec: string) => {
    if (!spec.startsWith('.')) return;
    const base = resolve(dirname(file), spec);
    for (const candidate of [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')]) {
      if (files.has(candidate)) { out.add(candidate); return; }
    }
  };
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) add(node.moduleSpecifier.text);
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) add(node.arguments[0].text);
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) add(node.argument.literal.text);
    // JSDoc `import('…')` types in checked JS files.
    ts.forEachChild(node, visit);
  };
  const sf = parse(file);
  visit(sf);
  if (file.endsWith('.js')) for (const m of sf.text.matchAll(/import\(['"](\.[^'"]+)['"]\)/g)) add(m[1]!);
  return [...out];
}

/** Strongly connected components of more than one file (Tarjan), each sorted, as paths relative to the root. */
export function importCycles(files = sourceFiles()): string[][] {
  const set = new Set(files);
  const graph = new Map(files.map((f) => [f, importsOf(f, set)]));
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const cycles: string[][] = [];
  const strong = (v: string): void => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) { strong(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do { w = stack.pop()!; on.delete(w); scc.push(w); } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(scc.map((f) => relative(ROOT, f)).sort());
    }
  };
  for (const f of files) if (!idx.has(f)) strong(f);
  return cycles;
}

export interface Measured { file: string; name: string; lines: number }

/** Every function (declarations, expressions, arrows, methods, accessors, constructors) with its length in lines. */
export function functionLengths(files = sourceFiles()): Measured[] {
  const out: Measured[] = [];
  for (const file of files) {
    const sf = parse(file);
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        const named = (node as ts.FunctionLikeDeclaration).name;
        let name = named ? named.getText(sf) : '';
        if (!name && ts.isVariableDeclaration(node.parent)) name = node.parent.name.getText(sf);
        if (!name && ts.isPropertyAssignment(node.parent)) name = node.parent.name.getText(sf);
        out.push({ file: relative(ROOT, file), name: name || '(anonymous)', lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out.sort((a, b) => b.lines - a.lines);
}

export function fileLengths(files = sourceFiles()): Measured[] {
  return files.map((f) => ({ file: relative(ROOT, f), name: '', lines: readFileSync(f, 'utf8').split('\n').length - (readFileSync(f, 'utf8').endsWith('\n') ? 1 : 0) }))
    .sort((a, b) => b.lines - a.lines);
}

/**
 * The layers of ARCHITECTURE.md, bottom up: a folder may import its own files and those of folders before it, never
 * one after it. Same rank: neither imports the other. The CLI is the one surface that opens a memory (engine/).
 */
export const LAYERS: string[][] = [
  ['src/contracts'], ['src/common'], ['src/storage', 'src/tokens', 'src/text'], ['src/store'], ['src/llm'], ['src/embed'],
  ['src/tags'], ['src/retrieval'], ['src/assembly'], ['src/compaction'], ['src/search'], ['src/engine'], ['src/surfaces'], ['src', 'worker'],
];
const ALLOWED_UP = new Set(['src/surfaces/cli.ts → src/engine']);

/** Imports that go up (or sideways) the layers, as "file → folder". */
export function layerViolations(files = sourceFiles()): string[] {
  const set = new Set(files);
  const rank = (file: string): [number, string] => {
    const dir = dirname(relative(ROOT, file));
    const i = LAYERS.findIndex((l) => l.includes(dir));
    return [i, dir];
  };
  const out: string[] = [];
  for (const f of files) {
    const [from, fromDir] = rank(f);
    for (const g of importsOf(f, set)) {
      const [to, toDir] = rank(g);
      if (toDir === fromDir || to < from) continue;
      const line = `${relative(ROOT, f)} → ${toDir}`;
      if (!ALLOWED_UP.has(line)) out.push(line);
    }
  }
  return [...new Set(out)].sort();
}

/** Files directly in src/ (the package entries and whatever else stands there). */
export function topLevelSourceFiles(): string[] {
  return readdirSync(join(ROOT, 'src')).filter((n) => statSync(join(ROOT, 'src', n)).isFile()).sort();
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const cycles = importCycles();
  const top = topLevelSourceFiles();
  const fns = functionLengths().filter((f) => f.lines > 120);
  const big = fileLengths().filter((f) => f.lines > 400);
  const up = layerViolations();
  console.log(`import cycles: ${cycles.length}`);
  for (const c of cycles) console.log(`  ${c.join(' ↔ ')}`);
  console.log(`files directly in src/: ${top.length}\n  ${top.join(' ')}`);
  console.log(`functions over 120 lines: ${fns.length}`);
  for (const f of fns) console.log(`  ${f.lines}\t${f.file}\t${f.name}`);
  console.log(`imports against the layers: ${up.length}`);
  for (const u of up) console.log(`  ${u}`);
  console.log(`files over 400 lines: ${big.length}`);
  for (const f of big) console.log(`  ${f.lines}\t${f.file}`);
}
