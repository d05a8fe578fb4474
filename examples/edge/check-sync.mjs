// The sync checks of `npm run check` (check.mjs runs them against its `wrangler dev`): Node memories from the root's
// dist (pagewise) sync with alice's own object at the edge through the sync endpoint (worker.ts, POST
// /v1/pagewise/sync). `check(name, ok, detail)` is check.mjs's: one line per check.
const SYNC_TURNS = [
  { role: 'user', content: 'The greenhouse vent opens at 24 degrees; the spare fuse is in the red drawer.' },
  { role: 'assistant', content: 'Noted: the vent opens at 24 degrees, and the spare fuse is in the red drawer.' },
];
const idsOf = async (memory) => (await memory.turns('notes')).map((t) => t.id);
const same = (a, b) => a.length > 0 && JSON.stringify(a) === JSON.stringify(b);

/** Two turns up from a laptop, down to a phone, again (nothing moves), a wrong token and bob. The laptop's ids, or null. */
export async function syncChecks(check, port, alice, bob) {
  let pagewise;
  try {
    pagewise = await import('pagewise');
  } catch (e) {
    check('sync: pagewise (the root\'s dist) loads in Node', false, `${e?.message ?? e} — run npm run build at the root`);
    return null;
  }
  const { createMemory, remoteMemory, isPagewiseError } = pagewise;
  const url = `http://127.0.0.1:${port}/v1/pagewise/sync`;
  const memories = [];
  const open = async () => { const m = await createMemory({ embedder: false }); memories.push(m); return m; };
  try {
    const laptop = await open();
    await laptop.onTurnComplete({ conversationId: 'notes', messages: SYNC_TURNS });
    const up = await laptop.sync(remoteMemory(url, { token: alice }));
    check('sync: a Node memory pushes its two turns to alice\'s object (POST /v1/pagewise/sync)', up.pushed === 2 && up.pulled === 0,
      `pushed ${up.pushed}, pulled ${up.pulled}, ${up.batches} batches, ${up.bytes} bytes, ${up.ms.toFixed(0)} ms`);
    const phone = await open();
    const down = await phone.sync(remoteMemory(url, { token: alice }));
    const order = await idsOf(laptop);
    check('sync: a second Node memory pulls them, in the same order', down.pulled === 2 && same(await idsOf(phone), order),
      `pulled ${down.pulled}; the same ${order.length} ids in the same order: ${same(await idsOf(phone), order)}`);
    const again = [await laptop.sync(remoteMemory(url, { token: alice })), await phone.sync(remoteMemory(url, { token: alice }))];
    check('sync: syncing again moves nothing', again.every((r) => r.pushed === 0 && r.pulled === 0), again.map((r) => `pushed ${r.pushed}, pulled ${r.pulled}`).join('; '));
    const refused = await phone.sync(remoteMemory(url, { token: `${alice}x` })).then(() => null, (e) => e);
    const bobs = await open();
    const bobDown = await bobs.sync(remoteMemory(url, { token: bob }));
    check('sync: a wrong token is UNAUTHENTICATED; bob pulls nothing of alice\'s', isPagewiseError(refused, 'UNAUTHENTICATED') && bobDown.pulled === 0,
      `wrong token: ${refused?.code ?? 'accepted'}; bob pulled ${bobDown.pulled}`);
    // CORS (wrangler.jsonc's PAGEWISE_ALLOWED_ORIGINS): the demo's page may call the endpoint, another origin's may not.
    const preflight = (origin) => fetch(url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
    const [demo, other] = [await preflight('http://localhost:5173'), await preflight('https://elsewhere.example')];
    check('sync: CORS — the demo\'s origin (PAGEWISE_ALLOWED_ORIGINS) may call it from a page, another origin may not',
      demo.status === 204 && demo.headers.get('access-control-allow-origin') === 'http://localhost:5173' && other.headers.get('access-control-allow-origin') === null,
      `http://localhost:5173: ${demo.status} allow-origin ${demo.headers.get('access-control-allow-origin')}; https://elsewhere.example: ${other.status} allow-origin ${other.headers.get('access-control-allow-origin')}`);
    return order;
  } catch (e) {
    check('sync: the sync checks ran', false, e?.message ?? String(e));
    return null;
  } finally {
    for (const m of memories) await m.close().catch(() => {});
  }
}

/** After wrangler's restart: a third memory pulls the same turns from the object's storage. */
export async function syncAfterRestart(check, port, alice, order) {
  const { createMemory, remoteMemory } = await import('pagewise');
  const tablet = await createMemory({ embedder: false });
  try {
    const r = await tablet.sync(remoteMemory(`http://127.0.0.1:${port}/v1/pagewise/sync`, { token: alice }));
    check('sync: after the restart a third memory pulls the same turns in the same order', r.pulled === 2 && same(await idsOf(tablet), order), `pulled ${r.pulled}`);
  } catch (e) {
    check('sync: after the restart a third memory pulls the same turns in the same order', false, e?.message ?? String(e));
  } finally {
    await tablet.close().catch(() => {});
  }
}

