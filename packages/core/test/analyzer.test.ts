import { describe, expect, it, vi } from 'vitest';
import { analyze, queryTerms, termFrequencies } from '../src/index.js';

describe('analyzer', () => {
  it('lowercases, NFKC-normalizes, splits on non-letters and drops stop words', () => {
    expect(analyze('The Cat sat on the MAT, didn’t it?')).toEqual([
      'cat',
      'sat',
      'mat',
      'didn',
      't',
    ]);
    expect(analyze('ﬁle Ｆｕｌｌ　ｗｉｄｔｈ 42nd café')).toEqual([
      'file',
      'full',
      'width',
      '42nd',
      'café',
    ]);
    expect(analyze('the and of')).toEqual([]);
  });

  it('reduces plain Latin words to their Porter stem, and leaves other words as they are', () => {
    expect(analyze('Hiking hikes hiked; trails, caresses generously')).toEqual([
      'hike',
      'hike',
      'hike',
      'trail',
      'caress',
      'gener',
    ]);
    expect(analyze('naïve cafés 東京 42nd')).toEqual(['naïve', 'cafés', '東京', '42nd']);
  });

  it('keeps combining marks in their word: Devanagari vowel signs, Arabic harakat, a Latin letter without a precomposed form', () => {
    expect(analyze('हिन्दी भाषा सीखना')).toEqual(['हिन्दी', 'भाषा', 'सीखना']);
    expect(analyze('نصٌّ عَرَبِيّ')).toEqual(['نصٌّ', 'عَرَبِيّ']);
    expect(analyze('x\u0302y cafe\u0301')).toEqual(['x\u0302y', 'café']);
  });

  it('splits scripts written without spaces into words (Chinese, Japanese, Thai), in documents and queries alike', () => {
    expect(analyze('我喜欢学习中文。')).toEqual(['我', '喜欢', '学习', '中文']);
    expect(analyze('東京タワーに行きました')).toEqual(['東京タワー', 'に', '行き', 'ま', 'した']);
    expect(analyze('ภาษาไทยง่ายมาก')).toEqual(['ภาษา', 'ไทย', 'ง่าย', 'มาก']);
    // Words of other scripts beside them are analyzed as everywhere else.
    expect(analyze('Hiking in 東京 with the dogs')).toEqual(['hike', '東京', 'dog']);
    expect(analyze('hiking東京')).toEqual(['hike', '東京']);
    expect(queryTerms('東京タワー')).toEqual(['東京タワー']);
    expect(analyze('한국어를 배우고 있어요')).toEqual(['한국어를', '배우고', '있어요']);
  });

  it('splits a long run without spaces window by window, never inside a character or before a combining mark', () => {
    // 10 + 19 × 14 code units: the first window would end before the mark of the 19th 'ง่าย'.
    const thai = `ภาษาไทยมาก${'ภาษาไทยง่ายมาก'.repeat(19)}`;
    expect(analyze(thai)).toEqual([
      'ภาษา',
      'ไทย',
      'มาก',
      ...Array.from({ length: 19 }, () => ['ภาษา', 'ไทย', 'ง่าย', 'มาก']).flat(),
    ]);
    // Pairs of code units from the second: the first window would end inside one.
    const han = `東${'𠀀'.repeat(300)}`;
    const terms = analyze(han);
    // A lone surrogate is a code point of category Cs.
    expect([terms.join(''), terms.some((term) => /\p{Cs}/u.test(term))]).toEqual([han, false]);
  });

  it('hands ICU at most 256 code units at a time: reading its segments slows with the square of the text', () => {
    const segment = vi.spyOn(Intl.Segmenter.prototype, 'segment');
    try {
      const long = 'ภาษาไทยง่ายมาก'.repeat(2000);
      expect(analyze(long).join('')).toBe(long);
      const lengths = segment.mock.calls.map(([text]) => text.length);
      // Each window reads again the words in its last 64 code units, no unit more than twice.
      const read = lengths.reduce((sum, n) => sum + n, 0);
      expect([Math.max(...lengths), read > long.length, read < 2 * long.length]).toEqual([
        256,
        true,
        true,
      ]);
    } finally {
      segment.mockRestore();
    }
  });

  it('splits a long run without spaces into the words ICU finds in the whole run, whatever word a window ends in', () => {
    const whole = new Intl.Segmenter('und', { granularity: 'word' });
    // The first window ends inside a word of each; in the Thai one, ICU splits the word before it
    // differently when it cannot see the next.
    for (const run of [
      '我们明天去北京大学'.repeat(67),
      'สวัสดีครับผมชื่อสมชาย'.repeat(29),
      '東京都に住んでいます'.repeat(60),
    ]) {
      expect(analyze(run)).toEqual(Array.from(whole.segment(run), ({ segment }) => segment));
    }
  });

  it('gives a word the same term however often it recurs, after any number of other words', () => {
    expect(analyze('hiking hiking')).toEqual(['hike', 'hike']);
    const others = Array.from({ length: 150_000 }, (_, i) => `q${i.toString(36)}`).join(' ');
    expect(analyze(others)).toHaveLength(150_000);
    expect(analyze('hiking generously')).toEqual(['hike', 'gener']);
  });

  it('cuts terms to 64 code points, in documents and queries alike', () => {
    const long = 'ab12'.repeat(1000);
    expect(analyze(`blob ${long} end`)).toEqual(['blob', long.slice(0, 64), 'end']);
    expect(queryTerms(long)).toEqual([long.slice(0, 64)]);
    expect(analyze('𐐨'.repeat(70))).toEqual(['𐐨'.repeat(64)]);
  });

  it('counts term frequencies and the document length', () => {
    expect(termFrequencies('cat dog cat the cat')).toEqual({
      terms: [
        { term: 'cat', tf: 3 },
        { term: 'dog', tf: 1 },
      ],
      length: 4,
    });
    expect(queryTerms('cat dog cat')).toEqual(['cat', 'dog']);
  });
});
