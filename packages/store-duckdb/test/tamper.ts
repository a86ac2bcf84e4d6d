import { permissionLevel } from '@mnemo/core';
import type { TamperAttack } from '@mnemo/core/testing';

const text = (value: string) => `'${value.replaceAll("'", "''")}'`;
const grantOf = (attack: { recordId: string; granteeAgentId: string }) =>
  `WHERE record_id = ${text(attack.recordId)} AND grantee_agent_id = ${text(attack.granteeAgentId)}`;

/** The raw SQL an attacker with the file would run for `attack` (see `ConformanceOptions.tamper`). */
export function tamperStatements(attack: TamperAttack): string[] {
  switch (attack.kind) {
    case 'update_record': {
      const sets = [
        ...(attack.content === undefined ? [] : [`content = ${text(attack.content)}`]),
        ...(attack.contentHash === undefined ? [] : [`content_hash = ${text(attack.contentHash)}`]),
        ...(attack.metadata === undefined
          ? []
          : [`metadata = ${text(JSON.stringify(attack.metadata))}`]),
        ...(attack.tags === undefined ? [] : [`tags = [${attack.tags.map(text).join(', ')}]`]),
        ...(attack.deleted === undefined
          ? []
          : [`deleted_at = ${attack.deleted ? 'created_at' : 'NULL'}`]),
      ];
      return [`UPDATE mnemo_records SET ${sets.join(', ')} WHERE id = ${text(attack.id)}`];
    }
    case 'update_plan_tokens': {
      const id = text(attack.id);
      return [
        `UPDATE mnemo_records SET plan_tokens = [${attack.tokens.map(text).join(', ')}], plan_token_count = ${attack.tokens.length} WHERE id = ${id}`,
        `DELETE FROM mnemo_plan_tokens WHERE record_id = ${id}`,
        ...attack.tokens.map(
          (token) =>
            `INSERT INTO mnemo_plan_tokens (record_id, token) VALUES (${id}, ${text(token)})`,
        ),
      ];
    }
    case 'delete_record':
      return [`DELETE FROM mnemo_records WHERE id = ${text(attack.id)}`];
    case 'copy_record':
      return [
        `INSERT INTO mnemo_records SELECT * REPLACE (${text(attack.newId)} AS id) FROM mnemo_records WHERE id = ${text(attack.id)}`,
      ];
    case 'update_event':
      return [
        `UPDATE mnemo_audit_events SET details = ${text(JSON.stringify(attack.details))} WHERE chain = ${text(attack.chain)} AND seq = ${attack.seq}`,
      ];
    case 'delete_event':
      return [
        `DELETE FROM mnemo_audit_events WHERE chain = ${text(attack.chain)} AND seq = ${attack.seq}`,
      ];
    case 'swap_events': {
      const [a, b] = attack.seqs;
      const chain = `chain = ${text(attack.chain)}`;
      return [
        `UPDATE mnemo_audit_events SET seq = -1 WHERE ${chain} AND seq = ${a}`,
        `UPDATE mnemo_audit_events SET seq = ${a} WHERE ${chain} AND seq = ${b}`,
        `UPDATE mnemo_audit_events SET seq = ${b} WHERE ${chain} AND seq = -1`,
      ];
    }
    case 'insert_event': {
      const chain = `chain = ${text(attack.chain)}`;
      return [
        `UPDATE mnemo_audit_events SET seq = seq + 1000000 WHERE ${chain} AND seq >= ${attack.seq}`,
        `UPDATE mnemo_audit_events SET seq = seq - 999999 WHERE ${chain} AND seq >= 1000000`,
        `INSERT INTO mnemo_audit_events SELECT * REPLACE (${attack.seq} AS seq, 'forged' AS id) FROM mnemo_audit_events WHERE ${chain} AND seq = ${attack.seq - 1}`,
      ];
    }
    case 'truncate_chain': {
      const chain = `chain = ${text(attack.chain)}`;
      return [
        `DELETE FROM mnemo_audit_events WHERE ${chain} AND seq > ${attack.seq}`,
        `UPDATE mnemo_audit_heads SET seq = ${attack.seq}, hash = (SELECT hash FROM mnemo_audit_events WHERE ${chain} AND seq = ${attack.seq}) WHERE ${chain}`,
      ];
    }
    case 'relink_event':
      return [
        `UPDATE mnemo_audit_events SET prev_hash = ${text(attack.prevHash)}, hash = ${text(attack.hash)} WHERE chain = ${text(attack.chain)} AND seq = ${attack.seq}`,
      ];
    case 'delete_head':
      return [`DELETE FROM mnemo_audit_heads WHERE chain = ${text(attack.chain)}`];
    case 'copy_grant':
      return [
        `INSERT INTO mnemo_grants SELECT * REPLACE (${text(attack.newGranteeAgentId)} AS grantee_agent_id) FROM mnemo_grants ${grantOf(attack)}`,
      ];
    case 'update_grant':
      return [
        `UPDATE mnemo_grants SET level = ${permissionLevel(attack.permission)} ${grantOf(attack)}`,
      ];
    case 'delete_grant':
      return [`DELETE FROM mnemo_grants ${grantOf(attack)}`];
    case 'update_plan_stats':
      return [
        `UPDATE mnemo_plan_stats SET running_outcome = ${attack.runningOutcome} WHERE record_id = ${text(attack.planId)}`,
      ];
    case 'delete_plan_stats':
      return [`DELETE FROM mnemo_plan_stats WHERE record_id = ${text(attack.planId)}`];
  }
}
