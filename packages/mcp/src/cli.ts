#!/usr/bin/env node
import { runCli } from './cli/run-cli.js';

// A reader that stopped early (`mnemo export | head -1`): stop quietly, as a process killed
// by SIGPIPE would (exit 141), instead of crashing on the unhandled error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(141);
  });
}

process.exitCode = await runCli(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
});
