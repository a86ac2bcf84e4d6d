#!/usr/bin/env node
import { brokenPipeHandled } from './cli/output.js';
import { runCli } from './cli/run-cli.js';

// A reader that stopped early (`mnemo export | head -1`): stop quietly, as a process killed
// by SIGPIPE would (exit 141), instead of crashing on the unhandled error. Unless the
// command handles it (`serve` over stdio: its client went away; it closes the store first).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' && !brokenPipeHandled.has(stream)) process.exit(141);
  });
}

process.exitCode = await runCli(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
});
