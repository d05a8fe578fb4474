import { PagewiseError } from '../contracts/errors.js';
import type { AnthropicOptions, LlmProvider, LlmRequest, LlmResponse } from '../contracts/types.js';
import { redact, secretsOf } from '../text/redact.js';
import { postJson } from './http.js';

interface MessagesReply {
  model?: string;
  content?: { type?: string; text?: string }[];
  usage?: { input_tokens?: number; output_tokens?: number };
}

/**
 * An Anthropic Messages API client over `fetch` (no SDK). System messages go into `system`; JSON replies are asked
 * for in the prompt (the API has no JSON mode). Retries 429/5xx/529 with exponential backoff.
 *
 * @example
 * const memory = await createMemory({ llm: anthropic({ provider: 'anthropic', model: 'claude-haiku-4-5', apiKey }) });
 */
export function anthropic(options: AnthropicOptions): LlmProvider {
  const url = `${(options.baseUrl ?? 'https://api.anthropic.com').replace(/\/+$/, '')}/v1/messages`;
  const headers: Record<string, string> = { 'anthropic-version': options.version ?? '2023-06-01' };
  if (options.apiKey) headers['x-api-key'] = options.apiKey;
  // A proxy that echoes the request (key included) into its reply has it taken out before the text is stored or shown.
  const secrets = secretsOf({ url, headers: { ...headers, ...options.headers } });
  return {
    name: 'anthropic',
    model: options.model,
    async complete(request: LlmRequest): Promise<LlmResponse> {
      const system = request.messages.filter((m) => m.role === 'system').map((m) => m.content);
      if (request.json) system.push('Reply with one JSON object only, no prose around it.');
      const body: Record<string, unknown> = {
        model: options.model,
        max_tokens: request.maxTokens ?? options.maxTokens ?? 1024,
        messages: request.messages.filter((m) => m.role !== 'system').map((m) => ({ role: m.role, content: m.content })),
      };
      if (system.length > 0) body.system = system.join('\n\n');
      if (request.temperature !== undefined) body.temperature = request.temperature;
      const data = await postJson(url, body, headers, options, request.signal) as MessagesReply;
      const parts = Array.isArray(data?.content) ? data.content.filter((c) => c?.type === 'text' && typeof c.text === 'string') : [];
      if (parts.length === 0) throw new PagewiseError('LLM_ERROR', 'llm', `${redact(url, secrets)} answered without a text content block.`);
      const response: LlmResponse = { text: redact(parts.map((p) => p.text).join(''), secrets), model: redact(String(data.model ?? options.model), secrets) };
      if (data.usage) response.usage = { inputTokens: data.usage.input_tokens ?? 0, outputTokens: data.usage.output_tokens ?? 0 };
      return response;
    },
  };
}
