import { describe, expect, it } from 'vitest';
import { maxLength, positionLimit } from '../src/max-length.js';

const VERY_LARGE_INTEGER = 1e30;

describe('positionLimit', () => {
  it('is max_position_embeddings for BERT-style models, whose positions count every token from 0', () => {
    expect(positionLimit({ model_type: 'bert', max_position_embeddings: 512 })).toBe(512);
    expect(positionLimit({ max_position_embeddings: 16 })).toBe(16);
  });

  it('leaves out the positions a RoBERTa-style model starts after: padding_idx + 1', () => {
    for (const model_type of ['roberta', 'xlm-roberta', 'camembert']) {
      expect(positionLimit({ model_type, max_position_embeddings: 514, pad_token_id: 1 })).toBe(
        512,
      );
    }
    expect(positionLimit({ model_type: 'xlm-roberta', max_position_embeddings: 8194 })).toBe(8192);
    expect(
      positionLimit({ model_type: 'roberta', max_position_embeddings: 514, pad_token_id: 0 }),
    ).toBe(513);
    // MPNet's padding_idx is 1 whatever pad_token_id says
    expect(
      positionLimit({ model_type: 'mpnet', max_position_embeddings: 514, pad_token_id: 5 }),
    ).toBe(512);
  });

  it('reads n_positions where a config names its positions so (nomic-bert, GPT-2 style)', () => {
    expect(positionLimit({ model_type: 'nomic_bert', n_positions: 8192 })).toBe(8192);
    expect(positionLimit({ n_positions: 1024, max_position_embeddings: 512 })).toBe(512);
    expect(positionLimit({ n_positions: '8192' })).toBeUndefined();
  });

  it.each([undefined, null, 0, -1, 1.5, '512', Number.POSITIVE_INFINITY])(
    'is undefined for max_position_embeddings %s',
    (max_position_embeddings) => {
      expect(positionLimit({ model_type: 'bert', max_position_embeddings })).toBeUndefined();
    },
  );
});

describe('maxLength', () => {
  it("is the tokenizer's model_max_length or the model's positions, whichever is less", () => {
    expect(maxLength(128, { max_position_embeddings: 512 })).toBe(128);
    expect(maxLength(8192, { max_position_embeddings: 512 })).toBe(512);
    expect(maxLength(512, { model_type: 'roberta', max_position_embeddings: 514 })).toBe(512);
  });

  it('is the positions when model_max_length is a placeholder or missing', () => {
    expect(maxLength(VERY_LARGE_INTEGER, { max_position_embeddings: 512 })).toBe(512);
    expect(maxLength(Number.POSITIVE_INFINITY, { max_position_embeddings: 512 })).toBe(512);
    expect(maxLength(undefined, { model_type: 'xlm-roberta', max_position_embeddings: 514 })).toBe(
      512,
    );
  });

  it('is model_max_length when the config has no positions, and undefined when neither is known', () => {
    expect(maxLength(128, {})).toBe(128);
    expect(maxLength(VERY_LARGE_INTEGER, {})).toBe(VERY_LARGE_INTEGER);
    expect(maxLength(Number.POSITIVE_INFINITY, {})).toBeUndefined();
    expect(maxLength(null, {})).toBeUndefined();
  });
});
