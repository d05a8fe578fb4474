// What every MCP tool answer goes through: JSON text with stored strings neutralized (structured content exact),
// refusals as error results, progress for the client that asked, log messages at the level it set.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { LoggingLevelSchema, SetLevelRequestSchema, type LoggingLevel, type ServerNotification, type ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Memory } from '../contracts/memory.js';
import { isPagewiseError } from '../contracts/errors.js';
import { renderJson } from '../text/render.js';
import { neutralize } from '../common/as-data.js';

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;
export type ToolResult = { content: ({ type: 'text'; text: string } | { type: 'image' | 'audio'; data: string; mimeType: string } | { type: 'resource'; resource: { uri: string; mimeType: string; blob: string } })[]; structuredContent?: Record<string, unknown>; isError?: boolean };
export type Log = (extra: Extra, level: LoggingLevel, data: Record<string, unknown>) => Promise<void>;

/**
 * A tool's answer: JSON as text (neutralized, see jsonText) and as structured content (exact: ids round-trip); a
 * refusal as an error result with pagewise's code, logged as a warning; anything else logged, then thrown (the SDK
 * makes it an error result).
 */
export async function answer(c: { extra: Extra; log: Log; tool: string }, fn: () => Promise<unknown>, rendered: readonly string[] = []): Promise<ToolResult> {
  try {
    const value = await fn();
    const structured = value !== null && typeof value === 'object' && !Array.isArray(value) ? value as Record<string, unknown> : { value };
    return { content: [{ type: 'text', text: renderJson(value, rendered) }], structuredContent: structured };
  } catch (e) {
    if (!isPagewiseError(e)) {
      await c.log(c.extra, 'error', { tool: c.tool, message: neutralize(String((e as Error)?.message ?? e)) });
      throw e;
    }
    const error = { code: e.code, message: e.message, ...(e.path ? { path: e.path } : {}) };
    await c.log(c.extra, 'warning', { tool: c.tool, code: e.code, message: neutralize(e.message), ...(e.path ? { path: neutralize(e.path) } : {}) });
    return { content: [{ type: 'text', text: renderJson({ error }) }], isError: true };
  }
}

/**
 * Progress for a call whose client sent a progressToken (nothing otherwise). `progress` only grows, as the spec
 * requires; a client that sets `resetTimeoutOnProgress` keeps a long call alive with it.
 */
export function progress(extra: Extra): (done: number, total: number, message: string) => Promise<void> {
  const token = extra._meta?.progressToken;
  return async (done, total, message) => {
    if (token === undefined) return;
    // A client that went away must not turn a stored result into a failure.
    await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: done, total, message } }).catch(() => undefined);
  };
}

const SEVERITY = LoggingLevelSchema.options;

/**
 * The logging capability: the level a client sets (logging/setLevel, default `info`) filters what it is sent. Messages
 * go with the request they are about, so they reach the client over stdio and over stateless HTTP alike; over HTTP
 * each request is its own session, so a level set holds for that request only.
 */
export function enableLogging(server: McpServer): Log {
  let min: LoggingLevel = 'info';
  server.server.registerCapabilities({ logging: {} });
  server.server.setRequestHandler(SetLevelRequestSchema, (request) => {
    min = request.params.level;
    return {};
  });
  return async (extra, level, data) => {
    if (SEVERITY.indexOf(level) < SEVERITY.indexOf(min)) return;
    await extra.sendNotification({ method: 'notifications/message', params: { level, logger: 'pagewise', data } }).catch(() => undefined);
  };
}

/** Completion of a conversation id: the stored ids that start with what was typed, most recently updated first. */
export function conversationIds(memory: Memory): (typed: string) => Promise<string[]> {
  return async (typed) => (await memory.conversations())
    .filter((c) => c.id.startsWith(typed ?? ''))
    .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
    .map((c) => c.id);
}

/** Completion of a tag of the conversation named before it (context.arguments), most used first. */
export function conversationTags(memory: Memory): (typed: string, context?: { arguments?: Record<string, string> }) => Promise<string[]> {
  return async (typed, context) => {
    const conversationId = context?.arguments?.conversationId;
    if (!conversationId) return [];
    const tags = await memory.tags(conversationId).catch(() => []);
    return tags.filter((t) => t.tag.startsWith((typed ?? '').toLowerCase())).sort((a, b) => b.units - a.units).map((t) => t.tag);
  };
}

/** A URI template variable as given: decoded when it is percent-encoded (ids may hold any character). */
export function uriPart(value: string | string[] | undefined): string {
  const raw = Array.isArray(value) ? value.join('/') : String(value ?? '');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
