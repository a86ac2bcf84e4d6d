#!/usr/bin/env node
import { MnemoError } from '@mnemo/core';
import { parseDemoArgs, USAGE } from './args.js';
import { runDemo } from './demo.js';
import { formatReport } from './format-report.js';
import { createProgress } from './progress.js';
import { UsageError } from './usage-error.js';

/**
 * Runs the demo with `argv` and returns the exit code: 0 done, 2 bad arguments
 * or input files, 1 anything unexpected (including audit chains that do not verify).
 */
async function main(argv: readonly string[]): Promise<number> {
  try {
    const args = parseDemoArgs(argv);
    if (args.help) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    const report = await runDemo({
      corpus: args.corpus,
      queries: args.queries,
      db: args.db,
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
    if (error instanceof UsageError) {
      process.stderr.write(`mnemo demo: ${error.message} (see --help)\n`);
      return 2;
    }
    const code = MnemoError.isInstance(error) ? ` [${error.code}]` : '';
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`mnemo demo: unexpected error${code}: ${message}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
