/**
 * The outcome scorer: how well a set of retrieved chunks covers a question.
 *
 * A question's content terms are its words (runs of letters and digits),
 * lowercased, at least 3 characters long, minus the stop words below, each
 * counted once. A chunk covers a term when the term occurs in it as a whole
 * word (case-insensitive; no stemming, so "plan" does not cover "plans").
 *
 *   top   = share of the terms covered by the first (best-ranked) chunk
 *   all   = share of the terms covered by at least one chunk
 *   score = (top + all) / 2
 *
 * So 1 means the best chunk alone holds every term; 0.5 can mean that the
 * terms are all there but spread over several chunks, none of them in the
 * first. No chunks, or a question without content terms, scores 0. The score
 * is a pure function of its inputs: the same question and chunks always give
 * the same number.
 */

/** Words that say nothing about what a question is about. */
export const SCORER_STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'about after all also and any are because been before being between both but can could did does ' +
    'doing each for from had has have having her here his how into its just more most not now off once ' +
    'only other our out over own same she should some such than that the their them then there these ' +
    'they this those through too under until very was were what when where which while who whom why ' +
    'will with would you your'
  ).split(' '),
);

const WORD = /[\p{L}\p{N}]+/gu;

function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/** The distinct content terms of `text`, in order of first occurrence. */
export function contentTerms(text: string): string[] {
  return [
    ...new Set(words(text).filter((word) => [...word].length >= 3 && !SCORER_STOP_WORDS.has(word))),
  ];
}

/** The score of retrieved `chunks` (best first) for `question`, in [0, 1]. */
export function scoreOutcome(question: string, chunks: readonly string[]): number {
  const terms = contentTerms(question);
  const [first] = chunks;
  if (terms.length === 0 || first === undefined) return 0;
  const inFirst = new Set(words(first));
  const inAny = new Set(chunks.flatMap(words));
  const top = terms.filter((term) => inFirst.has(term)).length / terms.length;
  const all = terms.filter((term) => inAny.has(term)).length / terms.length;
  return (top + all) / 2;
}
