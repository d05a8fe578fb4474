// Messages as callers write them (text and parts: images, files, audio, reasoning; tool calls) and as they are stored.
export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** A text part of a multi-part message. */
export interface TextContentPart {
  type: 'text';
  text: string;
}

/** An attachment's bytes as a caller may give them: base64, a `data:` URL, or the bytes themselves. */
export type AttachmentData = string | Uint8Array | ArrayBuffer;

/**
 * What image, file and audio parts share. A part carries its bytes (`data`), a URL the provider fetches (`url`), or a
 * stored attachment's id (`attachment`). Bytes are stored once per content hash, beside the turns (deduplicated,
 * exported, synced, removed by forget), and come back as `attachment` and `size`: `memory.attachment()` reads them.
 */
export interface AttachmentFields {
  /**
   * The bytes: base64, a `data:` URL, a Uint8Array or an ArrayBuffer. Stored turns sent again (`ctx.messages`) carry
   * them as base64; the caller's own messages keep what the caller gave.
   */
  data?: AttachmentData;
  /** A URL the provider fetches (`https:`, `http:`): kept as it is, no bytes stored. */
  url?: string;
  /** A stored attachment's id (the SHA-256 of its bytes, hex): set by pagewise; pass it back instead of the bytes. */
  attachment?: string;
  /** IANA media type (`image/png`, `application/pdf`, `audio/wav`); read from a `data:` URL or the bytes when absent. */
  mediaType?: string;
  /** A file name, shown where the attachment is recalled. */
  name?: string;
  /**
   * What the attachment says in words, as the caller supplies it: alt text or a caption, a document's extracted text,
   * a transcript. Searchable like any turn's text, and shown where the attachment is recalled.
   */
  caption?: string;
  /** Its size in bytes: set by pagewise. */
  size?: number;
}

/** An image (OpenAI `image_url`, Anthropic `image`, the AI SDK's image `file` part). */
export interface ImageContentPart extends AttachmentFields {
  type: 'image';
  /** OpenAI's detail level; `low` costs 85 tokens whatever the size. */
  detail?: 'auto' | 'low' | 'high';
  /** Pixels, read from the bytes when pagewise has them (they decide what the image costs in tokens). */
  width?: number;
  height?: number;
}

/** A document or any other file (a PDF: OpenAI `file`, Anthropic `document`). */
export interface FileContentPart extends AttachmentFields {
  type: 'file';
  /** A PDF's pages, read from the bytes. */
  pages?: number;
}

/** Audio (OpenAI `input_audio`). */
export interface AudioContentPart extends AttachmentFields {
  type: 'audio';
  /** Its length, read from a WAV's header. */
  durationMs?: number;
}

/**
 * A model's reasoning (Anthropic `thinking` with its signature, or `redacted_thinking`; the AI SDK's `reasoning`):
 * kept apart from the reply's text, never searched or recalled as what was said (unless `recallReasoning` asks), and
 * given back unchanged for the providers that require it in a tool loop.
 */
export interface ReasoningContentPart {
  type: 'reasoning';
  /** The reasoning text ('' when only encrypted). */
  text: string;
  /** The provider's signature over it (Anthropic requires it back unchanged). */
  signature?: string;
  /** Reasoning the provider gave encrypted (Anthropic `redacted_thinking`'s `data`). */
  encrypted?: string;
}

/** A part that holds an attachment: an image, a file or audio. */
export type AttachmentPart = ImageContentPart | FileContentPart | AudioContentPart;

/** One part of a message's content. */
export type ContentPart = TextContentPart | AttachmentPart | ReasoningContentPart;

/** A tool call made by an assistant, in the OpenAI function-calling shape. */
export interface ToolCall {
  /** The call's id; the `tool` message that answers it carries the same id as `toolCallId`. */
  id: string;
  type: 'function';
  function: {
    /** The function's name. */
    name: string;
    /** The arguments, as the model wrote them (a JSON string). */
    arguments: string;
  };
}

/** A chat message as the caller sends it to (or receives it from) the LLM. */
export interface ChatMessage {
  /** The caller's own id. When given, it identifies the message for reconciliation and in the manifest. */
  id?: string;
  role: Role;
  /**
   * The text, or a list of parts: text, images, files, audio, reasoning. May be empty only for an assistant message
   * that makes tool calls.
   */
  content: string | ContentPart[] | null;
  /** The speaker (group chats, transcripts). Searchable: "what did Caroline say" favours Caroline's turns. */
  name?: string;
  /** When the message was written, ISO 8601. Without it the engine stamps the time of storage. */
  createdAt?: string;
  /** Tool calls made by an assistant message. */
  toolCalls?: ToolCall[];
  /** For `tool` messages: the id of the call this message answers. */
  toolCallId?: string;
  /**
   * Private: stored and recalled verbatim, but never sent to an LLM tagger or summarizer and never quoted in a
   * summary (a summary of its stretch says a private message was left out).
   */
  private?: boolean;
}

/** A message as stored: verbatim, append-only, with the engine's bookkeeping. */
export interface StoredTurn {
  /** The caller's id when it gave one, else an id the engine made (`pw_…`). Unique within a conversation. */
  id: string;
  conversationId: string;
  /** Position in the conversation, from 0; gap-free unless messages were forgotten. */
  seq: number;
  role: Role;
  name?: string;
  /** As stored: attachments by their `attachment` id and `size`, without their bytes (`memory.attachment()`). */
  content: string | ContentPart[] | null;
  toolCalls?: ToolCall[];
  toolCallId?: string;
  /** ISO 8601 in UTC: the caller's `createdAt`, or the time of storage. */
  createdAt: string;
  /** Stored as private (see ChatMessage.private). */
  private?: true;
  /**
   * The searchable text derived from the content: text parts joined, each attachment as a reference line (its kind,
   * name, type, size and caption), tool calls written out. Reasoning is left out.
   */
  text: string;
  /** SHA-256 of the message's role, name, content and tool fields: the reconciliation key without an id. */
  contentHash: string;
}
