import { MnemoError } from '@mnemo/core';
import { VERSION } from '../version.js';
import { type CliIo, write } from './output.js';
import { parseStoreSpec, redactSecrets, type StoreSpec } from './store-spec.js';
import { USAGE } from './usage.js';
import { CliFailure, UsageError } from './usage-error.js';

type Command = (argv: readonly string[], io: CliIo) => Promise<number>;

// Loaded on demand: only `serve` needs the MCP SDK, and starting fast matters in scripts.
const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: async () => (await import('./commands/serve.js')).serve,
  remember: async () => (await import('./commands/remember.js')).remember,
  recall: async () => (await import('./commands/recall.js')).recall,
  plans: async () => (await import('./commands/plans.js')).plans,
  'audit verify': async () => (await import('./commands/audit-verify.js')).auditVerify,
  export: async () => (await import('./commands/export.js')).exportCommand,
  import: async () => (await import('./commands/import.js')).importCommand,
  'purge-expired': async () => (await import('./commands/purge-expired.js')).purgeExpiredCommand,
};

/** Runs the CLI on `argv` (without `node` and the script) and returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [first, second] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    await write(first === undefined ? io.stderr : io.stdout, USAGE.main as string);
    return first === undefined ? 2 : 0;
  }
  if (first === '--version' || first === '-v') {
    await write(io.stdout, `${VERSION}\n`);
    return 0;
  }
  let name = first;
  let rest = argv.slice(1);
  if (first === 'audit') {
    if (second === undefined || second === '--help' || second === '-h') {
      await write(second === undefined ? io.stderr : io.stdout, USAGE['audit verify'] as string);
      return second === undefined ? 2 : 0;
    }
    name = `audit ${second}`;
    rest = argv.slice(2);
  }
  const load = COMMANDS[name];
  if (load === undefined) {
    await write(io.stderr, `mnemo: unknown command '${name}'\n\n${USAGE.main}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    await write(io.stdout, USAGE[name] as string);
    return 0;
  }
  try {
    return await (await load())(rest, io);
  } catch (error) {
    const spec = storeIn(rest);
    if (error instanceof UsageError) {
      await write(
        io.stderr,
        `mnemo: ${redactSecrets(error.message, spec)}\nRun 'mnemo ${name} --help' for usage.\n`,
      );
      return 2;
    }
    if (MnemoError.isInstance(error)) {
      await write(io.stderr, `mnemo: ${error.code}: ${redactSecrets(error.message, spec)}\n`);
      return error.code === 'INVALID_INPUT' ? 2 : 1;
    }
    if (error instanceof CliFailure || isSystemError(error)) {
      // The operating system's word for it (ENOSPC, EADDRINUSE…) is the message; no stack.
      await write(io.stderr, `mnemo: ${redactSecrets(error.message, spec)}\n`);
      return 1;
    }
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    await write(io.stderr, `mnemo: unexpected error: ${redactSecrets(message, spec)}\n`);
    return 1;
  }
}

/** An error of a system call (a file, a socket, a pipe), as Node reports them. */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  return (
    error instanceof Error &&
    typeof (error as NodeJS.ErrnoException).code === 'string' &&
    typeof (error as NodeJS.ErrnoException).syscall === 'string'
  );
}

/** The `--store` among the arguments, to mask its password in messages. */
function storeIn(argv: readonly string[]): StoreSpec | undefined {
  const index = argv.findIndex((arg) => arg === '--store' || arg.startsWith('--store='));
  if (index < 0) return undefined;
  const arg = argv[index] as string;
  const text = arg.startsWith('--store=') ? arg.slice('--store='.length) : argv[index + 1];
  try {
    return text === undefined ? undefined : parseStoreSpec(text, undefined);
  } catch {
    return undefined;
  }
}
