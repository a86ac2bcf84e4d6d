import { describe, expect, it } from 'vitest';
import { contentTerms, scoreOutcome } from '../src/scorer.js';

describe('contentTerms', () => {
  it('keeps distinct lowercased words of 3+ characters that are not stop words', () => {
    expect(contentTerms('How does the DuckDB store run BM25? Does it run fast, or not?')).toEqual([
      'duckdb',
      'store',
      'run',
      'bm25',
      'fast',
    ]);
    expect(contentTerms('What is it?')).toEqual([]);
  });

  it('counts characters, not UTF-16 code units', () => {
    // Two letters outside the Basic Multilingual Plane: four code units, two characters.
    expect(contentTerms('𝔸𝔹 and 𝔸𝔹ℂ garden')).toEqual(['𝔸𝔹ℂ', 'garden']);
  });
});

describe('scoreOutcome', () => {
  const question = 'How often should tomatoes be watered?'; // terms: often, tomatoes, watered

  it('is 1 when the best chunk holds every term', () => {
    expect(scoreOutcome(question, ['Tomatoes watered often stay healthy.', 'Unrelated.'])).toBe(1);
  });

  it('averages the coverage of the best chunk and of all chunks', () => {
    // top: 1 of 3 terms; all: 3 of 3 → (1/3 + 1) / 2
    expect(
      scoreOutcome(question, ['Tomatoes like sun.', 'Water often.', 'Once watered, wait.']),
    ).toBe(2 / 3);
    // top: 0 of 3; all: 2 of 3 → (0 + 2/3) / 2
    expect(scoreOutcome(question, ['Roses.', 'Tomatoes are watered daily.'])).toBe(1 / 3);
    // top: 2 of 3; all: 2 of 3
    expect(scoreOutcome(question, ['OFTEN, tomatoes!'])).toBe(2 / 3);
  });

  it('matches whole words only, without stemming', () => {
    expect(scoreOutcome(question, ['Water the tomato frequently; oftentimes it is enough.'])).toBe(
      0,
    );
  });

  it('is 0 with no chunks or no content terms', () => {
    expect(scoreOutcome(question, [])).toBe(0);
    expect(scoreOutcome('What is it?', ['What is it? It is this.'])).toBe(0);
  });

  it('gives the same number for the same input', () => {
    const chunks = ['Tomatoes like sun.', 'Water often.'];
    expect(scoreOutcome(question, chunks)).toBe(scoreOutcome(question, [...chunks]));
  });
});
