/** The settings that decide how long to wait before a retry. */
export interface BackoffSettings {
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  readonly random: () => number;
}

/**
 * The wait the server asked for, in milliseconds: `retry-after-ms` (sent by
 * OpenAI), or `retry-after` in seconds or as an HTTP date (RFC 9110; a date
 * past is no wait). Undefined when absent or unreadable (backoff applies).
 */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const milliseconds = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = headers.get('retry-after')?.trim() ?? '';
  if (/^\d+(\.\d+)?$/.test(value)) return Number.parseFloat(value) * 1000;
  const date = /[a-z]/i.test(value) ? Date.parse(value) : Number.NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
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
