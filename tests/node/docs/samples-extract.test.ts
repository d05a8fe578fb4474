// The sample harness itself (tests/support/samples.ts, samples-run.ts): what it reads out of markdown, and that a
// sample which throws, or prints less than it claims, fails with its file and line.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractSamples, missingClaims, parseRequest, samplePages, type Sample } from '../../support/samples.js';
import { MODEL_REPLY, ROOT, SAFETY_NET_MS, SampleFailure, modelEnv, parseJsonc, runSample, workerOptions, type ModelEnv } from '../../support/samples-run.js';
import { startUpstream, type Upstream } from '../../support/upstream.js';

/** Markdown with ''' for ``` (a template literal cannot hold backticks unescaped). */
const md = (text: string) => text.replaceAll("'''", '```');
const one = (text: string, page = 'inline.md'): Sample => {
  const { samples, problems } = extractSamples(md(text), page);
  expect(problems).toEqual([]);
  expect(samples).toHaveLength(1);
  return samples[0]!;
};

describe('extraction', () => {
  it('takes a lone block as a Node sample named by its page and fence line, with its claims', () => {
    const s = one(`# Title\n\nSome text.\n\n'''ts\nconst x = 1 + 1;\nconsole.log(x); // → 2\n// → done\n// ctx.messages → not a claim\n'''\n`);
    expect(s).toMatchObject({ id: 'inline.md:5', line: 5, runtime: 'node', entry: 'main.ts', requests: [], problems: [] });
    expect(s.files).toEqual([{ name: 'main.ts', lang: 'ts', line: 5, runs: true, titled: false, code: 'const x = 1 + 1;\nconsole.log(x); // → 2\n// → done\n// ctx.messages → not a claim\n' }]);
    expect(s.claims).toEqual([{ text: '2', line: 7 }, { text: 'done', line: 8 }]);
  });

  it('runs ts, typescript, js and javascript (~~~ fences, line-number marks, inside lists and containers), shows the rest', () => {
    const { samples, problems } = extractSamples(md([
      "'''bash\nnpm i pagewise\n'''", "'''json\n{}\n'''", "'''text\nx\n'''", "'''html\n<p></p>\n'''",
      "'''ts:line-numbers {1}\nlet a = 1;\n'''", "~~~typescript\nlet b = 2;\n~~~", "'''javascript\nlet c = 3;\n'''",
      "- a list item:\n\n  '''js [run.js]\n  let d = 4;\n  '''", '::: tip\n' + "'''ts\nlet e = 5;\n'''\n:::", '    let notAFence = 6;',
    ].join('\n\n')), 'p.md');
    expect(problems).toEqual([]);
    expect(samples.map((s) => [s.line, s.entry, s.files[0]!.lang, s.files[0]!.code])).toEqual([
      [17, 'main.ts', 'ts', 'let a = 1;\n'], [21, 'main.ts', 'typescript', 'let b = 2;\n'], [25, 'main.js', 'javascript', 'let c = 3;\n'],
      [31, 'run.js', 'js', 'let d = 4;\n'], [36, 'main.ts', 'ts', 'let e = 5;\n'],
    ]);
  });

  it('picks the runtime from the comment on the line just before the fence', () => {
    const { samples, problems } = extractSamples(md([
      "<!-- sample: browser -->\n'''ts\nlet a;\n'''", "<!-- sample: edge -->\n'''ts\nlet b;\n'''", "<!-- sample: node -->\n'''js\nlet c;\n'''",
      "<!-- sample: deno -->\n'''ts\nlet d;\n'''",
    ].join('\n\n')), 'p.md');
    expect(problems).toEqual([]);
    expect(samples.map((s) => s.runtime)).toEqual(['browser', 'edge', 'node', 'node']);
    expect(samples[3]!.problems).toEqual(['<!-- sample: deno --> (line 16): the runtime is one of node, browser, edge']);
  });

  it('says when a sample comment reaches no runnable block', () => {
    const { samples, problems } = extractSamples(md([
      "<!-- sample: edge -->\n\n'''ts\nlet a;\n'''", "<!-- sample: browser -->\n'''bash\nnpm test\n'''", '<!-- sample: node -->\nSome text.',
      '<!-- sample: edge -->',
    ].join('\n\n')), 'p.md');
    expect(samples.map((s) => [s.line, s.runtime])).toEqual([[3, 'node']]);
    expect(problems).toEqual([
      { id: 'p.md:1', message: '<!-- sample: edge --> is not on the line just before a fence or ::: code-group' },
      { id: 'p.md:7', message: '<!-- sample: browser --> comes before a bash block, which does not run' },
      { id: 'p.md:12', message: '<!-- sample: node --> is not on the line just before a fence or ::: code-group' },
      { id: 'p.md:15', message: 'a sample comment at the end of the page' },
    ]);
  });

  it('makes a code group one sample: its blocks are files named by their titles, the first script the entry', () => {
    const s = one([
      'Intro.', '', '<!-- sample: edge -->', '::: code-group', '', "'''jsonc [wrangler.jsonc]", '{ "main": "worker.ts" }', "'''", '',
      "'''ts [worker.ts]", "import { hello } from './hello.ts';", 'export default { fetch: () => new Response(hello) };', "'''", '',
      "'''ts [hello.ts]", "export const hello = 'hi'; // → hi", "'''", '', ':::', '',
      '<!-- request: GET /hello -->', '<!-- request: POST /chat {"conversationId":"c1","message":"hello"} -->', '', 'After.',
    ].join('\n'));
    expect(s).toMatchObject({ id: 'inline.md:10', runtime: 'edge', entry: 'worker.ts', problems: [] });
    expect(s.files.map((f) => [f.name, f.lang, f.line, f.runs])).toEqual([['worker.ts', 'ts', 10, true], ['wrangler.jsonc', 'jsonc', 6, false], ['hello.ts', 'ts', 15, true]]);
    expect(s.claims).toEqual([{ text: 'hi', line: 16 }]);
    expect(s.requests).toEqual([
      { method: 'GET', path: '/hello', body: '', line: 21, status: null },
      { method: 'POST', path: '/chat', body: '{"conversationId":"c1","message":"hello"}', line: 22, status: null },
    ]);
  });

  it('joins a [wrangler.jsonc] block right after a lone edge sample to it, the entry named by its "main"', () => {
    const { samples } = extractSamples(md([
      '<!-- sample: edge -->', "'''ts", 'export default { fetch: () => new Response("ok") }; // → ok', "'''", '',
      "'''jsonc [wrangler.jsonc]", '{ "main": "./worker.ts" } // the entry', "'''", '<!-- request: GET / -->', '',
      "'''jsonc [wrangler.jsonc]", '{ "main": "other.ts" }', "'''", '', '<!-- sample: node -->', "'''ts", 'let a;', "'''", '',
      "'''jsonc [wrangler.jsonc]", '{}', "'''",
    ].join('\n')), 'README.md');
    expect(samples.map((s) => [s.id, s.entry, s.files.map((f) => f.name), s.requests.length])).toEqual([
      ['README.md:2', 'worker.ts', ['worker.ts', 'wrangler.jsonc'], 1], ['README.md:16', 'main.ts', ['main.ts'], 0],
    ]);
  });

  it('reports request comments that follow no sample and groups it cannot run', () => {
    const { samples, problems } = extractSamples(md([
      '::: code-group', "'''bash [npm]\nnpm i pagewise\n'''", "'''bash [pnpm]\npnpm add pagewise\n'''", ':::', '', '<!-- request: GET / -->', '',
      '::: code-group', "'''ts [a.ts]\nlet a;\n'''", "'''ts\nlet b;\n'''", "'''ts [../c.ts]\nlet c;\n'''", "'''ts [a.ts]\nlet d;\n'''", ':::',
      '<!-- request: fetch it -->',
    ].join('\n')), 'p.md');
    expect(problems).toEqual([{ id: 'p.md:10', message: 'a request comment follows no sample (it goes after the closing fence or :::)' }]);
    expect(samples.map((s) => s.id)).toEqual(['p.md:13']);
    expect(samples[0]!.problems).toEqual([
      'the ts block at line 16 has no file name ([name.ts] in its info string)',
      '"../c.ts" (line 19) is not a relative file path',
      'two blocks are named "a.ts"',
      'line 26: request comment "fetch it" is not "METHOD /path body [→ status]"',
    ]);
  });

  it('lists README.md and docs/**/*.md, without docs/api/ and dot folders', () => {
    const root = mkdtempSync(join(tmpdir(), 'pagewise-pages-'));
    try {
      for (const p of ['README.md', 'docs/index.md', 'docs/guide/node.md', 'docs/api/index.md', 'docs/.vitepress/cache/x.md', 'docs/guide/notes.txt']) {
        mkdirSync(join(root, p, '..'), { recursive: true });
        writeFileSync(join(root, p), '');
      }
      expect(samplePages(root)).toEqual(['README.md', 'docs/guide/node.md', 'docs/index.md']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('reads wrangler.jsonc: comments and trailing commas out, strings kept; vars give way to the model double', () => {
    const jsonc = '{\n  // a comment\n  "compatibility_date": "2025-09-01", /* block */\n  "vars": { "URL": "http://x//y", "Q": "a \\" // b", "OPENAI_BASE_URL": "https://api.openai.com/v1", },\n'
      + '  "durable_objects": { "bindings": [{ "name": "MEMORY", "class_name": "Memory" }, { "name": "KV_LIKE", "class_name": "Plain" },] },\n'
      + '  "migrations": [{ "tag": "v1", "new_sqlite_classes": ["Memory"] }],\n}\n';
    expect(parseJsonc(jsonc)).toMatchObject({ vars: { URL: 'http://x//y', Q: 'a " // b' } });
    const s = one(md(`::: code-group\n'''ts [worker.ts]\nexport default {};\n'''\n'''jsonc [wrangler.jsonc]\n${jsonc}'''\n:::`));
    const env = modelEnv('http://127.0.0.1:1');
    expect(workerOptions(s, env)).toMatchObject({
      compatibilityDate: '2025-09-01',
      durableObjects: { MEMORY: { className: 'Memory', useSQLite: true }, KV_LIKE: { className: 'Plain', useSQLite: false } },
      bindings: { URL: 'http://x//y', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', OPENAI_API_KEY: 'sk-sample-key' },
    });
    const ai = one(md(`::: code-group\n'''ts [worker.ts]\nexport default {};\n'''\n'''jsonc [wrangler.jsonc]\n{ "ai": { "binding": "AI" } }\n'''\n:::`));
    expect(() => workerOptions(ai, env)).toThrow(/inline.md:2 \(node sample\) binds Workers AI/);
  });
});

describe('running', () => {
  let upstream: Upstream;
  let env: ModelEnv;
  beforeAll(async () => {
    upstream = await startUpstream({ reply: MODEL_REPLY });
    env = modelEnv(upstream.base);
  });
  afterAll(async () => {
    await upstream?.close();
    // A failed sample's folder is kept for a look: these failed on purpose.
    for (const folder of ['node/docs-harness-md-1', 'node/docs-harness-md-3', 'edge/docs-harness-md-3']) rmSync(join(ROOT, '.samples', folder), { recursive: true, force: true });
  });
  const run = (text: string) => runSample(one(text, 'docs/harness.md'), env);
  const timeout = SAFETY_NET_MS + 60_000;

  it('runs a Node sample that streams from the model double, and finds its claims in stdout', async () => {
    const out = await run(`'''ts
const res = await fetch(\`\${process.env.OPENAI_BASE_URL}/chat/completions\`, {
  method: 'POST', headers: { authorization: \`Bearer \${process.env.OPENAI_API_KEY}\` },
  body: JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
});
let text = '';
for (const line of (await res.text()).split('\\n')) {
  if (line.startsWith('data: {')) text += JSON.parse(line.slice(6)).choices[0]?.delta?.content ?? '';
}
console.log(text); // → (model reply)
const a = await fetch(\`\${process.env.ANTHROPIC_BASE_URL}/v1/messages\`, { method: 'POST', body: JSON.stringify({ model: 'claude', max_tokens: 9, messages: [] }) });
console.log((await a.json()).content[0].text, process.cwd().includes('.samples')); // → (model reply) true
'''`);
    expect(out).toBe('(model reply)\n(model reply) true\n');
  }, timeout);

  it('fails a Node sample that throws, with its file:line and its stderr', async () => {
    await expect(run(`Text.\n\n'''js\nconsole.log('before');\nthrow new Error('the sample broke');\n'''`))
      .rejects.toThrow(/^docs\/harness\.md:3 \(node sample\) exited with 1[\s\S]*Error: the sample broke[\s\S]*--- stdout ---\nbefore/);
  }, timeout);

  it('finds claims in order, each on a later line, and a short claim only as a whole line', () => {
    const sample = one(`'''ts\nconsole.log('a'); // → first\nconsole.log('b'); // → second\nconsole.log(4); // → 4\n'''`, 'docs/c.md');
    expect(missingClaims(sample, 'first\nsecond\n4')).toEqual([]);
    expect(missingClaims(sample, 'second\nfirst\n4')).toEqual(['docs/c.md:3: claims "second", found only before the claim above it']);
    expect(missingClaims(sample, 'first\nsecond\n42')).toEqual(['docs/c.md:4: claims "4", not in the output']);
  });

  it('reads the status a request comment expects', () => {
    expect(parseRequest('POST /v1/chat {"a":1} → 401', 7)).toEqual({ method: 'POST', path: '/v1/chat', body: '{"a":1}', line: 7, status: 401 });
    expect(parseRequest('GET /health', 8)).toEqual({ method: 'GET', path: '/health', body: '', line: 8, status: null });
  });

  it('fails a Node sample whose claim is not in its output', async () => {
    const failure = await run(`'''ts\nconsole.log('4'); // → 5\n'''`).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(SampleFailure);
    expect((failure as Error).message).toBe('docs/harness.md:1 (node sample) printed what it does not claim:\ndocs/harness.md:2: claims "5", not in the output\n--- output ---\n4\n');
  }, timeout);

  const worker = (body: string, claim: string) => [
    '<!-- sample: edge -->', '::: code-group', "'''ts [worker.ts]", "import { DurableObject } from 'cloudflare:workers';",
    'export class Counter extends DurableObject {',
    '  count() { this.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS n (v)"); this.ctx.storage.sql.exec("INSERT INTO n VALUES (1)"); return this.ctx.storage.sql.exec("SELECT count(*) AS c FROM n").one().c; }',
    '}',
    'export default {',
    '  async fetch(request: Request, env: any) {',
    body,
    `  }, // → ${claim}`,
    '};', "'''", "'''jsonc [wrangler.jsonc]",
    '{ "main": "worker.ts", "durable_objects": { "bindings": [{ "name": "COUNTER", "class_name": "Counter" }] }, "migrations": [{ "tag": "v1", "new_sqlite_classes": ["Counter"] }] }',
    "'''", ':::', '<!-- request: POST /count {"n":1} -->', '<!-- request: POST /count {"n":2} -->',
  ].join('\n');
  const edgeBody = [
    '    const counter = env.COUNTER.get(env.COUNTER.idFromName("c"));',
    '    const reply = await (await fetch(`${env.OPENAI_BASE_URL}/chat/completions`, { method: "POST", body: await request.text() })).json();',
    '    return new Response(`${reply.choices[0].message.content} ${await counter.count()}`);',
  ].join('\n');

  it('runs an edge sample in workerd: Durable Object SQLite from its wrangler.jsonc, the double through env, requests in order', async () => {
    expect(await run(worker(edgeBody, '(model reply) 2'))).toBe('(model reply) 1\n(model reply) 2');
  }, timeout);

  it('fails an edge sample whose response lacks its claim, or which throws', async () => {
    await expect(run(worker(edgeBody, '(model reply) 3'))).rejects.toThrow(/^docs\/harness\.md:3 \(edge sample\) printed what it does not claim:\ndocs\/harness\.md:13: claims "\(model reply\) 3"/);
    await expect(run(worker('    throw new Error("the worker broke");', 'x'))).rejects.toThrow(/^docs\/harness\.md:3 \(edge sample\) answered POST \/count \(line 18\) with 500, not a 2xx:[\s\S]*the worker broke/);
  }, timeout);
});
