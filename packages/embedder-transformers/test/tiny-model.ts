import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// A real, tiny sentence-embedding model written by hand, so that the tests run
// the whole transformers.js + onnxruntime path without downloading anything:
// a BERT-style WordPiece tokenizer over a 20-word vocabulary, and an ONNX graph
// that is one `Gather` from a 20 × 4 embedding table (`last_hidden_state[b, t] =
// table[input_ids[b, t]]`). Mean pooling then averages the rows of a text's tokens.

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

/** The tokens the tokenizer makes of a text of lower-case words: `[CLS] … [SEP]`, unknown words as `[UNK]`. */
export function tokens(text: string): string[] {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  return ['[CLS]', ...words.map((word) => (VOCAB.includes(word) ? word : '[UNK]')), '[SEP]'];
}

/** What the model should return for `text`: the mean (or first, or last) token row, L2-normalized or not. */
export function reference(
  text: string,
  pooling: 'mean' | 'cls' | 'last_token' = 'mean',
  normalize = true,
): number[] {
  const rows = tokens(text).map((token) => TABLE[VOCAB.indexOf(token)] ?? []);
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

/** ValueInfoProto of a tensor: name, element type, dimensions (numbers or symbolic names). */
function valueInfo(field: number, name: string, type: number, dims: (number | string)[]): Buffer {
  const shape = dims.map((dim) =>
    message(1, typeof dim === 'number' ? int(1, dim) : bytes(2, dim)),
  );
  return message(field, bytes(1, name), message(2, message(1, int(1, type), message(2, ...shape))));
}

/** The bytes of the tiny ONNX model. */
export function tinyOnnxModel(): Buffer {
  const table = Buffer.from(new Float32Array(TABLE.flat()).buffer);
  const initializer = message(
    5,
    int(1, VOCAB.length),
    int(1, HIDDEN),
    int(2, FLOAT),
    bytes(8, 'embeddings'),
    bytes(9, table),
  );
  const axis = message(5, bytes(1, 'axis'), int(3, 0), int(20, 2)); // AttributeProto INT
  const gather = message(
    1,
    bytes(1, 'embeddings'),
    bytes(1, 'input_ids'),
    bytes(2, 'last_hidden_state'),
    bytes(3, 'lookup'),
    bytes(4, 'Gather'),
    axis,
  );
  const graph = Buffer.concat([
    gather,
    bytes(2, 'tiny-embedder'),
    initializer,
    valueInfo(11, 'input_ids', INT64, ['batch', 'sequence']),
    valueInfo(11, 'attention_mask', INT64, ['batch', 'sequence']),
    valueInfo(12, 'last_hidden_state', FLOAT, ['batch', 'sequence', HIDDEN]),
  ]);
  // ir_version 8, producer, graph, opset 17 of the default domain
  return Buffer.concat([
    int(1, 8),
    bytes(2, 'mnemo-tests'),
    message(7, graph),
    message(8, bytes(1, ''), int(2, 17)),
  ]);
}

function tokenizerJson(): unknown {
  const ids = Object.fromEntries(VOCAB.map((token, id) => [token, id]));
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
export function tinyModelFiles(): Record<string, string | Buffer> {
  return {
    'config.json': JSON.stringify({
      model_type: 'bert',
      architectures: ['BertModel'],
      hidden_size: HIDDEN,
    }),
    'tokenizer.json': JSON.stringify(tokenizerJson()),
    'tokenizer_config.json': JSON.stringify({
      tokenizer_class: 'BertTokenizer',
      do_lower_case: true,
      model_max_length: 128,
      pad_token: '[PAD]',
      unk_token: '[UNK]',
      cls_token: '[CLS]',
      sep_token: '[SEP]',
    }),
    'onnx/model.onnx': tinyOnnxModel(),
  };
}

/** Writes the tiny model into `folder`, leaving out the files in `omit`; returns `folder`. */
export function writeTinyModel(folder: string, omit: readonly string[] = []): string {
  for (const [file, content] of Object.entries(tinyModelFiles())) {
    if (omit.includes(file)) continue;
    mkdirSync(join(folder, file, '..'), { recursive: true });
    writeFileSync(join(folder, file), content);
  }
  return folder;
}
