import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { MnemoError } from '@mnemo/core';
import { DTYPE_FILES, type Dtype } from './options.js';

/** What a usable model folder holds, read before the library is asked to load it. */
export interface ModelFolder {
  /** The weight format to load: the option, else the one `config.json` names, else `fp32`. */
  readonly dtype: Dtype;
}

const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'] as const;

function expectedFiles(dtype: Dtype): string {
  return `config.json, ${TOKENIZER_FILES.join(', ')} and ${DTYPE_FILES[dtype]}`;
}

function notConfigured(message: string, path: string, cause?: unknown): MnemoError {
  return new MnemoError('EMBEDDER_NOT_CONFIGURED', message, {
    cause,
    details: { modelPath: path },
  });
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** The dtype `config.json` asks for (`transformers.js_config.dtype`), if it is one we know. */
function configDtype(config: Readonly<Record<string, unknown>>): Dtype | undefined {
  const dtype = (config['transformers.js_config'] as { dtype?: unknown } | undefined)?.dtype;
  return typeof dtype === 'string' && Object.hasOwn(DTYPE_FILES, dtype)
    ? (dtype as Dtype)
    : undefined;
}

/**
 * Checks that `path` is a folder with a config, a tokenizer and the ONNX file
 * of the dtype, so that a missing piece is reported by name instead of as a
 * library error. `EMBEDDER_NOT_CONFIGURED` naming the path and the files.
 */
export async function checkModelFolder(
  path: string,
  dtype: Dtype | undefined,
): Promise<ModelFolder> {
  let folder: Awaited<ReturnType<typeof stat>>;
  try {
    folder = await stat(path);
  } catch (error) {
    throw notConfigured(
      `model folder ${path} does not exist; it should hold a sentence-embedding model exported to ONNX: ${expectedFiles(dtype ?? 'fp32')}`,
      path,
      error,
    );
  }
  if (!folder.isDirectory()) {
    throw notConfigured(
      `model path ${path} is not a folder; it should be a folder holding ${expectedFiles(dtype ?? 'fp32')}`,
      path,
    );
  }
  let config: Record<string, unknown> = {};
  const configPath = join(path, 'config.json');
  const hasConfig = await isFile(configPath);
  if (hasConfig) {
    try {
      const parsed: unknown = JSON.parse(await readFile(configPath, 'utf8'));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new Error('not a JSON object');
      }
      config = parsed as Record<string, unknown>;
    } catch (error) {
      throw notConfigured(
        `model folder ${path} has a config.json that is not a JSON object: ${(error as Error).message}`,
        path,
        error,
      );
    }
  }
  const chosen = dtype ?? configDtype(config) ?? 'fp32';
  const missing: string[] = hasConfig ? [] : ['config.json'];
  for (const file of [...TOKENIZER_FILES, DTYPE_FILES[chosen]]) {
    if (!(await isFile(join(path, file)))) missing.push(file);
  }
  if (missing.length > 0) {
    throw notConfigured(
      `model folder ${path} is missing ${missing.join(', ')}; it should hold ${expectedFiles(chosen)}`,
      path,
    );
  }
  return { dtype: chosen };
}
