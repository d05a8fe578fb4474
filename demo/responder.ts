import type { AssembledContext } from '../src/contracts/types.js';

// With no LLM configured the demo still answers: it reports what the memory gave it and quotes the best recalled
// line, so what paging-in does is visible. These replies are shown, never stored as memory.
export function offlineReply(ctx: AssembledContext, question: string): string {
  const recalled = ctx.manifest.filter((e) => e.kind === 'recall');
  // Recalled turns are the lines `[time] speaker: text` or `speaker: text` inside the excerpts.
  const lines = ctx.recallText.split('\n').filter((l) => /^(\[[^\]]+\] )?[^<\s][^:\n]{0,60}: /.test(l));
  const words = new Set(question.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []);
  let best = '';
  let bestScore = 0;
  const asked = question.trim().toLowerCase();
  for (const line of lines) {
    // A line that is a question (the user's own, asked before) answers nothing.
    const said = line.replace(/^(\[[^\]]+\] )?[^:]{0,60}: /, '').trim();
    if (said.endsWith('?') || said.toLowerCase() === asked) continue;
    const score = (line.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []).filter((w) => words.has(w)).length;
    if (score > bestScore) { best = line; bestScore = score; }
  }
  const head = `${ctx.messages.length - 1} earlier messages are in context and ${recalled.length} excerpt${recalled.length === 1 ? ' was' : 's were'} recalled; ${ctx.budget.total} of ${ctx.budget.available} tokens used.`;
  return best ? `${head}\nFrom memory: ${best.replace(/^\[[^\]]*\]\s*/, '')}` : head;
}
