// The first-visit example: ten everyday messages, one fact among them at the start, then a question about that fact
// worded differently. With the demo's history target the early messages are no longer sent whole by the question,
// so the answer has to come from recall: the inspector shows it paged back in.
export const EXAMPLE = [
  'Hi! I am planning a trip to Japan in October with my partner Sam.',
  'My sister Priya moves to Lisbon on the 14th of March.',
  'We want to see the temples in Kyoto and maybe hike part of the Kumano Kodo.',
  'I started learning the guitar last month, mostly folk songs.',
  'Work is busy: we are migrating our billing service to Postgres.',
  'My dog Biscuit hates thunderstorms, any tips to calm him?',
  'I am trying to cook more vegetarian dinners this winter.',
  'The book club is reading The Left Hand of Darkness next.',
  'Our kitchen renovation should be done before the holidays.',
  'I might run the harbour half marathon in spring.',
];
export const EXAMPLE_QUESTION = 'When does my sister move, and where to?';
