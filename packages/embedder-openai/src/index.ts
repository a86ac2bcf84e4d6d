export { createOpenAIEmbedder } from './openai-embedder.js';
export type { FetchLike, OpenAIEmbedderOptions } from './options.js';
