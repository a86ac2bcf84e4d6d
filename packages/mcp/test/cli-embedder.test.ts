import { readdirSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { cosineReference, createHashEmbedder } from '@mnemo/core/testing';
import { createTransformersEmbedder } from '@mnemo/embedder-transformers';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { writeTinyModel } from '../../embedder-transformers/test/tiny-model.js';
import { CLI, mnemo, mnemoAsync, ok, onCleanup, tempDir } from './fixture.js';

const DIMENSIONS = 16;
const hash = createHashEmbedder({ dimensions: DIMENSIONS });

interface EmbeddingsRequest {
  headers: IncomingHttpHeaders;
  body: { model: string; input: string[] };
}

/** An OpenAI-compatible `/v1/embeddings` server on loopback whose vectors are the hash embedder's. */
async function startEmbeddingsServer() {
  const requests: EmbeddingsRequest[] = [];
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      requests.push({ headers: incoming.headers, body });
      const vectors = await hash.embed(body.input);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          object: 'list',
          model: body.model,
          data: vectors.map((vector, index) => ({
            object: 'embedding',
            index,
            embedding: [...vector],
          })),
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

/** The score semantic recall gives: the cosine, rounded to 10 decimals. */
function score(a: readonly number[] | Float32Array, b: readonly number[] | Float32Array): number {
  const cosine = cosineReference(Float32Array.from(a), Float32Array.from(b));
  return Math.round(cosine * 1e10) / 1e10;
}

async function run(args: readonly string[], env: Record<string, string> = {}) {
  const result = await mnemoAsync(args, { env });
  if (result.code !== 0) {
    throw new Error(`mnemo ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  }
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

function hitsOf(result: Record<string, unknown>) {
  return (result.hits as { record: { content: string }; score: number }[]).map((hit) => [
    hit.record.content,
    hit.score,
  ]);
}

const TEXTS = [
  'the heron nests by the north pond',
  'fresh coffee at the market',
  'a heron fishing',
];

describe('mnemo --embedder (the built binary)', () => {
  it('openai:<url> embeds what remember stores and what recall asks, with the key from MNEMO_EMBEDDER_API_KEY', async () => {
    const server = await startEmbeddingsServer();
    const store = `duckdb:${join(tempDir(), 'openai.duckdb')}`;
    const embedder = [
      '--embedder',
      `openai:${server.url}`,
      '--embedding-model',
      'hash-16',
      '--embedding-dimensions',
      String(DIMENSIONS),
    ];
    const env = { MNEMO_EMBEDDER_API_KEY: 'sk-cli-test-key' };
    for (const text of TEXTS) {
      await run(['remember', text, '--agent', 'a', '--store', store, ...embedder, '--json'], env);
    }
    const query = 'heron pond';
    const semantic = await run(
      [
        'recall',
        query,
        '--agent',
        'a',
        '--store',
        store,
        '--strategy',
        'semantic',
        ...embedder,
        '--json',
      ],
      env,
    );
    const [q, ...vectors] = await hash.embed([query, ...TEXTS]);
    const expected = TEXTS.map((text, i) => [
      text,
      score(q as Float32Array, vectors[i] as Float32Array),
    ]).sort((x, y) => (y[1] as number) - (x[1] as number));
    expect(semantic.strategy).toBe('semantic');
    expect(hitsOf(semantic)).toEqual(expected);
    expect(expected.map(([text]) => text)).toEqual([TEXTS[0], TEXTS[2], TEXTS[1]]);

    // `auto` is hybrid once there is an embedder.
    const auto = await run(
      ['recall', query, '--agent', 'a', '--store', store, ...embedder, '--json'],
      env,
    );
    expect(auto.strategy).toBe('hybrid');

    expect(server.requests.map((request) => request.body)).toEqual([
      ...TEXTS.map((text) => ({ model: 'hash-16', input: [text], encoding_format: 'float' })),
      { model: 'hash-16', input: [query], encoding_format: 'float' },
      { model: 'hash-16', input: [query], encoding_format: 'float' },
    ]);
    expect(new Set(server.requests.map((request) => request.headers.authorization))).toEqual(
      new Set(['Bearer sk-cli-test-key']),
    );

    // Without the embedder, the same store recalls lexically and refuses semantic recall.
    const plain = await run(['recall', query, '--agent', 'a', '--store', store, '--json']);
    expect(plain.strategy).toBe('lexical');
    const refused = mnemo([
      'recall',
      query,
      '--agent',
      'a',
      '--store',
      store,
      '--strategy',
      'semantic',
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^mnemo: EMBEDDER_NOT_CONFIGURED: /);
  });

  it('transformers:<folder> runs a local model folder', async () => {
    const model = writeTinyModel(join(tempDir(), 'tiny'));
    const store = `duckdb:${join(tempDir(), 'local.duckdb')}`;
    const embedder = ['--embedder', `transformers:${model}`];
    const texts = ['cat dog', 'coffee tea', 'kitten rain'];
    for (const text of texts) {
      await run(['remember', text, '--agent', 'a', '--store', store, ...embedder, '--json']);
    }
    const result = await run([
      'recall',
      'pet',
      '--agent',
      'a',
      '--store',
      store,
      '--strategy',
      'semantic',
      '--limit',
      '3',
      ...embedder,
      '--json',
    ]);
    // The same model in this process gives the vectors the scores come from.
    const local = createTransformersEmbedder({ modelPath: model });
    onCleanup(() => local.close());
    const [q, ...vectors] = await local.embed(['pet', ...texts]);
    expect(hitsOf(result)).toEqual(
      texts
        .map((text, i) => [text, score(q as Float32Array, vectors[i] as Float32Array)])
        .sort((x, y) => (y[1] as number) - (x[1] as number)),
    );
    expect(hitsOf(result).map(([text]) => text)).toEqual(['cat dog', 'kitten rain', 'coffee tea']);
  });

  it('mnemo serve --embedder answers recall with hybrid search by default', async () => {
    const server = await startEmbeddingsServer();
    const store = `duckdb:${join(tempDir(), 'serve.duckdb')}`;
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        CLI,
        'serve',
        '--agent',
        'a',
        '--store',
        store,
        '--embedder',
        `openai:${server.url}`,
        '--embedding-model',
        'hash-16',
        '--embedding-dimensions',
        String(DIMENSIONS),
      ],
      cwd: tempDir(),
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const client = new Client({ name: 'mnemo-embedder-test', version: '1.0.0' });
    await client.connect(transport);
    onCleanup(() => client.close());
    for (const content of TEXTS) await ok(client, 'mnemo.remember', { content });
    const recalled = await ok(client, 'mnemo.recall', { query: 'heron pond', limit: 2 });
    expect(recalled.strategy).toBe('hybrid');
    expect(
      (recalled.hits as { record: { content: string } }[]).map((hit) => hit.record.content),
    ).toEqual([TEXTS[0], TEXTS[2]]);
    expect(server.requests).toHaveLength(TEXTS.length + 1);
    expect(stderr).toContain(`, embedder hash-16 (${DIMENSIONS} dimensions) at ${server.url}`);
  });

  it('an embedder that fails fails the command and writes nothing', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const store = `duckdb:${join(tempDir(), 'down.duckdb')}`;
    const url = `http://127.0.0.1:${port}`;
    const failed = await mnemoAsync([
      'remember',
      'the heron nests by the north pond',
      '--agent',
      'a',
      '--store',
      store,
      '--embedder',
      `openai:${url}`,
      '--embedding-model',
      'm',
      '--embedding-dimensions',
      '4',
    ]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toBe(
      `mnemo: EMBEDDER_FAILED: embeddings request to ${url}/v1/embeddings failed: connect ECONNREFUSED 127.0.0.1:${port} (after 4 attempts)\n`,
    );
    const listed = await run(['recall', 'heron', '--agent', 'a', '--store', store, '--json']);
    expect(listed.hits).toEqual([]);
    const local = await mnemoAsync([
      'recall',
      'heron',
      '--agent',
      'a',
      '--store',
      store,
      '--embedder',
      `transformers:${join(tempDir(), 'no-model')}`,
    ]);
    expect(local.code).toBe(1);
    expect(local.stderr).toMatch(
      /^mnemo: EMBEDDER_NOT_CONFIGURED: model folder .* does not exist;/,
    );
  });

  it('keeps a key in the URL path out of an embedder failure, on stderr and in a tool error', async () => {
    const refusing = createServer((_request, response) => {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: 'invalid key' } }));
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    onCleanup(() => new Promise<void>((resolve) => refusing.close(() => resolve())));
    const origin = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}`;
    // As some gateways take it: the key in the path, none in MNEMO_EMBEDDER_API_KEY.
    const embedder = [
      '--embedder',
      `openai:${origin}/api/sk-path-key-0123456789`,
      '--embedding-model',
      'm',
      '--embedding-dimensions',
      '4',
    ];
    const message = `EMBEDDER_FAILED: embeddings request to ${origin}/api/[redacted]/v1/embeddings failed with HTTP 401: invalid key`;
    const store = `duckdb:${join(tempDir(), 'gateway.duckdb')}`;
    const failed = await mnemoAsync([
      'remember',
      'x',
      '--agent',
      'a',
      '--store',
      store,
      ...embedder,
    ]);
    expect({ code: failed.code, stderr: failed.stderr }).toEqual({
      code: 1,
      stderr: `mnemo: ${message}\n`,
    });

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'serve', '--agent', 'a', '--store', store, ...embedder],
      cwd: tempDir(),
      stderr: 'pipe',
    });
    const client = new Client({ name: 'mnemo-embedder-test', version: '1.0.0' });
    await client.connect(transport);
    onCleanup(() => client.close());
    const result = await client.callTool({ name: 'mnemo.remember', arguments: { content: 'x' } });
    expect(result.isError).toBe(true);
    const [, code, text] = /^(\w+): (.*)$/.exec(message) as string[];
    expect(JSON.parse((result.content as { text: string }[])[0]?.text as string)).toEqual({
      error: { code, message: text },
    });
  });

  it('names MNEMO_EMBEDDER_API_KEY when the key cannot be sent, and opens no store', async () => {
    const dir = tempDir();
    // A key read from a file saved with CRLF keeps its carriage return.
    const result = await mnemoAsync(
      [
        'remember',
        'x',
        '--agent',
        'a',
        '--store',
        `duckdb:${join(dir, 'key.duckdb')}`,
        '--embedder',
        'openai:http://127.0.0.1:1',
        '--embedding-model',
        'm',
        '--embedding-dimensions',
        '4',
      ],
      { env: { MNEMO_EMBEDDER_API_KEY: 'sk-cli-test-key\r' } },
    );
    expect({ code: result.code, stderr: result.stderr, files: readdirSync(dir) }).toEqual({
      code: 2,
      stderr:
        'mnemo: INVALID_INPUT: the environment variable MNEMO_EMBEDDER_API_KEY is not a valid header value (a control character?)\n',
      files: [],
    });
  });

  it('refuses incomplete or misplaced embedder options before opening the store', () => {
    const cases: [string[], string][] = [
      [
        ['--embedder', 'cohere:x'],
        "--embedder: unknown embedder 'cohere' (expected openai:<url> or transformers:<folder>)",
      ],
      [
        ['--embedder', 'openai'],
        '--embedder openai:<url> needs the server URL, e.g. openai:http://127.0.0.1:11434',
      ],
      [
        ['--embedder', 'openai:ftp://h'],
        '--embedder openai:<url> needs an http:// or https:// URL, e.g. openai:http://127.0.0.1:11434',
      ],
      [
        ['--embedder', 'openai:http://127.0.0.1:1', '--embedding-dimensions', '8'],
        '--embedding-model is required with --embedder openai:<url>',
      ],
      [
        ['--embedder', 'openai:http://127.0.0.1:1', '--embedding-model', 'm'],
        '--embedding-dimensions is required with --embedder openai:<url>',
      ],
      [
        [
          '--embedder',
          'openai:http://127.0.0.1:1',
          '--embedding-model',
          'm',
          '--embedding-dimensions',
          '0',
        ],
        "--embedding-dimensions must be an integer from 1 to 9007199254740991, got '0'",
      ],
      [
        // Number() reads 1e20 as an integer; the embedders take safe integers only.
        [
          '--embedder',
          'openai:http://127.0.0.1:1',
          '--embedding-model',
          'm',
          '--embedding-dimensions',
          '1e20',
        ],
        "--embedding-dimensions must be an integer from 1 to 9007199254740991, got '1e20'",
      ],
      [
        // The embedder refuses credentials in its URL; the flag is named, the password is not.
        [
          '--embedder',
          'openai:http://user:hunter2-secret@127.0.0.1:1',
          '--embedding-model',
          'm',
          '--embedding-dimensions',
          '8',
        ],
        '--embedder openai:<url> must not hold a user or password; put the API key in the environment variable MNEMO_EMBEDDER_API_KEY',
      ],
      [['--embedder', 'transformers:'], '--embedder transformers:<folder> needs the model folder'],
      [
        ['--embedder', 'transformers:./m', '--embedding-model', 'm'],
        '--embedding-model is for openai:<url>; a transformers model is its folder',
      ],
      [['--embedding-model', 'm'], '--embedding-model needs --embedder'],
      [['--embedding-dimensions', '8'], '--embedding-dimensions needs --embedder'],
    ];
    for (const [args, message] of cases) {
      const cwd = tempDir();
      const result = mnemo(['recall', 'q', '--agent', 'a', ...args], { cwd });
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({
        args,
        code: 2,
        stderr: `mnemo: ${message}\nRun 'mnemo recall --help' for usage.\n`,
      });
    }
    // Commands that never embed do not take the option.
    const plans = mnemo(['plans', '--embedder', 'openai:http://127.0.0.1:1']);
    expect(plans.code).toBe(2);
    expect(plans.stderr).toMatch(/^mnemo: plans: Unknown option '--embedder'/);
  });
});
