/**
 * The baseline: plain BM25 computed in-process over the same turns, one index
 * per conversation. Tokens are the lowercased runs of letters and digits
 * (whitespace and punctuation split); no stop words, no stemming; k1 = 1.2,
 * b = 0.75; idf = ln(1 + (N - df + 0.5) / (df + 0.5)). Each distinct query
 * token counts once. Only documents sharing a token with the query are
 * returned; ties keep document order.
 */

export const BASELINE_K1 = 1.2;
export const BASELINE_B = 0.75;

const SPLIT = /[^\p{L}\p{N}]+/u;

/** Lowercased tokens of `text`, in order, split at whitespace and punctuation. */
export function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .split(SPLIT)
    .filter((token) => token.length > 0);
}

export interface Bm25Hit {
  id: string;
  score: number;
}

export class Bm25Index {
  private readonly ids: string[];
  private readonly lengths: number[];
  private readonly postings = new Map<string, { doc: number; tf: number }[]>();
  private readonly avgdl: number;

  constructor(
    documents: readonly { id: string; text: string }[],
    private readonly k1 = BASELINE_K1,
    private readonly b = BASELINE_B,
  ) {
    this.ids = documents.map((doc) => doc.id);
    this.lengths = [];
    documents.forEach((doc, index) => {
      const tokens = tokenize(doc.text);
      this.lengths.push(tokens.length);
      const counts = new Map<string, number>();
      for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
      for (const [token, tf] of counts) {
        const list = this.postings.get(token) ?? [];
        list.push({ doc: index, tf });
        this.postings.set(token, list);
      }
    });
    const total = this.lengths.reduce((sum, length) => sum + length, 0);
    this.avgdl = documents.length === 0 ? 0 : total / documents.length;
  }

  /** Number of documents. */
  get size(): number {
    return this.ids.length;
  }

  /** The best `limit` documents for `query`, best first. */
  search(query: string, limit: number): Bm25Hit[] {
    const n = this.ids.length;
    const scores = new Map<number, number>();
    for (const token of new Set(tokenize(query))) {
      const list = this.postings.get(token);
      if (list === undefined) continue;
      const df = list.length;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      for (const { doc, tf } of list) {
        const length = this.lengths[doc] as number;
        const norm = this.k1 * (1 - this.b + (this.b * length) / this.avgdl);
        scores.set(doc, (scores.get(doc) ?? 0) + (idf * tf * (this.k1 + 1)) / (tf + norm));
      }
    }
    return [...scores]
      .sort((x, y) => y[1] - x[1] || x[0] - y[0])
      .slice(0, limit)
      .map(([doc, score]) => ({ id: this.ids[doc] as string, score }));
  }
}
