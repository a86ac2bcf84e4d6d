import { describe, expect, it } from 'vitest';
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
    expect(analyze('𠀀'.repeat(70))).toEqual(['𠀀'.repeat(64)]);
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
