import { permissionLevel } from '@mnemo/core';
import type { TamperAttack } from '@mnemo/core/testing';

/** One statement with its parameters. */
export type Statement = [sql: string, values: unknown[]];

/**
 * The raw SQL someone with access to the database would run for `attack` on
 * the tables of `schema` (see `ConformanceOptions.tamper`).
 */
export function tamperStatements(schema: string, attack: TamperAttack): Statement[] {
  const s = `"${schema}"`;
  switch (attack.kind) {
    case 'update_record': {
      const sets: string[] = [];
      const values: unknown[] = [attack.id];
      const set = (column: string, value: unknown, cast = '') => {
        values.push(value);
        sets.push(`${column} = $${values.length}${cast}`);
      };
      if (attack.content !== undefined) set('content', attack.content);
      if (attack.contentHash !== undefined) set('content_hash', attack.contentHash);
      if (attack.metadata !== undefined)
        set('metadata', JSON.stringify(attack.metadata), '::jsonb');
      if (attack.tags !== undefined) set('tags', attack.tags, '::text[]');
      if (attack.deleted !== undefined)
        sets.push(`deleted_at = ${attack.deleted ? 'created_at' : 'NULL'}`);
      return [[`UPDATE ${s}.mnemo_records SET ${sets.join(', ')} WHERE id = $1`, values]];
    }
    case 'update_plan_tokens':
      return [
        [
          `UPDATE ${s}.mnemo_records SET plan_tokens = $2::text[],
             plan_token_keys = ARRAY(SELECT md5(t) FROM unnest($2::text[]) AS t),
             plan_token_count = cardinality($2::text[])
           WHERE id = $1`,
          [attack.id, attack.tokens],
        ],
        [
          `INSERT INTO ${s}.mnemo_plan_token_df (key, df)
           SELECT md5(t), 1 FROM unnest($1::text[]) AS t
           ON CONFLICT (key) DO UPDATE SET df = ${s}.mnemo_plan_token_df.df + 1`,
          [attack.tokens],
        ],
      ];
    case 'delete_record':
      return [[`DELETE FROM ${s}.mnemo_records WHERE id = $1`, [attack.id]]];
    case 'copy_record':
      return [
        [
          `INSERT INTO ${s}.mnemo_records
           SELECT (jsonb_populate_record(NULL::${s}.mnemo_records, to_jsonb(r) || jsonb_build_object('id', $2::text))).*
           FROM ${s}.mnemo_records r WHERE id = $1`,
          [attack.id, attack.newId],
        ],
      ];
    case 'update_event':
      return [
        [
          `UPDATE ${s}.mnemo_audit_events SET details = $3::jsonb WHERE chain = $1 AND seq = $2`,
          [attack.chain, attack.seq, JSON.stringify(attack.details)],
        ],
      ];
    case 'delete_event':
      return [
        [
          `DELETE FROM ${s}.mnemo_audit_events WHERE chain = $1 AND seq = $2`,
          [attack.chain, attack.seq],
        ],
      ];
    case 'swap_events': {
      const [a, b] = attack.seqs;
      return [
        // One row at a time: the primary key is checked row by row.
        [
          `UPDATE ${s}.mnemo_audit_events SET seq = -1 WHERE chain = $1 AND seq = $2`,
          [attack.chain, a],
        ],
        [
          `UPDATE ${s}.mnemo_audit_events SET seq = $2 WHERE chain = $1 AND seq = $3`,
          [attack.chain, a, b],
        ],
        [
          `UPDATE ${s}.mnemo_audit_events SET seq = $2 WHERE chain = $1 AND seq = -1`,
          [attack.chain, b],
        ],
      ];
    }
    case 'insert_event':
      return [
        // Out of the way first, then back one place further: the primary key is checked row by row.
        [
          `UPDATE ${s}.mnemo_audit_events SET seq = seq + 1000000 WHERE chain = $1 AND seq >= $2`,
          [attack.chain, attack.seq],
        ],
        [
          `UPDATE ${s}.mnemo_audit_events SET seq = seq - 999999 WHERE chain = $1 AND seq >= 1000000`,
          [attack.chain],
        ],
        [
          `INSERT INTO ${s}.mnemo_audit_events (chain, seq, id, occurred_at, principal, op, record_ids, details, prev_hash, hash)
           SELECT chain, $2::bigint, 'forged', occurred_at, principal, op, record_ids, details, prev_hash, hash
           FROM ${s}.mnemo_audit_events WHERE chain = $1 AND seq = $2::bigint - 1`,
          [attack.chain, attack.seq],
        ],
      ];
    case 'truncate_chain':
      return [
        [
          `DELETE FROM ${s}.mnemo_audit_events WHERE chain = $1 AND seq > $2`,
          [attack.chain, attack.seq],
        ],
        [
          `UPDATE ${s}.mnemo_audit_heads SET seq = $2,
             hash = (SELECT hash FROM ${s}.mnemo_audit_events WHERE chain = $1 AND seq = $2)
           WHERE chain = $1`,
          [attack.chain, attack.seq],
        ],
      ];
    case 'relink_event':
      return [
        [
          `UPDATE ${s}.mnemo_audit_events SET prev_hash = $3, hash = $4 WHERE chain = $1 AND seq = $2`,
          [attack.chain, attack.seq, attack.prevHash, attack.hash],
        ],
      ];
    case 'delete_head':
      return [[`DELETE FROM ${s}.mnemo_audit_heads WHERE chain = $1`, [attack.chain]]];
    case 'copy_grant':
      return [
        [
          `INSERT INTO ${s}.mnemo_grants (record_id, grantee_agent_id, grantee_org_id, level, granted_by, created_at, expires_at)
           SELECT record_id, $3, grantee_org_id, level, granted_by, created_at, expires_at
           FROM ${s}.mnemo_grants WHERE record_id = $1 AND grantee_agent_id = $2`,
          [attack.recordId, attack.granteeAgentId, attack.newGranteeAgentId],
        ],
      ];
    case 'update_grant':
      return [
        [
          `UPDATE ${s}.mnemo_grants SET level = $3 WHERE record_id = $1 AND grantee_agent_id = $2`,
          [attack.recordId, attack.granteeAgentId, permissionLevel(attack.permission)],
        ],
      ];
    case 'delete_grant':
      return [
        [
          `DELETE FROM ${s}.mnemo_grants WHERE record_id = $1 AND grantee_agent_id = $2`,
          [attack.recordId, attack.granteeAgentId],
        ],
      ];
    case 'update_plan_stats':
      return [
        [
          `UPDATE ${s}.mnemo_plan_stats SET running_outcome = $2 WHERE record_id = $1`,
          [attack.planId, attack.runningOutcome],
        ],
      ];
    case 'delete_plan_stats':
      return [[`DELETE FROM ${s}.mnemo_plan_stats WHERE record_id = $1`, [attack.planId]]];
  }
}
