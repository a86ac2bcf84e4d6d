import type { ResolvedOptions } from './options.js';
import { retryAfterMs } from './retry.js';
import { scrub, secretsOf } from './secrets.js';

/** Why one request failed, and whether trying again may help. */
export class RequestFailure extends Error {
  /** True for 408, 409, 429, 5xx, network errors and timeouts. */
  readonly retryable: boolean;
  /** The HTTP status, when the server answered. */
  readonly status: number | undefined;
  /** The wait the server asked for (`Retry-After`), in milliseconds. */
  readonly retryAfterMs: number | undefined;

  constructor(
    message: string,
    retryable: boolean,
    options: { cause?: unknown; status?: number; retryAfterMs?: number | undefined } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'RequestFailure';
    this.retryable = retryable;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * Whether an HTTP error may pass if tried again, as OpenAI's own SDK decides: 408 (Request
 * Timeout), 409 (Conflict, a lock), 429 (Too Many Requests) and every 5xx.
 */
function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

const MAX_SERVER_MESSAGE = 300;

/**
 * The error message in an error body: OpenAI's `error.message`, Ollama's and TEI's `error`,
 * FastAPI's `detail`; with the secrets scrubbed before it is cut short, so that no part of one
 * survives the cut.
 */
export function serverMessage(raw: string, secrets: readonly string[]): string {
  const text = scrub(raw, secrets);
  let message: unknown;
  try {
    const body = JSON.parse(text) as Record<string, unknown> | null;
    const error = body?.error as Record<string, unknown> | string | undefined;
    message = (typeof error === 'object' ? error?.message : error) ?? body?.message ?? body?.detail;
  } catch {
    message = text;
  }
  // Scrubbed again once decoded: an escaped secret (`\/` for `/`, as PHP writes it) passed the
  // scrub of the raw body.
  const flat = scrub(
    typeof message === 'string' ? message : message === undefined ? text : JSON.stringify(message),
    secrets,
  )
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > MAX_SERVER_MESSAGE ? `${flat.slice(0, MAX_SERVER_MESSAGE)}…` : flat;
}

/** The text of a network error: undici hides the reason (`ECONNREFUSED`) in its cause. */
function networkReason(error: unknown): string {
  const inner = (error as { cause?: unknown })?.cause;
  if (inner instanceof Error && inner.message) return inner.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * The extra headers, then the request's own, which replace an extra header of
 * the same name in any letter case (`fetch` would join the two values).
 */
function requestHeaders(options: ResolvedOptions): Record<string, string> {
  const own: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
  };
  if (options.apiKey !== undefined) own.authorization = `Bearer ${options.apiKey}`;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers)) {
    if (!Object.hasOwn(own, name.toLowerCase())) headers[name] = value;
  }
  return { ...headers, ...own };
}

/**
 * One `POST /v1/embeddings` for `texts`, within `timeoutMs` (body included).
 * Resolves to the parsed JSON body of a 2xx answer; throws `RequestFailure`.
 */
export async function postEmbeddings(
  options: ResolvedOptions,
  texts: readonly string[],
): Promise<unknown> {
  const body: Record<string, unknown> = {
    model: options.model,
    input: texts,
    encoding_format: 'float',
  };
  if (options.sendDimensions) body.dimensions = options.dimensions;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, options.timeoutMs);
  const where = `embeddings request to ${options.safeURL}`;
  const secrets = secretsOf(options);
  try {
    let response: Response;
    let text: string;
    try {
      response = await options.fetch(options.url, {
        method: 'POST',
        headers: requestHeaders(options),
        body: JSON.stringify(body),
        signal: controller.signal,
        // A redirect would carry the key, the headers and the texts to wherever it points.
        redirect: 'manual',
      });
      text = await response.text();
    } catch (error) {
      if (timedOut) {
        throw new RequestFailure(`${where} timed out after ${options.timeoutMs} ms`, true, {
          cause: error,
        });
      }
      throw new RequestFailure(`${where} failed: ${scrub(networkReason(error), secrets)}`, true, {
        cause: error,
      });
    }
    if (response.status >= 300 && response.status < 400) {
      throw new RequestFailure(
        `${where} was redirected (HTTP ${response.status}); redirects are not followed, so that the key and the texts go nowhere else: give the final URL as baseURL`,
        false,
        { status: response.status },
      );
    }
    if (!response.ok) {
      const status = response.status;
      const reason = serverMessage(text, secrets);
      throw new RequestFailure(
        `${where} failed with HTTP ${status}${reason ? `: ${reason}` : ''}`,
        isRetryableStatus(status),
        { status, retryAfterMs: retryAfterMs(response.headers) },
      );
    }
    try {
      return JSON.parse(text);
    } catch {
      // Without V8's SyntaxError as the cause: its message quotes some 10 characters of the body
      // around the fault, which can be part of a secret too short for `scrub` to find.
      throw new RequestFailure(
        `${where} answered HTTP ${response.status} with a body that is not JSON`,
        false,
        { status: response.status },
      );
    }
  } finally {
    clearTimeout(timer);
  }
}
