// The page side of a browser code sample (tests/browser/samples.spec.ts writes a page that calls this with the
// sample's entry): the entry is imported as a module, and once its top-level await settles the body says so —
// data-sample="done", or "failed" with the error — which is what the test waits on. What the page writes to the
// console is kept here, in order (Playwright's console events may come after the body has changed): its text is the
// sample's output; what it writes with console.error, and errors nobody caught, fail the sample.

/** One console line: strings as they are, other values as JSON (or their string when JSON cannot say them). */
function format(args: unknown[]): string {
  return args.map((a) => {
    if (typeof a === 'string') return a;
    if (a instanceof Error) return a.stack ?? `${a.name}: ${a.message}`;
    if (a === null || typeof a !== 'object') return String(a);
    try { return JSON.stringify(a); } catch { return String(a); }
  }).join(' ');
}

const sampleConsole = { lines: [] as string[], errors: [] as string[] };
(globalThis as { sampleConsole?: typeof sampleConsole }).sampleConsole = sampleConsole;

for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
  const original = console[level].bind(console);
  console[level] = (...args: unknown[]) => {
    sampleConsole.lines.push(format(args));
    if (level === 'error') sampleConsole.errors.push(`console.error: ${format(args)}`);
    original(...args);
  };
}
addEventListener('unhandledrejection', (e) => { sampleConsole.errors.push(`unhandled rejection: ${format([e.reason])}`); });
addEventListener('error', (e) => { sampleConsole.errors.push(`uncaught: ${format([e.error ?? e.message])}`); });

export async function runSample(load: () => Promise<unknown>): Promise<void> {
  try {
    await load();
    document.body.dataset.sample = 'done';
  } catch (e) {
    document.body.dataset.error = format([e]);
    document.body.dataset.sample = 'failed';
  }
}
