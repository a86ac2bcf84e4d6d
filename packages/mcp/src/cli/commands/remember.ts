import { parseArgs } from 'node:util';
import { type JsonObject, MEMORY_TYPES, SCOPES } from '@mnemo/core';
import { ifDefined } from '../../if-defined.js';
import {
  COMMON_OPTIONS,
  checkId,
  namingArguments,
  onePositional,
  parseChoice,
  parseDate,
  parseNumber,
  required,
  storeOf,
  usageErrors,
} from '../args.js';
import { EMBEDDER_OPTIONS, parseEmbedderSpec } from '../embedder-spec.js';
import { type CliIo, fields, json, write } from '../output.js';
import { withEngine } from '../store-spec.js';
import { UsageError } from '../usage-error.js';

export const REMEMBER_OPTIONS = {
  agent: { type: 'string' },
  org: { type: 'string' },
  type: { type: 'string' },
  scope: { type: 'string' },
  importance: { type: 'string' },
  tag: { type: 'string', multiple: true },
  metadata: { type: 'string' },
  thread: { type: 'string' },
  source: { type: 'string' },
  'expires-at': { type: 'string' },
} as const;

/** The argument behind each field of `remember`'s input, for its errors. */
const REMEMBER_ARGUMENTS = {
  content: '<content>',
  memoryType: '--type',
  scope: '--scope',
  importance: '--importance',
  tags: '--tag',
  metadata: '--metadata',
  threadId: '--thread',
  sourceType: '--source',
  expiresAt: '--expires-at',
};

/** `mnemo remember <content> --agent <id>`: stores one memory as that agent. */
export async function remember(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = usageErrors('remember', () =>
    parseArgs({
      args: [...argv],
      options: { ...COMMON_OPTIONS, ...REMEMBER_OPTIONS, ...EMBEDDER_OPTIONS },
      strict: true,
      allowPositionals: true,
    }),
  );
  const content = onePositional('remember', positionals, 'content');
  const agent = required('remember', 'agent', values.agent);
  checkId('remember', 'agent', agent);
  checkId('remember', 'org', values.org);
  const spec = storeOf(values);
  const embedder = parseEmbedderSpec(values);
  const input = {
    content,
    ...ifDefined('memoryType', parseChoice('type', values.type, MEMORY_TYPES)),
    ...ifDefined('scope', parseChoice('scope', values.scope, SCOPES)),
    ...ifDefined('importance', parseNumber('importance', values.importance, { min: 0, max: 1 })),
    ...ifDefined('tags', values.tag),
    ...ifDefined('metadata', parseMetadata(values.metadata)),
    ...ifDefined('threadId', values.thread),
    ...ifDefined('sourceType', values.source),
    ...ifDefined('expiresAt', parseDate('expires-at', values['expires-at'])),
  };
  const result = await withEngine(spec, { embedder }, (engine) =>
    namingArguments(REMEMBER_ARGUMENTS, () =>
      engine
        .as(agent, values.org === undefined ? undefined : { orgId: values.org })
        .remember(input),
    ),
  );
  await write(
    io.stdout,
    values.json === true
      ? json({ id: result.id, content_hash: result.contentHash, deduplicated: result.deduplicated })
      : fields([
          ['id', result.id],
          ['content hash', result.contentHash],
          ['deduplicated', result.deduplicated ? 'yes (an identical live memory exists)' : 'no'],
        ]),
  );
  return 0;
}

function parseMetadata(text: string | undefined): JsonObject | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`--metadata must be a JSON object, e.g. '{"source":"chat"}'`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`--metadata must be a JSON object, e.g. '{"source":"chat"}'`);
  }
  return value as JsonObject;
}
