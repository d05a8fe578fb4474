// Every Node and edge code sample of README.md and docs/ (docs/api/ excepted), run as docs/contributing/samples.md
// says, one test each named by its page and line: `-t docs/guide/node.md` runs one page. The browser samples are
// tests/browser/samples.spec.ts's. Samples import the built package: `npm run build` first (npm test does).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { findSamples } from '../../support/samples.js';
import { MODEL_REPLY, ROOT, SAFETY_NET_MS, SampleFailure, modelEnv, runSample, type ModelEnv } from '../../support/samples-run.js';
import { startUpstream, type Upstream } from '../../support/upstream.js';

const { samples, problems } = findSamples(ROOT);
let upstream: Upstream;
let env: ModelEnv;

beforeAll(async () => {
  upstream = await startUpstream({ reply: MODEL_REPLY });
  env = modelEnv(upstream.base);
});
afterAll(() => upstream?.close());

it('finds the samples of README.md and docs/', () => {
  expect(samples.length, 'TypeScript or JavaScript blocks in README.md and docs/').toBeGreaterThan(0);
  expect(existsSync(join(ROOT, 'dist/src/index.js')), 'the built package (npm run build): samples import it').toBe(true);
});

// A sample comment that reaches no block, a request after no sample: the page does not say what it means.
for (const p of problems) {
  it(p.id, () => { throw new SampleFailure(`${p.id} ${p.message}`); });
}

for (const sample of samples.filter((s) => s.runtime !== 'browser')) {
  it(sample.id, async () => { await runSample(sample, env); }, SAFETY_NET_MS + 60_000);
}
