import type { Session } from './session.js';

/**
 * Postings moved into a sorted run at a time, by default: eight row groups.
 * A lexical search scans the fresh postings whole, so this bounds that scan.
 */
export const DEFAULT_RUN_POSTINGS = 131_072;

/**
 * How many small runs (under `MERGE_FANOUT` × the run size) are merged into
 * one; larger runs are never merged again.
 */
export const MERGE_FANOUT = 4;

/** A sorted run of `mnemo_postings_sorted` and how many postings it holds now. */
export interface Run {
  run: number;
  postings: number;
}

/**
 * The next runs to merge: the oldest `MERGE_FANOUT` small runs, once there
 * are that many, or null. Merging keeps the number of runs a search reads
 * (a few row groups each) at about one per `MERGE_FANOUT` × `runPostings`
 * postings; stopping there bounds the pause of a merge (about 2 s for four
 * runs of 131,072 at 100k records, against 7 s for the next size up).
 */
export function runsToMerge(runs: readonly Run[], runPostings: number): number[] | null {
  const small = runs
    .filter(({ postings }) => postings < MERGE_FANOUT * runPostings)
    .map(({ run }) => run)
    .sort((a, b) => a - b);
  return small.length >= MERGE_FANOUT ? small.slice(0, MERGE_FANOUT) : null;
}

/** Postings not sorted into a run yet. */
export async function countFreshPostings(s: Session): Promise<number> {
  const [row] = await s.all('SELECT count(*) AS n FROM mnemo_postings');
  return Number(row?.n ?? 0);
}

async function listRuns(s: Session): Promise<Run[]> {
  const rows = await s.all(
    'SELECT run, count(*) AS postings FROM mnemo_postings_sorted GROUP BY run ORDER BY run',
  );
  return rows.map((row) => ({ run: Number(row.run), postings: Number(row.postings) }));
}

/** Appends the rows of `source` to the sorted table as run `run`, in term key order. */
const appendRun = (source: string, run: number) =>
  `INSERT INTO mnemo_postings_sorted
   SELECT * EXCLUDE (run), ${run} FROM ${source} ORDER BY term_key`;

/**
 * Moves every fresh posting (`mnemo_postings`) into a new run of
 * `mnemo_postings_sorted`, in term key order, then merges small runs (see
 * `runsToMerge`). Runs in the caller's transaction.
 */
export async function sortFreshPostings(s: Session, runPostings: number): Promise<void> {
  let runs = await listRuns(s);
  let next = runs.reduce((max, { run }) => Math.max(max, run), 0) + 1;
  await s.exec(
    appendRun(
      `(SELECT *, (md5_number_lower(record_id) >> 11)::BIGINT AS record_key, 0 AS run
        FROM mnemo_postings)`,
      next,
    ),
  );
  await s.exec('DELETE FROM mnemo_postings');
  runs = await listRuns(s);
  for (let merge = runsToMerge(runs, runPostings); merge !== null; ) {
    next += 1;
    // Run ids are integers this function read or computed: safe to inline, and a constant
    // list lets DuckDB skip the row groups of other runs.
    const members = merge.join(', ');
    await s.exec(
      appendRun(`(SELECT * FROM mnemo_postings_sorted WHERE run IN (${members}))`, next),
    );
    await s.exec(`DELETE FROM mnemo_postings_sorted WHERE run IN (${members})`);
    runs = await listRuns(s);
    merge = runsToMerge(runs, runPostings);
  }
}
