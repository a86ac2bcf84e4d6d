import { describe, expect, it } from 'vitest';
import { Bm25Index, tokenize } from '../src/recall/baseline-bm25.js';

describe('baseline tokenizer', () => {
  it('lowercases and splits at whitespace and punctuation, keeping stop words and word forms', () => {
    expect(tokenize("Alice: I'm running, the 5K! [image: a dog]")).toEqual([
      'alice',
      'i',
      'm',
      'running',
      'the',
      '5k',
      'image',
      'a',
      'dog',
    ]);
    expect(tokenize(' ,.; ')).toEqual([]);
  });
});

describe('baseline BM25', () => {
  // Lengths 3, 2, 4, 1 (avgdl 2.5); "cat" in docs a, b, c (df 3), "dog" in c (df 1).
  const index = new Bm25Index([
    { id: 'a', text: 'the cat sat' },
    { id: 'b', text: 'cat cat' },
    { id: 'c', text: 'a dog and cat' },
    { id: 'd', text: 'bird' },
  ]);

  it('ranks by BM25 (k1 1.2, b 0.75) and scores exactly', () => {
    const idfCat = Math.log(1 + (4 - 3 + 0.5) / (3 + 0.5));
    const idfDog = Math.log(1 + (4 - 1 + 0.5) / (1 + 0.5));
    const part = (tf: number, length: number, idf: number) =>
      (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * length) / 2.5));
    expect(index.search('cat', 10)).toEqual([
      { id: 'b', score: part(2, 2, idfCat) },
      { id: 'a', score: part(1, 3, idfCat) },
      { id: 'c', score: part(1, 4, idfCat) },
    ]);
    expect(index.search('Dog? cat, DOG', 10)).toEqual([
      { id: 'c', score: part(1, 4, idfDog) + part(1, 4, idfCat) },
      { id: 'b', score: part(2, 2, idfCat) },
      { id: 'a', score: part(1, 3, idfCat) },
    ]);
  });

  it('returns only matching documents, at most limit, ties in document order', () => {
    expect(index.search('fish', 10)).toEqual([]);
    expect(index.search('cat', 2).map((hit) => hit.id)).toEqual(['b', 'a']);
    const ties = new Bm25Index([
      { id: 'x', text: 'red apple' },
      { id: 'y', text: 'red pear' },
      { id: 'z', text: 'red plum' },
    ]);
    expect(ties.search('red', 10).map((hit) => hit.id)).toEqual(['x', 'y', 'z']);
    expect(ties.size).toBe(3);
  });

  it('keeps stop words as terms (the baseline has none)', () => {
    const words = new Bm25Index([
      { id: 'p', text: 'what is the plan' },
      { id: 'q', text: 'a plan' },
    ]);
    expect(words.search('what is', 10).map((hit) => hit.id)).toEqual(['p']);
  });
});
