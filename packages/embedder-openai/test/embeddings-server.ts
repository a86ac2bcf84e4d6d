import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the server received, its body parsed. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: { model: string; input: string[]; encoding_format?: string; dimensions?: number };
}

/** Answers one request (or, to simulate a stuck server, never does). */
export type Reply = (request: ReceivedRequest, response: ServerResponse) => void;

/**
 * A deterministic embedding of `text`: each lower-cased word is hashed to a
 * dimension and a sign, and the sum is L2-normalized, so texts sharing words
 * have a positive cosine.
 */
export function vectorFor(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const digest = createHash('sha256').update(word).digest();
    const index = digest.readUInt32BE(0) % dimensions;
    vector[index] = (vector[index] ?? 0) + ((digest[4] ?? 0) & 1 ? 1 : -1);
  }
  const norm = Math.hypot(...vector);
  return norm > 0 ? vector.map((value) => value / norm) : vector;
}

/** Sends `body` as JSON with `status`. */
export function json(response: ServerResponse, status: number, body: unknown, headers = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

/** The answer of a well-behaved server: one vector per input, in order. */
export function embeddingsBody(request: ReceivedRequest, dimensions: number) {
  return {
    object: 'list',
    model: request.body.model,
    data: request.body.input.map((text, index) => ({
      object: 'embedding',
      index,
      embedding: vectorFor(text, dimensions),
    })),
    usage: { prompt_tokens: 0, total_tokens: 0 },
  };
}

/** A local `/v1/embeddings` server on 127.0.0.1 and a free port. */
export interface EmbeddingsServer {
  /** `http://127.0.0.1:<port>`. */
  baseURL: string;
  /** Every request received, in order. */
  requests: ReceivedRequest[];
  /** Replies used for the next requests, first in first out; when empty, the well-behaved answer. */
  replies: Reply[];
  close(): Promise<void>;
}

/** Starts the server; vectors have `dimensions` entries. */
export async function startEmbeddingsServer(dimensions = 16): Promise<EmbeddingsServer> {
  const requests: ReceivedRequest[] = [];
  const replies: Reply[] = [];
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const request: ReceivedRequest = {
        method: incoming.method ?? '',
        path: incoming.url ?? '',
        headers: incoming.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      };
      requests.push(request);
      if (new URL(request.path, 'http://localhost').pathname !== '/v1/embeddings') {
        json(response, 404, { error: 'not found' });
        return;
      }
      const reply =
        replies.shift() ?? ((_, res) => json(res, 200, embeddingsBody(request, dimensions)));
      reply(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    replies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port on 127.0.0.1 where nothing listens. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
