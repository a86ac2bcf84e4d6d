import { BM25_B, BM25_K1, queryTerms, termFrequencies } from '../analyzer.js';
import { compareByteOrder } from '../byte-order.js';

/** Scores are rounded to 10 decimals, as `MemoryStore.searchLexical` specifies. */
const SCALE = 10 ** 10;

/**
 * BM25 computed directly in TypeScript over the given documents (the visible
 * set), as `MemoryStore.searchLexical` specifies it: scores rounded to 10
 * decimals (halves up) before they are ranked, so that two scores equal but
 * for the last bits of a sum added in another order tie and rank by id. The
 * conformance suite checks every store's ranking and scores against it.
 */
export function bm25Reference(
  documents: readonly { id: string; content: string }[],
  query: string,
): { id: string; score: number }[] {
  const terms = queryTerms(query);
  const analyzed = documents.map((doc) => ({ id: doc.id, ...termFrequencies(doc.content) }));
  const n = analyzed.length;
  const avgdl = n === 0 ? 0 : analyzed.reduce((sum, doc) => sum + doc.length, 0) / n;
  const df = new Map(
    terms.map((term) => [
      term,
      analyzed.filter((doc) => doc.terms.some((t) => t.term === term)).length,
    ]),
  );
  return analyzed
    .map((doc) => {
      let score = 0;
      let matched = false;
      for (const term of terms) {
        const tf = doc.terms.find((t) => t.term === term)?.tf ?? 0;
        if (tf === 0) continue;
        matched = true;
        const d = df.get(term) as number;
        const idf = Math.log(1 + (n - d + 0.5) / (d + 0.5));
        score +=
          (idf * tf * (BM25_K1 + 1)) /
          (tf + BM25_K1 * (1 - BM25_B + (BM25_B * doc.length) / avgdl));
      }
      return { id: doc.id, score: Math.round(score * SCALE) / SCALE, matched };
    })
    .filter((doc) => doc.matched)
    .map(({ id, score }) => ({ id, score }))
    .sort((a, b) => b.score - a.score || compareByteOrder(a.id, b.id));
}

/** Cosine similarity in double precision. */
export function cosineReference(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i += 1) {
    dot += (a[i] as number) * (b[i] as number);
    na += (a[i] as number) ** 2;
    nb += (b[i] as number) ** 2;
  }
  return dot / Math.sqrt(na * nb);
}
