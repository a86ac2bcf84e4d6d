import type { Session } from './session.js';

/**
 * Postings moved into a sorted run at a time, by default: eight row groups.
 * A lexical search scans the fresh postings whole, so this bounds that scan.
 */
export const DEFAULT_RUN_POSTINGS = 131_072;

/** How many runs of one size class are merged into one. */
export const MERGE_FANOUT = 4;

/** A sorted run of `mnemo_postings_sorted` and how many postings it holds now. */
export interface Run {
  run: number;
  postings: number;
}

/**
 * The size class of a run: 0 below `MERGE_FANOUT` × `runPostings` postings,
 * 1 below `MERGE_FANOUT`² × `runPostings`, and so on.
 */
export function sizeClass(postings: number, runPostings: number): number {
  let tier = 0;
  for (let bound = runPostings * MERGE_FANOUT; postings >= bound; bound *= MERGE_FANOUT) {
    tier += 1;
  }
  return tier;
}

/**
 * The next runs to merge (the oldest `MERGE_FANOUT` of the smallest size class
 * that has that many), or null. Merging runs of one size keeps the number of
 * runs logarithmic in the number of postings, and each posting is rewritten
 * once per size class it climbs.
 */
export function runsToMerge(runs: readonly Run[], runPostings: number): number[] | null {
  const classes = new Map<number, number[]>();
  for (const { run, postings } of [...runs].sort((a, b) => a.run - b.run)) {
    const tier = sizeClass(postings, runPostings);
    classes.set(tier, [...(classes.get(tier) ?? []), run]);
  }
  for (const tier of [...classes.keys()].sort((a, b) => a - b)) {
    const members = classes.get(tier) as number[];
    if (members.length >= MERGE_FANOUT) return members.slice(0, MERGE_FANOUT);
  }
  return null;
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
 * `mnemo_postings_sorted`, in term key order, then merges runs while a size
 * class holds `MERGE_FANOUT` of them. Runs in the caller's transaction.
 */
export async function sortFreshPostings(s: Session, runPostings: number): Promise<void> {
  let runs = await listRuns(s);
  let next = runs.reduce((max, { run }) => Math.max(max, run), 0) + 1;
  await s.exec(appendRun(`(SELECT *, 0 AS run FROM mnemo_postings)`, next));
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
