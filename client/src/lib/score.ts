import type { ChunkTrace, SearchChunk } from "../api/types";

/** What a hit's `score` is, as the server says (`score_kind`). */
export type ScoreKind = SearchChunk["score_kind"];
export type ScoreLabel = "Relevance" | "Similarity" | "Keyword match" | "Hybrid score";

const LABELS: Record<ScoreKind, ScoreLabel> = {
  similarity: "Similarity",
  "bm25 (normalised)": "Keyword match",
  fused: "Hybrid score",
  rerank: "Relevance",
};

const HINTS: Record<ScoreLabel, string> = {
  Similarity: "cosine similarity between the question and the passage",
  "Keyword match": "BM25 keyword score, relative to the best keyword match",
  "Hybrid score": "semantic similarity and keyword match fused; it orders the results",
  Relevance: "relevance judged by the language model (rerank)",
};

/**
 * The label of a hit's score: from its `score_kind` when the server sent one. Passages saved before
 * `score_kind` existed fall back to the old rule: "Relevance" when the search was reranked AND the chunk
 * has a rerank score, otherwise "Similarity".
 */
export function scoreLabel(
  chunk: { score_kind?: ScoreKind | null; trace?: ChunkTrace | null },
  reranked?: boolean | null,
): ScoreLabel {
  if (chunk.score_kind) return LABELS[chunk.score_kind] ?? "Similarity";
  return reranked === true && chunk.trace?.rerank_score != null ? "Relevance" : "Similarity";
}

/** One sentence saying what the figure behind a label is (the score bar's tooltip). */
export function scoreHint(label: ScoreLabel): string {
  return HINTS[label];
}

/** 0..1 → integer percent, clamped. */
export function scorePercent(score: number | null | undefined): number {
  if (score == null || !Number.isFinite(score)) return 0;
  return Math.round(Math.min(1, Math.max(0, score)) * 100);
}
