import { inspect } from 'node:util';
import { type Embedder, MnemoError } from '@mnemo/core';
import { type OpenAIEmbedderOptions, type ResolvedOptions, resolveOptions } from './options.js';
import { postEmbeddings, RequestFailure } from './request.js';
import { parseEmbeddings } from './response.js';
import { retryDelay } from './retry.js';
import { scrub, secretsOf } from './secrets.js';

/**
 * An `Embedder` over the OpenAI-compatible `POST {baseURL}/v1/embeddings`
 * (OpenAI, Ollama, vLLM, LM Studio, TEI). Does no I/O until `embed`.
 *
 * `embed` sends batches of at most `maxBatchSize` texts one after the other,
 * retries 408, 409, 429, 5xx, network errors and timeouts with exponential
 * backoff, and returns the vectors in input order. Failures are `MnemoError`s:
 * `EMBEDDER_FAILED` (the message has the status, the server's message and the
 * URL, never the key) or `DIMENSION_MISMATCH`. Throws `INVALID_INPUT` at once
 * for bad options.
 */
export function createOpenAIEmbedder(options: OpenAIEmbedderOptions): Embedder {
  const resolved = resolveOptions(options);
  return Object.freeze({
    dimensions: resolved.dimensions,
    semantic: true,
    maxBatchSize: resolved.maxBatchSize,
    async embed(texts: readonly string[]): Promise<Float32Array[]> {
      // `Array.from` visits holes (as undefined), which `every` skips.
      if (!Array.isArray(texts) || !Array.from(texts).every((text) => typeof text === 'string')) {
        throw new MnemoError('INVALID_INPUT', 'texts: must be an array of strings');
      }
      const vectors: Float32Array[] = [];
      for (let start = 0; start < texts.length; start += resolved.maxBatchSize) {
        const batch = texts.slice(start, start + resolved.maxBatchSize);
        vectors.push(...(await embedBatch(resolved, batch)));
      }
      return vectors;
    },
  });
}

async function embedBatch(
  options: ResolvedOptions,
  texts: readonly string[],
): Promise<Float32Array[]> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      const body = await postEmbeddings(options, texts);
      return parseEmbeddings(body, {
        count: texts.length,
        dimensions: options.dimensions,
        model: options.model,
        safeURL: options.safeURL,
      });
    } catch (error) {
      if (!(error instanceof RequestFailure)) throw error;
      if (!error.retryable || attempt > options.maxRetries) throw failed(options, error, attempt);
      await options.sleep(retryDelay(attempt - 1, error.retryAfterMs, options));
    }
  }
}

/**
 * The `MnemoError` for a request that will not be tried again. The secrets
 * (see `secretsOf`) are scrubbed from its message, and its cause is replaced
 * by a scrubbed copy when they appear anywhere in it (a logged error prints
 * its causes).
 */
function failed(options: ResolvedOptions, error: RequestFailure, attempts: number): MnemoError {
  const secrets = secretsOf(options);
  const suffix = attempts > 1 ? ` (after ${attempts} attempts)` : '';
  const cause = error.cause ?? error;
  const shown = inspect(cause, { depth: 8 });
  return new MnemoError('EMBEDDER_FAILED', scrub(`${error.message}${suffix}`, secrets), {
    cause: secrets.some((secret) => shown.includes(secret))
      ? new Error(scrub(cause instanceof Error ? cause.message : String(cause), secrets))
      : cause,
    details: { url: options.safeURL, status: error.status, attempts },
  });
}
