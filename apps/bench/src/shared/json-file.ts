import { readFile } from 'node:fs/promises';
import { UsageError } from './errors.js';

/**
 * The parsed JSON of the file given as `--data`; unreadable or not JSON is a
 * `UsageError`. `source` says where to get the data set; it ends the message
 * of a file that is not there.
 */
export async function readDataFile(path: string, source: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'it is a directory'
          : code === 'EACCES'
            ? 'permission denied'
            : (error as Error).message;
    throw new UsageError(
      `--data: cannot read ${path}: ${reason}${code === 'ENOENT' ? `; ${source}` : ''}`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--data: ${path} is not valid JSON: ${(error as Error).message}`);
  }
}
