import { MnemoError } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import type { Extractor, ExtractorOutput } from '../src/extractor.js';
import { infer } from '../src/infer.js';
import { resolveOptions } from '../src/options.js';

const options = resolveOptions({ modelPath: '/models/fake' });

/** An extractor that answers every run with `output`. */
function answering(output: ExtractorOutput): Extractor {
  return Object.assign(async () => output, { dispose: async () => {} });
}

describe('infer', () => {
  // An fp16 export can overflow to Infinity or NaN, and normalizing a zero vector gives NaN.
  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])('fails with EMBEDDER_FAILED on a vector holding %s', async (_, value) => {
    const extractor = answering({ dims: [2, 3], data: [0.6, 0.8, 0, value, 0, 0] });
    const error = await infer(extractor, ['cat', 'dog'], options, 3).catch(
      (thrown: unknown) => thrown,
    );
    expect(MnemoError.hasCode(error, 'EMBEDDER_FAILED')).toBe(true);
    expect([(error as MnemoError).message, (error as MnemoError).details]).toEqual([
      'model in /models/fake returned a vector holding NaN or Infinity',
      { modelPath: '/models/fake' },
    ]);
  });
});
