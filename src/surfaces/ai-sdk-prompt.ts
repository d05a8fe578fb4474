// The AI SDK's prompt (LanguageModelV4Prompt) read as pagewise messages, stored turns written back as prompt messages,
// and a reply (generated or streamed) read for storing. Only what memory stores and counts is converted: the prompt
// sent on is the caller's own objects (ai-sdk.ts), so a part pagewise cannot keep is left out of memory, never out
// of the request.
import type {
  LanguageModelV4Content, LanguageModelV4FilePart, LanguageModelV4Prompt, LanguageModelV4StreamPart, SharedV4ProviderMetadata,
} from '@ai-sdk/provider';
import { contentText } from '../common/messages.js';
import { contentOf, isAttachmentPart, partsOf } from '../common/parts.js';
import type { AttachmentPart, ChatMessage, ContentPart, ReasoningContentPart, ToolCall } from '../contracts/types.js';

export type PromptMessage = LanguageModelV4Prompt[number];
type Options = SharedV4ProviderMetadata | undefined;
type AssistantPart = Extract<PromptMessage, { role: 'assistant' }>['content'][number];

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const json = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v) ?? '');

/** A provider's option as a string (`providerOptions.anthropic.signature`), or undefined. */
function option(options: Options, provider: string, key: string): string | undefined {
  const value = isRecord(options) && isRecord(options[provider]) ? options[provider][key] : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Tool-call arguments as one JSON text: the prompt carries them parsed and a reply as the model wrote them, so both are
 * written the same way (a stored reply and the same message sent back in the next step hash alike).
 */
export function toolArguments(input: unknown): string {
  if (typeof input !== 'string') return json(input);
  try {
    return JSON.stringify(JSON.parse(input));
  } catch {
    return input;
  }
}

/** A message with something to store: text, an attachment or a tool call (reasoning alone is not). */
function hasContent(m: ChatMessage): boolean {
  return contentText(m.content).trim() !== '' || (m.toolCalls?.length ?? 0) > 0;
}

// ---------------------------------------------------------------------------------------------
// Prompt → pagewise
// ---------------------------------------------------------------------------------------------

/** A file's bytes or URL as pagewise takes them (tagged V4 data, or the untagged data older callers pass); null when it has neither. */
function source(data: unknown): Pick<AttachmentPart, 'data' | 'url'> | null {
  const fromUrl = (url: URL) => (url.protocol === 'data:' ? { data: url.href } : url.protocol === 'https:' || url.protocol === 'http:' ? { url: url.href } : null);
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) return { data };
  if (data instanceof URL) return fromUrl(data);
  if (typeof data === 'string') return /^https?:\/\//i.test(data) ? { url: data } : { data };
  if (!isRecord(data)) return null;
  if (data.type === 'data') return typeof data.data === 'string' || data.data instanceof Uint8Array ? source(data.data) : null;
  if (data.type === 'url') return data.url instanceof URL ? fromUrl(data.url) : typeof data.url === 'string' ? source(data.url) : null;
  if (data.type === 'text' && typeof data.text === 'string' && data.text !== '') return { data: new TextEncoder().encode(data.text) };
  // A provider reference ({ type: 'reference' }): nothing pagewise can store.
  return null;
}

/** A file (given, or made by the model) as an image, audio or file part; null when it carries nothing pagewise can keep. */
export function attachmentOf(mediaType: string, data: unknown, filename?: string, options?: Options): AttachmentPart | null {
  const from = source(data);
  if (!from) return null;
  const type = mediaType.split(';')[0]!.trim().toLowerCase();
  const top = type.split('/')[0];
  const kind = top === 'image' ? 'image' : top === 'audio' ? 'audio' : 'file';
  // `image` or `image/*` names only the kind: pagewise reads the type from the bytes.
  const full = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(type) ? type : undefined;
  const text = isRecord(data) && data.type === 'text';
  const part = { type: kind, ...from, ...(full ? { mediaType: full } : text ? { mediaType: 'text/plain' } : {}), ...(filename ? { name: filename } : {}) } as AttachmentPart;
  const detail = option(options, 'openai', 'imageDetail');
  if (part.type === 'image' && (detail === 'low' || detail === 'high' || detail === 'auto')) part.detail = detail;
  return part;
}

/** Reasoning as a pagewise part (Anthropic's signature, or its redacted reasoning as `encrypted`); null when empty. */
export function reasoningOf(text: string, options: Options): ReasoningContentPart | null {
  const signature = option(options, 'anthropic', 'signature');
  const encrypted = option(options, 'anthropic', 'redactedData');
  if (text === '' && !encrypted) return null;
  return { type: 'reasoning', text, ...(signature ? { signature } : {}), ...(encrypted ? { encrypted } : {}) };
}

function filePart(p: LanguageModelV4FilePart): AttachmentPart | null {
  return attachmentOf(p.mediaType, p.data, p.filename, p.providerOptions);
}

function toolResultContent(output: unknown): ChatMessage['content'] {
  if (!isRecord(output)) return json(output);
  if (output.type === 'execution-denied') return `[tool execution denied${typeof output.reason === 'string' ? `: ${output.reason}` : ''}]`;
  if (output.type === 'content' && Array.isArray(output.value)) {
    const parts = output.value.flatMap((p: unknown): ContentPart[] => {
      if (!isRecord(p)) return [];
      if (p.type === 'text' && typeof p.text === 'string' && p.text !== '') return [{ type: 'text', text: p.text }];
      if (p.type === 'file' && typeof p.mediaType === 'string') return [attachmentOf(p.mediaType, p.data, typeof p.filename === 'string' ? p.filename : undefined)].filter((a) => a !== null);
      return [];
    });
    return parts.length > 0 ? contentOf(parts) : json(output.value);
  }
  return json(output.value ?? output);
}

/** An assistant's parts in order (reasoning, text, files) and its tool calls. */
function assistantMessage(content: readonly AssistantPart[]): ChatMessage {
  const parts: ContentPart[] = [];
  const calls: ToolCall[] = [];
  for (const p of content) {
    const part = p.type === 'text' ? (p.text === '' ? null : { type: 'text' as const, text: p.text })
      : p.type === 'reasoning' ? reasoningOf(p.text, p.providerOptions)
      : p.type === 'file' ? filePart(p) : null;
    if (part) parts.push(part);
    if (p.type === 'tool-call') calls.push({ id: p.toolCallId, type: 'function', function: { name: p.toolName, arguments: toolArguments(p.input) } });
  }
  return { role: 'assistant', content: contentOf(parts), ...(calls.length > 0 ? { toolCalls: calls } : {}) };
}

/**
 * One prompt message as the pagewise messages it becomes: one, or one per tool result, or none when nothing in it
 * can be stored (a user message of provider references, reasoning alone, a tool-approval response).
 */
export function toPagewise(m: PromptMessage): ChatMessage[] {
  let out: ChatMessage[];
  if (m.role === 'system') out = [{ role: 'system', content: m.content }];
  else if (m.role === 'user') {
    const parts = m.content.flatMap((p): ContentPart[] => (p.type === 'text' ? (p.text === '' ? [] : [{ type: 'text', text: p.text }]) : p.type === 'file' ? [filePart(p)].filter((a) => a !== null) : []));
    out = [{ role: 'user', content: contentOf(parts) }];
  } else if (m.role === 'assistant') out = [assistantMessage(m.content)];
  else out = m.content.flatMap((p) => (p.type === 'tool-result' ? [{ role: 'tool' as const, toolCallId: p.toolCallId, content: toolResultContent(p.output) }] : []));
  return out.filter(hasContent);
}

// ---------------------------------------------------------------------------------------------
// pagewise → prompt (stored turns, when the history comes from memory; recalled images)
// ---------------------------------------------------------------------------------------------

function promptFile(p: AttachmentPart): LanguageModelV4FilePart | { type: 'text'; text: string } {
  const mediaType = p.mediaType ?? (p.type === 'file' ? 'application/octet-stream' : p.type);
  const name = p.name ? { filename: p.name } : {};
  if (p.url !== undefined) return { type: 'file', mediaType, data: { type: 'url', url: new URL(p.url) }, ...name };
  // A data: URL is its base64 after the comma (the SDK takes no data: URL as inline data).
  if (typeof p.data === 'string' && p.data.startsWith('data:')) return { type: 'file', mediaType, data: { type: 'data', data: p.data.slice(p.data.indexOf(',') + 1) }, ...name };
  if (p.data !== undefined) return { type: 'file', mediaType, data: { type: 'data', data: p.data instanceof ArrayBuffer ? new Uint8Array(p.data) : p.data }, ...name };
  return { type: 'text', text: contentText([p]) };
}

function parsedArguments(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** A pagewise message (a stored turn, or memory's re-attached images) as a prompt message. `toolNames` names each call id. */
export function toPrompt(m: ChatMessage, toolNames: ReadonlyMap<string, string>): PromptMessage {
  if (m.role === 'system') return { role: 'system', content: contentText(m.content) };
  if (m.role === 'tool') {
    return { role: 'tool', content: [{ type: 'tool-result', toolCallId: m.toolCallId!, toolName: toolNames.get(m.toolCallId!) ?? '', output: { type: 'text', value: contentText(m.content) } }] };
  }
  const parts = partsOf(m.content);
  if (m.role === 'user') {
    return { role: 'user', content: parts.flatMap((p) => (p.type === 'text' ? [{ type: 'text' as const, text: p.text }] : isAttachmentPart(p) ? [promptFile(p)] : [])) };
  }
  const content: AssistantPart[] = parts.flatMap((p): AssistantPart[] => {
    if (p.type === 'text') return p.text === '' ? [] : [{ type: 'text', text: p.text }];
    if (isAttachmentPart(p)) return [promptFile(p)];
    const anthropic = { ...(p.signature ? { signature: p.signature } : {}), ...(p.encrypted ? { redactedData: p.encrypted } : {}) };
    return [{ type: 'reasoning', text: p.text, ...(Object.keys(anthropic).length > 0 ? { providerOptions: { anthropic } } : {}) }];
  });
  for (const c of m.toolCalls ?? []) content.push({ type: 'tool-call', toolCallId: c.id, toolName: c.function.name, input: parsedArguments(c.function.arguments) });
  return { role: 'assistant', content };
}

// ---------------------------------------------------------------------------------------------
// The reply
// ---------------------------------------------------------------------------------------------

/** The reply of `doGenerate` as the message to store (reasoning as reasoning parts); null when it holds nothing to store. */
export function generatedReply(content: readonly LanguageModelV4Content[]): ChatMessage | null {
  const reply = new ReplyReader();
  for (const p of content) {
    if (p.type === 'text') reply.text(p.text);
    else if (p.type === 'reasoning') reply.reasoning(p.text, p.providerMetadata);
    else if (p.type === 'file') reply.file(p.mediaType, p.data);
    else if (p.type === 'tool-call') reply.call(p.toolCallId, p.toolName, p.input);
  }
  return reply.message();
}

type Block = { kind: 'text'; text: string } | { kind: 'reasoning'; text: string; meta: Options } | { kind: 'file'; part: AttachmentPart };

/** A reply read in order: its text and reasoning blocks (a stream's by id), the files the model made, its tool calls. */
export class ReplyReader {
  private readonly blocks: Block[] = [];
  private readonly open = new Map<string, Block>();
  private readonly calls: ToolCall[] = [];

  text(text: string): void {
    this.blocks.push({ kind: 'text', text });
  }

  reasoning(text: string, meta: Options): void {
    this.blocks.push({ kind: 'reasoning', text, meta });
  }

  file(mediaType: string, data: unknown): void {
    const part = attachmentOf(mediaType, data);
    if (part) this.blocks.push({ kind: 'file', part });
  }

  call(id: string, name: string, input: unknown): void {
    this.calls.push({ id, type: 'function', function: { name, arguments: toolArguments(input) } });
  }

  /** One stream part (text and reasoning by their ids; a later provider metadata replaces an earlier one, as the SDK keeps it). */
  part(p: LanguageModelV4StreamPart): void {
    if (p.type === 'text-start' || p.type === 'text-delta') this.block(`text:${p.id}`, () => ({ kind: 'text', text: '' }), p.type === 'text-delta' ? p.delta : '', p.providerMetadata);
    else if (p.type === 'reasoning-start' || p.type === 'reasoning-delta' || p.type === 'reasoning-end') {
      this.block(`reasoning:${p.id}`, () => ({ kind: 'reasoning', text: '', meta: undefined }), p.type === 'reasoning-delta' ? p.delta : '', p.providerMetadata);
    } else if (p.type === 'file') this.file(p.mediaType, p.data);
    else if (p.type === 'tool-call') this.call(p.toolCallId, p.toolName, p.input);
  }

  private block(key: string, make: () => Block, delta: string, meta: Options): void {
    let b = this.open.get(key);
    if (!b) {
      b = make();
      this.open.set(key, b);
      this.blocks.push(b);
    }
    if (b.kind !== 'file') b.text += delta;
    if (b.kind === 'reasoning' && meta) b.meta = meta;
  }

  /** The reply to store, or null when there is nothing (no text, file or tool call). */
  message(): ChatMessage | null {
    const parts = this.blocks.flatMap((b): ContentPart[] => {
      if (b.kind === 'file') return [b.part];
      if (b.kind === 'text') return b.text === '' ? [] : [{ type: 'text', text: b.text }];
      return [reasoningOf(b.text, b.meta)].filter((r) => r !== null);
    });
    const m: ChatMessage = { role: 'assistant', content: contentOf(parts), ...(this.calls.length > 0 ? { toolCalls: this.calls } : {}) };
    return hasContent(m) ? m : null;
  }
}
