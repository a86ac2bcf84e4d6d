import { readFile } from 'node:fs/promises';
import { UsageError } from './usage-error.js';

/** The questions of a queries file: one per line, trimmed; blank lines and lines starting with '#' are skipped. */
export function parseQuestions(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** Reads and parses a queries file. Throws `UsageError` when it cannot be read or holds no question. */
export async function loadQuestions(file: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'no such file'
        : (error as Error).message;
    throw new UsageError(`--queries: cannot read ${file}: ${reason}`);
  }
  const questions = parseQuestions(text);
  if (questions.length === 0) throw new UsageError(`--queries: no questions in ${file}`);
  return questions;
}
