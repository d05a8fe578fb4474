// A tiny assertion kit that runs anywhere (Node, a browser worker, workerd): the conformance suites use it so one
// suite serves every runtime.

export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

function show(v: unknown): string {
  return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x instanceof Uint8Array ? `Uint8Array(${Array.from(x)})` : x));
}

export function ok(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}

export function equal(actual: unknown, expected: unknown, message: string): void {
  if (show(actual) !== show(expected)) throw new AssertionError(`${message}: expected ${show(expected)}, got ${show(actual)}`);
}

/** Awaits `fn` and checks it failed with a PagewiseError of `code`. */
export async function rejectsWith(fn: () => unknown, code: string, message: string): Promise<Error> {
  try {
    await fn();
  } catch (error) {
    const e = error as { name?: string; code?: string };
    if (e.name !== 'PagewiseError' || e.code !== code) {
      throw new AssertionError(`${message}: expected PagewiseError ${code}, got ${e.name} ${e.code ?? ''}: ${String((error as Error).message)}`);
    }
    return error as Error;
  }
  throw new AssertionError(`${message}: expected PagewiseError ${code}, but it succeeded`);
}
