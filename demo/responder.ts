import type { AssembledContext } from '../src/contracts/types.js';
import { ftsStem, queryTerms, stemsOf } from '../src/text/fts-words.js';

// The recalled lines an offline answer quotes at most (those sharing the most words with the question).
const QUOTED = 3;
// The end of the web results' block, which comes first in the memory block.
const WEB_END = '</web-results>';

const same = (a: string, b: string): boolean => a.trim().toLowerCase().replace(/\s+/g, ' ') === b.trim().toLowerCase().replace(/\s+/g, ' ');

// With no LLM configured the demo still answers: it reports what the memory gave it and quotes the recalled lines
// that share the most words with the question, so what paging-in does is visible. These replies are shown, never
// stored as memory. Web results (Settings › Search the web) are named by their titles and links, never quoted as memory.
export function offlineReply(ctx: AssembledContext, question: string): string {
  const recalled = ctx.manifest.filter((e) => e.kind === 'recall');
  const web = ctx.manifest.filter((e) => e.kind === 'search' && e.web).map((e) => `From the web: ${e.web!.title} (${e.web!.url})`);
  // Recalled turns are the lines `[time] speaker: text` or `speaker: text` inside the excerpts (after the web results).
  const webEnd = ctx.recallText.indexOf(WEB_END);
  const memory = webEnd < 0 ? ctx.recallText : ctx.recallText.slice(webEnd + WEB_END.length);
  const lines = memory.split('\n').filter((l) => /^(\[[^\]]+\] )?[^<\s][^:\n]{0,60}: /.test(l));
  // The question's content words as the full-text index reads them: `moves` answers `move`; `and`, `where` count for
  // nothing.
  const words = [...new Set(queryTerms(question).map((w) => ftsStem(w) ?? w))];
  // Every recalled line may be quoted, a question too ("what did I say about my dog?" wants the line that asked for
  // tips about him); only an earlier copy of the question being asked is left out: it answers nothing.
  const quoted = lines
    .map((stamped, at) => ({ line: stamped.replace(/^\[[^\]]*\]\s*/, ''), at }))
    .filter((l) => !same(l.line.replace(/^[^:]{0,60}: /, ''), question))
    // The speaker counts ("what did Melanie say?"); the time does not.
    .map((l) => { const stems = stemsOf(l.line); return { ...l, score: words.filter((w) => stems.has(w)).length }; })
    .filter((l) => l.score > 0)
    .sort((a, b) => b.score - a.score || a.at - b.at)
    .slice(0, QUOTED)
    // In the order they were said.
    .sort((a, b) => a.at - b.at)
    .map((l) => `From memory: ${l.line}`);
  const head = `${ctx.messages.length - 1} earlier messages are in context and ${recalled.length} excerpt${recalled.length === 1 ? ' was' : 's were'} recalled; ${ctx.budget.total} of ${ctx.budget.available} tokens used.`;
  const searched = web.length > 0 ? ` ${web.length} web result${web.length === 1 ? ' was' : 's were'} placed first.` : '';
  return [`${head}${searched}`, ...web, ...quoted].join('\n');
}
