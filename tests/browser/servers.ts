// Where the browser tests find their servers: the demo's `vite preview` and the example Worker (examples/edge/worker.ts
// in workerd, tests/browser/edge-server.ts). Read by the Playwright config, the edge server and sync.spec.ts alike.
// PAGEWISE_TEST_PORT and PAGEWISE_TEST_EDGE_PORT let two checkouts run their browser tests side by side.
export const PREVIEW_PORT = Number(process.env.PAGEWISE_TEST_PORT ?? 4179);
export const EDGE_PORT = Number(process.env.PAGEWISE_TEST_EDGE_PORT ?? 8797);
/** The pages' origin (cross-origin to the edge: the Worker's PAGEWISE_ALLOWED_ORIGINS lists it). */
export const PREVIEW_ORIGIN = `http://127.0.0.1:${PREVIEW_PORT}`;
export const SYNC_URL = `http://127.0.0.1:${EDGE_PORT}/v1/pagewise/sync`;
/** The example Worker's clients (PAGEWISE_CLIENT_TOKENS): one person's two browser profiles use alice's token. */
export const EDGE_TOKENS = { alice: 'tok-alice-browser-test', bob: 'tok-bob-browser-test' } as const;
