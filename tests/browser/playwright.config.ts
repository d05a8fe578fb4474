import { defineConfig } from '@playwright/test';
import { EDGE_PORT, PREVIEW_PORT as port } from './servers.js';

// Debian's Chromium (apt package `chromium`): Playwright cannot download browsers here. The background-networking
// flags keep Chromium from dialling out, which this machine's closed network refuses.
export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.ts',
  // Safety nets, not waits: tests wait on what the page shows, and these only end one that hangs. Generous because the
  // suite must pass on a busy machine, where loading the model and embedding in WASM take several times longer.
  timeout: 300_000,
  expect: { timeout: 60_000 },
  workers: 1,
  forbidOnly: !!process.env.CI,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    browserName: 'chromium',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    },
  },
  // A production build served by `vite preview`: the dev server's dependency re-optimisation reloads pages mid-test.
  webServer: [{
    command: `npx vite build && npx vite preview --host 127.0.0.1 --port ${port} --strictPort`,
    cwd: '../..',
    url: `http://127.0.0.1:${port}/tests/browser/harness/`,
    reuseExistingServer: !process.env.CI,
    // The build is minutes of CPU on a busy machine; the server is up once the harness page answers.
    timeout: 600_000,
  }, {
    // The example Worker (examples/edge) in workerd, what sync.spec.ts's browser profiles sync through: no wrangler,
    // no network (edge-server.ts). It answers no GET with a status Playwright waits for, so the port is watched.
    command: 'npx tsx tests/browser/edge-server.ts',
    cwd: '../..',
    port: EDGE_PORT,
    reuseExistingServer: !process.env.CI,
    timeout: 300_000,
    gracefulShutdown: { signal: 'SIGTERM', timeout: 5_000 },
  }],
});
