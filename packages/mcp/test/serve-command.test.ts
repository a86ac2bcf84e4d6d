import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { serve } from '../src/cli/commands/serve.js';
import { onCleanup, tempDir } from './fixture.js';

/** A port something else listens on, for the rest of the test. */
async function busyPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as { port: number }).port;
}

const signalListeners = () => process.listenerCount('SIGINT') + process.listenerCount('SIGTERM');

describe('mnemo serve, in process', () => {
  it('leaves no signal listener behind when the HTTP server cannot start', async () => {
    const dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(
      tokens,
      JSON.stringify({ tokens: [{ token: 'a-token-of-16-chars-or-more', agent: 'a' }] }),
    );
    const port = await busyPort();
    const before = signalListeners();
    const stderr = new PassThrough();
    const io = { stdin: new PassThrough(), stdout: new PassThrough(), stderr };
    const argv = ['--transport', 'http', '--tokens', tokens, '--port', String(port)];
    await expect(serve([...argv, '--store', 'duckdb::memory:'], io)).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });
    expect(signalListeners()).toBe(before);
  });

  it('leaves no signal listener behind over stdio once stdin closes', async () => {
    const before = signalListeners();
    const stdin = new PassThrough();
    const io = { stdin, stdout: new PassThrough(), stderr: new PassThrough() };
    const served = serve(['--agent', 'a', '--store', 'duckdb::memory:'], io);
    stdin.end();
    await expect(served).resolves.toBe(0);
    expect(signalListeners()).toBe(before);
  });

  it('over stdio, stops when stdout fails: exit 0 for a client gone (EPIPE), 1 for anything else, said on stderr', async () => {
    for (const [code, exit, said] of [
      ['EPIPE', 0, ''],
      ['EIO', 1, 'mnemo: serve: writing to stdout failed: i/o error (EIO)\n'],
    ] as const) {
      const before = signalListeners();
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      let logged = '';
      stderr.on('data', (chunk: Buffer) => {
        logged += chunk.toString();
      });
      const io = { stdin: new PassThrough(), stdout, stderr };
      const served = serve(['--agent', 'a', '--store', 'duckdb::memory:'], io);
      await new Promise((started) => stderr.once('data', started));
      stdout.destroy(Object.assign(new Error('i/o error'), { code }));
      expect(await served).toBe(exit);
      expect(logged.split('\n').slice(1).join('\n')).toBe(said);
      expect([signalListeners(), stdout.listenerCount('error')]).toEqual([before, 0]);
    }
  });
});
