import { type Embedder, MnemoError } from '@mnemo/core';
import { parseNumber } from './args.js';
import { CliFailure, UsageError } from './usage-error.js';

/** The options of the commands that embed (`serve`, `remember`, `recall`). */
export const EMBEDDER_OPTIONS = {
  embedder: { type: 'string' },
  'embedding-model': { type: 'string' },
  'embedding-dimensions': { type: 'string' },
} as const;

/** The environment variable the OpenAI-compatible embedder's API key is read from. */
const API_KEY_VARIABLE = 'MNEMO_EMBEDDER_API_KEY';

/** The embedder named by `--embedder`. */
export type EmbedderSpec =
  | {
      readonly kind: 'openai';
      readonly baseURL: string;
      readonly model: string;
      readonly dimensions: number;
    }
  | { readonly kind: 'transformers'; readonly modelPath: string; readonly dimensions?: number };

const EXAMPLE_URL = 'openai:http://127.0.0.1:11434';

/**
 * Parses `--embedder openai:<url>` (with `--embedding-model` and `--embedding-dimensions`)
 * or `--embedder transformers:<folder>` (`--embedding-dimensions` optional); undefined
 * without `--embedder`. Messages never repeat the URL (it may hold a key in its path).
 */
export function parseEmbedderSpec(values: {
  embedder?: string;
  'embedding-model'?: string;
  'embedding-dimensions'?: string;
}): EmbedderSpec | undefined {
  const text = values.embedder;
  const model = values['embedding-model'];
  const dimensions = parseNumber('embedding-dimensions', values['embedding-dimensions'], {
    min: 1,
    // As the embedders check: a larger whole number is not exact as a JavaScript number.
    max: Number.MAX_SAFE_INTEGER,
    integer: true,
  });
  if (text === undefined) {
    for (const flag of ['embedding-model', 'embedding-dimensions'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} needs --embedder`);
    }
    return undefined;
  }
  const colon = text.indexOf(':');
  const kind = colon < 0 ? text : text.slice(0, colon);
  const rest = colon < 0 ? '' : text.slice(colon + 1);
  if (kind === 'openai') {
    if (rest === '') {
      throw new UsageError(`--embedder openai:<url> needs the server URL, e.g. ${EXAMPLE_URL}`);
    }
    let url: URL | undefined;
    try {
      url = new URL(rest);
    } catch {}
    if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
      throw new UsageError(
        `--embedder openai:<url> needs an http:// or https:// URL, e.g. ${EXAMPLE_URL}`,
      );
    }
    // The embedder refuses these too, but in its own terms (options.baseURL).
    if (url.username !== '' || url.password !== '') {
      throw new UsageError(
        `--embedder openai:<url> must not hold a user or password; put the API key in the environment variable ${API_KEY_VARIABLE}`,
      );
    }
    if (model === undefined || model.trim() === '') {
      throw new UsageError('--embedding-model is required with --embedder openai:<url>');
    }
    if (dimensions === undefined) {
      throw new UsageError('--embedding-dimensions is required with --embedder openai:<url>');
    }
    return { kind: 'openai', baseURL: rest, model, dimensions };
  }
  if (kind === 'transformers') {
    if (rest.trim() === '') {
      throw new UsageError('--embedder transformers:<folder> needs the model folder');
    }
    if (model !== undefined) {
      throw new UsageError(
        '--embedding-model is for openai:<url>; a transformers model is its folder',
      );
    }
    return {
      kind: 'transformers',
      modelPath: rest,
      ...(dimensions === undefined ? {} : { dimensions }),
    };
  }
  throw new UsageError(
    `--embedder: unknown embedder '${kind}' (expected openai:<url> or transformers:<folder>)`,
  );
}

/** The embedder for people: its model, vector length and server (origin only) or folder. */
export function describeEmbedder(spec: EmbedderSpec, dimensions: number): string {
  const where = spec.kind === 'openai' ? new URL(spec.baseURL).origin : spec.modelPath;
  const model = spec.kind === 'openai' ? `${spec.model} ` : '';
  return `embedder ${model}(${dimensions} dimensions) at ${where}`;
}

/** An open embedder, and how to release it (the local model's session). */
export interface OpenedEmbedder {
  readonly embedder: Embedder;
  close(): Promise<void>;
}

/**
 * Creates the embedder; a local model is loaded here, so that a wrong folder fails
 * before the store opens. `@mnemo/embedder-transformers` is an optional peer
 * dependency (it brings onnxruntime): without it, a `CliFailure` says to install it.
 */
export async function openEmbedder(spec: EmbedderSpec): Promise<OpenedEmbedder> {
  if (spec.kind === 'openai') {
    const { createOpenAIEmbedder } = await import('@mnemo/embedder-openai');
    const apiKey = process.env[API_KEY_VARIABLE];
    let embedder: Embedder;
    try {
      embedder = createOpenAIEmbedder({
        baseURL: spec.baseURL,
        model: spec.model,
        dimensions: spec.dimensions,
        ...(apiKey === undefined || apiKey === '' ? {} : { apiKey }),
      });
    } catch (error) {
      // The other options are checked while parsing; the key is named as the user set it.
      const prefix = 'options.apiKey: ';
      if (!MnemoError.hasCode(error, 'INVALID_INPUT') || !error.message.startsWith(prefix)) {
        throw error;
      }
      throw new MnemoError(
        'INVALID_INPUT',
        `the environment variable ${API_KEY_VARIABLE} ${error.message.slice(prefix.length)}`,
        { details: { field: API_KEY_VARIABLE } },
      );
    }
    return { embedder: redacting(embedder, pathSecrets(spec.baseURL)), close: async () => {} };
  }
  let module: typeof import('@mnemo/embedder-transformers');
  try {
    module = await import('@mnemo/embedder-transformers');
  } catch (error) {
    const missing =
      (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' &&
      (error as Error).message.includes("'@mnemo/embedder-transformers'");
    if (!missing) throw error;
    throw new CliFailure(
      '--embedder transformers:<folder> needs the package @mnemo/embedder-transformers: npm install @mnemo/embedder-transformers',
    );
  }
  const embedder = module.createTransformersEmbedder({
    modelPath: spec.modelPath,
    ...(spec.dimensions === undefined ? {} : { dimensions: spec.dimensions }),
  });
  try {
    await embedder.load();
  } catch (error) {
    await embedder.close();
    throw error;
  }
  return { embedder, close: () => embedder.close() };
}

/**
 * What of the URL's path may be a key (some gateways take theirs there): its segments of
 * 8 characters or more, as written and decoded; shorter ones (`api`, `v1`) are not secrets,
 * the rule `@mnemo/embedder-openai` has for header values. It hides the key it is given,
 * but the CLI gives none for a key in the path.
 */
function pathSecrets(baseURL: string): string[] {
  const secrets = new Set<string>();
  for (const segment of new URL(baseURL.trim()).pathname.split('/')) {
    if (segment.length < 8) continue;
    secrets.add(segment);
    try {
      secrets.add(decodeURIComponent(segment));
    } catch {}
  }
  return [...secrets].sort((a, b) => b.length - a.length);
}

/**
 * `embedder`, its failures with `secrets` shown as `[redacted]`: the CLI prints their
 * messages, and `mnemo serve` sends them to its clients. Their cause is left out (it may
 * quote the URL; neither reads it).
 */
function redacting(embedder: Embedder, secrets: readonly string[]): Embedder {
  if (secrets.length === 0) return embedder;
  const scrub = (text: string) =>
    secrets.reduce((scrubbed, secret) => scrubbed.split(secret).join('[redacted]'), text);
  return {
    dimensions: embedder.dimensions,
    semantic: embedder.semantic,
    maxBatchSize: embedder.maxBatchSize,
    async embed(texts) {
      try {
        return await embedder.embed(texts);
      } catch (error) {
        const {
          cause: _cause,
          url,
          ...details
        } = MnemoError.isInstance(error) ? error.details : {};
        throw new MnemoError(
          MnemoError.isInstance(error) ? error.code : 'EMBEDDER_FAILED',
          scrub(
            MnemoError.isInstance(error)
              ? error.message
              : `embedder failed: ${(error as Error)?.message ?? String(error)}`,
          ),
          { details: { ...details, ...(typeof url === 'string' ? { url: scrub(url) } : {}) } },
        );
      }
    },
  };
}
