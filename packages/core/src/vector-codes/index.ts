/**
 * `@mnemo/core/vector-codes`: for store implementations. Embeddings kept in
 * memory as int8 codes, and a SIMD pass over them that finds the few records
 * that can be in an exact vector search's top without reading the embeddings
 * (see VectorCodes). Both bundled stores use it.
 */

export { DotKernel } from './dot-kernel.js';
export { type Candidates, VectorCodes } from './vector-codes.js';
