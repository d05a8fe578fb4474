import { transferHandlers } from 'comlink';
import { ERROR_CODES, PagewiseError, type PagewiseErrorCode } from '../contracts/errors.js';

interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  path?: string;
}

type Thrown = { isError: true; value: SerializedError } | { isError: false; value: unknown };

/**
 * Comlink rebuilds a thrown error from message, name and stack only; this handler, installed on both sides of the
 * worker boundary, carries `code` and `path` too, so callers can branch on `error.code` whichever side threw.
 */
export function installErrorTransfer(): void {
  const base = transferHandlers.get('throw');
  if (!base || (base as { pagewise?: boolean }).pagewise) return;
  const handler = {
    pagewise: true,
    canHandle: base.canHandle,
    serialize(wrapped: unknown): [Thrown, Transferable[]] {
      const value = (wrapped as { value: unknown }).value;
      if (value instanceof Error) {
        const { code, path } = value as Error & { code?: unknown; path?: unknown };
        const out: SerializedError = { name: value.name, message: value.message };
        if (value.stack !== undefined) out.stack = value.stack;
        if (typeof code === 'string') out.code = code;
        if (typeof path === 'string') out.path = path;
        return [{ isError: true, value: out }, []];
      }
      return [{ isError: false, value }, []];
    },
    deserialize(serialized: Thrown): never {
      if (!serialized.isError) throw serialized.value;
      const v = serialized.value;
      let error: Error;
      if (v.name === 'PagewiseError' && ERROR_CODES.includes(v.code as PagewiseErrorCode)) {
        error = new PagewiseError(v.code as PagewiseErrorCode, 'worker', '', v.path === undefined ? undefined : { path: v.path });
        error.message = v.message;
      } else {
        error = Object.assign(new Error(v.message), { name: v.name, ...(v.code === undefined ? {} : { code: v.code }) });
      }
      if (v.stack !== undefined) error.stack = v.stack;
      throw error;
    },
  };
  transferHandlers.set('throw', handler as unknown as Parameters<typeof transferHandlers.set>[1]);
}
