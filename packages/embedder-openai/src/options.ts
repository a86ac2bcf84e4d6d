import { validateHeaderName, validateHeaderValue } from 'node:http';
import { MnemoError } from '@mnemo/core';
import { embeddingsEndpoint } from './endpoint.js';
import { scrub, secretsOf } from './secrets.js';

/** The part of `fetch` the embedder uses; the global `fetch` fits, and so does a test double. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** Options of `createOpenAIEmbedder`. */
export interface OpenAIEmbedderOptions {
  /**
   * The server, with or without the trailing `/v1`: `https://api.openai.com`,
   * `http://127.0.0.1:11434` (Ollama), `http://127.0.0.1:8000/v1` (vLLM).
   */
  baseURL: string;
  /** The embedding model the server should run, for example `text-embedding-3-small`. */
  model: string;
  /** Length of every vector the model returns; checked on every response. */
  dimensions: number;
  /**
   * Also send `dimensions` in the request, for models that can shorten their
   * vectors (OpenAI's `text-embedding-3-*`). Default false: many servers reject the field.
   */
  sendDimensions?: boolean;
  /** Sent as `Authorization: Bearer <apiKey>`. Never logged, never put in an error message. */
  apiKey?: string;
  /** Most texts per request; larger `embed` calls are split (default 64). */
  maxBatchSize?: number;
  /** Time limit of one request, body included, in milliseconds (default 30,000). */
  timeoutMs?: number;
  /** Retries after a 408, 409, 429 or 5xx, a network error or a timeout (default 3). */
  maxRetries?: number;
  /** First backoff wait in milliseconds; doubled on each retry, with jitter (default 500). */
  retryDelayMs?: number;
  /** Longest wait before a retry, `Retry-After` included, in milliseconds (default 30,000). */
  maxRetryDelayMs?: number;
  /** Extra request headers, for example an organization or a proxy's own key. */
  headers?: Readonly<Record<string, string>>;
  /** Default: the global `fetch` of Node ≥ 20. */
  fetch?: FetchLike;
  /** How to wait before a retry (default `setTimeout`); tests inject one that records the waits. */
  sleep?: (ms: number) => Promise<void>;
  /** Jitter source, a number in [0, 1) (default `Math.random`). */
  random?: () => number;
}

/** Options after validation, defaults applied (see `OpenAIEmbedderOptions`), and the endpoint. */
export interface ResolvedOptions {
  /** Where requests go. */
  readonly url: string;
  /** `url` without its query and fragment, and with the secrets hidden: what errors show. */
  readonly safeURL: string;
  readonly model: string;
  readonly dimensions: number;
  readonly sendDimensions: boolean;
  readonly apiKey: string | undefined;
  readonly maxBatchSize: number;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly fetch: FetchLike;
  readonly sleep: (ms: number) => Promise<void>;
  readonly random: () => number;
}

function invalid(field: string, message: string): MnemoError {
  return new MnemoError('INVALID_INPUT', `options.${field}: ${message}`, { details: { field } });
}

function integer(
  field: string,
  value: unknown,
  fallback: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalid(
      field,
      max === Number.MAX_SAFE_INTEGER
        ? `must be an integer ≥ ${min}`
        : `must be an integer from ${min} to ${max}`,
    );
  }
  return value;
}

/** The longest delay a Node timer takes (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

function optionalFunction<T>(field: string, value: unknown, fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'function') throw invalid(field, 'must be a function');
  return value as T;
}

/** Headers the HTTP client sets itself: given, each failed every request (or hung it). */
const CLIENT_HEADERS = new Set([
  'connection',
  'content-length',
  'expect',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
]);

function resolveHeaders(value: unknown): Readonly<Record<string, string>> {
  if (value === undefined) return {};
  // A Headers or a Map has no entries of its own: its headers would be dropped without a word.
  const proto = typeof value === 'object' && value !== null ? Object.getPrototypeOf(value) : null;
  if (proto !== Object.prototype && proto !== null) {
    throw invalid('headers', 'must be a plain object of header names to strings');
  }
  const seen = new Set<string>();
  for (const [name, header] of Object.entries(value as object)) {
    const lower = name.toLowerCase();
    if (seen.has(lower)) throw invalid('headers', `"${lower}" is given twice`);
    seen.add(lower);
    if (CLIENT_HEADERS.has(lower)) throw invalid('headers', `"${name}" is the HTTP client's own`);
    if (typeof header !== 'string') throw invalid(`headers.${name}`, 'must be a string');
    try {
      validateHeaderName(name);
    } catch {
      throw invalid('headers', `"${name}" is not a valid header name`);
    }
    try {
      validateHeaderValue(name, header);
    } catch {
      // The value may be a secret: never repeat it.
      throw invalid(`headers.${name}`, 'is not a valid header value (a control character?)');
    }
  }
  return { ...(value as Record<string, string>) };
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A gateway may take its key in the path: the URL errors show hides it there too, escaped or not. */
function safeURL(url: string, secrets: readonly string[]): string {
  return scrub(url, [...secrets, ...secrets.map(encodeURIComponent)]);
}

/** The keys of `OpenAIEmbedderOptions`: any other is `INVALID_INPUT` (the type keeps the list complete). */
const OPTION_KEYS: ReadonlySet<string> = new Set(
  Object.keys({
    baseURL: true,
    model: true,
    dimensions: true,
    sendDimensions: true,
    apiKey: true,
    maxBatchSize: true,
    timeoutMs: true,
    maxRetries: true,
    retryDelayMs: true,
    maxRetryDelayMs: true,
    headers: true,
    fetch: true,
    sleep: true,
    random: true,
  } satisfies Record<keyof OpenAIEmbedderOptions, true>),
);

/** Validates the options (`INVALID_INPUT` naming the field) and applies the defaults. */
export function resolveOptions(options: OpenAIEmbedderOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new MnemoError('INVALID_INPUT', 'options: baseURL, model and dimensions are required');
  }
  // A misspelt option was ignored (`apikey` sent every request without the key).
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) throw invalid(key, 'is not a known option');
  }
  if (typeof options.model !== 'string' || options.model.trim().length === 0) {
    throw invalid('model', 'a model name is required');
  }
  if (options.sendDimensions !== undefined && typeof options.sendDimensions !== 'boolean') {
    throw invalid('sendDimensions', 'must be a boolean');
  }
  if (
    options.apiKey !== undefined &&
    (typeof options.apiKey !== 'string' || options.apiKey.length === 0)
  ) {
    throw invalid('apiKey', 'must be a non-empty string');
  }
  if (options.apiKey !== undefined) {
    try {
      validateHeaderValue('authorization', `Bearer ${options.apiKey}`);
    } catch {
      throw invalid('apiKey', 'is not a valid header value (a control character?)');
    }
  }
  if (options.dimensions === undefined) {
    throw invalid('dimensions', "is required: the length of the model's vectors");
  }
  const dimensions = integer('dimensions', options.dimensions, 0, 1);
  const maxRetryDelayMs = integer(
    'maxRetryDelayMs',
    options.maxRetryDelayMs,
    30_000,
    0,
    MAX_TIMER_MS,
  );
  const endpoint = embeddingsEndpoint(options.baseURL);
  if (endpoint === undefined) {
    throw invalid(
      'baseURL',
      'must be an http(s) URL without credentials, such as http://127.0.0.1:11434',
    );
  }
  const apiKey = options.apiKey;
  const headers = resolveHeaders(options.headers);
  return {
    url: endpoint.url,
    safeURL: safeURL(endpoint.safeURL, secretsOf({ apiKey, headers })),
    model: options.model,
    dimensions,
    sendDimensions: options.sendDimensions ?? false,
    apiKey,
    maxBatchSize: integer('maxBatchSize', options.maxBatchSize, 64, 1),
    timeoutMs: integer('timeoutMs', options.timeoutMs, 30_000, 1, MAX_TIMER_MS),
    maxRetries: integer('maxRetries', options.maxRetries, 3, 0),
    retryDelayMs: integer('retryDelayMs', options.retryDelayMs, 500, 0, MAX_TIMER_MS),
    maxRetryDelayMs,
    headers,
    fetch: optionalFunction<FetchLike>('fetch', options.fetch, (url, init) => fetch(url, init)),
    sleep: optionalFunction('sleep', options.sleep, sleepFor),
    random: optionalFunction('random', options.random, Math.random),
  };
}
