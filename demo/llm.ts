import { contentText } from '../src/messages.js';
import { readSse } from '../src/text/sse.js';
import type { AssembledContext, ChatMessage } from '../src/types.js';

interface Endpoint { provider: 'openai' | 'anthropic'; baseUrl: string; model: string; apiKey: string }

const text = (m: ChatMessage) => contentText(m.content);

/**
 * Streams a reply from an OpenAI-compatible endpoint or Anthropic, with pagewise's assembled context as the request:
 * `prependText` and the recalled memory as system text, then the history and the new message.
 */
export async function streamReply(endpoint: Endpoint, ctx: AssembledContext, onDelta: (delta: string) => void): Promise<string> {
  const system = [ctx.prependText, ...ctx.messages.filter((m) => m.role === 'system').map(text)].filter(Boolean).join('\n\n');
  const turns = ctx.messages.filter((m) => m.role === 'user' || m.role === 'assistant').map((m) => ({ role: m.role, content: text(m) }));
  const base = endpoint.baseUrl.replace(/\/+$/, '');
  const anthropic = endpoint.provider === 'anthropic';
  const response = await fetch(anthropic ? `${base}/v1/messages` : `${base}/chat/completions`, {
    method: 'POST',
    headers: anthropic
      ? { 'content-type': 'application/json', 'x-api-key': endpoint.apiKey, 'anthropic-version': '2023-06-01', 'anthropic-dangerous-direct-browser-access': 'true' }
      : { 'content-type': 'application/json', ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}) },
    body: JSON.stringify(anthropic
      ? { model: endpoint.model, max_tokens: 1024, stream: true, ...(system ? { system } : {}), messages: turns }
      : { model: endpoint.model, stream: true, messages: [...(system ? [{ role: 'system', content: system }] : []), ...turns] }),
  });
  if (!response.ok || !response.body) throw new Error(`the model answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  let reply = '';
  await readSse(response.body, (data) => {
    if (data === '[DONE]') return;
    const event = JSON.parse(data) as { choices?: { delta?: { content?: string } }[]; type?: string; delta?: { type?: string; text?: string } };
    const delta = anthropic ? (event.type === 'content_block_delta' && event.delta?.type === 'text_delta' ? event.delta.text : undefined) : event.choices?.[0]?.delta?.content;
    if (delta) { reply += delta; onDelta(delta); }
  });
  if (!reply.trim()) throw new Error('the model sent an empty reply');
  return reply;
}
