export type { Dtype, Pooling, TransformersEmbedderOptions } from './options.js';
export { DTYPE_FILES, POOLINGS } from './options.js';
export {
  createTransformersEmbedder,
  type TransformersEmbedder,
} from './transformers-embedder.js';
