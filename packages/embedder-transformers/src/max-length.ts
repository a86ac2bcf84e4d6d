/**
 * Model types whose position ids start after the padding token's id, as
 * RoBERTa's do (`padding_idx + 1 + i`): of their `max_position_embeddings`
 * (514), `padding_idx + 1` are taken by no token, so 512 tokens fit.
 * MPNet fixes `padding_idx` at 1; the others take `pad_token_id`.
 */
const POSITIONS_AFTER_PADDING: ReadonlySet<string> = new Set([
  'roberta',
  'xlm-roberta',
  'camembert',
  'mpnet',
]);

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;

/**
 * How many tokens, special tokens included, the positions of the model's
 * `config.json` hold: `max_position_embeddings` (or, in configs that name it
 * so, as nomic-bert's do, `n_positions`), less the unused ones of a
 * RoBERTa-style model; `undefined` if the config does not say.
 */
export function positionLimit(config: Readonly<Record<string, unknown>>): number | undefined {
  const positions = isCount(config.max_position_embeddings)
    ? config.max_position_embeddings
    : config.n_positions;
  if (!isCount(positions)) return undefined;
  const type = config.model_type;
  if (typeof type !== 'string' || !POSITIONS_AFTER_PADDING.has(type)) return positions;
  const padding = type === 'mpnet' ? 1 : (config.pad_token_id ?? 1);
  if (typeof padding !== 'number' || !Number.isSafeInteger(padding) || padding < 0) {
    return positions;
  }
  return isCount(positions - padding - 1) ? positions - padding - 1 : positions;
}

/**
 * The number of tokens to truncate each text to: the tokenizer's
 * `model_max_length` or the model's positions, whichever is less; `undefined`
 * if neither is known. Some exports write a placeholder `model_max_length`
 * (transformers' `VERY_LARGE_INTEGER`, 1e30) or none, with which the tokenizer
 * never truncates, and a text longer than the positions makes inference fail.
 */
export function maxLength(
  modelMaxLength: unknown,
  config: Readonly<Record<string, unknown>>,
): number | undefined {
  const tokenizer =
    typeof modelMaxLength === 'number' && modelMaxLength >= 1
      ? modelMaxLength
      : Number.POSITIVE_INFINITY;
  const limit = Math.min(tokenizer, positionLimit(config) ?? Number.POSITIVE_INFINITY);
  return Number.isFinite(limit) ? limit : undefined;
}
