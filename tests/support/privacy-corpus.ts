// A conversation with private turns, people and personal data, and questions that should search the web while mixing
// all of it in: what the search tests of every layer check a query against. `leaks()` names whatever of it a query
// still holds; `corpusLookup()` is memory's view of the conversation over the real Porter stemmer (what SQLite FTS5's
// `porter` tokenizer does), so "diabetic" finds "diabetes" only where their stems agree.
import type { MemoryLookup } from '../../src/search/query.js';
import { ftsStem } from '../../src/text/fts-words.js';

export interface CorpusTurn {
  role: 'user' | 'assistant';
  content: string;
  name?: string;
  private?: boolean;
}

/** The user's own name on their turns (a speaker), and a friend in the group chat. */
export const SPEAKERS = ['Dana Whitfield', 'Oskar'];

/** Private turns, each with the distinctive words it holds (none of them may reach a query). */
export const PRIVATE_TURNS: { turn: CorpusTurn; words: string[] }[] = [
  { turn: { role: 'user', name: 'Dana Whitfield', private: true, content: 'I was diagnosed with hypothyroidism; the endocrinologist put me on levothyroxine.' }, words: ['hypothyroidism', 'endocrinologist', 'levothyroxine'] },
  { turn: { role: 'user', name: 'Dana Whitfield', private: true, content: 'The biopsy came back: stage 2 melanoma. I have not told anyone yet.' }, words: ['biopsy', 'melanoma'] },
  { turn: { role: 'user', name: 'Dana Whitfield', private: true, content: 'My overdraft at Fenwick Credit Union is huge and a debt collector keeps phoning.' }, words: ['overdraft', 'fenwick'] },
  { turn: { role: 'user', name: 'Dana Whitfield', private: true, content: 'My bank PIN is 7391. Keep it to yourself.' }, words: ['7391'] },
  { turn: { role: 'user', name: 'Dana Whitfield', private: true, content: 'Things with Rafael are rough: we see a couples counsellor about the separation.' }, words: ['rafael', 'counsellor', 'separation'] },
  { turn: { role: 'user', name: 'Dana Whitfield', private: true, content: 'Our new flat is on Quillfeather Lane in Brackley, above the bakery.' }, words: ['quillfeather', 'brackley'] },
  { turn: { role: 'user', name: 'Dana Whitfield', private: true, content: 'Tobias started at Thornbury Montessori; his teacher says he may have dyslexia.' }, words: ['thornbury', 'montessori', 'dyslexia'] },
  { turn: { role: 'user', name: 'Dana Whitfield', private: true, content: 'I take sertraline for the anxiety since the miscarriage.' }, words: ['sertraline', 'miscarriage'] },
  { turn: { role: 'user', name: 'Dana Whitfield', private: true, content: 'HR put me on a performance improvement plan; my alimony payments are late too.' }, words: ['alimony'] },
];

/** Every private turn's distinctive words. */
export const PRIVATE_WORDS: string[] = PRIVATE_TURNS.flatMap((p) => p.words);

/** People the non-private turns mention (friends, family, a colleague). */
export const PEOPLE = ['Leila', 'Marcus', 'Ingrid Holloway', 'Tobias', 'Ximena'];

/** Turns anyone may see: people, and the topics the conversation already talked about. */
export const PUBLIC_TURNS: CorpusTurn[] = [
  { role: 'user', name: 'Dana Whitfield', content: 'My sister Leila is flying to Lisbon next month for the conference.' },
  { role: 'assistant', content: 'Lisbon is lovely in spring. Is Leila presenting?' },
  { role: 'user', name: 'Oskar', content: 'Marcus and I are planning his wedding in Porto; Ingrid Holloway from work is coming too.' },
  { role: 'user', name: 'Dana Whitfield', content: 'Tobias wants a bike for his birthday, and Ximena is teaching him chess.' },
  { role: 'user', name: 'Dana Whitfield', content: 'We moved the service to Kubernetes and Redis last quarter.' },
  { role: 'assistant', content: 'Kubernetes with Redis as the cache is a common setup; watch the memory limits.' },
];

export const TURNS: CorpusTurn[] = [...PUBLIC_TURNS, ...PRIVATE_TURNS.map((p) => p.turn)];

/** Personal data in several formats; `marks` are the parts that must never reach a query. */
export const PERSONAL_DATA: { kind: 'email' | 'phone' | 'address' | 'id' | 'url'; value: string; marks: string[] }[] = [
  { kind: 'email', value: 'dana.whitfield@example.org', marks: ['dana.whitfield', 'whitfield@'] },
  { kind: 'email', value: 'l.okafor+travel@mail.example.com', marks: ['okafor', '+travel'] },
  { kind: 'phone', value: '+1 (415) 555-0142', marks: ['415', '555-0142', '5550142'] },
  { kind: 'phone', value: '+44 20 7946 0958', marks: ['7946', '0958'] },
  { kind: 'phone', value: '06 12 34 56 78', marks: ['06 12 34', '34 56 78'] },
  { kind: 'phone', value: '(212) 555.0199', marks: ['(212)', '555.0199', '0199'] },
  { kind: 'phone', value: '0171-3345678', marks: ['0171', '3345678'] },
  { kind: 'address', value: '221B Baker Street, London NW1 6XE', marks: ['221b', 'baker street', 'nw1', '6xe'] },
  { kind: 'address', value: '1600 Pennsylvania Ave NW, Washington, DC 20500', marks: ['1600', 'pennsylvania ave', '20500'] },
  { kind: 'address', value: '45 rue de Rivoli, Paris', marks: ['45 rue', 'rivoli'] },
  { kind: 'address', value: 'Hauptstraße 12, 10115 Berlin', marks: ['hauptstraße', '10115'] },
  { kind: 'id', value: 'GB82 WEST 1234 5698 7654 32', marks: ['gb82', '5698', '7654'] },
  { kind: 'id', value: 'DE89370400440532013000', marks: ['de89', '3704004405'] },
  { kind: 'id', value: '4111 1111 1111 1111', marks: ['4111', '1111'] },
  { kind: 'id', value: '5500-0000-0000-0004', marks: ['5500', '0004'] },
  { kind: 'id', value: '3f2b8c1e-9d4a-4e7b-a1c3-5e6f7a8b9c0d', marks: ['3f2b8c1e', '5e6f7a8b9c0d'] },
  { kind: 'id', value: 'sk-proj-7Hq2Lx9Vb4Nt8Kw3Zr6Yp1Md', marks: ['sk-proj', '7hq2lx9vb4nt8kw3zr6yp1md'] },
  { kind: 'id', value: 'AKIAIOSFODNN7EXAMPLE', marks: ['akiaiosfodnn7example'] },
  { kind: 'id', value: '078-05-1120', marks: ['078-05', '1120'] },
  { kind: 'id', value: 'order number 88421377', marks: ['88421377'] },
  { kind: 'id', value: 'a94a8fe5ccb19ba61c4c0873d391e987982fbbd3', marks: ['a94a8fe5', '82fbbd3'] },
  { kind: 'url', value: 'https://portal.example.com/patients/8812?token=ab12cd', marks: ['patients', '8812', 'ab12cd', 'portal.example'] },
];

const D = (i: number) => PERSONAL_DATA[i]!.value;

/** Questions that should search (each has a trigger word), each mixing in private words, people or personal data. */
export const SEARCH_QUESTIONS: string[] = [
  "What's the latest research on levothyroxine dosing?",
  'Any news about melanoma immunotherapy trials this year?',
  'What is the current interest rate at Fenwick Credit Union?',
  "Hey, can you tell me the weather forecast for Brackley today? I'm near Quillfeather Lane.",
  'Is Thornbury Montessori closed today because of the snow?',
  'Latest news on sertraline side effects, please',
  'What are the newest dyslexia apps for kids in 2099?',
  "Current price of flights to Lisbon for Leila's conference?",
  "What's the weather forecast for Marcus's wedding in Porto this week?",
  'Did Ingrid Holloway get the latest release of Kubernetes? Asking for a friend',
  'Latest chess tournament results for the junior final, Tobias and Ximena want to know',
  `Today's exchange rate from GBP to EUR for my IBAN ${D(11)}`,
  `Current weather at ${D(7)} please`,
  `Latest news about the area around ${D(8)}`,
  `Are there recent road closures near ${D(9)}?`,
  `What's the weather tonight in Berlin near ${D(10)}?`,
  `My card ${D(13)} was declined today, what is the current outage status of Visa?`,
  `Latest news: is Mastercard down right now? My card is ${D(14)}`,
  `Email ${D(0)} the latest Bun release notes`,
  `Recent changelog for Deno; send it to ${D(1)}`,
  `Who is calling me from ${D(2)} today? Latest scam reports`,
  `Latest spam reports for ${D(3)}`,
  `Current scam warnings about ${D(4)} calls`,
  `Is ${D(5)} a scam number? Recent reports`,
  `Recent reports about ${D(6)}`,
  `Latest status of order number 88421377 shipping delays at DHL`,
  `My AWS key ${D(17)} leaked, what's the latest AWS guidance?`,
  `The OpenAI key ${D(16)} stopped working today, any outage news?`,
  `Is session ${D(15)} from the current Stripe API version valid?`,
  `What is the latest news on identity theft for SSN ${D(18)}?`,
  `Latest Git release notes, my commit ${D(20)} fails`,
  `Current Kubernetes version? The dashboard is at ${D(21)}`,
  `Hi! Dana Whitfield here. What's the weather today in Lisbon?`,
  'Oskar asked: what is the latest Champions League score?',
  'Latest news on the couples counselling trends, Rafael asked',
  'Is Leila flying through Lisbon airport today? Any strike news?',
  `What's the current overdraft fee at Barclays? asking before my biopsy`,
  'Current alimony laws in Portugal 2099 for Marcus',
  'Latest miscarriage research news from Ximena and Tobias',
  `Recent news on separation mediation costs for Ingrid`,
  `Latest weather for ${D(7)}, text Leila at ${D(2)}`,
];

/** The lower-case stems of a text's words, as the full-text index stores them. */
function stems(text: string): Set<string> {
  return new Set((text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => ftsStem(w) ?? w));
}

/** Memory's view of the corpus: what the non-private turns know, the private turns' words, the speakers. */
export function corpusLookup(turns: readonly CorpusTurn[] = TURNS): MemoryLookup & { calls: { known: string[][]; privateWords: string[][] } } {
  const open = stems(turns.filter((t) => !t.private).map((t) => t.content).join('\n'));
  const closed = stems(turns.filter((t) => t.private).map((t) => t.content).join('\n'));
  const calls = { known: [] as string[][], privateWords: [] as string[][] };
  const has = (set: Set<string>, w: string) => (w.match(/[\p{L}\p{N}]+/gu) ?? []).some((p) => set.has(ftsStem(p) ?? p));
  return {
    calls,
    async known(words) { calls.known.push([...words]); return new Set(words.filter((w) => has(open, w))); },
    async privateWords(words) { calls.privateWords.push([...words]); return new Set(words.filter((w) => has(closed, w))); },
    async speakers() { return [...new Set(turns.map((t) => t.name).filter((n): n is string => !!n))]; },
    async mentions(word, limit) { return turns.filter((t) => !t.private && has(stems(t.content), word)).map((t) => t.content).slice(0, limit); },
    async privateOverlap(run) {
      const text = turns.filter((t) => t.private).map((t) => t.content).join('\n');
      return [...run].some((_, i) => i + 2 <= run.length && text.includes(run.slice(i, i + 2)));
    },
  };
}

/**
 * Private words found in a query, case-insensitive: the word inside any token, its stem (5 letters or more) inside any
 * token, or a word of the query with the same stem ("diabetic" for "diabetes").
 */
export function privateLeaks(query: string): string[] {
  const q = query.toLowerCase();
  const queryStems = stems(q);
  return PRIVATE_WORDS.filter((w) => {
    const stem = ftsStem(w) ?? w;
    return q.includes(w) || (stem.length >= 5 && q.includes(stem)) || queryStems.has(stem);
  });
}

/**
 * Everything of the corpus a query still holds: private words (by stem), people's and speakers' names, personal data
 * (any of their marks), case-insensitive and also inside tokens. Empty for a clean query.
 */
export function leaks(query: string): string[] {
  const q = query.toLowerCase();
  const names = [...PEOPLE, ...SPEAKERS].flatMap((n) => n.split(' ')).filter((n) => q.includes(n.toLowerCase()));
  const data = PERSONAL_DATA.filter((d) => d.marks.some((m) => q.includes(m.toLowerCase()))).map((d) => `${d.kind}: ${d.value}`);
  return [...privateLeaks(query), ...names, ...data];
}
