#!/usr/bin/env node
// npm run release -- --version=X.Y.Z|patch|minor|major [--model-version=X.Y.Z|patch|minor|major] [--write]
//
// Prepares a release of pagewise (and, when asked, of @pagewise/all-minilm-l6-v2); never publishes.
//
//   1. Checks: the version is semver and greater than the current one, CHANGELOG.md's [Unreleased] section has
//      entries, and the working tree is clean (git).
//   2. In a temporary copy of the repository: sets the versions (package.json, the model's package.json when
//      --model-version is given, with the root's dev dependency and peer range on it, package-lock.json), moves
//      [Unreleased] to the new version with today's date, runs the pack check (tests/pack/check.mjs: build, pack,
//      install into two empty apps, recall), and packs both packages into --out (default .release/, ignored by git;
//      the model at its current version unless --model-version is given: publish it only if npm lacks it).
//   3. Prints the tarballs with their sizes and the `npm publish --provenance` commands a maintainer (or CI) runs.
//
// A dry run (the default, --dry-run) changes nothing in the working tree but the tarballs in --out. --write
// (or --dry-run=false) then writes the same versions and changelog into the tree, for a commit and a tag.
// --allow-dirty skips the clean-tree check (a dry run only: to try the script while working).
// See docs/contributing/releasing.md.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT_PACKAGE = 'package.json';
export const MODEL_DIR = 'packages/model-all-minilm-l6-v2';
export const MODEL_PACKAGE = `${MODEL_DIR}/package.json`;
export const MODEL_NAME = '@pagewise/all-minilm-l6-v2';
export const LOCK = 'package-lock.json';
export const CHANGELOG = 'CHANGELOG.md';
const REPOSITORY = 'https://github.com/pagewise/pagewise';

// ---- Versions (semver 2.0.0) ----

// The grammar of semver.org, without build metadata (npm drops it): MAJOR.MINOR.PATCH[-PRERELEASE].
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?$/;

/**
 * @typedef {{ major: number, minor: number, patch: number, prerelease: string[] }} Semver
 */

/**
 * A version's parts, or null when it is not MAJOR.MINOR.PATCH[-PRERELEASE].
 * @param {string} version
 * @returns {Semver | null}
 */
export function parseSemver(version) {
  const m = SEMVER.exec(version);
  if (!m) return null;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), prerelease: m[4] ? m[4].split('.') : [] };
}

/**
 * Semver precedence: negative when a < b, 0 when equal, positive when a > b. A prerelease sorts before its release.
 * @param {string} a
 * @param {string} b
 */
export function compareSemver(a, b) {
  const x = parseSemver(a);
  const y = parseSemver(b);
  if (!x || !y) throw new Error(`not a semantic version: ${!x ? a : b}`);
  for (const k of /** @type {const} */ (['major', 'minor', 'patch'])) if (x[k] !== y[k]) return x[k] - y[k];
  if (x.prerelease.length === 0 || y.prerelease.length === 0) return y.prerelease.length - x.prerelease.length;
  for (let i = 0; i < Math.max(x.prerelease.length, y.prerelease.length); i++) {
    const p = x.prerelease[i];
    const q = y.prerelease[i];
    if (p === undefined) return -1;
    if (q === undefined) return 1;
    if (p === q) continue;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    if (pn && qn) return Number(p) - Number(q);
    if (pn !== qn) return pn ? -1 : 1; // numeric identifiers sort before alphanumeric ones
    return p < q ? -1 : 1;
  }
  return 0;
}

/**
 * The version to release: `spec` itself (X.Y.Z[-PRE]) or the current version bumped (patch, minor, major, as npm
 * does: a prerelease's patch is its release). Throws, saying why, when it is not semver or not greater than `current`.
 * @param {string} current
 * @param {string} spec
 * @param {string} [what] the package, for the message
 */
export function nextVersion(current, spec, what = 'pagewise') {
  const c = parseSemver(current);
  if (!c) throw new Error(`${what}'s current version "${current}" is not a semantic version: fix its package.json first.`);
  let next;
  if (spec === 'major') next = `${c.prerelease.length && c.minor === 0 && c.patch === 0 ? c.major : c.major + 1}.0.0`;
  else if (spec === 'minor') next = `${c.major}.${c.prerelease.length && c.patch === 0 ? c.minor : c.minor + 1}.0`;
  else if (spec === 'patch') next = `${c.major}.${c.minor}.${c.prerelease.length ? c.patch : c.patch + 1}`;
  else next = spec.replace(/^v/, '');
  if (!parseSemver(next)) throw new Error(`"${spec}" is not a version: give X.Y.Z (semver, e.g. 0.2.0 or 1.0.0-rc.1) or patch, minor or major.`);
  if (compareSemver(next, current) <= 0) throw new Error(`${what} ${next} is not greater than the current ${current}: give a higher version.`);
  return next;
}

// ---- The changelog (Keep a Changelog 1.1.0) ----

const UNRELEASED = /^## \[Unreleased\][^\n]*\n/m;

/**
 * The text of the [Unreleased] section (between its heading and the next `## ` heading or link definitions), trimmed;
 * null when there is no such section.
 * @param {string} changelog
 */
export function unreleasedSection(changelog) {
  const m = UNRELEASED.exec(changelog);
  if (!m) return null;
  const start = m.index + m[0].length;
  const rest = changelog.slice(start);
  const end = rest.search(/^(## |\[[^\]]+\]: )/m);
  return (end === -1 ? rest : rest.slice(0, end)).trim();
}

/**
 * The changelog with [Unreleased]'s entries moved under `## [version] - date` (a line naming the packages' versions
 * first), an empty [Unreleased] above it, and the compare links at the bottom updated. Throws when there is no
 * [Unreleased] section or it has no entries (a line starting with `- ` or `* `).
 * @param {string} changelog
 * @param {{ version: string, date: string, previous: string, packages: string }} release
 */
export function releaseChangelog(changelog, { version, date, previous, packages }) {
  const section = unreleasedSection(changelog);
  if (section === null) throw new Error(`${CHANGELOG} has no "## [Unreleased]" section: add one, with the changes of this release under it.`);
  if (!/^\s*[-*] \S/m.test(section)) throw new Error(`${CHANGELOG}'s [Unreleased] section lists no changes: write what this release changes (### Added, ### Changed, ### Fixed…) before releasing.`);
  if (new RegExp(`^## \\[${version.replace(/\./g, '\\.')}\\]`, 'm').test(changelog)) throw new Error(`${CHANGELOG} already has a section for ${version}.`);
  const m = /** @type {RegExpExecArray} */ (UNRELEASED.exec(changelog));
  const start = m.index + m[0].length;
  const rest = changelog.slice(start);
  const endRel = rest.search(/^(## |\[[^\]]+\]: )/m);
  const end = endRel === -1 ? changelog.length : start + endRel;
  const released = `## [Unreleased]\n\n## [${version}] - ${date}\n\n${packages}\n\n${section}\n\n`;
  let out = changelog.slice(0, m.index) + released + changelog.slice(end).replace(/^\n+/, '');
  // Links: [Unreleased] compares from the new tag; the new version compares from the previous one.
  const unreleasedLink = `[Unreleased]: ${REPOSITORY}/compare/v${version}...HEAD`;
  const versionLink = `[${version}]: ${REPOSITORY}/compare/v${previous}...v${version}`;
  if (/^\[Unreleased\]: .*$/m.test(out)) out = out.replace(/^\[Unreleased\]: .*$/m, `${unreleasedLink}\n${versionLink}`);
  else out = `${out.replace(/\n*$/, '\n')}\n${unreleasedLink}\n${versionLink}\n`;
  return out;
}

/**
 * The line under a release's heading that says which version of each package it holds.
 * @param {string} version
 * @param {string} modelVersion
 */
export const packagesLine = (version, modelVersion) => `Packages: \`pagewise\` ${version}, \`${MODEL_NAME}\` ${modelVersion}.`;

// ---- The files a release changes ----

/**
 * A caret range that admits `version`: `range` itself when it already does (same major, not lower), else ^version.
 * @param {string} range
 * @param {string} version
 */
export function peerRange(range, version) {
  const m = /^\^(\d+\.\d+\.\d+)$/.exec(range);
  const v = parseSemver(version);
  const low = m ? parseSemver(/** @type {string} */ (m[1])) : null;
  if (low && v && v.prerelease.length === 0 && low.major === v.major && compareSemver(version, /** @type {string} */ (m?.[1])) >= 0) return range;
  return `^${version}`;
}

/** @param {unknown} value */
const json = (value) => `${JSON.stringify(value, null, 2)}\n`;

/**
 * The new contents of the files a release changes, from their current contents (paths relative to the root). Pure:
 * nothing is read or written here.
 * @param {Record<string, string>} files package.json, the model's package.json, package-lock.json, CHANGELOG.md
 * @param {{ version: string, modelVersion?: string | undefined, date: string }} release
 * @returns {Record<string, string>}
 */
export function releaseFiles(files, { version, modelVersion, date }) {
  const root = JSON.parse(/** @type {string} */ (files[ROOT_PACKAGE]));
  const model = JSON.parse(/** @type {string} */ (files[MODEL_PACKAGE]));
  const lock = JSON.parse(/** @type {string} */ (files[LOCK]));
  const previous = root.version;
  const modelNext = modelVersion ?? model.version;
  root.version = version;
  lock.version = version;
  lock.packages[''].version = version;
  if (modelVersion !== undefined) {
    model.version = modelVersion;
    lock.packages[MODEL_DIR].version = modelVersion;
    for (const pkg of [root, lock.packages['']]) {
      if (pkg.devDependencies?.[MODEL_NAME]) pkg.devDependencies[MODEL_NAME] = modelVersion;
      if (pkg.peerDependencies?.[MODEL_NAME]) pkg.peerDependencies[MODEL_NAME] = peerRange(pkg.peerDependencies[MODEL_NAME], modelVersion);
    }
  }
  const changelog = releaseChangelog(/** @type {string} */ (files[CHANGELOG]), { version, date, previous, packages: packagesLine(version, modelNext) });
  return { [ROOT_PACKAGE]: json(root), [MODEL_PACKAGE]: json(model), [LOCK]: json(lock), [CHANGELOG]: changelog };
}

/**
 * The command line: `--version=…` (required), `--model-version=…`, `--write` / `--dry-run[=false]`, `--allow-dirty`,
 * `--out=DIR`. Throws on anything else.
 * @param {string[]} argv
 */
export function parseReleaseArgs(argv) {
  /** @type {{ version?: string, modelVersion?: string, write: boolean, allowDirty: boolean, out: string }} */
  const o = { write: false, allowDirty: false, out: '.release' };
  for (const arg of argv) {
    const [key, value] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (['--version', '--model-version', '--out'].includes(key) && !value) throw new Error(`${key} takes a value: ${key}=…`);
    if (key === '--version' && value) o.version = value;
    else if (key === '--model-version' && value) o.modelVersion = value;
    else if (key === '--write' && value === undefined) o.write = true;
    else if (key === '--dry-run' && (value === undefined || value === 'true' || value === 'false')) o.write = value === 'false';
    else if (key === '--allow-dirty' && value === undefined) o.allowDirty = true;
    else if (key === '--out' && value) o.out = value;
    else throw new Error(`unknown argument "${arg}": npm run release -- --version=X.Y.Z|patch|minor|major [--model-version=…] [--write] [--allow-dirty] [--out=DIR]`);
  }
  if (!o.version) throw new Error('say which version: npm run release -- --version=X.Y.Z (or patch, minor, major)');
  if (o.write && o.allowDirty) throw new Error('--allow-dirty is for dry runs: commit or set aside your changes before --write.');
  return { ...o, version: o.version };
}

// ---- The run (impure) ----

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
// Child npm and git commands see the user's environment, not the npm_* variables of the `npm run` that started this.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'INIT_CWD'));

/**
 * @param {string} command
 * @param {string[]} args
 * @param {string} cwd
 * @param {boolean} [show] stream its output instead of capturing it
 */
function run(command, args, cwd, show = false) {
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20, stdio: show ? 'inherit' : 'pipe' });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} (in ${cwd}) failed${show ? '' : `:\n${r.stdout}\n${r.stderr}`}`);
  return r.stdout ?? '';
}

/** @param {number} bytes */
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
/** A path as a maintainer types it: relative inside the repository, absolute outside. @param {string} path */
const shown = (path) => (relative(repo, path).startsWith('..') ? path : relative(repo, path) || '.');

/** A copy of the repository's files (tracked, and untracked ones git does not ignore) with node_modules linked in. */
function stage() {
  const copy = mkdtempSync(join(tmpdir(), 'pagewise-release-'));
  const files = run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], repo).split('\0').filter((f) => f && existsSync(join(repo, f)));
  for (const f of files) {
    mkdirSync(dirname(join(copy, f)), { recursive: true });
    cpSync(join(repo, f), join(copy, f));
  }
  symlinkSync(join(repo, 'node_modules'), join(copy, 'node_modules'), 'dir');
  return copy;
}

async function main() {
  const o = parseReleaseArgs(process.argv.slice(2));
  /** @type {Record<string, string>} */
  const current = Object.fromEntries([ROOT_PACKAGE, MODEL_PACKAGE, LOCK, CHANGELOG].map((f) => [f, readFileSync(join(repo, f), 'utf8')]));
  const root = JSON.parse(/** @type {string} */ (current[ROOT_PACKAGE]));
  const model = JSON.parse(/** @type {string} */ (current[MODEL_PACKAGE]));
  const version = nextVersion(root.version, o.version, 'pagewise');
  const modelVersion = o.modelVersion === undefined ? undefined : nextVersion(model.version, o.modelVersion, MODEL_NAME);
  const date = new Date().toISOString().slice(0, 10);
  const next = releaseFiles(current, { version, modelVersion, date });
  const dirty = run('git', ['status', '--porcelain'], repo).trim();
  if (dirty && !o.allowDirty) throw new Error(`the working tree has changes: commit them or set them aside first (git status):\n${dirty}`);
  console.log(`release: pagewise ${root.version} → ${version}; ${MODEL_NAME} ${modelVersion ? `${model.version} → ${modelVersion}` : `${model.version} (unchanged)`}; ${date}${o.write ? '' : ' (dry run)'}`);

  const copy = stage();
  const out = resolve(repo, o.out);
  try {
    for (const [f, text] of Object.entries(next)) writeFileSync(join(copy, f), text);
    console.log(`\nthe pack check on the release (in ${copy}):`);
    run(process.execPath, [join(copy, 'tests/pack/check.mjs')], copy, true);

    mkdirSync(out, { recursive: true });
    console.log(`\ntarballs in ${shown(out)}/ (packed / unpacked):`);
    /** @type {{ name: string, version: string, file: string }[]} */
    const packed = [];
    // The model first: pagewise's peer range names it, so it is published first when both are new.
    for (const where of [MODEL_DIR, null]) {
      // Built by the pack check just above: no lifecycle script, so that only the JSON report is on stdout.
      const args = ['pack', '--json', '--ignore-scripts', '--pack-destination', out, ...(where ? ['--workspace', where] : [])];
      /** @type {{ name: string, version: string, filename: string, size: number, unpackedSize: number, entryCount: number }} */
      const info = JSON.parse(run('npm', args, copy))[0];
      const file = join(out, info.filename);
      packed.push({ name: info.name, version: info.version, file });
      console.log(`  ${shown(file).padEnd(44)} ${mb(info.size).padStart(9)} / ${mb(info.unpackedSize).padStart(9)}  (${info.entryCount} files)`);
    }

    if (o.write) {
      for (const [f, text] of Object.entries(next)) writeFileSync(join(repo, f), text);
      console.log(`\nwritten: ${Object.keys(next).join(', ')}`);
    } else {
      console.log('\ndry run: nothing in the working tree was changed (run again with --write to set the versions and the changelog)');
    }
    console.log('\nthen, to publish (from CI with an OIDC id-token for --provenance, e.g. GitHub Actions with `permissions: id-token: write`):');
    if (!o.write) console.log(`  npm run release -- --version=${version}${modelVersion ? ` --model-version=${modelVersion}` : ''} --write`);
    console.log(`  git commit -am "Release ${version}" && git tag v${version} && git push --follow-tags`);
    for (const p of packed) {
      const again = p.name === MODEL_NAME && modelVersion === undefined;
      console.log(`  npm publish ${shown(p.file)} --provenance --access public${again ? `   # only if ${p.name}@${p.version} is not on npm yet (npm view ${p.name}@${p.version} version); --model-version=… when its files changed` : ''}`);
    }
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((/** @type {unknown} */ e) => {
    console.error(`release: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
}
