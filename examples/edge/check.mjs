// The edge example, run end to end: `npm run check` (after `npm install` here and `npm run build` at the root).
// Starts a fake OpenAI-compatible upstream and `wrangler dev` (loopback only, temp --persist-to), drives a long
// conversation through the proxy (worker.ts), syncs Node memories (the root's dist) with the sync endpoint, and one
// exchange through the Agents SDK example (agent.ts), prints one line per check, stops everything it started (also on
// failure) and exits 1 if any check failed.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { syncAfterRestart, syncChecks } from './check-sync.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const WRANGLER = join(HERE, 'node_modules', 'wrangler', 'bin', 'wrangler.js');
const RUN_TIMEOUT_MS = 9 * 60_000;   // the whole run
const REQUEST_TIMEOUT_MS = 60_000;   // each request to the Worker
const READY_TIMEOUT_MS = 90_000;     // wrangler dev up
const started = Date.now();
const secs = () => ((Date.now() - started) / 1000).toFixed(1);

// ---------------------------------------------------------------------------------------------------------- checks
const results = [];
function check(name, ok, detail = '') {
  results.push({ name, ok });
  console.log(`${ok ? 'ok  ' : 'FAIL'}  ${name}${detail ? ` — ${detail}` : ''}`);
  return ok;
}

// --------------------------------------------------------------------------------------------------- the text used
// The fact, stated once in the first exchange; the questions that must bring it back.
const FACT = 'The boathouse padlock code is 4-7-1-quokka, and its spare key is kept in the blue coffee tin under the third porch step.';
const FACT_MARKS = ['4-7-1-quokka', 'blue coffee tin'];
const QUESTIONS = [
  'Remind me of the boathouse padlock code and where its spare key is kept.',
  'I forgot the combination of the padlock on the boathouse. What was it, and where is the spare key?',
];
const hasFact = (text) => FACT_MARKS.some((m) => text.includes(m)) || /quokka/i.test(text);

// Twenty topics, none of which mentions the boathouse, padlocks or keys.
const TOPICS = [
  ['lake cabin', 'weekend', 'canoe', 'dock', 'firewood', 'sunset', 'loons', 'paddles', 'shoreline', 'life jackets'],
  ['vegetable garden', 'tomatoes', 'compost', 'raised beds', 'mulch', 'seedlings', 'watering', 'trellis', 'slugs', 'zucchini'],
  ['road bike', 'derailleur', 'chain', 'cassette', 'brake pads', 'tyres', 'saddle', 'cadence', 'climbs', 'bar tape'],
  ['sourdough', 'starter', 'hydration', 'levain', 'crumb', 'proofing', 'banneton', 'oven spring', 'flour', 'crust'],
  ['quarterly budget', 'invoices', 'forecast', 'expenses', 'payroll', 'margins', 'receipts', 'ledger', 'audit', 'cash flow'],
  ['database migration', 'schema', 'indexes', 'rollback', 'replicas', 'downtime', 'backfill', 'queries', 'shards', 'latency'],
  ['kitchen renovation', 'cabinets', 'countertops', 'tiles', 'plumber', 'lighting', 'backsplash', 'drawers', 'sink', 'grout'],
  ['piano practice', 'scales', 'arpeggios', 'metronome', 'sonata', 'fingering', 'pedal', 'tempo', 'chords', 'recital'],
  ['marathon training', 'long runs', 'intervals', 'tempo runs', 'shoes', 'hydration packs', 'recovery', 'pace', 'taper', 'blisters'],
  ['birthday party', 'invitations', 'cake', 'balloons', 'playlist', 'games', 'guest list', 'decorations', 'snacks', 'presents'],
  ['astronomy night', 'telescope', 'eyepiece', 'Jupiter', 'nebula', 'star charts', 'tripod', 'focus', 'Saturn', 'red torch'],
  ['chess club', 'openings', 'endgames', 'tactics', 'rating', 'tournament', 'clock', 'gambits', 'pawns', 'castling'],
  ['bee hives', 'frames', 'queen', 'smoker', 'honey', 'brood', 'varroa', 'supers', 'swarm', 'wax'],
  ['car maintenance', 'oil change', 'filters', 'tyre pressure', 'wipers', 'battery', 'coolant', 'alignment', 'spark plugs', 'mechanic'],
  ['photography trip', 'lenses', 'tripod legs', 'golden hour', 'aperture', 'shutter', 'filters', 'raw files', 'composition', 'memory cards'],
  ['language lessons', 'verbs', 'vocabulary', 'flashcards', 'pronunciation', 'tutor', 'grammar', 'listening', 'conjugation', 'idioms'],
  ['home network', 'router', 'mesh nodes', 'firmware', 'cables', 'switch', 'bandwidth', 'printer', 'guest wifi', 'channels'],
  ['book club', 'novel', 'chapters', 'characters', 'plot', 'author', 'themes', 'discussion', 'ending', 'paperbacks'],
  ['woodworking', 'dovetails', 'chisels', 'planer', 'oak boards', 'glue-up', 'clamps', 'sanding', 'finish', 'workbench'],
  ['aquarium', 'filter media', 'water changes', 'shrimp', 'plants', 'heater', 'nitrates', 'substrate', 'tetras', 'algae'],
];
const VERBS = ['checked', 'planned', 'compared', 'sorted', 'cleaned', 'measured', 'rearranged', 'discussed', 'noted', 'tested', 'replaced', 'booked'];
const WHEN = ['on Monday', 'after lunch', 'last week', 'before the holidays', 'early in the morning', 'on the weekend', 'next month', 'in the evening'];
const LINK = ['Then', 'After that', 'Meanwhile', 'Also', 'Later', 'On the other hand', 'Because of that', 'In the end'];

function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0) / 2 ** 32);
}
/** About `words` words of plain prose on topic i (deterministic). */
function prose(i, words, seed) {
  const r = rng(seed);
  const pick = (a) => a[Math.floor(r() * a.length)];
  const [topic, ...things] = TOPICS[i];
  const out = [];
  let n = 0;
  while (n < words) {
    const s = `${pick(LINK)} we ${pick(VERBS)} the ${pick(things)} for the ${topic} ${pick(WHEN)}, and the ${pick(things)} looked ${pick(['fine', 'worn', 'better', 'odd', 'new', 'ready'])} next to the ${pick(things)}.`;
    out.push(s);
    n += s.split(' ').length;
  }
  return out.join(' ');
}
const userMessage = (i) => (i === 0 ? `${FACT} ` : '') + `Let me tell you about the ${TOPICS[i][0]}. ` + prose(i, 900, 1000 + i);
const assistantReply = (i) => `Thanks, noted about the ${TOPICS[i][0]}. ` + prose(i, 1500, 5000 + i);

// --------------------------------------------------------------------------------------------- the fake upstream
/** An OpenAI-compatible /v1/chat/completions on loopback: JSON or SSE (ending `data: [DONE]`); records what it gets. */
function fakeUpstream() {
  const received = []; // { headers, body }
  const sent = [];     // the exact bytes of each response body, in the order of `received`
  let nextReply = () => 'All right.';
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      let body;
      try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch { body = null; }
      received.push({ url: req.url, headers: req.headers, body });
      const index = received.length - 1;
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions') || !body) {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad request"}}');
        sent[index] = null;
        return;
      }
      const text = nextReply(body);
      const id = `chatcmpl-${index}`;
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        const frames = [{ role: 'assistant', content: '' }];
        const words = text.split(/(?<= )/);
        for (let k = 0; k < words.length; k += 40) frames.push({ content: words.slice(k, k + 40).join('') });
        const parts = frames.map((delta) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: body.model, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
        parts.push(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: body.model, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`, 'data: [DONE]\n\n');
        sent[index] = Buffer.from(parts.join(''), 'utf8');
        for (const p of parts) {
          res.write(p);
          await new Promise((r) => setTimeout(r, 2));
        }
        res.end();
      } else {
        const raw = JSON.stringify({ id, object: 'chat.completion', created: 1, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
        sent[index] = Buffer.from(raw, 'utf8');
        res.writeHead(200, { 'content-type': 'application/json' }).end(raw);
      }
    });
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({
      server, received, sent, port: server.address().port,
      setReply(fn) { nextReply = fn; },
    }));
  });
}

// ----------------------------------------------------------------------------------------------------- processes
const children = new Set();
const logs = []; // each wrangler's output, printed when a check failed
function killGroup(child, signal) {
  try { process.kill(-child.pid, signal); } catch { /* already gone */ }
}
const tempDirs = new Set(); // the --persist-to dir, removed at the end whatever happens
function stopAll() {
  for (const c of children) killGroup(c, 'SIGKILL');
  for (const d of tempDirs) { try { rmSync(d, { recursive: true, force: true }); } catch { /* best effort */ } tempDirs.delete(d); }
}
process.on('exit', stopAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => { stopAll(); process.exit(130); });

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

/** `wrangler dev` in its own process group, loopback only; resolves when it prints "Ready on". */
async function wranglerDev({ config, vars, persistTo, label }) {
  const port = await freePort();
  const inspector = await freePort();
  const args = [WRANGLER, 'dev', '--config', config, '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspector), '--inspector-ip', '127.0.0.1',
    '--persist-to', persistTo, '--show-interactive-dev-session=false', ...Object.entries(vars).flatMap(([k, v]) => ['--var', `${k}:${v}`])];
  const child = spawn(process.execPath, args, {
    cwd: HERE, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    // The child only: no telemetry (offline anyway), no colours in what we parse.
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', FORCE_COLOR: '0', NO_COLOR: '1' },
  });
  children.add(child);
  let log = '';
  logs.push({ label, log: () => log });
  const exited = new Promise((r) => child.on('exit', (code, signal) => { children.delete(child); r({ code, signal }); }));
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label}: not ready after ${READY_TIMEOUT_MS / 1000} s`)), READY_TIMEOUT_MS);
    const onData = (d) => {
      log += d.toString();
      if (/Ready on http/.test(log.replace(/\x1b\[[0-9;]*m/g, ''))) { clearTimeout(timer); resolve(); }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    exited.then(({ code, signal }) => { clearTimeout(timer); reject(new Error(`${label}: wrangler exited (${code ?? signal}) before it was ready`)); });
  });
  const t0 = Date.now();
  try {
    await ready;
  } catch (e) {
    killGroup(child, 'SIGKILL');
    throw e;
  }
  return {
    port, readyMs: Date.now() - t0, log: () => log,
    /** SIGINT to the group (wrangler shuts workerd down), SIGKILL after 10 s. */
    async stop() {
      if (!children.has(child)) return;
      killGroup(child, 'SIGINT');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      killGroup(child, 'SIGKILL'); // workerd or anything else left in the group
    },
  };
}

/** A request to the Worker with raw bytes back (no decoding), bounded in time. */
function request(port, path, { method = 'POST', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
    const req = http.request({ host: '127.0.0.1', port, path, method, headers: { ...(data ? { 'content-type': 'application/json', 'content-length': data.length } : {}), ...headers } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        let json = null;
        try { json = JSON.parse(raw.toString('utf8')); } catch { /* SSE or text */ }
        resolve({ status: res.statusCode, headers: res.headers, raw, json });
      });
      res.on('error', reject);
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${method} ${path}: no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const KNOWN_DEFECT = /too many terms in compound SELECT/;
/** A response in a few words; a storage error with its message on one line, the known edge defect named. */
function describe(res) {
  const e = res.json?.error;
  if (!e?.code) return String(res.status);
  if (e.code !== 'STORAGE_ERROR' && e.code !== 'INTERNAL_ERROR') return `${res.status} ${e.code}`;
  const message = String(e.message ?? '').replace(/\s+/g, ' ').slice(0, 160);
  return `${res.status} ${e.code} (${message}…)${KNOWN_DEFECT.test(e.message ?? '') ? ' — the known defect: Durable Objects refuse a compound SELECT of more than 5 terms (issue 24; the fix changes the edge SQL)' : ''}`;
}

/** Where the fact sits in what the upstream received: the system text (inside <prior-conversation>?) or history. */
function factPlacement(body) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const text = (m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));
  const system = messages.filter((m) => m.role === 'system').map(text).join('\n');
  const history = messages.filter((m) => m.role !== 'system').map(text).join('\n');
  let inPrior = false;
  for (const m of system.matchAll(/<prior-conversation[^>]*>([\s\S]*?)<\/prior-conversation>/g)) if (FACT_MARKS.every((f) => m[1].includes(f))) inPrior = true;
  return { inSystem: hasFact(system), inPrior, inHistory: hasFact(history), systemChars: system.length, historyMessages: messages.length - messages.filter((m) => m.role === 'system').length };
}

// ------------------------------------------------------------------------------------------------------ the run
async function main() {
  const persistTo = mkdtempSync(join(tmpdir(), 'pagewise-edge-check-'));
  tempDirs.add(persistTo);
  const upstream = await fakeUpstream();
  const alice = `tok-alice-${randomBytes(8).toString('hex')}`;
  const bob = `tok-bob-${randomBytes(8).toString('hex')}`;
  const vars = { PAGEWISE_CLIENT_TOKENS: `${alice}:alice,${bob}:bob`, UPSTREAM_URL: `http://127.0.0.1:${upstream.port}/v1` };
  const proxyCall = (port, token, conversation, content, stream) => request(port, '/v1/chat/completions', {
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(conversation ? { 'x-pagewise-conversation': conversation } : {}) },
    body: { model: 'fake-model', stream, messages: [{ role: 'user', content }] },
  });
  let wrangler;
  try {
    wrangler = await wranglerDev({ config: 'wrangler.jsonc', vars, persistTo, label: 'worker.ts' });
    check('wrangler dev (worker.ts) ready', true, `port ${wrangler.port}, ${(wrangler.readyMs / 1000).toFixed(1)} s`);

    // 20 long exchanges on alice's c1; the client sends only the new message (the memory supplies the rest).
    let failures = [];
    const byteMismatch = [];
    let streamed = 0, plain = 0;
    for (let i = 0; i < 20; i++) {
      upstream.setReply(() => assistantReply(i));
      const before = upstream.received.length;
      const stream = i % 2 === 0;
      const res = await proxyCall(wrangler.port, alice, 'c1', userMessage(i), stream);
      if (res.status !== 200 || upstream.received.length !== before + 1) { failures.push(`#${i + 1}: ${describe(res)}`); if (res.json?.error?.code === 'STORAGE_ERROR') break; continue; }
      if (stream) streamed++; else plain++;
      if (!res.raw.equals(upstream.sent[before])) byteMismatch.push(`#${i + 1} (${stream ? 'SSE' : 'JSON'}: ${res.raw.length} vs ${upstream.sent[before].length} bytes)`);
      await sleep(150); // the exchange is stored through waitUntil after the reply
    }
    const words = userMessage(0).split(' ').length + assistantReply(0).split(' ').length;
    check('20 long exchanges through the proxy (alice, c1)', failures.length === 0,
      failures.length ? `failed: ${failures.join('; ')}` : `~${words} words each (user ~${userMessage(0).split(' ').length}), 10 streamed, 10 JSON`);
    check('replies reach the client byte for byte (SSE and JSON)', byteMismatch.length === 0 && streamed + plain > 0,
      byteMismatch.length ? `differ: ${byteMismatch.join(', ')}` : `${streamed} SSE streams (ending data: [DONE]) and ${plain} JSON bodies identical`);
    await sleep(1000);

    // The fact, asked for in two phrasings: it must reach the upstream paged in from memory, not as recent history.
    const ask = async (label, port, token, conversation, question, stream) => {
      upstream.setReply(() => 'Let me check my notes.');
      const before = upstream.received.length;
      const res = await proxyCall(port, token, conversation, question, stream);
      const got = upstream.received.length === before + 1 ? upstream.received[before] : null;
      return { res, got, placement: got ? factPlacement(got.body) : null, label, sameBytes: got ? res.raw.equals(upstream.sent[before]) : false };
    };
    for (const [k, question] of QUESTIONS.entries()) {
      const { res, placement, sameBytes } = await ask('recall', wrangler.port, alice, 'c1', question, k === 0);
      check(`recall, phrasing ${k + 1} ("${question.slice(0, 40)}…"): the fact paged in as <prior-conversation> in the system text, not in history`,
        res.status === 200 && !!placement?.inPrior && !placement.inHistory && sameBytes,
        placement ? `status ${describe(res)}, in <prior-conversation>: ${placement.inPrior}, in history (${placement.historyMessages} messages): ${placement.inHistory}` : `status ${describe(res)}, nothing forwarded`);
    }

    // Users apart: bob on the same conversation id; conversations apart: alice's other conversation.
    for (const [label, token, conversation] of [['bob on c1 (same conversation id)', bob, 'c1'], ['bob naming alice:c1', bob, 'alice:c1'], ["alice's other conversation c2", alice, 'c2']]) {
      const { res, got } = await ask(label, wrangler.port, token, conversation, QUESTIONS[0], false);
      const leaked = got ? hasFact(JSON.stringify(got.body)) : null;
      check(`kept apart: ${label} gets nothing of alice's c1`, res.status === 200 && leaked === false, `status ${describe(res)}, fact forwarded: ${leaked}`);
    }

    // Refusals: nothing forwarded.
    const refusals = [
      ['no token → 401 UNAUTHENTICATED', null, 'c1', JSON.stringify({ model: 'm', messages: [{ role: 'user', content: QUESTIONS[0] }] }), 401, 'UNAUTHENTICATED'],
      ['wrong token → 401 UNAUTHENTICATED', `${alice}x`, 'c1', JSON.stringify({ model: 'm', messages: [{ role: 'user', content: QUESTIONS[0] }] }), 401, 'UNAUTHENTICATED'],
      ['malformed body (not JSON) → 400 INVALID_ARGUMENT', alice, 'c1', '{"model":"m","messages":[', 400, 'INVALID_ARGUMENT'],
      ['malformed message ({"messages":[null]}) → 400 INVALID_MESSAGE', alice, 'c1', '{"messages":[null]}', 400, 'INVALID_MESSAGE'],
      ['no conversation header → 400 INVALID_CONVERSATION_ID', alice, null, JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), 400, 'INVALID_CONVERSATION_ID'],
    ];
    for (const [label, token, conversation, body, status, code] of refusals) {
      const before = upstream.received.length;
      const res = await request(wrangler.port, '/v1/chat/completions', {
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(conversation ? { 'x-pagewise-conversation': conversation } : {}) }, body,
      });
      const e = res.json?.error;
      const forwarded = upstream.received.length - before;
      check(`${label}, pagewise's error JSON, nothing forwarded`, res.status === status && e?.type === 'pagewise_error' && e.code === code && typeof e.message === 'string' && forwarded === 0,
        `${res.status} ${e?.type ?? '?'} ${e?.code ?? res.raw.toString('utf8').slice(0, 80)}, forwarded ${forwarded}`);
    }
    const leakedToken = upstream.received.some((r) => JSON.stringify(r.headers).includes('tok-'));
    check("clients' tokens never reach the upstream", !leakedToken, `${upstream.received.length} upstream requests checked`);

    const synced = await syncChecks(check, wrangler.port, alice, bob);

    // Durable: stop wrangler, start it again on the same --persist-to, ask again.
    await wrangler.stop();
    wrangler = await wranglerDev({ config: 'wrangler.jsonc', vars, persistTo, label: 'worker.ts (restarted)' });
    const again = await ask('restart', wrangler.port, alice, 'c1', QUESTIONS[0], true);
    check('memory survives a restart (same --persist-to): recalled as <prior-conversation>', again.res.status === 200 && !!again.placement?.inPrior && again.sameBytes,
      again.placement ? `restarted in ${(wrangler.readyMs / 1000).toFixed(1)} s; status ${describe(again.res)}, in <prior-conversation>: ${again.placement.inPrior}` : `status ${describe(again.res)}, nothing forwarded`);
    if (synced) await syncAfterRestart(check, wrangler.port, alice, synced);
    await wrangler.stop();
    wrangler = undefined;

    // agent.ts: the memory inside an Agents SDK Agent (wrangler.agent.jsonc), stored then given back to the model.
    const agentVars = { UPSTREAM_URL: `http://127.0.0.1:${upstream.port}/v1`, UPSTREAM_KEY: 'upstream-secret' };
    wrangler = await wranglerDev({ config: 'wrangler.agent.jsonc', vars: agentVars, persistTo, label: 'agent.ts' });
    check('wrangler dev (agent.ts, Agents SDK) ready', true, `${(wrangler.readyMs / 1000).toFixed(1)} s`);
    upstream.setReply(() => 'Noted.');
    const agentSay = (name, message) => request(wrangler.port, `/agents/chat-agent/${name}`, { body: { message } });
    let before = upstream.received.length;
    const first = await agentSay('trip-1', FACT);
    check('agent: an exchange through the Agent (stored)', first.status === 200 && first.json?.reply === 'Noted.' && upstream.received.length === before + 1 && upstream.received[before].headers.authorization === 'Bearer upstream-secret',
      `status ${first.status}${first.status !== 200 ? ` ${first.raw.toString('utf8').slice(0, 200)}` : ''}`);
    await sleep(1000);
    upstream.setReply(() => 'Let me check.');
    before = upstream.received.length;
    const second = await agentSay('trip-1', QUESTIONS[0]);
    const sentOn = upstream.received.length === before + 1 ? JSON.stringify(upstream.received[before].body) : '';
    check('agent: the next message reaches the model with the fact from the Agent\'s memory', second.status === 200 && FACT_MARKS.every((m) => sentOn.includes(m)),
      `status ${second.status}, fact forwarded: ${FACT_MARKS.every((m) => sentOn.includes(m))}`);
    before = upstream.received.length;
    const other = await agentSay('trip-2', QUESTIONS[0]);
    const otherOn = upstream.received.length === before + 1 ? JSON.stringify(upstream.received[before].body) : '';
    check('agent: another agent name (conversation) gets nothing of it', other.status === 200 && otherOn !== '' && !hasFact(otherOn), `status ${other.status}`);
  } catch (e) {
    check('the run finished', false, e?.message ?? String(e));
  } finally {
    if (wrangler) await wrangler.stop().catch(() => {});
    upstream.server.close();
    upstream.server.closeAllConnections?.();
    stopAll();
  }
}

const deadline = setTimeout(() => {
  check('the run finished', false, `over ${RUN_TIMEOUT_MS / 60_000} min`);
  stopAll();
  process.exit(1);
}, RUN_TIMEOUT_MS);
deadline.unref();

await main();
const failed = results.filter((r) => !r.ok).length;
if (failed > 0) {
  for (const { label, log } of logs) {
    console.log(`--- wrangler (${label}), last lines:`);
    console.log(log().trimEnd().split('\n').slice(-25).map((l) => `    | ${l}`).join('\n'));
  }
}
console.log(`${failed === 0 ? 'all' : `${failed} of`} ${results.length} checks ${failed === 0 ? 'passed' : 'failed'} in ${secs()} s`);
process.exit(failed === 0 ? 0 : 1);
