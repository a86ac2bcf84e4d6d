import { stemmer } from 'stemmer';

/**
 * The one text analyzer for lexical search. Stores persist the postings it
 * produces and evaluate BM25 with the constants below, so every store ranks
 * the same data identically.
 */

// Anserini's BM25 defaults. Memories are short (a turn, a fact), so length
// normalisation matters less than Lucene's classic b = 0.75 assumes: on the
// LoCoMo dev set these give recall@10 0.635 and MRR 0.487 against 0.620 and 0.462.
export const BM25_K1 = 0.9;
export const BM25_B = 0.4;

/** English function words that carry no retrieval signal. */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being ' +
    'below between both but by can could did do does doing down during each few for from further ' +
    'had has have having he her here hers herself him himself his how i if in into is it its itself ' +
    'just me more most my myself no nor not now of off on once only or other our ours ourselves out ' +
    'over own same she should so some such than that the their theirs them themselves then there ' +
    'these they this those through to too under until up very was we were what when where which ' +
    'while who whom why will with would you your yours yourself yourselves'
  ).split(' '),
);

// A combining mark belongs to the letter before it (Devanagari vowel signs, Arabic harakat).
const SPLIT = /[^\p{L}\p{M}\p{N}]+/u;

/** Scripts written without spaces between words: their runs are split into words by ICU. */
const UNSPACED =
  /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Thai}\p{sc=Lao}\p{sc=Khmer}\p{sc=Myanmar}]/u;

// ICU's dictionary word breaks; the root locale, so that every process splits text alike.
const words = new Intl.Segmenter('und', { granularity: 'word' });

/**
 * Code units of a run without spaces handed to ICU at a time: reading the
 * segments of a longer text slows with its square (300,000 such characters
 * took over a minute).
 */
const SEGMENT_WINDOW = 256;

const MARK = /\p{M}/u;

/**
 * Code units at the end of a window whose words are read again at the start
 * of the next: ICU's dictionary looks ahead past a word to place its end, so
 * the last words before a window's end may be split differently than in the
 * whole run.
 */
const SEGMENT_OVERLAP = 64;

/**
 * The words ICU finds in `run`, read a window of at most `SEGMENT_WINDOW`
 * code units at a time. A window ends before a character and its marks;
 * the words that end in its last `SEGMENT_OVERLAP` code units are read
 * again at the start of the next, so that only a word longer than a whole
 * window is ever split by a window's end.
 */
function* runWords(run: string): Generator<string> {
  let start = 0;
  while (run.length - start > SEGMENT_WINDOW) {
    let end = start + SEGMENT_WINDOW;
    // Not inside a surrogate pair, nor between a character and its combining marks.
    while (end > start + 1 && (isLowSurrogate(run.charCodeAt(end)) || MARK.test(run[end] ?? '')))
      end -= 1;
    if (end === start + 1) end = start + SEGMENT_WINDOW;
    const settled = end - start - SEGMENT_OVERLAP;
    let next = end;
    for (const { segment, index } of words.segment(run.slice(start, end))) {
      if (index + segment.length > settled && index > 0) {
        next = start + index;
        break;
      }
      yield segment;
    }
    start = next;
  }
  for (const { segment } of words.segment(run.slice(start))) yield segment;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

const LATIN_WORD = /^[a-z]+$/;

/**
 * Longest term, in code points. A longer run of letters or digits (a pasted
 * hash, base64) is cut to this prefix, in documents and queries alike, so it
 * still matches itself while every store can index it (PostgreSQL's btree
 * takes at most 2,704 bytes per entry).
 */
export const MAX_TERM_LENGTH = 64;

function capped(term: string): string {
  if (term.length <= MAX_TERM_LENGTH) return term;
  const codePoints = [...term];
  return codePoints.length <= MAX_TERM_LENGTH
    ? term
    : codePoints.slice(0, MAX_TERM_LENGTH).join('');
}

/**
 * The Porter stem of a lowercase word of plain Latin letters ("hiking" →
 * "hike"); any other word (digits, other scripts, capitals) is returned as
 * it is. The stemming `analyze` applies, for other tokenizers to share.
 */
export function stem(word: string): string {
  return LATIN_WORD.test(word) ? stemmer(word) : word;
}

/** Words whose term `analyze` remembers: vocabularies repeat, and stemming is most of its cost. */
const MAX_MEMOIZED_WORDS = 100_000;
const termOfWord = new Map<string, string>();

/** `capped(stem(word))`, memoized for words of at most `MAX_TERM_LENGTH` code units (bounded; cleared when full). */
function wordTerm(word: string): string {
  if (word.length > MAX_TERM_LENGTH) return capped(stem(word));
  let term = termOfWord.get(word);
  if (term === undefined) {
    term = capped(stem(word));
    if (termOfWord.size >= MAX_MEMOIZED_WORDS) termOfWord.clear();
    termOfWord.set(word, term);
  }
  return term;
}

/**
 * Terms of `text` in order: NFKC-normalized, lowercased, split on anything
 * that is not a letter, combining mark or digit, runs of scripts written
 * without spaces (Chinese, Japanese, Thai, Lao, Khmer, Myanmar) split into
 * words by ICU's word breaks, stop words removed, words of plain Latin
 * letters reduced to their Porter stem ("hiking" and "hikes" → "hike"), and
 * cut to `MAX_TERM_LENGTH` code points.
 */
export function analyze(text: string): string[] {
  const normalized = text.normalize('NFKC').toLowerCase();
  const unspaced = UNSPACED.test(normalized);
  const terms: string[] = [];
  for (const run of normalized.split(SPLIT)) {
    if (unspaced && UNSPACED.test(run)) {
      for (const word of runWords(run)) addTerm(terms, word);
    } else addTerm(terms, run);
  }
  return terms;
}

function addTerm(terms: string[], word: string): void {
  if (word.length > 0 && !STOP_WORDS.has(word)) terms.push(wordTerm(word));
}

export interface TermFrequency {
  term: string;
  tf: number;
}

/** Term frequencies of `text` (in first-occurrence order) and its length in terms. */
export function termFrequencies(text: string): { terms: TermFrequency[]; length: number } {
  const terms = analyze(text);
  const counts = new Map<string, number>();
  for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
  return { terms: [...counts].map(([term, tf]) => ({ term, tf })), length: terms.length };
}

/** Distinct query terms, in first-occurrence order. */
export function queryTerms(text: string): string[] {
  return [...new Set(analyze(text))];
}
