import { PagewiseError } from '../errors.js';
import type { LlmProvider, LlmRequest, LlmResponse, OpenAICompatibleOptions } from '../types.js';

const MODULE = 'llm';

interface ChatCompletion {
  model?: string;
  choices?: { message?: { content?: string | null } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

/**
 * An OpenAI-compatible chat-completions client over `fetch` (OpenAI, Ollama, LM Studio, vLLM): no SDK.
 *
 * @example
 * const llm = openaiCompatible({ baseUrl: 'http://127.0.0.1:11434/v1', model: 'qwen3:4b' });
 * const memory = await createMemory({ llm });
 */
export function openaiCompatible(options: OpenAICompatibleOptions): LlmProvider {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const timeoutMs = options.timeoutMs ?? 20_000;
  return {
    name: 'openai-compatible',
    model: options.model,
    async complete(request: LlmRequest): Promise<LlmResponse> {
      const signals = [AbortSignal.timeout(timeoutMs), ...(request.signal ? [request.signal] : [])];
      const body: Record<string, unknown> = { model: options.model, messages: request.messages, stream: false };
      if (request.json) body.response_format = { type: 'json_object' };
      if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
      if (request.temperature !== undefined) body.temperature = request.temperature;
      let res: Response;
      try {
        res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}), ...options.headers },
          body: JSON.stringify(body),
          signal: AbortSignal.any(signals),
        });
      } catch (cause) {
        const timedOut = signals[0]!.aborted;
        throw new PagewiseError('LLM_ERROR', MODULE, timedOut
          ? `${url} did not answer within ${timeoutMs} ms. Raise llm.timeoutMs or check the server.`
          : `Could not reach ${url} (${(cause as Error).message}). Check llm.baseUrl.`, { cause });
      }
      const raw = await res.text().catch(() => '');
      if (!res.ok) {
        throw new PagewiseError('LLM_ERROR', MODULE, `${url} answered HTTP ${res.status}: ${raw.slice(0, 200)}. Check llm.model and llm.apiKey.`);
      }
      let data: ChatCompletion;
      try {
        data = JSON.parse(raw) as ChatCompletion;
      } catch (cause) {
        throw new PagewiseError('LLM_ERROR', MODULE, `${url} answered with something other than JSON: ${raw.slice(0, 120)}`, { cause });
      }
      const text = data.choices?.[0]?.message?.content;
      if (typeof text !== 'string') throw new PagewiseError('LLM_ERROR', MODULE, `${url} answered without choices[0].message.content.`);
      const response: LlmResponse = { text, model: data.model ?? options.model };
      if (data.usage) response.usage = { inputTokens: data.usage.prompt_tokens ?? 0, outputTokens: data.usage.completion_tokens ?? 0 };
      return response;
    },
  };
}
