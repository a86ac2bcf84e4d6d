import { type Output, processOutput } from './shared/output.js';

/** The benchmarks `bench <name>` knows. */
const BENCHMARKS: Record<
  string,
  { summary: string; run: (argv: readonly string[], output: Output) => Promise<number> }
> = {
  recall: {
    summary: 'LoCoMo retrieval: recall@k, hit@10, MRR and latency against in-process BM25',
    // Loaded on use: a benchmark's module pulls in the stores and their drivers.
    run: async (argv, output) => (await import('./recall/command.js')).recallCommand(argv, output),
  },
  remember: {
    summary:
      'write throughput: remember (sequential, 32 in flight), rememberMany, vs the raw driver',
    run: async (argv, output) =>
      (await import('./remember/command.js')).rememberCommand(argv, output),
  },
  latency: {
    summary: 'recall latency over N records per strategy, vs in-process BM25',
    run: async (argv, output) =>
      (await import('./latency/command.js')).latencyCommand(argv, output),
  },
  plans: {
    summary: 'plan lookup over N plans: recallPlan through the index vs a full scan',
    run: async (argv, output) => (await import('./plans/command.js')).plansCommand(argv, output),
  },
  replay: {
    summary:
      'plan replay on CLINC150-style intents: replay, correct and OOS false-hit rates per threshold',
    run: async (argv, output) => (await import('./replay/command.js')).replayCommand(argv, output),
  },
};

export const USAGE = `Usage: pnpm bench <name> [options]     (or: node apps/bench/dist/main.js <name> [options])

Benchmarks:
${Object.entries(BENCHMARKS)
  .map(([name, { summary }]) => `  ${name.padEnd(10)} ${summary}`)
  .join('\n')}

Run 'pnpm bench <name> --help' for a benchmark's options.`;

/** Dispatches `argv` (`<name> [options]`) and returns the exit code. */
export async function main(
  argv: readonly string[],
  output: Output = processOutput,
): Promise<number> {
  const args = argv[0] === '--' ? argv.slice(1) : argv;
  const [name, ...rest] = args;
  if (name === '-h' || name === '--help') {
    output.out(USAGE);
    return 0;
  }
  if (name === undefined) {
    output.err(`bench: name a benchmark; available: ${Object.keys(BENCHMARKS).join(', ')}`);
    return 2;
  }
  const benchmark = Object.hasOwn(BENCHMARKS, name) ? BENCHMARKS[name] : undefined;
  if (benchmark === undefined) {
    output.err(
      `bench: unknown benchmark '${name}'; available: ${Object.keys(BENCHMARKS).join(', ')}`,
    );
    return 2;
  }
  return benchmark.run(rest, output);
}
