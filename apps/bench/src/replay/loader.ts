import { UsageError } from '../shared/errors.js';
import { readDataFile } from '../shared/json-file.js';

/**
 * Loading a file in the CLINC150 layout (Larson et al., 2019, `data_full.json`):
 * a JSON object whose `train`, `test` and optional `oos_test` are lists of
 * `[utterance, label]` pairs. Other keys (`val`, `oos_train`, `oos_val`) are
 * ignored. `train` utterances become plans, `test` and `oos_test` ones
 * queries; every `oos_test` query is out of scope whatever its label.
 */

/** An utterance and its intent label. */
export interface LabelledUtterance {
  utterance: string;
  label: string;
}

export interface ClincData {
  train: LabelledUtterance[];
  test: LabelledUtterance[];
  /** Empty when the file has no `oos_test`. */
  oosTest: LabelledUtterance[];
}

function readSplit(json: Record<string, unknown>, key: string): LabelledUtterance[] {
  const split = json[key];
  if (!Array.isArray(split))
    throw new UsageError(`--data: "${key}" must be a list of [utterance, label] pairs`);
  return split.map((pair, index) => {
    if (
      !Array.isArray(pair) ||
      pair.length !== 2 ||
      typeof pair[0] !== 'string' ||
      typeof pair[1] !== 'string' ||
      pair[0].trim() === ''
    ) {
      throw new UsageError(
        `--data: ${key}[${index}] must be [utterance, label]: two strings, the utterance not blank`,
      );
    }
    return { utterance: pair[0], label: pair[1] };
  });
}

/** Where to get CLINC150, for the message of a data file that is not there. */
export const CLINC150_SOURCE =
  'get CLINC150 from https://github.com/clinc/oos-eval (data/data_full.json, CC BY 3.0) and pass its path with --data';

/** Reads and checks a CLINC150-layout file; anything unusable is a `UsageError`. */
export async function loadClincFile(path: string): Promise<ClincData> {
  const json = await readDataFile(path, CLINC150_SOURCE);
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new UsageError(`--data: ${path} must hold a JSON object with "train" and "test"`);
  }
  const record = json as Record<string, unknown>;
  const train = readSplit(record, 'train');
  const test = readSplit(record, 'test');
  const oosTest = record.oos_test === undefined ? [] : readSplit(record, 'oos_test');
  if (train.length === 0)
    throw new UsageError('--data: "train" is empty: there is nothing to replay');
  if (test.length + oosTest.length === 0)
    throw new UsageError('--data: "test" and "oos_test" are empty: there is nothing to query');
  return { train, test, oosTest };
}
