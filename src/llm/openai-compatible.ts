import { PagewiseError } from '../contracts/errors.js';
import type { LlmProvider, LlmRequest, LlmResponse, OpenAICompatibleOptions } from '../contracts/types.js';
import { redact, secretsOf } from '../text/redact.js';
import { postJson } from './http.js';

interface ChatCompletion {
  model?: string;
  choices?: { message?: { content?: string | null } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

/**
 * An OpenAI-compatible chat-completions client over `fetch` (OpenAI, Ollama, LM Studio, vLLM): no SDK. Retries
 * 429/5xx with exponential backoff; honours `AbortSignal`.
 *
 * @example
 * const llm = openaiCompatible({ baseUrl: 'http://127.0.0.1:11434/v1', model: 'qwen3:4b' });
 * const memory = await createMemory({ llm });
 */
export function openaiCompatible(options: OpenAICompatibleOptions): LlmProvider {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const headers: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
  // A proxy that echoes the request (key included) into its reply has it taken out before the text is stored or shown.
  const secrets = secretsOf({ url, headers: { ...headers, ...options.headers } });
  return {
    name: 'openai-compatible',
    model: options.model,
    async complete(request: LlmRequest): Promise<LlmResponse> {
      const body: Record<string, unknown> = { model: options.model, messages: request.messages, stream: false };
      if (request.json) body.response_format = { type: 'json_object' };
      if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
      if (request.temperature !== undefined) body.temperature = request.temperature;
      const data = await postJson(url, body, headers, options, request.signal) as ChatCompletion;
      const text = data?.choices?.[0]?.message?.content;
      if (typeof text !== 'string') throw new PagewiseError('LLM_ERROR', 'llm', `${redact(url, secrets)} answered without choices[0].message.content.`);
      const response: LlmResponse = { text: redact(text, secrets), model: redact(String(data.model ?? options.model), secrets) };
      if (data.usage) response.usage = { inputTokens: data.usage.prompt_tokens ?? 0, outputTokens: data.usage.completion_tokens ?? 0 };
      return response;
    },
  };
}
