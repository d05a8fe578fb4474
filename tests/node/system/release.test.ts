import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CHANGELOG, compareSemver, LOCK, MODEL_DIR, MODEL_NAME, MODEL_PACKAGE, nextVersion, parseReleaseArgs, parseSemver, peerRange,
  releaseChangelog, releaseFiles, ROOT_PACKAGE, unreleasedSection,
} from '../../pack/release.mjs';

// The release script's pure parts (tests/pack/release.mjs): versions, the changelog's move, the files a release
// changes. Not the pack check it runs (npm run check:pack).
const ROOT = resolve(import.meta.dirname, '../../..');

const CHANGES = `# Changelog

Intro.

## [Unreleased]

### Fixed

- The thing that broke.

## [0.1.0] - 2026-11-28

### Added

- Everything.

[Unreleased]: https://github.com/pagewise/pagewise/compare/v0.1.0...HEAD
[0.1.0]: https://github.com/pagewise/pagewise/releases/tag/v0.1.0
`;

describe('release: versions', () => {
  it('reads semver and orders versions by its precedence', () => {
    expect(parseSemver('1.2.3-rc.1')).toEqual({ major: 1, minor: 2, patch: 3, prerelease: ['rc', '1'] });
    for (const bad of ['1.2', '01.2.3', '1.2.3-', '1.2.3-01', 'v1.2.3', '1.2.3.4', 'latest', '']) expect(parseSemver(bad), bad).toBeNull();
    const sorted = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '1.0.1', '1.1.0', '2.0.0'];
    for (let i = 0; i + 1 < sorted.length; i++) {
      expect(compareSemver(sorted[i]!, sorted[i + 1]!), `${sorted[i]} < ${sorted[i + 1]}`).toBeLessThan(0);
      expect(compareSemver(sorted[i + 1]!, sorted[i]!)).toBeGreaterThan(0);
    }
    expect(compareSemver('1.0.0', '1.0.0')).toBe(0);
  });

  it('takes a version greater than the current one, or a bump of it; refuses the rest, saying why', () => {
    expect(nextVersion('0.1.0', 'patch')).toBe('0.1.1');
    expect(nextVersion('0.1.0', 'minor')).toBe('0.2.0');
    expect(nextVersion('0.1.0', 'major')).toBe('1.0.0');
    expect(nextVersion('1.0.0-rc.2', 'patch')).toBe('1.0.0'); // a prerelease's patch is its release, as npm does
    expect(nextVersion('1.0.0-rc.2', 'major')).toBe('1.0.0');
    expect(nextVersion('0.1.0', '0.2.0-beta.1')).toBe('0.2.0-beta.1');
    expect(nextVersion('0.1.0', 'v0.3.0')).toBe('0.3.0');
    expect(() => nextVersion('0.1.0', '0.1.0')).toThrow(/0\.1\.0 is not greater than the current 0\.1\.0/);
    expect(() => nextVersion('0.1.0', '0.0.9')).toThrow(/not greater/);
    expect(() => nextVersion('0.1.0', '0.1.0-rc.1')).toThrow(/not greater/);
    expect(() => nextVersion('0.1.0', '0.2')).toThrow(/"0\.2" is not a version: give X\.Y\.Z/);
    expect(() => nextVersion('0.1.0', 'next')).toThrow(/not a version/);
  });

  it('keeps a caret peer range that admits the new model version, else moves it', () => {
    expect(peerRange('^1.0.0', '1.0.1')).toBe('^1.0.0');
    expect(peerRange('^1.0.0', '1.4.0')).toBe('^1.0.0');
    expect(peerRange('^1.0.0', '2.0.0')).toBe('^2.0.0');
    expect(peerRange('^1.2.0', '1.1.0')).toBe('^1.1.0');
    expect(peerRange('1.0.0', '1.0.1')).toBe('^1.0.1');
  });

  it('reads its command line: a dry run unless --write or --dry-run=false', () => {
    expect(parseReleaseArgs(['--version=0.2.0'])).toEqual({ version: '0.2.0', write: false, allowDirty: false, out: '.release' });
    expect(parseReleaseArgs(['--version=minor', '--dry-run']).write).toBe(false);
    expect(parseReleaseArgs(['--version=minor', '--dry-run=false']).write).toBe(true);
    expect(parseReleaseArgs(['--version=minor', '--write', '--model-version=patch', '--out=x']))
      .toEqual({ version: 'minor', modelVersion: 'patch', write: true, allowDirty: false, out: 'x' });
    expect(() => parseReleaseArgs([])).toThrow(/--version=X\.Y\.Z/);
    expect(() => parseReleaseArgs(['--version', '0.2.0'])).toThrow(/--version takes a value: --version=…/);
    expect(() => parseReleaseArgs(['--version=0.2.0', '--publish'])).toThrow(/unknown argument "--publish"/);
    expect(() => parseReleaseArgs(['--version=1.0.0', '--write', '--allow-dirty'])).toThrow(/--allow-dirty is for dry runs/);
  });
});

describe('release: the changelog', () => {
  it('moves [Unreleased] under the new version with its date and packages, leaving an empty [Unreleased] and the links updated', () => {
    expect(unreleasedSection(CHANGES)).toBe('### Fixed\n\n- The thing that broke.');
    const out = releaseChangelog(CHANGES, { version: '0.1.1', date: '2026-12-01', previous: '0.1.0', packages: 'Packages: a, b.' });
    expect(out).toBe(`# Changelog

Intro.

## [Unreleased]

## [0.1.1] - 2026-12-01

Packages: a, b.

### Fixed

- The thing that broke.

## [0.1.0] - 2026-11-28

### Added

- Everything.

[Unreleased]: https://github.com/pagewise/pagewise/compare/v0.1.1...HEAD
[0.1.1]: https://github.com/pagewise/pagewise/compare/v0.1.0...v0.1.1
[0.1.0]: https://github.com/pagewise/pagewise/releases/tag/v0.1.0
`);
    expect(unreleasedSection(out)).toBe('');
  });

  it('refuses a changelog without [Unreleased], with nothing under it, or with the version already there', () => {
    const release = { version: '0.1.1', date: '2026-12-01', previous: '0.1.0', packages: 'Packages: a, b.' };
    expect(() => releaseChangelog(CHANGES.replace('## [Unreleased]\n', ''), release)).toThrow(/no "## \[Unreleased\]" section/);
    expect(() => releaseChangelog(CHANGES.replace('- The thing that broke.\n', ''), release)).toThrow(/\[Unreleased\] section lists no changes/);
    expect(() => releaseChangelog(CHANGES, { ...release, version: '0.1.0' })).toThrow(/already has a section for 0\.1\.0/);
  });

  it('the repository\'s own CHANGELOG.md has [Unreleased] and a section naming both packages\' versions', () => {
    const text = readFileSync(resolve(ROOT, CHANGELOG), 'utf8');
    const root = JSON.parse(readFileSync(resolve(ROOT, ROOT_PACKAGE), 'utf8')) as { version: string };
    const model = JSON.parse(readFileSync(resolve(ROOT, MODEL_PACKAGE), 'utf8')) as { version: string };
    expect(unreleasedSection(text)).not.toBeNull();
    expect(text).toContain(`## [${root.version}] - `);
    expect(text).toContain(`Packages: \`pagewise\` ${root.version}, \`${MODEL_NAME}\` ${model.version}.`);
  });
});

describe('release: the files it changes', () => {
  const files = {
    [ROOT_PACKAGE]: `${JSON.stringify({ name: 'pagewise', version: '0.1.0', peerDependencies: { [MODEL_NAME]: '^1.0.0' }, devDependencies: { [MODEL_NAME]: '1.0.0' } }, null, 2)}\n`,
    [MODEL_PACKAGE]: `${JSON.stringify({ name: MODEL_NAME, version: '1.0.0' }, null, 2)}\n`,
    [LOCK]: `${JSON.stringify({ name: 'pagewise', version: '0.1.0', packages: { '': { version: '0.1.0', peerDependencies: { [MODEL_NAME]: '^1.0.0' }, devDependencies: { [MODEL_NAME]: '1.0.0' } }, [MODEL_DIR]: { name: MODEL_NAME, version: '1.0.0' } } }, null, 2)}\n`,
    [CHANGELOG]: CHANGES,
  };
  const parse = (text: string | undefined) => JSON.parse(text!) as Record<string, unknown>;

  it('sets pagewise\'s version everywhere it is written, and leaves the model alone unless asked', () => {
    const out = releaseFiles(files, { version: '0.2.0', date: '2026-12-01' });
    expect(parse(out[ROOT_PACKAGE])).toMatchObject({ version: '0.2.0', devDependencies: { [MODEL_NAME]: '1.0.0' } });
    expect(parse(out[LOCK])).toMatchObject({ version: '0.2.0', packages: { '': { version: '0.2.0' }, [MODEL_DIR]: { version: '1.0.0' } } });
    expect(out[MODEL_PACKAGE]).toBe(files[MODEL_PACKAGE]);
    expect(out[CHANGELOG]).toContain(`## [0.2.0] - 2026-12-01\n\nPackages: \`pagewise\` 0.2.0, \`${MODEL_NAME}\` 1.0.0.\n`);
  });

  it('with a new model version: the model, the root\'s dev dependency, its peer range when it must move, and the lock agree', () => {
    const out = releaseFiles(files, { version: '1.0.0', modelVersion: '2.0.0', date: '2026-12-01' });
    expect(parse(out[MODEL_PACKAGE])).toEqual({ name: MODEL_NAME, version: '2.0.0' });
    expect(parse(out[ROOT_PACKAGE])).toMatchObject({ version: '1.0.0', peerDependencies: { [MODEL_NAME]: '^2.0.0' }, devDependencies: { [MODEL_NAME]: '2.0.0' } });
    expect(parse(out[LOCK])).toMatchObject({ packages: { '': { peerDependencies: { [MODEL_NAME]: '^2.0.0' }, devDependencies: { [MODEL_NAME]: '2.0.0' } }, [MODEL_DIR]: { version: '2.0.0' } } });
    expect(out[CHANGELOG]).toContain(`Packages: \`pagewise\` 1.0.0, \`${MODEL_NAME}\` 2.0.0.`);
    // The inputs are untouched (the function is pure).
    expect(parse(files[ROOT_PACKAGE])).toMatchObject({ version: '0.1.0' });
  });

  it('run with a version that is not greater, it says so, exits 1 and changes nothing', () => {
    const before = [ROOT_PACKAGE, MODEL_PACKAGE, LOCK, CHANGELOG].map((f) => readFileSync(resolve(ROOT, f), 'utf8'));
    const r = spawnSync(process.execPath, [resolve(ROOT, 'tests/pack/release.mjs'), '--version=0.0.1', '--write'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^release: pagewise 0\.0\.1 is not greater than the current /);
    expect([ROOT_PACKAGE, MODEL_PACKAGE, LOCK, CHANGELOG].map((f) => readFileSync(resolve(ROOT, f), 'utf8'))).toEqual(before);
  });
});
