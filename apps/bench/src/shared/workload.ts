import { type Conversation, loadLocomoFile } from '../recall/loader.js';
import { type DataFileInfo, dataFileInfo } from './machine.js';

/** The LoCoMo file the write and latency benchmarks read when `--data` is not given. */
export const DEFAULT_LOCOMO = '/work/shared/data/locomo/locomo-dev.json';

/** Texts and questions taken from a LoCoMo file, with the file's identity. */
export interface Workload {
  /** Every dialogue turn's content (`"<speaker>: <text>"`, see `Turn.content`), in file order. */
  turns: string[];
  /** Every scored question (categories 1–4), in file order. */
  questions: string[];
  data: DataFileInfo & { turnsInFile: number; questionsInFile: number };
}

/** Loads the turns and questions of a LoCoMo file (bad files are `UsageError`s). */
export async function loadWorkload(path: string): Promise<Workload> {
  const { conversations } = await loadLocomoFile(path);
  const info = await dataFileInfo(path);
  const turns = conversations.flatMap((c: Conversation) => c.turns.map((t) => t.content));
  const questions = conversations.flatMap((c: Conversation) => c.questions.map((q) => q.question));
  return {
    turns,
    questions,
    data: { ...info, turnsInFile: turns.length, questionsInFile: questions.length },
  };
}

/**
 * `n` distinct texts: record i is turn `i mod T` with the suffix ` #<i>`, so
 * the turns repeat as often as needed and no two texts are equal (nothing is
 * deduplicated, even turns the file itself repeats, like "Bye!").
 */
export function makeTexts(turns: readonly string[], n: number): string[] {
  if (turns.length === 0) throw new Error('the data file has no turns');
  return Array.from({ length: n }, (_, i) => `${turns[i % turns.length]} #${i}`);
}

/** `count` items of `items`, evenly spread over the list (cycling when it is shorter). */
export function spread<T>(items: readonly T[], count: number): T[] {
  if (items.length === 0) throw new Error('nothing to pick from');
  if (items.length <= count) {
    return Array.from({ length: count }, (_, i) => items[i % items.length] as T);
  }
  return Array.from(
    { length: count },
    (_, i) => items[Math.floor((i * items.length) / count)] as T,
  );
}
