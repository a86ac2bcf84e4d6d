import { crashRound } from '@mnemo/core/testing';
import { describe, expect, it } from 'vitest';

const ACK = { agentId: 'a', id: 'r1', contentHash: 'h1', content: 'first' };

describe('crashRound', () => {
  it('times the kill from the first acknowledged write, however long the writer takes to reach it', async () => {
    // A writer whose first write comes 400 ms after `ready`, well past the 50 ms kill time.
    const writer = `process.stdout.write('ready\\n');
      setTimeout(() => process.stdout.write('ack ' + ${JSON.stringify(JSON.stringify(ACK))} + '\\n'), 400);
      setInterval(() => {}, 1000);`;
    const acks = await crashRound({
      command: process.execPath,
      args: ['-e', writer],
      cwd: process.cwd(),
      killAfterMs: 50,
    });
    expect(acks).toEqual([ACK]);
  });

  it('fails when the writer exits by itself, with what it said on stderr', async () => {
    const round = crashRound({
      command: process.execPath,
      args: ['-e', "process.stderr.write('cannot open the store'); process.exit(3)"],
      cwd: process.cwd(),
      killAfterMs: 50,
    });
    await expect(round).rejects.toThrow(
      'the writer exited by itself (code 3, signal null):\ncannot open the store',
    );
  });
});
