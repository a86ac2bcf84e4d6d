import { MnemoError } from '@mnemo/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createOpenAIEmbedder, type OpenAIEmbedderOptions } from '../src/index.js';

const valid: OpenAIEmbedderOptions = {
  baseURL: 'http://127.0.0.1:11434',
  model: 'nomic-embed-text',
  dimensions: 768,
};

function invalid(options: unknown): MnemoError {
  try {
    createOpenAIEmbedder(options as OpenAIEmbedderOptions);
  } catch (error) {
    if (MnemoError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected INVALID_INPUT');
}

describe('createOpenAIEmbedder options', () => {
  it('exposes dimensions, semantic and maxBatchSize', () => {
    const embedder = createOpenAIEmbedder(valid);
    expect(embedder.dimensions).toBe(768);
    expect(embedder.semantic).toBe(true);
    expect(embedder.maxBatchSize).toBe(64);
    expect(createOpenAIEmbedder({ ...valid, maxBatchSize: 8 }).maxBatchSize).toBe(8);
  });

  it('does no I/O when constructed', () => {
    let calls = 0;
    createOpenAIEmbedder({
      ...valid,
      fetch: async () => {
        calls += 1;
        return new Response('{}');
      },
    });
    expect(calls).toBe(0);
  });

  it.each([
    ['no options', undefined, 'options: baseURL, model and dimensions are required'],
    ['no baseURL', { ...valid, baseURL: undefined }, 'options.baseURL'],
    ['a relative baseURL', { ...valid, baseURL: 'localhost:11434' }, 'options.baseURL'],
    ['an ftp baseURL', { ...valid, baseURL: 'ftp://example.test' }, 'options.baseURL'],
    ['credentials in baseURL', { ...valid, baseURL: 'http://u:p@example.test' }, 'options.baseURL'],
    ['no model', { ...valid, model: undefined }, 'options.model'],
    ['a blank model', { ...valid, model: '  ' }, 'options.model'],
    ['no dimensions', { ...valid, dimensions: undefined }, 'options.dimensions'],
    ['zero dimensions', { ...valid, dimensions: 0 }, 'options.dimensions'],
    ['fractional dimensions', { ...valid, dimensions: 1.5 }, 'options.dimensions'],
    ['a string sendDimensions', { ...valid, sendDimensions: 'yes' }, 'options.sendDimensions'],
    ['an empty apiKey', { ...valid, apiKey: '' }, 'options.apiKey'],
    ['maxBatchSize 0', { ...valid, maxBatchSize: 0 }, 'options.maxBatchSize'],
    ['timeoutMs 0', { ...valid, timeoutMs: 0 }, 'options.timeoutMs'],
    ['negative maxRetries', { ...valid, maxRetries: -1 }, 'options.maxRetries'],
    ['NaN retryDelayMs', { ...valid, retryDelayMs: Number.NaN }, 'options.retryDelayMs'],
    ['a string maxRetryDelayMs', { ...valid, maxRetryDelayMs: '5' }, 'options.maxRetryDelayMs'],
    ['headers as an array', { ...valid, headers: [] }, 'options.headers'],
    // Their entries were not read: the headers were dropped without a word.
    [
      'headers as a Headers',
      { ...valid, headers: new Headers({ 'x-a': 'a' }) },
      'options.headers: must be a plain object',
    ],
    [
      'headers as a Map',
      { ...valid, headers: new Map([['x-a', 'a']]) },
      'options.headers: must be a plain object',
    ],
    [
      'one header in two letter cases',
      { ...valid, headers: { 'X-A': 'a', 'x-a': 'b' } },
      'options.headers: "x-a" is given twice',
    ],
    // Each made every request fail in the HTTP client, retried as a network error (or hang).
    ...['Content-Length', 'transfer-encoding', 'Connection', 'Keep-Alive', 'Upgrade', 'Expect'].map(
      (name): [string, unknown, string] => [
        `a ${name} header`,
        { ...valid, headers: { [name]: '1' } },
        `options.headers: "${name}" is the HTTP client's own`,
      ],
    ),
    ['a number header', { ...valid, headers: { 'x-a': 1 } }, 'options.headers.x-a'],
    ['a header name with a space', { ...valid, headers: { 'bad header': 'x' } }, 'options.headers'],
    [
      'a header value with a newline',
      { ...valid, headers: { 'x-a': 'a\nb' } },
      'options.headers.x-a',
    ],
    ['an apiKey with a newline', { ...valid, apiKey: 'sk-SECRET\nx' }, 'options.apiKey'],
    ['timeoutMs past a timer', { ...valid, timeoutMs: 2 ** 31 }, 'options.timeoutMs'],
    ['retryDelayMs past a timer', { ...valid, retryDelayMs: 2 ** 31 }, 'options.retryDelayMs'],
    [
      'maxRetryDelayMs past a timer',
      { ...valid, maxRetryDelayMs: 2 ** 31 },
      'options.maxRetryDelayMs',
    ],
    ['fetch not a function', { ...valid, fetch: 'fetch' }, 'options.fetch'],
    ['sleep not a function', { ...valid, sleep: 1 }, 'options.sleep'],
    ['random not a function', { ...valid, random: 0.5 }, 'options.random'],
  ])('rejects %s with INVALID_INPUT', (_, options, prefix) => {
    const error = invalid(options);
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message.startsWith(prefix)).toBe(true);
    expect(error.message).not.toMatch(/SECRET|a\nb/);
  });

  it('rejects an option it does not know, naming it', () => {
    // A misspelt option was ignored: with `apikey` every request went without the key.
    const error = invalid({ ...valid, apikey: 'sk-SECRET' });
    expect([error.code, error.message, error.details]).toEqual([
      'INVALID_INPUT',
      'options.apikey: is not a known option',
      { field: 'apikey' },
    ]);
  });

  it('names the expected form of baseURL without echoing it', () => {
    expect(invalid({ ...valid, baseURL: 'http://u:sk-secret@example.test' }).message).toBe(
      'options.baseURL: must be an http(s) URL without credentials, such as http://127.0.0.1:11434',
    );
  });

  it('rejects texts that are not an array of strings with INVALID_INPUT', async () => {
    let calls = 0;
    const embedder = createOpenAIEmbedder({
      ...valid,
      fetch: async () => {
        calls += 1;
        return new Response('{}');
      },
    });
    await expect(embedder.embed('text' as unknown as string[])).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    // An array is not enough: a number among the texts is refused before any request.
    await expect(embedder.embed(['text', 42] as unknown as string[])).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: 'texts: must be an array of strings',
    });
    // A hole: `every` skips it, and the request would have sent null as a text.
    const holey = new Array<string>(3);
    holey[0] = 'text';
    holey[2] = 'more';
    await expect(embedder.embed(holey)).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: 'texts: must be an array of strings',
    });
    expect(calls).toBe(0);
  });

  it('accepts 2^31 − 1, the longest timer, for every delay', () => {
    const longest = 2 ** 31 - 1;
    expect(() =>
      createOpenAIEmbedder({
        ...valid,
        timeoutMs: longest,
        retryDelayMs: longest,
        maxRetryDelayMs: longest,
      }),
    ).not.toThrow();
  });

  it('sends to the injected fetch, with the key only in the authorization header', async () => {
    const seen: { url: string; init: RequestInit }[] = [];
    const embedder = createOpenAIEmbedder({
      ...valid,
      baseURL: 'https://api.example.test/v1/',
      dimensions: 2,
      apiKey: 'sk-abc',
      headers: { Authorization: 'Bearer other', 'OpenAI-Organization': 'org-1' },
      fetch: async (url, init) => {
        seen.push({ url, init });
        return new Response(JSON.stringify({ data: [{ index: 0, embedding: [0.6, 0.8] }] }));
      },
    });
    expect(await embedder.embed(['x'])).toEqual([Float32Array.from([0.6, 0.8])]);
    expect(seen[0]?.url).toBe('https://api.example.test/v1/embeddings');
    expect(seen[0]?.init.method).toBe('POST');
    expect(seen[0]?.init.headers).toEqual({
      'OpenAI-Organization': 'org-1',
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: 'Bearer sk-abc',
    });
    expect(seen[0]?.init.signal).toBeInstanceOf(AbortSignal);
  });
});

describe('createOpenAIEmbedder default timeout', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('aborts a request after 30,000 ms when timeoutMs is not given', async () => {
    // Fake timers stand in for waiting 30 seconds: the request is aborted by the embedder's own timer.
    vi.useFakeTimers();
    let signal: AbortSignal | undefined;
    const embedder = createOpenAIEmbedder({
      ...valid,
      maxRetries: 0,
      fetch: (_, init) => {
        signal = init.signal ?? undefined;
        return new Promise<Response>((_resolve, reject) => {
          init.signal?.addEventListener('abort', () => reject(new Error('aborted')));
        });
      },
    });
    const outcome = embedder.embed(['x']).then(
      () => undefined,
      (error: unknown) => error,
    );
    await vi.advanceTimersByTimeAsync(29_999);
    expect(signal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(signal?.aborted).toBe(true);
    expect(await outcome).toMatchObject({
      code: 'EMBEDDER_FAILED',
      message:
        'embeddings request to http://127.0.0.1:11434/v1/embeddings timed out after 30000 ms',
    });
  });
});
