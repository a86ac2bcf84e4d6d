#!/usr/bin/env node
import { MnemoError } from '@mnemo/core';
import { type DemoRunArgs, parseDemoArgs, USAGE } from './args.js';
import { runDemo } from './demo.js';
import { errorMessage } from './error-message.js';
import { formatReport } from './format-report.js';
import { createProgress } from './progress.js';
import { describeStore, redactSecrets } from './store-spec.js';
import { UsageError } from './usage-error.js';

/**
 * Runs the demo with `argv` and returns the exit code: 0 done, 2 bad arguments
 * or input files, 1 a store that cannot be used (unreachable server, wrong
 * password, a DuckDB file in a folder that does not exist) or anything
 * unexpected (including audit chains that do not verify). Errors are one line
 * on stderr, without a stack trace or the store's password.
 */
async function main(argv: readonly string[]): Promise<number> {
  let args: DemoRunArgs | undefined;
  try {
    const parsed = parseDemoArgs(argv);
    if (parsed.help) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    args = parsed;
    const report = await runDemo({
      corpus: args.corpus,
      queries: args.queries,
      store: args.store,
      keep: args.keep,
      threshold: args.threshold,
      agent: args.agent,
      progress: createProgress(process.stderr),
    });
    process.stdout.write(args.json ? `${JSON.stringify(report)}\n` : `${formatReport(report)}\n`);
    if (!report.audit.ok) {
      process.stderr.write('mnemo demo: the audit chains did not verify\n');
      return 1;
    }
    return 0;
  } catch (error) {
    const message = redactSecrets(errorMessage(error), args?.store);
    if (error instanceof UsageError) {
      process.stderr.write(`mnemo demo: ${message} (see --help)\n`);
      return 2;
    }
    if (MnemoError.hasCode(error, 'STORE_UNAVAILABLE') && args !== undefined) {
      // The store is named first; the stores start their messages with 'PostgreSQL: ' or 'DuckDB: '.
      const reason = message.replace(/^(PostgreSQL|DuckDB): /, '');
      process.stderr.write(
        `mnemo demo: store unavailable (${describeStore(args.store)}): ${reason}\n`,
      );
      return 1;
    }
    const code = MnemoError.isInstance(error) ? ` [${error.code}]` : '';
    process.stderr.write(`mnemo demo: unexpected error${code}: ${message}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
