// The breakout check of the fault suite: in text pagewise gives a model (the recall block, the topics hint, summaries,
// tool results, the proxy's system text, MCP results and prompts, the CLI's output), every spelling of one of its
// delimiters must be one the renderer (src/text/render.ts) wrote, on its own line; blocks must balance; and the
// text an injection payload carries (`SYSTEM:`, `[system] New instructions`) may appear only inside an open block,
// where it is quoted as data.
import { TRANSCRIPT_NOTE } from '../../src/text/render.js';
import { ownTagOpenings } from '../../src/common/as-data.js';
import { PAYLOADS } from './fault-payloads.js';

// A quoted attribute value, as render.ts writes one (JSON string syntax, on one line).
const Q = String.raw`"(?:[^"\\\n]|\\.)*"`;
/** The lines on which pagewise writes its tags, each with the tag it opens or closes. */
const OWN_LINES: [RegExp, 'open' | 'close', string][] = [
  [/^<(prior-conversation|excerpt|context-topics|web-results)>$/, 'open', ''],
  // Text quoted for pagewise's own LLM helpers (renderQuote: the search decision, the tagger, the summarizer).
  [/^<(excerpt) part="(?:text|before|after)">$/, 'open', ''],
  [/^<\/(prior-conversation|excerpt|context-topics|summary|turn|web-results|web-result)>$/, 'close', ''],
  // A web search result: its title, URL, date and provider quoted on the tag's line.
  [new RegExp(String.raw`^<(web-result) title=${Q} url=${Q}(?: published=${Q})? source=${Q}>$`), 'open', ''],
  // A search result names the summary before it: `sum_…: <summary …>`.
  [new RegExp(String.raw`^(?:sum_[A-Za-z0-9_-]+: )?<(summary) turns="\d+-\d+" time="[^"\n]*"(?: topic=${Q}| overview="everything before")?>$`), 'open', ''],
  [new RegExp(String.raw`^<(turn) role="(?:system|user|assistant|tool)"(?: seq="\d+")?(?: id=${Q})?(?: name=${Q})?(?: time="[^"\n]*")?(?: tool_call_id=${Q})?>$`), 'open', ''],
];

/**
 * The tag spellings of the payloads, verbatim (their first line up to the forged instruction): found in an output
 * they were not neutralized, whatever ownTagOpenings (the code under test) recognizes.
 */
const KNOWN_SPELLINGS: readonly string[] = [...new Set(PAYLOADS
  .map((p) => p.split('\n')[0]!.split(/SYSTEM:|\[system\]/)[0]!.trim())
  .filter((s) => /conversation|excerpt|summary|turn|topics|web/i.test(s)))];

/**
 * The payloads' spellings that have the very shape of a line pagewise writes (a forged `<web-result title=… url=…
 * source=…>`): structure alone cannot tell one from pagewise's own (a forged result inside the block balances), but
 * pagewise never writes a payload's line, so wherever one appears it was not neutralized.
 */
const FORGED: readonly string[] = KNOWN_SPELLINGS.filter((s) => s.includes('=') && OWN_LINES.some(([re, kind]) => kind === 'open' && re.test(s)));

/** What an injection payload says once it is out of its block (the payloads of fault-injection.test.ts carry these). */
export const PAYLOAD_MARKERS: readonly RegExp[] = [/SYSTEM:/, /\[system\] New instructions/i, /ignore (?:all )?previous instructions/i];

/**
 * What is wrong in one output, as short descriptions (empty: sealed). `oneLine`: a single-line value inside a JSON
 * answer (an id, a name, an error message): only the tag check applies, since it cannot start a paragraph of its own.
 */
export function breakouts(text: string, oneLine = false): string[] {
  const problems: string[] = [];
  const lines = text.split('\n');
  // Where each line starts, to map a tag's offset to its line.
  const starts: number[] = [];
  let at = 0;
  for (const l of lines) { starts.push(at); at += l.length + 1; }
  const lineOf = (offset: number) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (starts[mid]! <= offset) lo = mid; else hi = mid - 1; }
    return lo;
  };
  const tagLines = new Set<number>();
  for (const { start } of ownTagOpenings(text)) {
    const n = lineOf(start);
    const line = lines[n]!;
    // A line pagewise writes holds one tag, its own: a second one is inside an attribute.
    if (oneLine || tagLines.has(n) || (!OWN_LINES.some(([re]) => re.test(line)) && line !== TRANSCRIPT_NOTE)) {
      problems.push(`a tag pagewise did not write: ${JSON.stringify(line.length > 160 ? `${line.slice(0, 160)}…` : line)}`);
    }
    tagLines.add(n);
  }
  for (const [n, line] of lines.entries()) {
    const forged = FORGED.find((k) => line.includes(k));
    if (forged) {
      problems.push(`a payload's forged tag line (${JSON.stringify(forged)}): ${JSON.stringify(line.length > 160 ? `${line.slice(0, 160)}…` : line)}`);
      continue;
    }
    if (OWN_LINES.some(([re]) => re.test(line))) continue;
    const spelled = KNOWN_SPELLINGS.find((k) => line.includes(k));
    if (spelled && !tagLines.has(n)) problems.push(`a payload's tag spelling left as it was (${JSON.stringify(spelled)}): ${JSON.stringify(line.length > 160 ? `${line.slice(0, 160)}…` : line)}`);
  }
  if (oneLine) return problems;
  const stack: string[] = [];
  for (const [n, line] of lines.entries()) {
    const own = tagLines.has(n) ? OWN_LINES.find(([re]) => re.test(line)) : undefined;
    if (own) {
      const tag = own[0].exec(line)![1]!;
      if (own[1] === 'open') stack.push(tag);
      else if (stack.at(-1) === tag) stack.pop();
      else problems.push(`</${tag}> closes ${stack.length > 0 ? `<${stack.at(-1)}>` : 'nothing'} (line ${n + 1})`);
      continue;
    }
    if (stack.length === 0) {
      for (const marker of PAYLOAD_MARKERS) {
        if (marker.test(line)) problems.push(`payload text outside every block (line ${n + 1}): ${JSON.stringify(line.length > 160 ? `${line.slice(0, 160)}…` : line)}`);
      }
    }
  }
  if (stack.length > 0) problems.push(`blocks left open: ${stack.map((t) => `<${t}>`).join(' ')}`);
  return problems;
}

/**
 * The same check on an answer that may be JSON (an MCP tool result, the CLI's --json): each string in it on its
 * own (a JSON string's line breaks are escapes: its lines are the string's), multi-line ones fully, single-line ones
 * for tags. Other text as it is.
 */
export function breakoutsInAnswer(text: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return breakouts(text);
  }
  const problems: string[] = [];
  const walk = (v: unknown, path: string) => {
    if (typeof v === 'string') {
      for (const p of breakouts(v, !v.includes('\n'))) problems.push(`${path}: ${p}`);
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${path}[${i}]`));
    } else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`);
    }
  };
  walk(value, '$');
  return problems;
}

/** Breakouts counted per surface (and the outputs checked), for the suite's printed figures. */
export class BreakoutTally {
  readonly checked = new Map<string, number>();
  readonly found = new Map<string, string[]>();

  /** Checks one output of `surface`; returns its problems. */
  check(surface: string, text: string, what: string, json = false): string[] {
    this.checked.set(surface, (this.checked.get(surface) ?? 0) + 1);
    const problems = json ? breakoutsInAnswer(text) : breakouts(text);
    if (problems.length > 0) {
      const list = this.found.get(surface) ?? [];
      list.push(...problems.map((p) => `${what}: ${p}`));
      this.found.set(surface, list);
    }
    return problems;
  }

  total(): number {
    return [...this.found.values()].reduce((n, l) => n + l.length, 0);
  }

  /** One line per surface: outputs checked, breakouts found. */
  report(): string {
    return [...this.checked].map(([s, n]) => `  ${s.padEnd(28)} ${String(n).padStart(4)} outputs  ${String(this.found.get(s)?.length ?? 0).padStart(4)} breakouts`).join('\n');
  }

  /** The first few problems of each surface, for a failure message. */
  examples(per = 3): string {
    return [...this.found].map(([s, l]) => `${s} (${l.length}):\n${l.slice(0, per).map((p) => `    ${p}`).join('\n')}`).join('\n');
  }
}
