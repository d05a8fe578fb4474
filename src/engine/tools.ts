import { truncate } from '../assembly/compress.js';
import { quoted } from '../common/as-data.js';
import { renderSummary, renderTurnBlock, TRANSCRIPT_NOTE } from '../text/render.js';
import type { SummaryStore } from '../compaction/summary-store.js';
import { PagewiseError } from '../contracts/errors.js';
import { ftsMatch, queryTerms } from '../text/fts-words.js';
import type { TurnRecord, TurnStore } from '../store/turn-store.js';
import type { TagStore } from '../tags/tag-store.js';
import type { Tokenizer, ToolDefinition, ToolResult } from '../contracts/types.js';

const MODULE = 'tools';
const DEFAULT_MAX = 2000;

/**
 * The memory tools, in the OpenAI function-calling format: the model pages memory back in itself — a summary or a
 * tag back to its full turns, an offloaded message by id, a search.
 */
export function memoryTools(): ToolDefinition[] {
  const maxTokens = { type: 'integer', minimum: 50, description: `Longest answer in tokens (default ${DEFAULT_MAX}).` };
  return [
    {
      type: 'function',
      function: {
        name: 'pagewise_expand',
        description: 'Expand earlier conversation back to its full turns: a summary by its id, or every turn about a topic tag (from the context-topics list). Use it when a summary is too short to answer.',
        parameters: {
          type: 'object',
          properties: {
            summaryId: { type: 'string', description: 'The id of a summary (sum_…).' },
            tag: { type: 'string', description: 'A topic tag, as listed in <context-topics>.' },
            from: { type: 'integer', minimum: 0, description: 'Continue from this turn number (given when a previous answer was cut).' },
            maxTokens,
          },
          additionalProperties: false,
        },
      },
    },
    {
      type: 'function',
      function: {
        name: 'pagewise_reload',
        description: 'Reload the full text of an offloaded or compressed message by its id (shown in the preview).',
        parameters: {
          type: 'object',
          properties: { id: { type: 'string', description: 'The message id.' }, offset: { type: 'integer', minimum: 0, description: 'Start at this character (for very long messages).' }, maxTokens },
          required: ['id'],
          additionalProperties: false,
        },
      },
    },
    {
      type: 'function',
      function: {
        name: 'pagewise_search',
        description: 'Search the whole conversation history (every stored turn and summary) for words.',
        parameters: {
          type: 'object',
          properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 50, description: 'Hits at most (default 8).' }, maxTokens },
          required: ['query'],
          additionalProperties: false,
        },
      },
    },
  ];
}

export interface ToolContext {
  turns: TurnStore;
  tags: TagStore;
  summaries: SummaryStore;
  tokenizer: Tokenizer;
}

function parseArgs(name: string, args: unknown): Record<string, unknown> {
  let value = args;
  if (typeof args === 'string') {
    try {
      value = args.trim() === '' ? {} : JSON.parse(args);
    } catch (cause) {
      throw new PagewiseError('INVALID_TOOL_CALL', MODULE, `The arguments of ${name} are not valid JSON: ${args.slice(0, 80)}`, { cause });
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new PagewiseError('INVALID_TOOL_CALL', MODULE, `${name} takes an object of arguments (or its JSON string).`);
  }
  return value as Record<string, unknown>;
}

function optionalInt(args: Record<string, unknown>, key: string, name: string, fallback: number, min: number): number {
  const v = args[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new PagewiseError('INVALID_TOOL_CALL', MODULE, `${name}: "${key}" must be an integer ≥ ${min}.`);
  return v;
}

/** Turns rendered as delimited blocks with their ids and seqs, cut at `maxTokens` with where to continue. */
function renderTurns(turns: readonly TurnRecord[], maxTokens: number, tokenizer: Tokenizer, header: string): ToolResult {
  const lines: string[] = [header, TRANSCRIPT_NOTE];
  let used = tokenizer.count(lines.join('\n'));
  const ids: string[] = [];
  for (const t of turns) {
    const line = renderTurnBlock(t);
    const cost = tokenizer.count(line) + 1;
    if (used + cost > maxTokens) {
      const note = `[cut here: continue with from: ${t.seq}]`;
      return { content: [...lines, note].join('\n'), sourceIds: ids, tokens: used + tokenizer.count(note), truncated: true };
    }
    lines.push(line);
    ids.push(t.id);
    used += cost;
  }
  return { content: lines.join('\n'), sourceIds: ids, tokens: used, truncated: false };
}

/** Runs one memory tool for a conversation. */
export async function runTool(c: ToolContext, conversationId: string, name: string, rawArgs: unknown): Promise<ToolResult> {
  const args = parseArgs(name, rawArgs);
  const maxTokens = optionalInt(args, 'maxTokens', name, DEFAULT_MAX, 50);
  switch (name) {
    case 'pagewise_expand': {
      const from = optionalInt(args, 'from', name, 0, 0);
      if (typeof args.summaryId === 'string') {
        const [s] = await c.summaries.byIds(conversationId, [args.summaryId]);
        if (!s) throw new PagewiseError('NOT_FOUND', MODULE, `No summary ${quoted(args.summaryId)} in this conversation; summary ids are in the manifest and in memory.summaries().`);
        if (s.kind === 'tag') return expandTag(c, conversationId, s.tag!, from, maxTokens);
        const start = Math.max(s.firstSeq, from);
        const turns = await c.turns.range(conversationId, start, Math.max(0, s.lastSeq - start + 1));
        return renderTurns(turns, maxTokens, c.tokenizer, `Turns ${start}-${s.lastSeq} of the conversation (summarized as ${s.id}), verbatim:`);
      }
      if (typeof args.tag === 'string' && args.tag.trim() !== '') return expandTag(c, conversationId, args.tag.trim().toLowerCase(), from, maxTokens);
      throw new PagewiseError('INVALID_TOOL_CALL', MODULE, 'pagewise_expand needs "summaryId" or "tag".');
    }
    case 'pagewise_reload': {
      if (typeof args.id !== 'string' || args.id === '') throw new PagewiseError('INVALID_TOOL_CALL', MODULE, 'pagewise_reload needs the message "id".');
      const [t] = await c.turns.byIds(conversationId, [args.id]);
      if (!t) throw new PagewiseError('NOT_FOUND', MODULE, `No message ${quoted(args.id)} in this conversation.`);
      const offset = optionalInt(args, 'offset', name, 0, 0);
      const text = t.text.slice(offset);
      const frame = renderTurnBlock({ ...t, content: '', toolCalls: [] });
      const budget = maxTokens - c.tokenizer.count(`${TRANSCRIPT_NOTE}\n${frame}`) - 20;
      const cut = c.tokenizer.count(text) > budget;
      const head = cut ? truncate(text, budget, c.tokenizer, '') : text;
      const content = `${TRANSCRIPT_NOTE}\n${renderTurnBlock({ ...t, content: head, toolCalls: [] })}${cut ? `\n[cut: continue with offset ${offset + head.length}]` : ''}`;
      return { content, sourceIds: [t.id], tokens: c.tokenizer.count(content), truncated: cut };
    }
    case 'pagewise_search': {
      if (typeof args.query !== 'string' || args.query.trim() === '') throw new PagewiseError('INVALID_TOOL_CALL', MODULE, 'pagewise_search needs a "query".');
      const limit = Math.min(50, optionalInt(args, 'limit', name, 8, 1));
      const match = ftsMatch(queryTerms(args.query));
      if (!match) return { content: 'No searchable words in the query.', sourceIds: [], tokens: 8, truncated: false };
      const hits = await c.turns.search(conversationId, match, limit);
      const turns = await c.turns.bySeqs(conversationId, hits.map((h) => h.seq));
      const summaries = await c.summaries.search(conversationId, match, ['segment', 'tag'], 3);
      const lines = [`Search results for ${quoted(args.query)}:`, ...summaries.map(({ summary }) => `${summary.id}: ${renderSummary(summary)}`)];
      const result = renderTurns(turns, maxTokens - c.tokenizer.count(lines.join('\n')), c.tokenizer, lines.join('\n'));
      return { ...result, sourceIds: [...summaries.map((x) => x.summary.id), ...result.sourceIds] };
    }
    default:
      throw new PagewiseError('UNKNOWN_TOOL', MODULE, `No memory tool ${quoted(String(name))}. The tools are ${memoryTools().map((t) => t.function.name).join(', ')} (memory.tools()).`);
  }
}

async function expandTag(c: ToolContext, conversationId: string, tag: string, from: number, maxTokens: number): Promise<ToolResult> {
  const units = (await c.tags.matchUnits(conversationId, new Map([[tag, 1]]), 10_000, 10_000)).sort((a, b) => a.unitSeq - b.unitSeq);
  if (units.length === 0) throw new PagewiseError('NOT_FOUND', MODULE, `No turns are tagged ${quoted(tag)}; the tags are in <context-topics> and memory.tags().`);
  const seqs = units.flatMap((u) => Array.from({ length: u.endSeq - u.unitSeq + 1 }, (_, i) => u.unitSeq + i)).filter((s) => s >= from);
  const turns = await c.turns.bySeqs(conversationId, seqs.slice(0, 500));
  return renderTurns(turns, maxTokens, c.tokenizer, `Every turn tagged ${quoted(tag)}, verbatim:`);
}
