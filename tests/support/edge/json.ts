/** A call's outcome as the Node side reads it: `{ value }`, or `{ error }` with the fields a PagewiseError keeps across RPC. */
export async function json(f: () => Promise<unknown>): Promise<Response> {
  try {
    return Response.json({ value: await f() });
  } catch (e) {
    const err = e as { name?: string; code?: string; path?: string; message?: string };
    return Response.json({ error: { name: err.name, code: err.code, path: err.path, message: err.message } });
  }
}
