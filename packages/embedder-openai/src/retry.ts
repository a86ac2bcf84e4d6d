/** The settings that decide how long to wait before a retry. */
export interface BackoffSettings {
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  readonly random: () => number;
}

/**
 * The wait the server asked for, in milliseconds: `retry-after-ms` (sent by
 * OpenAI) or `retry-after` in seconds. Undefined when absent or not a number
 * (an HTTP date is ignored: backoff applies).
 */
export function retryAfterMs(headers: Headers): number | undefined {
  const milliseconds = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const seconds = headers.get('retry-after')?.trim() ?? '';
  if (!/^\d+(\.\d+)?$/.test(seconds)) return undefined;
  return Number.parseFloat(seconds) * 1000;
}

/**
 * How long to wait before retry number `retry` (0 for the first): what the
 * server asked for if it did, else `retryDelayMs · 2^retry` less up to 25 %
 * jitter; never more than `maxRetryDelayMs`.
 */
export function retryDelay(
  retry: number,
  requestedMs: number | undefined,
  settings: BackoffSettings,
): number {
  if (requestedMs !== undefined) return Math.min(requestedMs, settings.maxRetryDelayMs);
  const exponential = Math.min(settings.retryDelayMs * 2 ** retry, settings.maxRetryDelayMs);
  return Math.round(exponential * (1 - 0.25 * settings.random()));
}
