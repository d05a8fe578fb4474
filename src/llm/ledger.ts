export type { CostLine, CostReport } from '../contracts/types-data.js';
import type { CostLine, CostReport } from '../contracts/types-data.js';
import type { LlmPricing, LlmProvider, LlmRequest, LlmResponse, Statement, StorageDriver } from '../contracts/types.js';



/**
 * The usage ledger. Calls are recorded in memory as they finish (they may run outside the engine's queue) and
 * written to `llm_usage` by `flush()`, which the engine runs inside its queue.
 */
export function createLedger(driver: StorageDriver) {
  let pending: Statement[] = [];
  return {
    /** Wraps a provider so that every call (and failure) is recorded. */
    track(llm: LlmProvider, pricing?: LlmPricing): LlmProvider {
      return {
        name: llm.name,
        model: llm.model,
        complete: async (request: LlmRequest): Promise<LlmResponse> => {
          const started = performance.now();
          const record = (ok: boolean, response?: LlmResponse): void => {
            const input = response?.usage?.inputTokens ?? 0;
            const output = response?.usage?.outputTokens ?? 0;
            const cost = pricing ? (input * pricing.inputPerMillion + output * pricing.outputPerMillion) / 1e6 : null;
            // Written later, by flush(): only for a conversation still stored (a forget may have come meanwhile, and
            // a call of its compaction, tagging or rebuild must not write its id back).
            pending.push({
              sql: `INSERT INTO llm_usage (conversation_id, purpose, provider, model, ok, input_tokens, output_tokens, cost, ms, created_at)
                    SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 WHERE ?1 IS NULL OR EXISTS (SELECT 1 FROM conversations WHERE id = ?1)`,
              params: [request.conversationId ?? null, request.purpose ?? 'other', llm.name, response?.model ?? llm.model, ok ? 1 : 0,
                input, output, cost, performance.now() - started, new Date().toISOString()],
            });
          };
          try {
            const response = await llm.complete(request);
            record(true, response);
            return response;
          } catch (error) {
            record(false);
            throw error;
          }
        },
      };
    },

    async flush(): Promise<void> {
      if (pending.length === 0) return;
      const rows = pending;
      pending = [];
      await driver.batch(rows);
    },

    async report(conversationId?: string): Promise<CostReport> {
      const rows = await driver.query<{ conversation_id: string | null; purpose: string; provider: string; model: string; calls: number; failures: number; input: number; output: number; cost: number | null; priced: number; ms: number }>(
        `SELECT conversation_id, purpose, provider, model, COUNT(*) AS calls, SUM(1 - ok) AS failures, SUM(input_tokens) AS input,
                SUM(output_tokens) AS output, SUM(cost) AS cost, COUNT(cost) AS priced, SUM(ms) AS ms
         FROM llm_usage ${conversationId === undefined ? '' : 'WHERE conversation_id = ?'}
         GROUP BY conversation_id, purpose, provider, model ORDER BY conversation_id, purpose, model`,
        conversationId === undefined ? [] : [conversationId]);
      const lines: CostLine[] = rows.map((r) => ({
        conversationId: r.conversation_id, purpose: r.purpose, provider: r.provider, model: r.model,
        calls: Number(r.calls), failures: Number(r.failures), inputTokens: Number(r.input), outputTokens: Number(r.output),
        cost: Number(r.priced) > 0 ? Number(r.cost) : null, ms: Math.round(Number(r.ms)),
      }));
      const priced = lines.filter((l) => l.cost !== null);
      return {
        lines,
        total: {
          calls: lines.reduce((n, l) => n + l.calls, 0),
          failures: lines.reduce((n, l) => n + l.failures, 0),
          inputTokens: lines.reduce((n, l) => n + l.inputTokens, 0),
          outputTokens: lines.reduce((n, l) => n + l.outputTokens, 0),
          cost: priced.length > 0 ? priced.reduce((n, l) => n + l.cost!, 0) : null,
        },
      };
    },
  };
}

export type Ledger = ReturnType<typeof createLedger>;
