import { type Embedder, MnemoError } from '@mnemo/core';
import { type Extractor, loadExtractor } from './extractor.js';
import { infer, reason } from './infer.js';
import { checkModelFolder } from './model-folder.js';
import {
  type ResolvedOptions,
  resolveOptions,
  type TransformersEmbedderOptions,
} from './options.js';

/** An `Embedder` on a local model, with an explicit lifecycle. */
export interface TransformersEmbedder extends Embedder {
  /**
   * Length of the vectors: `options.dimensions` if given, else what the model
   * outputs once loaded, and 0 before that (call `load()` to know it up front).
   */
  readonly dimensions: number;
  /**
   * Loads the model now instead of on the first `embed`: checks the folder,
   * opens the ONNX session and runs one probe text to learn (or check) the
   * vector length. Loads once: concurrent and later calls share the load. A
   * failed load is not cached, so it can be retried after fixing the folder.
   * `EMBEDDER_NOT_CONFIGURED` for a missing or incomplete folder,
   * `EMBEDDER_FAILED` when the library cannot load or run the model,
   * `DIMENSION_MISMATCH` when the output length differs from `options.dimensions`.
   */
  load(): Promise<void>;
  /**
   * Waits for a running inference and releases the ONNX session. Idempotent;
   * afterwards `embed` and `load` fail with `EMBEDDER_FAILED`.
   */
  close(): Promise<void>;
}

interface Loaded {
  readonly extractor: Extractor;
  readonly dimensions: number;
}

const PROBE = ['dimension probe'];

/**
 * An embedder running a sentence-embedding ONNX model from a local folder
 * in-process, through `@huggingface/transformers` on onnxruntime-node (CPU).
 * Never downloads anything. Does no I/O here: the model loads on `load()` or
 * the first `embed`. Throws `INVALID_INPUT` at once for bad options.
 */
export function createTransformersEmbedder(
  options: TransformersEmbedderOptions,
): TransformersEmbedder {
  return new LocalModelEmbedder(resolveOptions(options));
}

class LocalModelEmbedder implements TransformersEmbedder {
  readonly semantic = true;
  readonly maxBatchSize: number;
  private loading: Promise<Loaded> | undefined;
  private loaded: Loaded | undefined;
  private closed = false;
  // Inference runs one at a time: onnxruntime already spreads one run over the cores.
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: ResolvedOptions) {
    this.maxBatchSize = options.maxBatchSize;
  }

  get dimensions(): number {
    return this.options.dimensions ?? this.loaded?.dimensions ?? 0;
  }

  async load(): Promise<void> {
    await this.ready();
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    // `Array.from` visits holes (as undefined), which `every` skips.
    if (!Array.isArray(texts) || !Array.from(texts).every((text) => typeof text === 'string')) {
      throw new MnemoError('INVALID_INPUT', 'texts: must be an array of strings');
    }
    if (texts.length === 0) return [];
    const { extractor, dimensions } = await this.ready();
    const vectors: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += this.maxBatchSize) {
      const batch = texts.slice(start, start + this.maxBatchSize);
      vectors.push(
        ...(await this.serially(() => infer(extractor, batch, this.options, dimensions))),
      );
    }
    return vectors;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const loaded = await this.loading?.catch(() => undefined);
    this.loading = undefined;
    this.loaded = undefined;
    await this.queue;
    await loaded?.extractor.dispose();
  }

  private ready(): Promise<Loaded> {
    if (this.closed) return Promise.reject(this.closedError());
    this.loading ??= this.open().catch((error: unknown) => {
      this.loading = undefined;
      throw error;
    });
    return this.loading;
  }

  private async open(): Promise<Loaded> {
    const { modelPath } = this.options;
    const { dtype } = await checkModelFolder(modelPath, this.options.dtype);
    let extractor: Extractor;
    try {
      extractor = await loadExtractor(modelPath, dtype);
    } catch (error) {
      throw new MnemoError(
        'EMBEDDER_FAILED',
        `could not load the model in ${modelPath} (${dtype}): ${reason(error)}`,
        { cause: error, details: { modelPath } },
      );
    }
    try {
      const [probe] = await infer(extractor, PROBE, this.options, this.options.dimensions);
      this.loaded = { extractor, dimensions: probe?.length ?? 0 };
      return this.loaded;
    } catch (error) {
      await extractor.dispose().catch(() => undefined);
      throw error;
    }
  }

  /** Runs `task` after every earlier one, unless the embedder closed meanwhile. */
  private serially<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(() => {
      if (this.closed) throw this.closedError();
      return task();
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  private closedError(): MnemoError {
    return new MnemoError(
      'EMBEDDER_FAILED',
      `the embedder for ${this.options.modelPath} is closed`,
      { details: { modelPath: this.options.modelPath } },
    );
  }
}
