const STORE = `Store (every command):
  --store duckdb:<file>      a DuckDB file (default duckdb:./mnemo.duckdb)
  --store postgres:<url>     a PostgreSQL database, e.g. postgres:postgres://user:pw@host:5432/db
  --pg-schema <name>         the PostgreSQL schema (default mnemo)`;

const EMBEDDER = `Embedder (serve, remember, recall; default none: recall is lexical):
  --embedder openai:<url>    an OpenAI-compatible embeddings server, e.g.
                             openai:http://127.0.0.1:11434 (Ollama) or
                             openai:https://api.openai.com; the API key, if any,
                             from the environment variable MNEMO_EMBEDDER_API_KEY
  --embedding-model <name>   openai: the model (required)
  --embedding-dimensions <n> openai: its vector length (required);
                             transformers: checked against the model
  --embedder transformers:<folder>
                             a local ONNX model folder (needs the package
                             @mnemo/embedder-transformers)
  Use the same embedder for every command on one store.`;

const EXIT = `Exit codes: 0 ok, 1 runtime or store error, 2 bad usage or input, 3 audit verification failed.`;

export const USAGE: Record<string, string> = {
  main: `Usage: mnemo <command> [options]

Commands:
  serve                      run the MCP server (stdio or Streamable HTTP)
  remember <content>         store a memory as --agent
  recall <query>             find the memories --agent can see
  plans                      list cached plans with their outcome and replay counts
  audit verify               verify the audit log's hash chains
  export                     write every record as NDJSON
  import                     read records from NDJSON
  purge-expired              delete every expired record for good, audited

Options: --json (machine-readable output), --help, --version

${STORE}

${EXIT}
Run 'mnemo <command> --help' for a command's options.
`,
  serve: `Usage: mnemo serve [--transport stdio] --agent <id> [--org <id>] [options]
       mnemo serve --transport http --tokens <file> [--host 127.0.0.1] [--port 0] [options]

Runs the MCP server until stdin closes (stdio) or SIGINT / SIGTERM.

  --transport stdio|http     default stdio
  --agent <id>               stdio: the agent every call acts as
  --org <id>                 stdio: the agent's org
  --tokens <file>            http: JSON file mapping bearer tokens to agents:
                             {"tokens":[{"token":"…","agent":"a","org":"o"},
                                        {"token_sha256":"<hex>","agent":"b"}]}
  --host <address>           http: default 127.0.0.1 (loopback)
  --port <n>                 http: default 0 (a free port); the URL is printed on stderr
  --allow-remote             http: allow a --host that is not loopback
  --experience               turn experience memory on (lists mnemo.remember_plan
                             and mnemo.recall_plan)

${EMBEDDER}

${STORE}
`,
  remember: `Usage: mnemo remember <content> --agent <id> [options]

  --agent <id>               the owner (required)
  --org <id>                 the owner's org
  --type <type>              episodic (default), semantic, procedural, working
  --scope <scope>            private (default), shared, public, global
  --importance <0..1>        default 0.5
  --tag <tag>                repeatable
  --metadata <json>          a JSON object
  --thread <id>              thread id
  --source <type>            source type
  --expires-at <iso date>    the memory disappears then
  --json                     {"id","content_hash","deduplicated"}

${EMBEDDER}

${STORE}
`,
  recall: `Usage: mnemo recall <query> --agent <id> [options]

  --agent <id>               who is asking (required): only what it can see is returned
  --org <id>                 the agent's org
  --limit <n>                1-100, default 10
  --strategy <s>             lexical, semantic, hybrid, auto (default: hybrid with an
                             --embedder, else lexical)
  --type <type>              only these memory types (repeatable)
  --scope <scope>            only these scopes (repeatable)
  --tag <tag>                at least one of these tags (repeatable)
  --tag-all <tag>            all of these tags (repeatable)
  --min-importance <0..1>
  --after <iso date>         created at or after
  --before <iso date>        created before
  --thread <id>
  --explain                  each lane's rank and score
  --json                     {"strategy","hits":[{"record","score"}]}

${EMBEDDER}

${STORE}
`,
  plans: `Usage: mnemo plans [--all] [--json]

Lists every cached plan of the store (all owners) with its running outcome (the score
it was cached with, moved by the outcomes reported; below 0.5 it is retired and no longer
replayed) and replay count (the plan lookups that returned it).

  --all                      include forgotten plans (deleted or expired)
  --json                     {"plans":[{"id","owner","scope","query","outcome_score",
                             "running_outcome","outcomes_reported","failures","retired",
                             "steps","chunk_ids","replays","created_at","deleted_at",
                             "expires_at"}]}

${STORE}
`,
  'audit verify': `Usage: mnemo audit verify [--known-heads <file>] [--records] [--json]

Verifies every hash chain of the audit log. Exit 0 when intact, 3 when not.

  --known-heads <file>       heads kept from an earlier run (its --json output, or an
                             array of {chain,seq,hash}): a chain that no longer reaches
                             one is reported truncated
  --records                  also check every record against its hash and the log
                             (changed, forged, deleted or resurrected records)
  --json                     {"ok","events","chains","problems","heads"}, and with
                             --records "records":{"ok","records","problems"}

${STORE}
`,
  'purge-expired': `Usage: mnemo purge-expired [--json]

Deletes for good every record whose expiry has passed, whatever its owner or
state (plans included), each owner's audit chain recording a hard forget
marked expired. Expired records are never read again, but stay in the store
until this runs: schedule it where they must not linger.

  --json                     {"purged"}

${STORE}
`,
  export: `Usage: mnemo export [--out <file>]

Writes every record (all owners; forgotten records and plans included) with its
grants as NDJSON, one mnemo.record.v1 object per line, to stdout or a file.
The count goes to stderr.

  --out, -o <file>           write to this file (created; it must not exist)
  --json                     the count on stderr as {"exported":n}

${STORE}
`,
  import: `Usage: mnemo import [--in <file>]

Reads an NDJSON export from stdin or a file and writes its records, every field
and grant kept. The whole input is checked first: a bad line (exit 2, named)
imports nothing. Records whose id exists are skipped, so a failed import can be
run again.

  --in, -i <file>            read this file instead of stdin
  --json                     {"imported","skipped"}

${STORE}
`,
};
