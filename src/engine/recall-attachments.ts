// recallAttachments: the images of recalled turns sent again, not only their reference in the recall block — one
// message just before the new one, counted by the provider's image rule, within what the request leaves free.
import { attachmentParts } from './attachments.js';
import { renderRecalledAttachments } from '../text/render.js';
import type { TurnStore } from '../store/turn-store.js';
import { messageCost } from '../tokens/message-cost.js';
import type { AssembledContext, ChatMessage, ImageContentPart, MediaRule, Tokenizer } from '../contracts/types.js';

/** The images the recall block's turns hold (at most `limit`), re-attached before the new message when they fit. */
export async function reattach(store: TurnStore, ctx: AssembledContext, limit: number, rule: MediaRule, tok: Tokenizer): Promise<AssembledContext> {
  const ids = ctx.manifest.filter((e) => e.kind === 'recall').flatMap((e) => e.sourceIds);
  if (ids.length === 0 || limit <= 0) return ctx;
  const turns = (await store.byIds(ctx.conversationId, ids)).sort((a, b) => a.seq - b.seq);
  const images = attachmentParts(turns.map((t) => t.content)).filter((p): p is ImageContentPart => p.type === 'image');
  const chosen = images.slice(0, limit);
  const messageOf = (parts: ImageContentPart[]): ChatMessage => ({ role: 'user', content: [{ type: 'text', text: renderRecalledAttachments(parts) }, ...parts] });
  let cost = messageCost(tok, messageOf(chosen), rule);
  // The latest images go first when they do not all fit (the request never exceeds its budget).
  while (chosen.length > 0 && cost.tokens > ctx.budget.free) {
    chosen.pop();
    cost = messageCost(tok, messageOf(chosen), rule);
  }
  const left = images.filter((p) => !chosen.includes(p));
  const sourceOf = (p: ImageContentPart) => turns.filter((t) => Array.isArray(t.content) && t.content.some((q) => q.type === 'image' && q.attachment === p.attachment)).map((t) => t.id);
  const dropped = left.length === 0 ? [] : [{ kind: 'attachments' as const, sourceIds: [...new Set(left.flatMap(sourceOf))], tokens: 0, scores: {}, reason: 'budget' as const }];
  if (chosen.length === 0) return { ...ctx, dropped: [...ctx.dropped, ...dropped] };
  // Just before the new message (not before the messages `after` it: a tool result must follow its call).
  const at = ctx.sources.findIndex((x) => x.kind === 'message');
  const budget = { ...ctx.budget, memory: ctx.budget.memory + cost.tokens, total: ctx.budget.total + cost.tokens, free: ctx.budget.free - cost.tokens, estimated: ctx.budget.estimated + cost.estimated };
  return {
    ...ctx,
    messages: [...ctx.messages.slice(0, at), messageOf(chosen), ...ctx.messages.slice(at)],
    sources: [...ctx.sources.slice(0, at), { kind: 'memory' }, ...ctx.sources.slice(at)],
    budget,
    manifest: [...ctx.manifest, {
      kind: 'attachments', placement: 'messages', sourceIds: [...new Set(chosen.flatMap(sourceOf))], tokens: cost.tokens, scores: {},
      ...(cost.estimated > 0 ? { estimatedTokens: cost.estimated } : {}), reason: `${chosen.length} image(s) of the recalled turns, sent again (recallAttachments)`,
    }],
    dropped: [...ctx.dropped, ...dropped],
  };
}
