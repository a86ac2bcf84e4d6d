/**
 * Versioned schema migrations, applied in order by `init()`, each in its own
 * transaction and recorded in `mnemo_migrations`. Never edit a released
 * migration; add the next version.
 *
 * Timestamps are BIGINT Unix milliseconds (the engine's clock, exactly).
 */
export interface Migration {
  version: number;
  name: string;
  /** `dimensions`: a fixed embedding size (`FLOAT[n]`), or null for a `FLOAT[]` list of any size. */
  statements: (options: { dimensions: number | null }) => string[];
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'records, postings, plan tokens, grants, audit chains, settings',
    statements: ({ dimensions }) => [
      `CREATE TABLE mnemo_records (
        id VARCHAR PRIMARY KEY,
        agent_id VARCHAR NOT NULL,
        org_id VARCHAR,
        content VARCHAR NOT NULL,
        memory_type VARCHAR NOT NULL,
        scope VARCHAR NOT NULL,
        importance DOUBLE NOT NULL,
        tags VARCHAR[] NOT NULL,
        metadata VARCHAR NOT NULL,
        embedding FLOAT[${dimensions ?? ''}],
        content_hash VARCHAR NOT NULL,
        dedup_key VARCHAR NOT NULL,
        is_plan BOOLEAN NOT NULL,
        doc_length INTEGER NOT NULL,
        plan_tokens VARCHAR[],
        plan_token_count INTEGER,
        thread_id VARCHAR,
        source_type VARCHAR,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        expires_at BIGINT,
        deleted_at BIGINT,
        access_count BIGINT NOT NULL,
        last_accessed_at BIGINT
      )`,
      'CREATE INDEX mnemo_records_dedup_key ON mnemo_records (dedup_key)',
      'CREATE INDEX mnemo_records_agent ON mnemo_records (agent_id)',
      `CREATE TABLE mnemo_postings (
        record_id VARCHAR NOT NULL,
        term VARCHAR NOT NULL,
        tf INTEGER NOT NULL
      )`,
      'CREATE INDEX mnemo_postings_term ON mnemo_postings (term)',
      'CREATE INDEX mnemo_postings_record ON mnemo_postings (record_id)',
      `CREATE TABLE mnemo_plan_tokens (
        record_id VARCHAR NOT NULL,
        token VARCHAR NOT NULL
      )`,
      'CREATE INDEX mnemo_plan_tokens_token ON mnemo_plan_tokens (token)',
      `CREATE TABLE mnemo_grants (
        record_id VARCHAR NOT NULL,
        grantee_agent_id VARCHAR NOT NULL,
        grantee_org_id VARCHAR,
        level INTEGER NOT NULL,
        granted_by VARCHAR NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT
      )`,
      'CREATE INDEX mnemo_grants_record ON mnemo_grants (record_id)',
      `CREATE TABLE mnemo_audit_events (
        chain VARCHAR NOT NULL,
        seq BIGINT NOT NULL,
        id VARCHAR NOT NULL,
        occurred_at BIGINT NOT NULL,
        principal VARCHAR NOT NULL,
        op VARCHAR NOT NULL,
        record_ids VARCHAR[] NOT NULL,
        details VARCHAR NOT NULL,
        prev_hash VARCHAR NOT NULL,
        hash VARCHAR NOT NULL,
        PRIMARY KEY (chain, seq)
      )`,
      `CREATE TABLE mnemo_audit_heads (
        chain VARCHAR PRIMARY KEY,
        seq BIGINT NOT NULL,
        hash VARCHAR NOT NULL
      )`,
      // Store-wide facts fixed once set, such as the size of every embedding.
      `CREATE TABLE mnemo_settings (
        key VARCHAR PRIMARY KEY,
        value VARCHAR NOT NULL
      )`,
      ...(dimensions === null
        ? []
        : [`INSERT INTO mnemo_settings VALUES ('embedding_dimensions', '${dimensions}')`]),
    ],
  },
  {
    version: 2,
    name: 'plan stats',
    // What replays taught about each plan (running outcome, counts), beside the
    // hashed plan record rather than in it; `record_id` names the plan.
    statements: () => [
      `CREATE TABLE mnemo_plan_stats (
        record_id VARCHAR PRIMARY KEY,
        running_outcome DOUBLE NOT NULL,
        replays BIGINT NOT NULL,
        failures BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      )`,
    ],
  },
  {
    version: 3,
    name: "postings carry a term key and their record's owner, scope, expiry and length",
    // So a lexical search finds the query's postings by an integer key (`termKey` in
    // queries.ts: scanning 1.5M integers costs a fraction of comparing 1.5M strings) and
    // filters them by visibility itself instead of joining them to every visible record. Postings exist only for live non-plan records
    // (deleting or redacting a record removes them) and none of these fields ever changes.
    // Rebuilt rather than altered: DuckDB cannot alter a table that has indexes.
    statements: () => [
      `CREATE TABLE mnemo_postings_v2 (
        record_id VARCHAR NOT NULL,
        term VARCHAR NOT NULL,
        tf INTEGER NOT NULL,
        term_key BIGINT NOT NULL,
        agent_id VARCHAR NOT NULL,
        org_key VARCHAR NOT NULL,
        scope VARCHAR NOT NULL,
        expires_at BIGINT,
        doc_length INTEGER NOT NULL
      )`,
      `INSERT INTO mnemo_postings_v2
         SELECT po.record_id, po.term, po.tf, (md5_number_lower(po.term) >> 11)::BIGINT, r.agent_id, coalesce(r.org_id, ''), r.scope, r.expires_at, r.doc_length
         FROM mnemo_postings po JOIN mnemo_records r ON r.id = po.record_id
         WHERE r.deleted_at IS NULL AND NOT r.is_plan`,
      'DROP TABLE mnemo_postings',
      'ALTER TABLE mnemo_postings_v2 RENAME TO mnemo_postings',
      'CREATE INDEX mnemo_postings_term_key ON mnemo_postings (term_key)',
      'CREATE INDEX mnemo_postings_record ON mnemo_postings (record_id)',
    ],
  },
  {
    version: 4,
    name: 'drop the term key and record owner indexes',
    // No query is served by them: a lexical search reads its postings in one scan (the term
    // key index served only rare keys, and fetching rows through it was slower than the scan),
    // and visibility is an OR that no single-column index answers. Every write paid to keep
    // them, and every checkpoint to save them (1.5M term keys at 100k records).
    statements: () => ['DROP INDEX mnemo_postings_term_key', 'DROP INDEX mnemo_records_agent'],
  },
  {
    version: 5,
    name: 'postings sorted by term key, in runs',
    // Postings are written in arrival order to `mnemo_postings`, where a term's postings are
    // spread over the whole table, so a lexical search read every row group. Once enough have
    // accumulated they move here, sorted by term key, as one run (`run`); small runs are
    // merged (see postings-runs.ts). DuckDB skips the row groups whose term key range misses
    // the query's keys, so a search reads a few row groups per run. No index: a row group's
    // min/max is the index. Deletes (forget, redact) find a record's postings by `record_key`
    // (its id's key, computed like the term key): comparing 1.6M integers instead of 1.6M
    // ids took a forget at 100k records from 82 to 40 ms (31 ms with no sorted table).
    statements: () => [
      `CREATE TABLE mnemo_postings_sorted (
        record_id VARCHAR NOT NULL,
        term VARCHAR NOT NULL,
        tf INTEGER NOT NULL,
        term_key BIGINT NOT NULL,
        agent_id VARCHAR NOT NULL,
        org_key VARCHAR NOT NULL,
        scope VARCHAR NOT NULL,
        expires_at BIGINT,
        doc_length INTEGER NOT NULL,
        record_key BIGINT NOT NULL,
        run INTEGER NOT NULL
      )`,
      // The fresh postings now hold at most a run or so: a forget scans them faster than
      // every write and checkpoint paid to index their record ids.
      'DROP INDEX mnemo_postings_record',
    ],
  },
  {
    version: 6,
    name: 'embeddings saved uncompressed',
    // Rewrites the embeddings an earlier version saved with ALP, so they are saved again
    // without it (see DISABLED_COMPRESSIONS in duckdb-store.ts): about 9 s at 100k records,
    // once.
    statements: () => [
      'UPDATE mnemo_records SET embedding = embedding WHERE embedding IS NOT NULL',
    ],
  },
  {
    version: 7,
    name: 'embedding norms',
    // Each embedding's Euclidean norm, summed in DOUBLE (see `searchVector`): a vector search
    // estimates similarities as FLOAT inner products divided by it. A DOUBLE column is updated
    // in place: about 0.1 s at 100k records.
    statements: () => [
      'ALTER TABLE mnemo_records ADD COLUMN embedding_norm DOUBLE',
      `UPDATE mnemo_records
       SET embedding_norm = sqrt(list_inner_product(embedding::DOUBLE[], embedding::DOUBLE[]))
       WHERE embedding IS NOT NULL`,
    ],
  },
  {
    version: 8,
    name: 'audit record ids as JSON text',
    // DuckDB 1.5 logs a commit that appends a non-empty list by writing the list values of
    // every row appended to the table since the last checkpoint, not just its own: a recall's
    // event (ten ids) wrote 370 more bytes to the log per event since the checkpoint, and so
    // forced a checkpoint every few hundred recalls. As one VARCHAR each event logs its own
    // bytes: a lexical recall's COMMIT at 20,000 records took 2.4-2.9 ms on average instead
    // of 3.9, and 7-8 ms instead of 38-43 at the 99th percentile (measured, 1,500 recalls).
    // Rebuilt rather than altered: DuckDB cannot alter a table that has a primary key.
    statements: () => [
      `CREATE TABLE mnemo_audit_events_v8 (
        chain VARCHAR NOT NULL,
        seq BIGINT NOT NULL,
        id VARCHAR NOT NULL,
        occurred_at BIGINT NOT NULL,
        principal VARCHAR NOT NULL,
        op VARCHAR NOT NULL,
        record_ids VARCHAR NOT NULL,
        details VARCHAR NOT NULL,
        prev_hash VARCHAR NOT NULL,
        hash VARCHAR NOT NULL,
        PRIMARY KEY (chain, seq)
      )`,
      `INSERT INTO mnemo_audit_events_v8
         SELECT chain, seq, id, occurred_at, principal, op, to_json(record_ids)::VARCHAR,
                details, prev_hash, hash
         FROM mnemo_audit_events ORDER BY chain, seq`,
      'DROP TABLE mnemo_audit_events',
      'ALTER TABLE mnemo_audit_events_v8 RENAME TO mnemo_audit_events',
    ],
  },
  {
    version: 9,
    name: 'access log',
    // A recall's accesses are appended here, one row per record, and folded into the records'
    // access_count and last_accessed_at now and then (see access-log.ts): updating ten
    // scattered records in place cost a recall more than the rest of its audit transaction.
    // `touch` numbers the accesses in the order they committed.
    statements: () => [
      `CREATE TABLE mnemo_accesses (
        record_id VARCHAR NOT NULL,
        accessed_at BIGINT NOT NULL,
        touch BIGINT NOT NULL
      )`,
    ],
  },
];
