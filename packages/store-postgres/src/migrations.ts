/**
 * Versioned schema migrations, applied in order by `init()` under an advisory
 * lock (so several processes may call `init()` at once), each in its own
 * transaction and recorded in `mnemo_migrations`. Never edit a released
 * migration; add the next version.
 *
 * `s` is the quoted schema name. Timestamps are BIGINT Unix milliseconds (the
 * engine's clock, exactly, as in every mnemo store).
 */
export interface Migration {
  version: number;
  name: string;
  statements: (s: string, vector: VectorColumn) => string[];
}

/** How embeddings are stored: pgvector's `vector` type, or a plain `real[]`. */
export type VectorColumn = { kind: 'pgvector'; dimensions: number | null } | { kind: 'array' };

function embeddingType(vector: VectorColumn): string {
  if (vector.kind === 'array') return 'real[]';
  return vector.dimensions === null ? 'vector' : `vector(${vector.dimensions})`;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'records, postings, plan tokens, grants, audit chains, settings',
    statements: (s, vector) => [
      `CREATE TABLE ${s}.mnemo_records (
        id text PRIMARY KEY,
        agent_id text NOT NULL,
        org_id text,
        content text NOT NULL,
        memory_type text NOT NULL,
        scope text NOT NULL,
        importance double precision NOT NULL,
        tags text[] NOT NULL,
        metadata jsonb NOT NULL,
        embedding ${embeddingType(vector)},
        content_hash text NOT NULL,
        dedup_key text NOT NULL,
        is_plan boolean NOT NULL,
        doc_length integer NOT NULL,
        plan_tokens text[],
        plan_token_keys text[],
        plan_token_count integer,
        thread_id text,
        source_type text,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        expires_at bigint,
        deleted_at bigint,
        access_count bigint NOT NULL,
        last_accessed_at bigint
      )`,
      `CREATE INDEX mnemo_records_dedup_key ON ${s}.mnemo_records (dedup_key) WHERE deleted_at IS NULL`,
      `CREATE INDEX mnemo_records_agent ON ${s}.mnemo_records (agent_id, org_id)`,
      // Plan lookup: GIN over md5 keys of the signature tokens, since a token can be far
      // longer than a GIN entry may be; the tokens themselves are verified exactly.
      `CREATE INDEX mnemo_records_plan_token_keys ON ${s}.mnemo_records USING gin (plan_token_keys) WHERE is_plan`,
      `CREATE TABLE ${s}.mnemo_postings (
        record_id text NOT NULL,
        term text NOT NULL,
        tf integer NOT NULL
      )`,
      `CREATE INDEX mnemo_postings_term ON ${s}.mnemo_postings (term)`,
      `CREATE INDEX mnemo_postings_record ON ${s}.mnemo_postings (record_id)`,
      `CREATE TABLE ${s}.mnemo_grants (
        record_id text NOT NULL,
        grantee_agent_id text NOT NULL,
        grantee_org_id text,
        level integer NOT NULL,
        granted_by text NOT NULL,
        created_at bigint NOT NULL,
        expires_at bigint
      )`,
      `CREATE INDEX mnemo_grants_record ON ${s}.mnemo_grants (record_id, grantee_agent_id)`,
      `CREATE TABLE ${s}.mnemo_audit_events (
        chain text NOT NULL,
        seq bigint NOT NULL,
        id text NOT NULL,
        occurred_at bigint NOT NULL,
        principal text NOT NULL,
        op text NOT NULL,
        record_ids text[] NOT NULL,
        details jsonb NOT NULL,
        prev_hash text NOT NULL,
        hash text NOT NULL,
        PRIMARY KEY (chain, seq)
      )`,
      `CREATE TABLE ${s}.mnemo_audit_heads (
        chain text PRIMARY KEY,
        seq bigint NOT NULL,
        hash text NOT NULL
      )`,
      // Store-wide facts fixed once set, such as the size of every embedding.
      `CREATE TABLE ${s}.mnemo_settings (key text PRIMARY KEY, value text NOT NULL)`,
      ...(vector.kind === 'pgvector' && vector.dimensions !== null
        ? [
            `INSERT INTO ${s}.mnemo_settings VALUES ('embedding_dimensions', '${vector.dimensions}')`,
          ]
        : []),
      // Exact cosine similarity over real[] (used when pgvector is absent).
      `CREATE FUNCTION ${s}.mnemo_cosine(a real[], b real[]) RETURNS double precision
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
          SELECT CASE WHEN sqrt(sum(x::float8 * x::float8)) * sqrt(sum(y::float8 * y::float8)) = 0 THEN NULL
                      ELSE sum(x::float8 * y::float8) / (sqrt(sum(x::float8 * x::float8)) * sqrt(sum(y::float8 * y::float8))) END
          FROM unnest(a, b) AS t(x, y)
        $$`,
      ...(vector.kind === 'pgvector' && vector.dimensions !== null
        ? [
            `CREATE INDEX mnemo_records_embedding ON ${s}.mnemo_records USING hnsw (embedding vector_cosine_ops)`,
          ]
        : []),
    ],
  },
  {
    version: 2,
    name: 'plan stats, plan token document frequencies',
    statements: (s) => [
      // What replays taught about each plan (running outcome, counts), beside the
      // hashed plan record rather than in it; `record_id` names the plan.
      `CREATE TABLE ${s}.mnemo_plan_stats (
        record_id text PRIMARY KEY,
        running_outcome double precision NOT NULL,
        replays bigint NOT NULL,
        failures bigint NOT NULL,
        updated_at bigint NOT NULL
      )`,
      // How many plans hold each token key, so plan lookup probes the GIN index with the
      // query's rarest tokens. Kept in the transactions that index or unindex plan tokens.
      `CREATE TABLE ${s}.mnemo_plan_token_df (key text PRIMARY KEY, df bigint NOT NULL)`,
      `INSERT INTO ${s}.mnemo_plan_token_df (key, df)
       SELECT k, count(*) FROM ${s}.mnemo_records r, unnest(r.plan_token_keys) AS k
       WHERE r.is_plan AND r.plan_token_keys IS NOT NULL GROUP BY k`,
    ],
  },
  {
    version: 3,
    name: 'exact BM25 from postings and statistics; no HNSW index',
    statements: (s) => [
      // Vector search is exact (every visible embedding is scored), so the HNSW index never
      // served a query, while it cost 1.5 to 4 ms per inserted row.
      `DROP INDEX IF EXISTS ${s}.mnemo_records_embedding`,
      // Each posting carries what visibility and BM25 need of its record (owner, scope,
      // expiry, length), so a lexical search reads the query's postings from one index and
      // never visits the records it does not return. Postings exist only for live records
      // (deleting or redacting a record removes them), and none of these fields changes.
      // Terms compare byte-wise ("C"): the term index is only probed for equality, and a
      // locale's collation made every posting insert pay for strcoll (about 40 % of it).
      `ALTER TABLE ${s}.mnemo_postings ADD COLUMN agent_id text, ADD COLUMN org_key text,
         ADD COLUMN scope text, ADD COLUMN expires_at bigint, ADD COLUMN doc_length integer,
         ALTER COLUMN term TYPE text COLLATE "C"`,
      `DELETE FROM ${s}.mnemo_postings po USING ${s}.mnemo_records r
         WHERE r.id = po.record_id AND (r.deleted_at IS NOT NULL OR r.is_plan)`,
      `UPDATE ${s}.mnemo_postings po SET agent_id = r.agent_id, org_key = coalesce(r.org_id, ''),
         scope = r.scope, expires_at = r.expires_at, doc_length = r.doc_length
         FROM ${s}.mnemo_records r WHERE r.id = po.record_id`,
      `ALTER TABLE ${s}.mnemo_postings ALTER COLUMN agent_id SET NOT NULL,
         ALTER COLUMN org_key SET NOT NULL, ALTER COLUMN scope SET NOT NULL,
         ALTER COLUMN doc_length SET NOT NULL`,
      `CREATE INDEX mnemo_postings_term_covering ON ${s}.mnemo_postings (term)
         INCLUDE (record_id, tf, doc_length, agent_id, org_key, scope, expires_at)`,
      `DROP INDEX IF EXISTS ${s}.mnemo_postings_term`,
      // BM25's collection statistics, kept in the write transactions: the number and total
      // length of the live, non-plan records without an expiry, per owner and scope
      // (org_key '' = no org). Records with an expiry are counted at query time instead.
      `CREATE TABLE ${s}.mnemo_lexical_stats (
        agent_id text NOT NULL,
        org_key text NOT NULL,
        scope text NOT NULL,
        records bigint NOT NULL,
        total_length bigint NOT NULL,
        PRIMARY KEY (agent_id, org_key, scope)
      )`,
      `INSERT INTO ${s}.mnemo_lexical_stats
         SELECT agent_id, coalesce(org_id, ''), scope, count(*), sum(doc_length) FROM ${s}.mnemo_records
         WHERE NOT is_plan AND deleted_at IS NULL AND expires_at IS NULL GROUP BY 1, 2, 3`,
      `CREATE INDEX mnemo_records_expiring ON ${s}.mnemo_records (expires_at)
         WHERE expires_at IS NOT NULL AND deleted_at IS NULL AND NOT is_plan`,
    ],
  },
  {
    version: 4,
    name: 'records kept whole in their page up to 8 kB',
    statements: (s) => [
      // A record with a 384-d embedding is about 2 kB, just over the 2 kB past which PostgreSQL
      // moves a row's largest value to the TOAST table. A quarter of the embeddings lived
      // there, and every exact vector search fetched each of them by index: about a third of
      // its time at 100k records. Rows now stay whole up to a page; larger rows (long
      // contents, embeddings of more than about 1,900 dimensions) are still toasted. Applies
      // to rows written from now on; `VACUUM FULL` on mnemo_records moves older ones back.
      `ALTER TABLE ${s}.mnemo_records SET (toast_tuple_target = 8160)`,
    ],
  },
  {
    version: 5,
    name: 'document frequencies and term bounds per owner and scope',
    statements: (s) => [
      // What a lexical search needs to know of a term before reading its postings: how many
      // postings it has (document frequency) and the largest tf and smallest document length
      // among them (so an upper bound of its BM25 term score), per owner and scope, for the
      // postings without an expiry (those with one are counted at query time, as in
      // mnemo_lexical_stats). Kept in the write transactions. When postings are deleted df goes
      // down and max_tf and min_length stay (bounds, only looser); a row whose df reaches 0 is
      // deleted, so no word of forgotten content stays behind.
      // No posting may be added or deleted between the count below and the commit: a writer
      // still running the code of version 4 does not maintain this table.
      `LOCK TABLE ${s}.mnemo_postings IN SHARE MODE`,
      `CREATE TABLE ${s}.mnemo_term_stats (
        term text COLLATE "C" NOT NULL,
        agent_id text NOT NULL,
        org_key text NOT NULL,
        scope text NOT NULL,
        df bigint NOT NULL,
        max_tf integer NOT NULL,
        min_length integer NOT NULL,
        PRIMARY KEY (term, agent_id, org_key, scope)
      )`,
      `INSERT INTO ${s}.mnemo_term_stats
         SELECT term, agent_id, org_key, scope, count(*), max(tf), min(doc_length) FROM ${s}.mnemo_postings
         WHERE expires_at IS NULL GROUP BY 1, 2, 3, 4`,
      // The postings with an expiry, which a search counts itself: index-only.
      `CREATE INDEX mnemo_postings_expiring ON ${s}.mnemo_postings (term)
         INCLUDE (expires_at, tf, doc_length, agent_id, org_key, scope) WHERE expires_at IS NOT NULL`,
    ],
  },
  {
    version: 6,
    name: 'records by thread',
    statements: (s) => [
      // A recall filtered by thread (an agent recalling within one conversation) computed its
      // statistics and matches over every visible record: about 210 ms for a lexical recall at
      // 100,000 records, 70 ms for a semantic one. Through this index, about 4 ms each.
      `CREATE INDEX mnemo_records_thread ON ${s}.mnemo_records (thread_id) WHERE thread_id IS NOT NULL`,
    ],
  },
  {
    version: 7,
    name: 'the transaction that wrote each record',
    statements: (s) => [
      // Which records a process's vector cache has not seen (see VectorCache): those of the
      // transactions that had not finished at its last snapshot. Records written before this
      // version have none; the cache reads them all when it first loads.
      `ALTER TABLE ${s}.mnemo_records ADD COLUMN written_xid xid8`,
      `ALTER TABLE ${s}.mnemo_records ALTER COLUMN written_xid SET DEFAULT pg_current_xact_id()`,
      `CREATE INDEX mnemo_records_written ON ${s}.mnemo_records (written_xid) WHERE written_xid IS NOT NULL`,
    ],
  },
  {
    version: 8,
    name: 'the transaction that last changed what a vector cache holds of a record',
    statements: (s) => [
      // A row written with another transaction's id, or none (a data-only restore copies the
      // column), or a deleted or expired record made live again by hand, would stay unseen by a
      // running process's vector cache, which follows `written_xid` forward only. These give
      // such a write this transaction's id, also where logical replication applies rows (a
      // session of replication role `replica`, in which only ALWAYS triggers fire). mnemo's own
      // writes take the column's default and only delete, so the trigger conditions are false
      // for them and no function runs.
      `CREATE FUNCTION ${s}.mnemo_written_now() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          NEW.written_xid := pg_current_xact_id();
          RETURN NEW;
        END
      $$`,
      `CREATE TRIGGER mnemo_records_written_insert BEFORE INSERT ON ${s}.mnemo_records
        FOR EACH ROW WHEN (NEW.written_xid IS DISTINCT FROM pg_current_xact_id())
        EXECUTE FUNCTION ${s}.mnemo_written_now()`,
      `CREATE TRIGGER mnemo_records_written_update
        BEFORE UPDATE OF deleted_at, is_plan, agent_id, org_id, scope, expires_at, embedding
        ON ${s}.mnemo_records
        FOR EACH ROW WHEN (NEW.deleted_at IS NULL AND NOT NEW.is_plan AND (OLD.deleted_at IS NOT NULL
          OR (OLD.is_plan, OLD.agent_id, OLD.org_id, OLD.scope, OLD.expires_at, OLD.embedding::text)
             IS DISTINCT FROM (NEW.is_plan, NEW.agent_id, NEW.org_id, NEW.scope, NEW.expires_at, NEW.embedding::text)))
        EXECUTE FUNCTION ${s}.mnemo_written_now()`,
      `ALTER TABLE ${s}.mnemo_records ENABLE ALWAYS TRIGGER mnemo_records_written_insert,
        ENABLE ALWAYS TRIGGER mnemo_records_written_update`,
      // (The embeddings are compared as text: pgvector's = lives in the extension's schema,
      // which a trigger's condition does not name, so pg_dump's output of a comparison of
      // vectors fails to restore under pg_restore's and pg_upgrade's empty search_path.)
      //
      // Transaction ids compare only within one run of the server's history: a crash makes the
      // server hand out again the ids it had not logged, and a restore or a failover may take
      // them back further, so a vector cache must then load anew. Crash recovery, and a data
      // folder restored or promoted, leave an unlogged table empty: a process that finds the
      // token it loaded with gone loads anew, and writes a new one (see vector-cache-queries.ts).
      `CREATE UNLOGGED TABLE ${s}.mnemo_cache_epoch (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        token text NOT NULL
      )`,
    ],
  },
  {
    version: 9,
    name: 'the visibility and filter columns of records, beside their ids',
    statements: (s) => [
      // A recall with filters computes its statistics and matches over the visible records
      // that pass them, which meant reading the whole record table (210 MB at 100,000 records,
      // most of it embeddings) once for the statistics and once to join the postings: a
      // lexical recall with a filter two records in three pass took 205-246 ms p50. This index
      // holds what the visibility rule and the filters read, so both are index-only scans of
      // about 16 MB (115-141 ms). Tags stay out: a btree entry is limited to about 2.7 kB, and
      // a record may carry more tag text than that.
      `CREATE INDEX mnemo_records_filters ON ${s}.mnemo_records (id)
        INCLUDE (agent_id, org_id, scope, is_plan, deleted_at, expires_at, memory_type, importance,
                 created_at, thread_id, doc_length)`,
    ],
  },
  {
    version: 10,
    name: 'memory type in postings and BM25 statistics',
    statements: (s) => [
      // A lexical recall filtered by memory type (an agent recalling its episodes, its facts)
      // took its statistics and matches from the records: 115-141 ms p50 at 100,000 records
      // with a filter two records in three pass, against 17 ms without one. With the memory
      // type beside the scope in each posting and statistics row, a recall filtered by memory
      // type or scope reads what an unfiltered one reads, and prunes as it does. A record's
      // memory type never changes, as its scope does not.
      // No posting or statistics row may change between the copies below and the commit: a
      // writer still running the code of version 9 fails on the new keys, not silently.
      `LOCK TABLE ${s}.mnemo_postings, ${s}.mnemo_lexical_stats, ${s}.mnemo_term_stats IN EXCLUSIVE MODE`,
      `ALTER TABLE ${s}.mnemo_postings ADD COLUMN memory_type text`,
      `UPDATE ${s}.mnemo_postings po SET memory_type = r.memory_type
         FROM ${s}.mnemo_records r WHERE r.id = po.record_id`,
      `ALTER TABLE ${s}.mnemo_postings ALTER COLUMN memory_type SET NOT NULL`,
      `DROP INDEX ${s}.mnemo_postings_term_covering`,
      `CREATE INDEX mnemo_postings_term_covering ON ${s}.mnemo_postings (term)
         INCLUDE (record_id, tf, doc_length, agent_id, org_key, scope, memory_type, expires_at)`,
      `DROP INDEX ${s}.mnemo_postings_expiring`,
      `CREATE INDEX mnemo_postings_expiring ON ${s}.mnemo_postings (term)
         INCLUDE (expires_at, tf, doc_length, agent_id, org_key, scope, memory_type) WHERE expires_at IS NOT NULL`,
      `DELETE FROM ${s}.mnemo_lexical_stats`,
      `ALTER TABLE ${s}.mnemo_lexical_stats ADD COLUMN memory_type text NOT NULL,
         DROP CONSTRAINT mnemo_lexical_stats_pkey, ADD PRIMARY KEY (agent_id, org_key, scope, memory_type)`,
      `INSERT INTO ${s}.mnemo_lexical_stats (agent_id, org_key, scope, memory_type, records, total_length)
         SELECT agent_id, coalesce(org_id, ''), scope, memory_type, count(*), sum(doc_length) FROM ${s}.mnemo_records
         WHERE NOT is_plan AND deleted_at IS NULL AND expires_at IS NULL GROUP BY 1, 2, 3, 4`,
      `DELETE FROM ${s}.mnemo_term_stats`,
      `ALTER TABLE ${s}.mnemo_term_stats ADD COLUMN memory_type text NOT NULL,
         DROP CONSTRAINT mnemo_term_stats_pkey, ADD PRIMARY KEY (term, agent_id, org_key, scope, memory_type)`,
      `INSERT INTO ${s}.mnemo_term_stats (term, agent_id, org_key, scope, memory_type, df, max_tf, min_length)
         SELECT term, agent_id, org_key, scope, memory_type, count(*), max(tf), min(doc_length) FROM ${s}.mnemo_postings
         WHERE expires_at IS NULL GROUP BY 1, 2, 3, 4, 5`,
    ],
  },
  {
    version: 11,
    name: 'tags of live records, beside their visibility',
    statements: (s) => [
      // A lexical recall filtered by tag read the whole record table to count the records that
      // carry it (tags cannot be in mnemo_records_filters, see version 9): 289-365 ms p50 at
      // 100,000 records for a tag one record in ten carries. One row per tag of each live,
      // non-plan record (as postings are kept), with what visibility and BM25 need of the
      // record, in a covering index on the tag's SHA-256 (a tag may be longer than a btree
      // entry may hold), makes the records that pass an index-only read. A writer still
      // running the code of version 10 does not maintain this table.
      `LOCK TABLE ${s}.mnemo_records IN SHARE MODE`,
      `CREATE TABLE ${s}.mnemo_record_tags (
        tag_key bytea NOT NULL,
        record_id text NOT NULL,
        agent_id text NOT NULL,
        org_key text NOT NULL,
        scope text NOT NULL,
        memory_type text NOT NULL,
        expires_at bigint,
        doc_length integer NOT NULL
      )`,
      `INSERT INTO ${s}.mnemo_record_tags
         SELECT sha256(convert_to(t.tag, 'UTF8')), r.id, r.agent_id, coalesce(r.org_id, ''), r.scope, r.memory_type,
                r.expires_at, r.doc_length
         FROM ${s}.mnemo_records r CROSS JOIN LATERAL (SELECT DISTINCT tag FROM unnest(r.tags) AS tag) t
         WHERE r.deleted_at IS NULL AND NOT r.is_plan`,
      `CREATE INDEX mnemo_record_tags_key ON ${s}.mnemo_record_tags (tag_key)
         INCLUDE (record_id, doc_length, agent_id, org_key, scope, memory_type, expires_at)`,
      `CREATE INDEX mnemo_record_tags_record ON ${s}.mnemo_record_tags (record_id)`,
    ],
  },
  {
    version: 12,
    name: 'access log',
    statements: (s) => [
      // A recall's accesses, one row per record, until a fold adds them to the records (see
      // access-log.ts). A process still running the code of version 11 updates the records'
      // counts in place, which the reads of this version add the log to, but it does not see
      // the accesses logged by this version until they are folded.
      `CREATE TABLE ${s}.mnemo_accesses (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        record_id text NOT NULL,
        accessed_at bigint NOT NULL
      )`,
      `CREATE INDEX mnemo_accesses_record ON ${s}.mnemo_accesses (record_id, seq) INCLUDE (accessed_at)`,
    ],
  },
];
