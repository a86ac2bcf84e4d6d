import { MAX_RECALL_LIMIT, MEMORY_TYPES, PERMISSIONS, SCOPES } from '@mnemo/core';
import * as z from 'zod';

// Input schemas: snake_case, strict (an unknown key such as `agent_id` is rejected before the
// tool runs). The engine validates again (blank text, sizes, reserved tags); these schemas are
// the contract clients see in `tools/list`.

const dateTime = z.iso.datetime({ offset: true });

const filters = z
  .strictObject({
    memory_types: z.array(z.enum(MEMORY_TYPES)).optional(),
    scopes: z.array(z.enum(SCOPES)).optional(),
    tags_any: z.array(z.string()).optional().describe('The record has at least one of these tags.'),
    tags_all: z.array(z.string()).optional().describe('The record has all of these tags.'),
    min_importance: z.number().min(0).max(1).optional(),
    created_after: dateTime.optional().describe('Created at or after this instant (ISO 8601).'),
    created_before: dateTime.optional().describe('Created before this instant (ISO 8601).'),
    thread_id: z.string().optional(),
  })
  .describe('Narrows the records considered; every filter is optional.');

export type FiltersInput = z.infer<typeof filters>;

export const rememberInput = z.strictObject({
  content: z.string().describe('The memory: non-blank text.'),
  memory_type: z.enum(MEMORY_TYPES).optional().describe('Default episodic.'),
  scope: z
    .enum(SCOPES)
    .optional()
    .describe(
      'Who may see it: private (default, the caller only), shared (agents it is shared with), public (the caller’s org), global (everyone).',
    ),
  importance: z.number().min(0).max(1).optional().describe('0..1, default 0.5.'),
  tags: z.array(z.string()).optional(),
  metadata: z
    .preprocess(
      (value, ctx) => {
        // Parsing a record assigns each key, and assigning `__proto__` sets the prototype: the
        // key would vanish instead of being refused, as the engine refuses it at any depth.
        if (typeof value === 'object' && value !== null && Object.hasOwn(value, '__proto__'))
          ctx.addIssue({ code: 'custom', message: 'must not have a "__proto__" key' });
        return value;
      },
      z.record(z.string(), z.unknown()),
    )
    .optional()
    .describe('A JSON object.'),
  thread_id: z.string().optional(),
  source_type: z.string().optional(),
  expires_at: dateTime.optional().describe('The memory disappears at this instant (ISO 8601).'),
});

export const recallInput = z.strictObject({
  query: z.string().describe('What to look for.'),
  limit: z.number().int().min(1).max(MAX_RECALL_LIMIT).optional().describe('Default 10.'),
  strategy: z
    .enum(['lexical', 'semantic', 'hybrid', 'auto'])
    .optional()
    .describe('Default auto: hybrid when the server has a semantic embedder, else lexical.'),
  filters: filters.optional(),
  explain: z.boolean().optional().describe('Attach each ranking lane’s rank and score to hits.'),
});

export const forgetInput = z.strictObject({
  ids: z.array(z.string()).optional().describe('Forget these records (give ids or filters).'),
  filters: filters
    .optional()
    .describe('Or forget every visible record matching these non-empty filters.'),
  mode: z
    .enum(['soft', 'hard', 'redact'])
    .optional()
    .describe(
      'soft (default) marks deleted; hard removes; redact erases content but keeps the hash.',
    ),
});

export const shareInput = z.strictObject({
  record_id: z.string(),
  with: z.array(z.string()).describe('Agent ids (of the record’s org) to grant to.'),
  permission: z
    .enum(PERMISSIONS)
    .optional()
    .describe('Default read; cannot exceed the caller’s own permission.'),
  expires_at: dateTime.optional().describe('The grant lapses at this instant (ISO 8601).'),
});

export const verifyInput = z.strictObject({
  known_heads: z
    .array(z.strictObject({ chain: z.string(), seq: z.number().int().min(1), hash: z.string() }))
    .optional()
    .describe(
      'Heads of the caller’s chain kept from an earlier verify: a chain that no longer reaches one is reported truncated.',
    ),
});

export const rememberPlanInput = z.strictObject({
  query: z.string().describe('The query the plan answered.'),
  steps: z.array(z.string()).describe('The steps that produced the outcome, replayed as they are.'),
  chunk_ids: z.array(z.string()).describe('Ids of the records the plan retrieved.'),
  outcome_score: z
    .number()
    .min(0)
    .max(1)
    .describe('How well the plan did, 0..1; below 0.5 it is not cached.'),
  scope: z.enum(SCOPES).optional().describe('Default private.'),
});

export const recallPlanInput = z.strictObject({
  query: z.string(),
  similarity_threshold: z
    .number()
    .gt(0)
    .max(1)
    .optional()
    .describe('Signature similarity a plan must reach, in (0, 1]; default 0.7.'),
});

// Output schemas: what `structuredContent` holds (the text content is the same JSON).

const isoDate = z.string().describe('ISO 8601');

export const recordOutput = z.object({
  id: z.string(),
  agent_id: z.string(),
  org_id: z.string().nullable(),
  content: z.string(),
  memory_type: z.enum(MEMORY_TYPES),
  scope: z.enum(SCOPES),
  importance: z.number(),
  tags: z.array(z.string()),
  metadata: z.record(z.string(), z.unknown()),
  content_hash: z.string(),
  thread_id: z.string().nullable(),
  source_type: z.string().nullable(),
  created_at: isoDate,
  updated_at: isoDate,
  expires_at: isoDate.nullable(),
  deleted_at: isoDate.nullable(),
  access_count: z.number(),
  last_accessed_at: isoDate.nullable(),
});

const laneScore = z.object({ rank: z.number(), score: z.number() });

export const rememberOutput = z.object({
  id: z.string(),
  content_hash: z.string(),
  deduplicated: z.boolean(),
});

export const recallOutput = z.object({
  strategy: z.enum(['lexical', 'semantic', 'hybrid']),
  hits: z.array(
    z.object({
      record: recordOutput,
      score: z.number(),
      explain: z
        .object({
          lexical: laneScore.optional(),
          semantic: laneScore.optional(),
          recency: laneScore.optional(),
        })
        .optional(),
    }),
  ),
});

export const forgetOutput = z.object({
  mode: z.enum(['soft', 'hard', 'redact']),
  forgotten: z.array(z.string()),
});

export const shareOutput = z.object({
  record_id: z.string(),
  permission: z.enum(PERMISSIONS),
  grantees: z.array(z.string()),
  expires_at: isoDate.nullable(),
});

const auditHead = z.object({ chain: z.string(), seq: z.number(), hash: z.string() });

export const verifyOutput = z.object({
  ok: z.boolean().describe('Every chain of the log verified.'),
  events: z.number().describe('Events read, over every chain.'),
  chains: z.number(),
  chain: z.string().describe('The caller’s own chain.'),
  problems: z
    .array(
      z.object({
        kind: z.string(),
        chain: z.string(),
        seq: z.number(),
        event_id: z.string().nullable(),
        message: z.string(),
      }),
    )
    .describe('Problems of the caller’s chain.'),
  other_problems: z.number().describe('Chains of other agents that failed verification.'),
  heads: z.array(auditHead).describe('The verified head of the caller’s chain (none if empty).'),
});

export const rememberPlanOutput = z.object({
  id: z.string().nullable(),
  signature: z.array(z.string()),
  stored: z.boolean(),
  status: z.enum(['plan_cached', 'below_success_threshold']),
  deduplicated: z
    .literal(true)
    .optional()
    .describe(
      'Present when an identical plan was cached already: its id, its expiry and outcomes.',
    ),
  reason: z
    .enum(['below_success_threshold', 'empty_signature'])
    .optional()
    .describe('Why nothing was stored; absent when stored.'),
});

export const recallPlanOutput = z.object({
  plan: z
    .object({
      id: z.string(),
      query: z.string(),
      steps: z.array(z.string()),
      chunk_ids: z.array(z.string()),
      outcome_score: z.number(),
      similarity: z.number(),
    })
    .nullable(),
  candidates_considered: z.number(),
  hit: z.boolean(),
});
