import { parseArgs } from 'node:util';
import {
  MAX_RECALL_LIMIT,
  MEMORY_TYPES,
  type RecallHit,
  type RecordFilters,
  SCOPES,
} from '@mnemo/core';
import { ifDefined } from '../../if-defined.js';
import { renderRecall } from '../../render.js';
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
import { type CliIo, json, oneLine, shortDate, table, write } from '../output.js';
import { withEngine } from '../store-spec.js';

export const RECALL_OPTIONS = {
  agent: { type: 'string' },
  org: { type: 'string' },
  limit: { type: 'string' },
  strategy: { type: 'string' },
  type: { type: 'string', multiple: true },
  scope: { type: 'string', multiple: true },
  tag: { type: 'string', multiple: true },
  'tag-all': { type: 'string', multiple: true },
  'min-importance': { type: 'string' },
  after: { type: 'string' },
  before: { type: 'string' },
  thread: { type: 'string' },
  explain: { type: 'boolean' },
} as const;

/** The argument behind each field of `recall`'s input, for its errors. */
const RECALL_ARGUMENTS = {
  query: '<query>',
  limit: '--limit',
  strategy: '--strategy',
  'filters.memoryTypes': '--type',
  'filters.scopes': '--scope',
  'filters.tagsAny': '--tag',
  'filters.tagsAll': '--tag-all',
  'filters.minImportance': '--min-importance',
  'filters.createdAfter': '--after',
  'filters.createdBefore': '--before',
  'filters.threadId': '--thread',
};

/** `mnemo recall <query> --agent <id>`: the memories that agent can see, best first. */
export async function recall(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = usageErrors('recall', () =>
    parseArgs({
      args: [...argv],
      options: { ...COMMON_OPTIONS, ...RECALL_OPTIONS, ...EMBEDDER_OPTIONS },
      strict: true,
      allowPositionals: true,
    }),
  );
  const query = onePositional('recall', positionals, 'query');
  const agent = required('recall', 'agent', values.agent);
  checkId('recall', 'agent', agent);
  checkId('recall', 'org', values.org);
  const spec = storeOf(values);
  const embedder = parseEmbedderSpec(values);
  const filters: RecordFilters = {
    ...ifDefined(
      'memoryTypes',
      values.type?.map((type) => parseChoice('type', type, MEMORY_TYPES) as string),
    ),
    ...ifDefined(
      'scopes',
      values.scope?.map((scope) => parseChoice('scope', scope, SCOPES) as string),
    ),
    ...ifDefined('tagsAny', values.tag),
    ...ifDefined('tagsAll', values['tag-all']),
    ...ifDefined(
      'minImportance',
      parseNumber('min-importance', values['min-importance'], { min: 0, max: 1 }),
    ),
    ...ifDefined('createdAfter', parseDate('after', values.after)),
    ...ifDefined('createdBefore', parseDate('before', values.before)),
    ...ifDefined('threadId', values.thread),
  } as RecordFilters;
  const input = {
    query,
    ...ifDefined(
      'limit',
      parseNumber('limit', values.limit, { min: 1, max: MAX_RECALL_LIMIT, integer: true }),
    ),
    ...ifDefined(
      'strategy',
      parseChoice('strategy', values.strategy, ['lexical', 'semantic', 'hybrid', 'auto'] as const),
    ),
    filters,
    ...ifDefined('explain', values.explain),
  };
  const result = await withEngine(spec, { existing: true, embedder }, (engine) =>
    namingArguments(RECALL_ARGUMENTS, () =>
      engine.as(agent, values.org === undefined ? undefined : { orgId: values.org }).recall(input),
    ),
  );
  if (values.json === true) {
    await write(io.stdout, json(renderRecall(result)));
    return 0;
  }
  if (result.hits.length === 0) {
    await write(io.stdout, `no memories matched (${result.strategy} recall)\n`);
    return 0;
  }
  const explain = values.explain === true;
  await write(
    io.stdout,
    table(
      ['score', 'id', 'type', 'scope', 'created', ...(explain ? ['lanes'] : []), 'content'],
      result.hits.map(({ record, score, explain: lanes }) => [
        score.toFixed(3),
        record.id,
        record.memoryType,
        record.scope,
        shortDate(record.createdAt),
        ...(explain ? [describeLanes(lanes)] : []),
        oneLine(record.content, 60),
      ]),
      [0],
    ),
  );
  return 0;
}

/** A hit's lanes for the table: `lexical #1 2.310, semantic #4 0.812`. */
function describeLanes(lanes: RecallHit['explain']): string {
  return Object.entries(lanes ?? {})
    .map(([lane, { rank, score }]) => `${lane} #${rank} ${score.toFixed(3)}`)
    .join(', ');
}
