import { stem } from '@mnemo/core';

/**
 * The `enriched` signature strategy: what a query asks, not just which words
 * it contains. Its tokens all start with `ENRICHED_PREFIX`, a character the
 * default tokenizer never keeps (it is neither Alphabetic nor Numeric), so a
 * default signature and an enriched one can never share a token and the
 * store's candidate lookup keeps the two strategies apart on its own.
 *
 * Steps, in order:
 * 1. NFKC, lowercase; contractions expanded ("don't" → "do not", "can't" →
 *    "can not", "won't" → "will not"); other clitics ('s, 're, 'm, 'll, 've,
 *    'd) dropped; the text cut into clauses at , . ; : ! ? and "but".
 * 2. Words = runs of Alphabetic or Numeric characters (as in the default).
 * 3. Slots: a word with a digit is `#num`, `#time` (7am, 10pm, and "pm") or
 *    `#ordinal` (1st, 22nd); number words (one … twenty, hundred, …) are
 *    `#num`; month names `#month` ("may" is left alone: it is mostly a verb);
 *    weekdays, today, tomorrow, yesterday, tonight, weekend `#day`. Two
 *    queries that differ only in the amount, time or date match exactly.
 * 4. Negation: "not", "no", "never", "nor", "cannot", "without" add the token
 *    `¬` and mark every later content word of the clause (`¬cancel`), so "do
 *    not cancel my order" shares almost nothing with "cancel my order".
 * 5. Direction: "from", "into", and "to" after a "from" of the same clause
 *    give their next content word (past "my", "the", …) a role
 *    (`from:check`, `to:save`), and a clause with both adds the ordered
 *    pair (`check>save`): "from checking to savings" and "from savings to
 *    checking" then share none of these tokens. Any other "to" is not a
 *    role: it is mostly an infinitive ("i want to transfer …").
 * 6. Filler removed (`FILLER`: articles, auxiliaries, request framing like
 *    "please", "can you tell me", "i want to know", and common
 *    prepositions), so paraphrases that differ in framing match. Pronouns
 *    ("my" vs "your"), question words (how, what, when, where, who) and
 *    "did" (past: "when did i change my oil" is not "when do i") are kept:
 *    they often decide what is being asked. Negated framing verbs are kept
 *    too ("i don't know" ≠ "i know"). When every word is filler
 *    ("can you help me"), the filler words are kept instead, so such a query
 *    still has a signature.
 * 7. Porter stemming of plain Latin words (`stem` from @mnemo/core, the
 *    stemmer of lexical recall).
 * 8. Deduplicate, sort by code point.
 *
 * The word lists are plain English function words, not fitted to a data
 * set; the figures they give on CLINC150 are in apps/bench's README
 * (`pnpm bench replay`).
 */
export const ENRICHED_PREFIX = '~';

/** Words that frame a request rather than say what is asked. */
const FILLER: ReadonlySet<string> = new Set(
  (
    'a an the is are am be been being of and or please ' +
    'do does can could would will ' +
    'tell know want need like help ' +
    'to for at in on about it me ' +
    'just some any get give show let there if so that this with by up'
  ).split(' '),
);

/** Framing words that matter once negated: "i don't know" is not "i know". */
const NEGATED_KEPT: ReadonlySet<string> = new Set('tell know want need like help'.split(' '));

/** Words a role ("from", "to", "into") skips to reach the word it marks. */
const DETERMINERS: ReadonlySet<string> = new Set(
  'my your our his her their its this that these those'.split(' '),
);

const NEGATIONS: ReadonlySet<string> = new Set('not no never nor cannot without'.split(' '));

const NUMBER_WORDS: ReadonlySet<string> = new Set(
  (
    'zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen ' +
    'fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy ' +
    'eighty ninety hundred thousand million billion'
  ).split(' '),
);

const MONTHS: ReadonlySet<string> = new Set(
  (
    'january february march april june july august september october november december ' +
    'jan feb mar apr jun jul aug sep sept oct nov dec'
  ).split(' '),
);

const DAYS: ReadonlySet<string> = new Set(
  (
    'monday tuesday wednesday thursday friday saturday sunday ' +
    'today tomorrow yesterday tonight weekend'
  ).split(' '),
);

const WORD = /[\p{Alphabetic}\p{N}]+/gu;
// Word edges as WORD draws them: `\b` knows only ASCII letters, digits and `_`, so it
// found "but" inside "début" and a clitic "'d" in "o'dálaigh".
const START = '(?<![\\p{Alphabetic}\\p{N}])';
const END = '(?![\\p{Alphabetic}\\p{N}])';
const CLAUSE = new RegExp(`[,.;:!?]+|${START}but${END}`, 'u');
const DIGIT = /\p{N}/u;
const CANNOT = new RegExp(`${START}can't${END}`, 'gu');
const WONT = new RegExp(`${START}won't${END}`, 'gu');
const NOT = new RegExp(`n't${END}`, 'gu');
const CLITIC = new RegExp(`'(?:s|re|m|ll|ve|d)${END}`, 'gu');

function expandContractions(text: string): string {
  return text
    .replace(/[\u2019\u02bc]/gu, "'")
    .replace(CANNOT, 'can not')
    .replace(WONT, 'will not')
    .replace(NOT, ' not')
    .replace(CLITIC, '')
    .replace(/'/gu, '');
}

/** The slot a word stands for, or null. */
function slotOf(word: string): string | null {
  if (DIGIT.test(word)) {
    if (/^\p{N}+(?:am|pm)$/u.test(word)) return '#time';
    if (/^\p{N}+(?:st|nd|rd|th)$/u.test(word)) return '#ordinal';
    return '#num';
  }
  if (word === 'pm') return '#time';
  if (NUMBER_WORDS.has(word)) return '#num';
  if (MONTHS.has(word)) return '#month';
  if (DAYS.has(word)) return '#day';
  return null;
}

function clauseTokens(words: readonly string[], tokens: Set<string>, fillerOnly: boolean): void {
  let seenFrom = false;
  let negated = false;
  let role: 'from' | 'to' | null = null;
  let fromWord: string | null = null;
  let toWord: string | null = null;
  for (const word of words) {
    if (NEGATIONS.has(word)) {
      negated = true;
      tokens.add('¬');
      continue;
    }
    if (word === 'from' || word === 'into' || (seenFrom && word === 'to')) {
      seenFrom ||= word === 'from';
      role = word === 'from' ? 'from' : 'to';
      continue;
    }
    const slot = slotOf(word);
    const filler = slot === null && FILLER.has(word);
    if (filler && !fillerOnly && !(negated && NEGATED_KEPT.has(word))) continue;
    let token = slot ?? stem(word);
    if (role !== null && !DETERMINERS.has(word)) {
      if (role === 'from') fromWord ??= token;
      else toWord ??= token;
      token = `${role}:${token}`;
      role = null;
    }
    if (negated) token = `¬${token}`;
    tokens.add(token);
  }
  if (fromWord !== null && toWord !== null) tokens.add(`${fromWord}>${toWord}`);
}

/**
 * The enriched signature of `query` (see the module comment): distinct
 * tokens, each starting with `ENRICHED_PREFIX`, sorted by code point by the
 * caller.
 */
export function enrichedTokens(query: string): Set<string> {
  const clauses = expandContractions(query.normalize('NFKC').toLowerCase())
    .split(CLAUSE)
    .map((clause) => clause.match(WORD) ?? [])
    .filter((words) => words.length > 0);
  const content = clauses.some((words) =>
    words.some((word) => slotOf(word) !== null || !FILLER.has(word)),
  );
  const tokens = new Set<string>();
  for (const words of clauses) clauseTokens(words, tokens, !content);
  return new Set([...tokens].map((token) => `${ENRICHED_PREFIX}${token}`));
}
