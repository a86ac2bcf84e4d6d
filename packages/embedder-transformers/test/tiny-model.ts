import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// A real, tiny sentence-embedding model written by hand, so that the tests run
// the whole transformers.js + onnxruntime path without downloading anything:
// a BERT-style WordPiece tokenizer over a 20-word vocabulary, and an ONNX graph
// that is one `Gather` from a 20 × 4 embedding table (`last_hidden_state[b, t] =
// table[input_ids[b, t]]`). Mean pooling then averages the rows of a text's tokens.
// A variant adds a table of position rows, all 0, indexed by each token's position
// as in BERT: the model fails on a text longer than the table, as a real one would.

/** Hidden size of the tiny model. */
export const HIDDEN = 4;

const SPECIAL = ['[PAD]', '[UNK]', '[CLS]', '[SEP]'] as const;
// Each topic word points along one axis: pets, databases, weather, food.
const TOPICS = [
  ['cat', 'dog', 'kitten', 'pet'],
  ['database', 'postgres', 'backup', 'sql'],
  ['rain', 'sunny', 'weather', 'snow'],
  ['coffee', 'tea', 'lunch', 'bread'],
] as const;

/** The vocabulary, in id order. */
export const VOCAB: readonly string[] = [...SPECIAL, ...TOPICS.flat()];

/** The embedding table row of each token id. */
export const TABLE: readonly (readonly number[])[] = VOCAB.map((token) => {
  if (token === '[CLS]') return [0.1, 0.1, 0.1, 0.1];
  // Rows of their own, so that a pooling that reads padding or the wrong end shows.
  if (token === '[SEP]') return [0.2, 0.3, 0.4, 0.5];
  if (token === '[PAD]') return [0.9, 0, 0, 0];
  const axis = TOPICS.findIndex((words) => (words as readonly string[]).includes(token));
  return Array.from({ length: HIDDEN }, (_, i) => (i === axis ? 1 : 0));
});

/**
 * The tokens the tokenizer makes of a text of lower-case words: `[CLS] … [SEP]`,
 * unknown words as `[UNK]`; at most `limit`, as the tokenizers of Python
 * truncate: the words cut so that `[CLS]` and `[SEP]` fit.
 */
export function tokens(text: string, limit = Number.POSITIVE_INFINITY): string[] {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  const all = ['[CLS]', ...words.map((word) => (VOCAB.includes(word) ? word : '[UNK]')), '[SEP]'];
  return all.length <= limit ? all : [...all.slice(0, limit - 1), '[SEP]'];
}

/**
 * What the model should return for `text` (its first `limit` tokens): the mean
 * (or first, or last) token row, L2-normalized or not.
 */
export function reference(
  text: string,
  pooling: 'mean' | 'cls' | 'last_token' = 'mean',
  normalize = true,
  limit = Number.POSITIVE_INFINITY,
): number[] {
  const rows = tokens(text, limit).map((token) => TABLE[VOCAB.indexOf(token)] ?? []);
  const pooled =
    pooling === 'cls'
      ? [...(rows[0] ?? [])]
      : pooling === 'last_token'
        ? [...(rows.at(-1) ?? [])]
        : Array.from(
            { length: HIDDEN },
            (_, i) => rows.reduce((sum, row) => sum + (row[i] ?? 0), 0) / rows.length,
          );
  if (!normalize) return pooled;
  const norm = Math.hypot(...pooled);
  return pooled.map((value) => value / norm);
}

// Protocol buffers, just enough of the wire format for an ONNX ModelProto.
function varint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  do {
    const low = rest % 128;
    rest = Math.floor(rest / 128);
    bytes.push(rest > 0 ? low | 0x80 : low);
  } while (rest > 0);
  return Buffer.from(bytes);
}
const tag = (field: number, wire: number) => varint(field * 8 + wire);
const int = (field: number, value: number) => Buffer.concat([tag(field, 0), varint(value)]);
function bytes(field: number, value: string | Buffer): Buffer {
  const payload = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([tag(field, 2), varint(payload.length), payload]);
}
const message = (field: number, ...parts: Buffer[]) => bytes(field, Buffer.concat(parts));

// TensorProto.DataType
const FLOAT = 1;
const INT64 = 7;
const FLOAT16 = 10;

/** An int64 scalar (a 0-dimensional TensorProto) initializer. */
const scalar = (name: string, value: number) =>
  message(
    5,
    int(2, INT64),
    bytes(8, name),
    bytes(9, Buffer.from(new BigInt64Array([BigInt(value)]).buffer)),
  );

/** ValueInfoProto of a tensor: name, element type, dimensions (numbers or symbolic names). */
function valueInfo(field: number, name: string, type: number, dims: (number | string)[]): Buffer {
  const shape = dims.map((dim) =>
    message(1, typeof dim === 'number' ? int(1, dim) : bytes(2, dim)),
  );
  return message(field, bytes(1, name), message(2, message(1, int(1, type), message(2, ...shape))));
}

/**
 * Variants of the tiny model, for what the library does with outputs a
 * sentence-embedding model seldom has. The default is the model described above.
 */
export interface TinyModelVariant {
  /** Table and `last_hidden_state` in float16, as in an fp16 export that does not keep float32 outputs. */
  readonly float16?: boolean;
  /** Shape of one token's row, `[HIDDEN]` by default, filled with ones unless it is the default. */
  readonly row?: readonly number[];
  /** `last_hidden_state` as `[sequence, batch, …]`: the batch axis is not first. */
  readonly transposed?: boolean;
  /** A word the tokenizer knows but the table has no row for: the model fails on it. */
  readonly unknownToModel?: string;
  /** Pad a batch's shorter texts on the left, as decoder-style embedding models do. */
  readonly padLeft?: boolean;
  /** Name of the graph's output, `last_hidden_state` by default (some exports say `token_embeddings`). */
  readonly output?: string;
  /**
   * `max_position_embeddings` in `config.json`, and a table of as many position
   * rows (all 0) added to the token rows: the model fails on a longer text.
   */
  readonly positions?: number;
  /** `model_max_length` in `tokenizer_config.json`, 128 by default; `null` leaves it out. */
  readonly modelMaxLength?: number | null;
}

/**
 * The `model_max_length` some exports write when the model sets none:
 * transformers' `VERY_LARGE_INTEGER`, `int(1e30)` (1000000000000000019884624838656).
 */
export const VERY_LARGE_INTEGER = 1e30;

/** The IEEE half-precision bits of `value` (normal numbers and 0 only, enough for the table). */
function float16Bits(value: number): number {
  if (value === 0) return 0;
  const exponent = Math.floor(Math.log2(Math.abs(value)));
  const fraction = Math.round((Math.abs(value) / 2 ** exponent - 1) * 1024);
  return (value < 0 ? 0x8000 : 0) | ((exponent + 15) << 10) | fraction;
}

/** The bytes of the tiny ONNX model. */
export function tinyOnnxModel(variant: TinyModelVariant = {}): Buffer {
  const row = variant.row ?? [HIDDEN];
  const values =
    variant.row === undefined
      ? TABLE.flat()
      : new Array<number>(VOCAB.length * row.reduce((size, dim) => size * dim, 1)).fill(1);
  const table = variant.float16
    ? Buffer.from(new Uint16Array(values.map(float16Bits)).buffer)
    : Buffer.from(new Float32Array(values).buffer);
  const type = variant.float16 ? FLOAT16 : FLOAT;
  const initializer = message(
    5,
    int(1, VOCAB.length),
    ...row.map((dim) => int(1, dim)),
    int(2, type),
    bytes(8, 'embeddings'),
    bytes(9, table),
  );
  const axis = message(5, bytes(1, 'axis'), int(3, 0), int(20, 2)); // AttributeProto INT
  const outputName = variant.output ?? 'last_hidden_state';
  const lookup = variant.transposed ? 'rows' : outputName;
  const gather = message(
    1,
    bytes(1, 'embeddings'),
    bytes(1, 'input_ids'),
    bytes(2, variant.positions === undefined ? lookup : 'token_rows'),
    bytes(3, 'lookup'),
    bytes(4, 'Gather'),
    axis,
  );
  // AttributeProto INTS: perm swaps the first two axes
  const perm = message(
    5,
    bytes(1, 'perm'),
    ...[1, 0, ...row.map((_, i) => i + 2)].map((dim) => int(8, dim)),
    int(20, 7),
  );
  const transpose = variant.transposed
    ? [
        message(
          1,
          bytes(1, 'rows'),
          bytes(2, outputName),
          bytes(3, 'swap'),
          bytes(4, 'Transpose'),
          perm,
        ),
      ]
    : [];
  // lookup = token_rows + position_table[range(0, sequence length)]
  const node = (name: string, op: string, inputs: string[], output: string) =>
    message(
      1,
      ...inputs.map((input) => bytes(1, input)),
      bytes(2, output),
      bytes(3, name),
      bytes(4, op),
    );
  const positions =
    variant.positions === undefined
      ? []
      : [
          node('shape', 'Shape', ['input_ids'], 'input_shape'),
          node('length', 'Gather', ['input_shape', 'one'], 'length'),
          node('range', 'Range', ['zero', 'length', 'one'], 'position_ids'),
          node('place', 'Gather', ['position_table', 'position_ids'], 'position_rows'),
          node('add', 'Add', ['token_rows', 'position_rows'], lookup),
        ];
  const positionInitializers =
    variant.positions === undefined
      ? []
      : [
          message(
            5,
            int(1, variant.positions),
            ...row.map((dim) => int(1, dim)),
            int(2, type),
            bytes(8, 'position_table'),
            bytes(
              9,
              Buffer.alloc(
                variant.positions *
                  row.reduce((size, dim) => size * dim, 1) *
                  (variant.float16 ? 2 : 4),
              ),
            ),
          ),
          scalar('zero', 0),
          scalar('one', 1),
        ];
  const output = variant.transposed ? ['sequence', 'batch', ...row] : ['batch', 'sequence', ...row];
  const graph = Buffer.concat([
    gather,
    ...positions,
    ...transpose,
    bytes(2, 'tiny-embedder'),
    initializer,
    ...positionInitializers,
    valueInfo(11, 'input_ids', INT64, ['batch', 'sequence']),
    valueInfo(11, 'attention_mask', INT64, ['batch', 'sequence']),
    valueInfo(12, outputName, type, output),
  ]);
  // ir_version 8, producer, graph, opset 17 of the default domain
  return Buffer.concat([
    int(1, 8),
    bytes(2, 'mnemo-tests'),
    message(7, graph),
    message(8, bytes(1, ''), int(2, 17)),
  ]);
}

function tokenizerJson(unknownToModel: string | undefined): unknown {
  const words = unknownToModel === undefined ? VOCAB : [...VOCAB, unknownToModel];
  const ids = Object.fromEntries(words.map((token, id) => [token, id]));
  const special = (token: string) => ({ id: token, ids: [ids[token]], tokens: [token] });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL.map((content) => ({
      id: ids[content],
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      pair: [],
      special_tokens: { '[CLS]': special('[CLS]'), '[SEP]': special('[SEP]') },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: ids,
    },
  };
}

/** The files of the tiny model, by path inside the folder. */
export function tinyModelFiles(variant: TinyModelVariant = {}): Record<string, string | Buffer> {
  return {
    'config.json': JSON.stringify({
      model_type: 'bert',
      architectures: ['BertModel'],
      hidden_size: HIDDEN,
      ...(variant.positions === undefined ? {} : { max_position_embeddings: variant.positions }),
    }),
    'tokenizer.json': JSON.stringify(tokenizerJson(variant.unknownToModel)),
    'tokenizer_config.json': JSON.stringify({
      tokenizer_class: 'BertTokenizer',
      do_lower_case: true,
      ...(variant.modelMaxLength === null
        ? {}
        : { model_max_length: variant.modelMaxLength ?? 128 }),
      pad_token: '[PAD]',
      unk_token: '[UNK]',
      cls_token: '[CLS]',
      sep_token: '[SEP]',
      ...(variant.padLeft ? { padding_side: 'left' } : {}),
    }),
    'onnx/model.onnx': tinyOnnxModel(variant),
  };
}

/** Writes the tiny model (or a variant) into `folder`, leaving out the files in `omit`; returns `folder`. */
export function writeTinyModel(
  folder: string,
  omit: readonly string[] = [],
  variant: TinyModelVariant = {},
): string {
  for (const [file, content] of Object.entries(tinyModelFiles(variant))) {
    if (omit.includes(file)) continue;
    mkdirSync(join(folder, file, '..'), { recursive: true });
    writeFileSync(join(folder, file), content);
  }
  return folder;
}
