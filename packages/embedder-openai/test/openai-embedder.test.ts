import { inspect } from 'node:util';
import { MnemoError } from '@mnemo/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOpenAIEmbedder, type OpenAIEmbedderOptions } from '../src/index.js';
import {
  closedPort,
  type EmbeddingsServer,
  embeddingsBody,
  json,
  startEmbeddingsServer,
  vectorFor,
} from './embeddings-server.js';

const DIMENSIONS = 16;
let server: EmbeddingsServer;
let waits: number[];

beforeEach(async () => {
  server = await startEmbeddingsServer(DIMENSIONS);
  waits = [];
});
afterEach(() => server.close());

/** An embedder on the test server that records its waits instead of sleeping. */
function embedder(options: Partial<OpenAIEmbedderOptions> = {}) {
  return createOpenAIEmbedder({
    baseURL: server.baseURL,
    model: 'test-model',
    dimensions: DIMENSIONS,
    sleep: async (ms) => {
      waits.push(ms);
    },
    random: () => 0,
    ...options,
  });
}

async function failure(promise: Promise<unknown>): Promise<MnemoError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!MnemoError.isInstance(error)) throw new Error(`expected a MnemoError, got ${error}`);
  return error;
}

const vector = new Array<number>(DIMENSIONS).fill(0.25);
const expected = (text: string) => Float32Array.from(vectorFor(text, DIMENSIONS));
const url = () => `${server.baseURL}/v1/embeddings`;

describe('createOpenAIEmbedder against a local /v1/embeddings server', () => {
  it('posts model, input and encoding_format, and returns one vector per text', async () => {
    const vectors = await embedder().embed(['the cat sat', 'a dog barked']);
    expect(vectors).toEqual([expected('the cat sat'), expected('a dog barked')]);
    expect(vectors[0]).toBeInstanceOf(Float32Array);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.method).toBe('POST');
    expect(server.requests[0]?.path).toBe('/v1/embeddings');
    expect(server.requests[0]?.headers['content-type']).toBe('application/json');
    expect(server.requests[0]?.body).toEqual({
      model: 'test-model',
      input: ['the cat sat', 'a dog barked'],
      encoding_format: 'float',
    });
  });

  it('sends dimensions only with sendDimensions: true', async () => {
    await embedder({ sendDimensions: true }).embed(['x']);
    expect(server.requests[0]?.body).toEqual({
      model: 'test-model',
      input: ['x'],
      encoding_format: 'float',
      dimensions: DIMENSIONS,
    });
  });

  it('accepts baseURL with or without /v1 or the whole /v1/embeddings, and trailing slashes', async () => {
    const forms = [
      server.baseURL,
      `${server.baseURL}/`,
      `${server.baseURL}/v1`,
      `${server.baseURL}/v1/`,
      `${server.baseURL}/v1/embeddings`,
      `${server.baseURL}/v1/embeddings/`,
    ];
    for (const baseURL of forms) await embedder({ baseURL }).embed(['x']);
    expect(server.requests.map((request) => request.path)).toEqual(
      Array(forms.length).fill('/v1/embeddings'),
    );
  });

  it('splits 150 texts into requests of 64, 64 and 22, results in input order', async () => {
    const texts = Array.from({ length: 150 }, (_, i) => `text number ${i}`);
    const vectors = await embedder({ maxBatchSize: 64 }).embed(texts);
    expect(server.requests.map((request) => request.body.input.length)).toEqual([64, 64, 22]);
    expect(server.requests.flatMap((request) => request.body.input)).toEqual(texts);
    expect(vectors).toEqual(texts.map(expected));
  });

  it('returns [] for no texts without a request', async () => {
    expect(await embedder().embed([])).toEqual([]);
    expect(server.requests).toHaveLength(0);
  });

  it('sends the API key as a Bearer token, and the extra headers', async () => {
    await embedder({ apiKey: 'sk-test-123', headers: { 'x-team': 'memory' } }).embed(['x']);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-test-123');
    expect(server.requests[0]?.headers['x-team']).toBe('memory');
  });

  it('sends its own Content-Type and Accept over extra headers of those names, in any case', async () => {
    await embedder({
      headers: { 'Content-Type': 'text/plain', ACCEPT: 'text/html', 'x-team': 'memory' },
    }).embed(['x']);
    const { headers } = server.requests[0] as { headers: Record<string, unknown> };
    // Two headers of one name were joined: 'text/plain, application/json'.
    expect([headers['content-type'], headers.accept, headers['x-team']]).toEqual([
      'application/json',
      'application/json',
      'memory',
    ]);
  });

  it('sends no authorization header without an API key', async () => {
    await embedder().embed(['x']);
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('reorders a response whose indexes are out of order', async () => {
    server.replies.push((request, response) => {
      const body = embeddingsBody(request, DIMENSIONS);
      json(response, 200, { ...body, data: [...body.data].reverse() });
    });
    expect(await embedder().embed(['alpha', 'beta', 'gamma'])).toEqual([
      expected('alpha'),
      expected('beta'),
      expected('gamma'),
    ]);
  });

  it('retries a 429 after the Retry-After seconds', async () => {
    server.replies.push((_, response) =>
      json(response, 429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '2' }),
    );
    expect(await embedder().embed(['x'])).toEqual([expected('x')]);
    expect(server.requests).toHaveLength(2);
    expect(waits).toEqual([2000]);
  });

  it('caps the Retry-After wait at maxRetryDelayMs', async () => {
    server.replies.push((_, response) => json(response, 429, {}, { 'retry-after': '120' }));
    await embedder({ maxRetryDelayMs: 5000 }).embed(['x']);
    expect(waits).toEqual([5000]);
  });

  it('retries 500 three times with exponential backoff, then succeeds', async () => {
    for (let i = 0; i < 3; i += 1) {
      server.replies.push((_, response) => json(response, 500, { error: 'overloaded' }));
    }
    expect(await embedder({ maxRetries: 3 }).embed(['x'])).toEqual([expected('x')]);
    expect(server.requests).toHaveLength(4);
    expect(waits).toEqual([500, 1000, 2000]);
  });

  it('applies up to 25 % jitter to the backoff', async () => {
    server.replies.push((_, response) => json(response, 503, {}));
    server.replies.push((_, response) => json(response, 503, {}));
    await embedder({ random: () => 0.5, retryDelayMs: 1000 }).embed(['x']);
    expect(waits).toEqual([875, 1750]);
  });

  it('fails with EMBEDDER_FAILED and the status once maxRetries are used up', async () => {
    for (let i = 0; i < 4; i += 1) {
      server.replies.push((_, response) => json(response, 500, { error: 'overloaded' }));
    }
    const error = await failure(embedder({ maxRetries: 3 }).embed(['x']));
    expect(error.code).toBe('EMBEDDER_FAILED');
    expect(error.message).toBe(
      `embeddings request to ${url()} failed with HTTP 500: overloaded (after 4 attempts)`,
    );
    expect(error.details).toEqual({ url: url(), status: 500, attempts: 4 });
    expect(error.cause).toBeInstanceOf(Error);
    expect(server.requests).toHaveLength(4);
    expect(waits).toEqual([500, 1000, 2000]);
  });

  it.each([408, 409])(
    'retries a %i like a 429: after its Retry-After, else with backoff',
    async (status) => {
      server.replies.push((_, response) => json(response, status, {}, { 'retry-after': '2' }));
      server.replies.push((_, response) => json(response, status, { error: 'try again' }));
      expect(await embedder().embed(['x'])).toEqual([expected('x')]);
      expect(server.requests).toHaveLength(3);
      expect(waits).toEqual([2000, 1000]);
    },
  );

  it.each([400, 404, 410, 422])('does not retry a %i', async (status) => {
    server.replies.push((_, response) => json(response, status, { error: 'no' }));
    const error = await failure(embedder().embed(['x']));
    expect([error.message, error.details]).toEqual([
      `embeddings request to ${url()} failed with HTTP ${status}: no`,
      { url: url(), status, attempts: 1 },
    ]);
    expect(server.requests).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('does not retry a 400, and quotes the server message', async () => {
    server.replies.push((_, response) =>
      json(response, 400, {
        error: { message: "'input' must not be empty", type: 'invalid_request_error' },
      }),
    );
    const error = await failure(embedder().embed(['']));
    expect(error.code).toBe('EMBEDDER_FAILED');
    expect(error.message).toBe(
      `embeddings request to ${url()} failed with HTTP 400: 'input' must not be empty`,
    );
    expect(server.requests).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('quotes a body that is not JSON, flattened and cut to 300 characters', async () => {
    server.replies.push((_, response) => {
      response.writeHead(502, { 'content-type': 'text/html' });
      response.end(`<html>\n<body>Bad gateway ${'x'.repeat(400)}</body>\n</html>`);
    });
    const error = await failure(embedder({ maxRetries: 0 }).embed(['x']));
    expect(error.message).toBe(
      `embeddings request to ${url()} failed with HTTP 502: ${`<html> <body>Bad gateway ${'x'.repeat(400)}`.slice(0, 300)}…`,
    );
  });

  it('shows a JSON body without a message as it is, and no body as nothing', async () => {
    server.replies.push((_, response) => json(response, 404, { object: 'error' }));
    server.replies.push((_, response) => {
      response.writeHead(403);
      response.end();
    });
    const embedderWithoutRetries = embedder({ maxRetries: 0 });
    expect((await failure(embedderWithoutRetries.embed(['x']))).message).toBe(
      `embeddings request to ${url()} failed with HTTP 404: {"object":"error"}`,
    );
    expect((await failure(embedderWithoutRetries.embed(['x']))).message).toBe(
      `embeddings request to ${url()} failed with HTTP 403`,
    );
  });

  it('fails with EMBEDDER_FAILED within timeoutMs when the server never answers', async () => {
    server.replies.push(() => {});
    const started = performance.now();
    const error = await failure(embedder({ timeoutMs: 100, maxRetries: 0 }).embed(['x']));
    const elapsed = performance.now() - started;
    expect(error.code).toBe('EMBEDDER_FAILED');
    expect(error.message).toBe(`embeddings request to ${url()} timed out after 100 ms`);
    // Far below anything else that could end it; not tight, as a loaded machine is slow.
    expect(elapsed).toBeGreaterThanOrEqual(90);
    expect(elapsed).toBeLessThan(5000);
  });

  it('retries a timeout like a network error', async () => {
    server.replies.push(() => {});
    // The retry has the same timeout: long enough for a loaded machine to answer it.
    expect(await embedder({ timeoutMs: 1000, maxRetries: 1 }).embed(['x'])).toEqual([
      expected('x'),
    ]);
    expect(server.requests).toHaveLength(2);
    expect(waits).toEqual([500]);
  });

  it('times out a response whose body never ends', async () => {
    server.replies.push((_, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"data": [');
    });
    const error = await failure(embedder({ timeoutMs: 100, maxRetries: 0 }).embed(['x']));
    expect(error.message).toBe(`embeddings request to ${url()} timed out after 100 ms`);
  });

  it('rejects a vector of the wrong length with DIMENSION_MISMATCH', async () => {
    const error = await failure(embedder({ dimensions: 8 }).embed(['x']));
    expect(error.code).toBe('DIMENSION_MISMATCH');
    expect(error.message).toBe(
      'model "test-model" returned a 16-dimensional vector, expected 8 (options.dimensions)',
    );
    expect(server.requests).toHaveLength(1);
  });

  it('rejects a vector shorter than dimensions with DIMENSION_MISMATCH as well', async () => {
    const error = await failure(embedder({ dimensions: 32 }).embed(['x']));
    expect([error.code, error.message, error.details]).toEqual([
      'DIMENSION_MISMATCH',
      'model "test-model" returned a 16-dimensional vector, expected 32 (options.dimensions)',
      { expected: 32, actual: 16 },
    ]);
  });

  it('fails with EMBEDDER_FAILED on a body that is not JSON, without retrying', async () => {
    server.replies.push((_, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"data": [{"index": 0, "embedding": [0.1,');
    });
    const error = await failure(embedder().embed(['x']));
    expect(error.code).toBe('EMBEDDER_FAILED');
    expect(error.message).toBe(
      `embeddings request to ${url()} answered HTTP 200 with a body that is not JSON`,
    );
    // Not V8's SyntaxError, whose message quotes the body around the fault.
    expect(String(error.cause)).toBe(`RequestFailure: ${error.message}`);
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    ['opens with', 'sk-test-secret-key-123', (key: string) => `${key} oops`],
    ['holds', 'sk-Q7vZpW2xL9mK4tRb', (key: string) => `{"data": [${key}]}`],
  ])(
    'puts no part of the key in an error when a body that is not JSON %s it',
    async (_, apiKey, body) => {
      // V8 quotes some 10 characters of the body ("sk-test-se"...): too short a part of the key
      // for the scrub, which looks for it whole.
      server.replies.push((__, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(body(apiKey));
      });
      const error = await failure(embedder({ apiKey }).embed(['x']));
      const message = `embeddings request to ${url()} answered HTTP 200 with a body that is not JSON`;
      expect([error.code, error.message, error.details]).toEqual([
        'EMBEDDER_FAILED',
        message,
        { url: url(), status: 200, attempts: 1 },
      ]);
      expect(String(error.cause)).toBe(`RequestFailure: ${message}`);
      // All a logged error prints, its causes included, but the stack frames' paths (…/test/…).
      const shown = inspect(error, { depth: 8 })
        .split('\n')
        .filter((line) => !/^\s+at /.test(line))
        .join('\n');
      const parts = Array.from({ length: apiKey.length - 3 }, (__, i) => apiKey.slice(i, i + 4));
      expect(parts.filter((part) => shown.includes(part))).toEqual([]);
    },
  );

  it.each([
    ['no data array', { object: 'list' }, 'has no "data" array'],
    [
      'too few embeddings',
      { data: [{ index: 0, embedding: vector }] },
      'has 1 embeddings for 2 texts',
    ],
    [
      'a duplicate index',
      {
        data: [
          { index: 1, embedding: vector },
          { index: 1, embedding: vector },
        ],
      },
      'has two embeddings with index 1',
    ],
    [
      'an index out of range',
      {
        data: [
          { index: 0, embedding: vector },
          { index: 2, embedding: vector },
        ],
      },
      'has an embedding with index 2',
    ],
    [
      'a base64 embedding',
      {
        data: [
          { index: 0, embedding: 'AAAA' },
          { index: 1, embedding: 'AAAA' },
        ],
      },
      'has an embedding (index 0) that is not an array of numbers',
    ],
    [
      'an array of strings as an embedding',
      {
        data: [
          { index: 0, embedding: vector.map(String) },
          { index: 1, embedding: vector },
        ],
      },
      'has an embedding (index 0) that is not an array of numbers',
    ],
    // JSON has no Infinity, but 1e39 is a JSON number, and Infinity as a 32-bit float.
    [
      'a value beyond the 32-bit float range',
      {
        data: [
          { index: 0, embedding: vector },
          { index: 1, embedding: [...vector.slice(1), -1e39] },
        ],
      },
      'has an embedding (index 1) with a value beyond the 32-bit float range',
    ],
    // Neither index names a slot, so accepting one would leave a hole in the result.
    [
      'a negative index',
      {
        data: [
          { index: -1, embedding: vector },
          { index: 1, embedding: vector },
        ],
      },
      'has an embedding with index -1',
    ],
    [
      'a fractional index',
      {
        data: [
          { index: 0.5, embedding: vector },
          { index: 1, embedding: vector },
        ],
      },
      'has an embedding with index 0.5',
    ],
  ])('fails with EMBEDDER_FAILED on a body with %s', async (_, body, problem) => {
    server.replies.push((__, response) => json(response, 200, body));
    const error = await failure(embedder().embed(['a', 'b']));
    expect(error.code).toBe('EMBEDDER_FAILED');
    expect(error.message).toBe(`embeddings response from ${url()} ${problem}`);
  });

  it('fails with EMBEDDER_FAILED when the connection is refused, after the retries', async () => {
    const port = await closedPort();
    const error = await failure(
      embedder({ baseURL: `http://127.0.0.1:${port}`, maxRetries: 2 }).embed(['x']),
    );
    expect(error.code).toBe('EMBEDDER_FAILED');
    expect(error.message).toBe(
      `embeddings request to http://127.0.0.1:${port}/v1/embeddings failed: connect ECONNREFUSED 127.0.0.1:${port} (after 3 attempts)`,
    );
    expect(error.cause).toBeInstanceOf(TypeError);
    expect(waits).toEqual([500, 1000]);
  });

  it('never puts the API key or the query of the URL in an error message', async () => {
    server.replies.push((request, response) =>
      json(response, 401, {
        error: { message: `Incorrect API key provided: ${request.headers.authorization}` },
      }),
    );
    const error = await failure(
      embedder({
        baseURL: `${server.baseURL}/v1?api-key=sk-secret-key#fragment`,
        apiKey: 'sk-secret-key',
      }).embed(['x']),
    );
    expect(error.message).toBe(
      `embeddings request to ${url()} failed with HTTP 401: Incorrect API key provided: Bearer [redacted]`,
    );
    expect(JSON.stringify(error.details)).not.toContain('secret');
    // Nor anywhere a logged error prints: its causes included.
    expect(inspect(error, { depth: 8 })).not.toContain('sk-secret-key');
    expect(server.requests[0]?.path).toBe('/v1/embeddings?api-key=sk-secret-key');
  });

  it('hides a key or a header secret even where the message is cut short', async () => {
    const apiKey = `sk-proj-${'A1b2C3d4E5'.repeat(5)}`;
    server.replies.push((request, response) =>
      json(response, 401, {
        error: {
          message: `${'x'.repeat(270)} key: ${request.headers.authorization}, proxy: ${request.headers['x-proxy-key']}`,
        },
      }),
    );
    const error = await failure(
      embedder({ apiKey, headers: { 'x-proxy-key': 'proxy-SECRET-1234' } }).embed(['x']),
    );
    expect(error.message).toBe(
      `embeddings request to ${url()} failed with HTTP 401: ${'x'.repeat(270)} key: Bearer [redacted], proxy…`,
    );
    expect(inspect(error, { depth: 8 })).not.toMatch(/A1b2C3|proxy-SECRET/);
  });

  it('hides a key the server escaped in its JSON (\\/) even where the message is cut short', async () => {
    // PHP's json_encode, for one, writes "/" as "\/": the raw body does not hold the key as it is.
    const apiKey = 'sk-AbC/dEf+1234567890==';
    const escaped = apiKey.replace('/', '\\/');
    server.replies.push((_, response) => {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(`{"error":{"message":"${'x'.repeat(270)} bad key ${escaped}"}}`);
    });
    server.replies.push((_, response) => {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(`{"error":{"message":"bad key ${escaped}"}}`);
    });
    const withKey = embedder({ apiKey });
    const cut = await failure(withKey.embed(['x']));
    expect(cut.message).toBe(
      `embeddings request to ${url()} failed with HTTP 401: ${'x'.repeat(270)} bad key [redacted]`,
    );
    expect(inspect(cut, { depth: 8 })).not.toContain('AbC');
    const whole = await failure(withKey.embed(['x']));
    expect(whole.message).toBe(
      `embeddings request to ${url()} failed with HTTP 401: bad key [redacted]`,
    );
  });

  it('follows no redirect, which would carry the key, the headers and the texts elsewhere', async () => {
    const elsewhere = await startEmbeddingsServer(DIMENSIONS);
    try {
      server.replies.push((_, response) => {
        response.writeHead(307, { location: `${elsewhere.baseURL}/v1/embeddings` });
        response.end();
      });
      const error = await failure(
        embedder({ apiKey: 'sk-secret-key', headers: { 'api-key': 'azure-SECRET' } }).embed(['x']),
      );
      expect([error.code, error.message, error.details.status]).toEqual([
        'EMBEDDER_FAILED',
        `embeddings request to ${url()} was redirected (HTTP 307); redirects are not followed, so that the key and the texts go nowhere else: give the final URL as baseURL`,
        307,
      ]);
      expect([server.requests.length, elsewhere.requests.length]).toEqual([1, 0]);
    } finally {
      await elsewhere.close();
    }
  });

  it('retries a 429 after the Retry-After date', async () => {
    const inTwoMinutes = new Date(Date.now() + 120_000).toUTCString();
    server.replies.push((_, response) => json(response, 429, {}, { 'retry-after': inTwoMinutes }));
    await embedder({ maxRetryDelayMs: 600_000 }).embed(['x']);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(110_000);
    expect(waits[0]).toBeLessThanOrEqual(120_000);
  });

  it('retries after retry-after-ms, which wins over retry-after, and 0 means at once', async () => {
    server.replies.push((_, response) =>
      json(response, 429, {}, { 'retry-after-ms': '250', 'retry-after': '7' }),
    );
    // 0 is a wait the server asked for, not an unreadable header: no backoff.
    server.replies.push((_, response) => json(response, 429, {}, { 'retry-after-ms': '0' }));
    await embedder().embed(['x']);
    expect(waits).toEqual([250, 0]);
  });

  it('retries at once after a Retry-After date already past, and reads fractional seconds', async () => {
    const aMinuteAgo = new Date(Date.now() - 60_000).toUTCString();
    server.replies.push((_, response) => json(response, 429, {}, { 'retry-after': aMinuteAgo }));
    server.replies.push((_, response) => json(response, 503, {}, { 'retry-after': '1.5' }));
    await embedder().embed(['x']);
    expect(waits).toEqual([0, 1500]);
  });

  it('caps the exponential backoff at maxRetryDelayMs', async () => {
    for (let i = 0; i < 3; i += 1) server.replies.push((_, response) => json(response, 500, {}));
    await embedder({ retryDelayMs: 1000, maxRetryDelayMs: 1500 }).embed(['x']);
    expect(waits).toEqual([1000, 1500, 1500]);
  });

  it('retries 3 times by default, and caps a Retry-After at 30 seconds by default', async () => {
    server.replies.push((_, response) => json(response, 429, {}, { 'retry-after': '120' }));
    for (let i = 0; i < 3; i += 1) server.replies.push((_, response) => json(response, 500, {}));
    const error = await failure(embedder().embed(['x']));
    expect([error.code, error.details.attempts]).toEqual(['EMBEDDER_FAILED', 4]);
    expect(server.requests).toHaveLength(4);
    expect(waits).toEqual([30_000, 1000, 2000]);
  });

  it('keeps a header value of exactly 8 characters out of the message, as the README says', async () => {
    server.replies.push((request, response) =>
      json(response, 403, { error: `unknown tenant ${request.headers['x-tenant']}` }),
    );
    const error = await failure(embedder({ headers: { 'x-tenant': 'Tq9xW2vB' } }).embed(['x']));
    expect(error.message).toBe(
      `embeddings request to ${url()} failed with HTTP 403: unknown tenant [redacted]`,
    );
  });

  it('keeps an API key that is part of the URL path out of the message', async () => {
    // Some gateways take the key in the path; the message names the URL, so it is scrubbed too.
    const error = await failure(
      embedder({
        baseURL: `${server.baseURL}/sk-path-secret/v1`,
        apiKey: 'sk-path-secret',
        maxRetries: 0,
      }).embed(['x']),
    );
    expect(error.message).toBe(
      `embeddings request to ${server.baseURL}/[redacted]/v1/embeddings failed with HTTP 404: not found`,
    );
  });

  it.each([
    ['as it is', 'sk-path-secret', 'sk-path-secret'],
    ['escaped in the URL', 'sk path secret', 'sk%20path%20secret'],
  ])(
    'keeps an API key in the URL path (%s) out of the details and out of a malformed response error',
    async (_, apiKey, inPath) => {
      const gateway = `https://gateway.invalid/${inPath}/v1`;
      const viaGateway = embedder({
        baseURL: `https://gateway.invalid/${apiKey}/v1`,
        apiKey,
        maxRetries: 0,
        fetch: (url, init) => fetch(url.replace(gateway, `${server.baseURL}/v1`), init),
      });
      const shown = 'https://gateway.invalid/[redacted]/v1/embeddings';
      server.replies.push((_, response) => json(response, 200, { object: 'list' }));
      const malformed = await failure(viaGateway.embed(['x']));
      expect([malformed.message, malformed.details]).toEqual([
        `embeddings response from ${shown} has no "data" array`,
        { url: shown },
      ]);
      server.replies.push((_, response) => json(response, 500, { error: 'down' }));
      const failed = await failure(viaGateway.embed(['x']));
      expect([failed.message, failed.details]).toEqual([
        `embeddings request to ${shown} failed with HTTP 500: down`,
        { url: shown, status: 500, attempts: 1 },
      ]);
    },
  );

  it('serves concurrent embed calls independently', async () => {
    const instance = embedder();
    const [a, b] = await Promise.all([instance.embed(['one']), instance.embed(['two', 'three'])]);
    expect(a).toEqual([expected('one')]);
    expect(b).toEqual([expected('two'), expected('three')]);
  });
});
