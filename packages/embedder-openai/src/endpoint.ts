/** Where requests go, and the same URL safe to print. */
export interface Endpoint {
  /** `{baseURL}/v1/embeddings`, exactly as requested. */
  readonly url: string;
  /** The URL without query or fragment (where a key could hide): what error messages show. */
  readonly safeURL: string;
}

/**
 * The embeddings URL of a base URL given with or without `/v1`, or as the
 * whole `/v1/embeddings` (and trailing slashes). Undefined when `baseURL` is
 * not an http(s) URL or carries a user or password (which `fetch` refuses;
 * the key goes in `apiKey`).
 */
export function embeddingsEndpoint(baseURL: unknown): Endpoint | undefined {
  if (typeof baseURL !== 'string') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(baseURL.trim());
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  if (parsed.username !== '' || parsed.password !== '') return undefined;
  const path = parsed.pathname.replace(/\/+$/, '').replace(/\/v1(\/embeddings)?$/, '');
  parsed.pathname = `${path}/v1/embeddings`;
  const url = parsed.toString();
  parsed.search = '';
  parsed.hash = '';
  return { url, safeURL: parsed.toString() };
}
