import type { ChunkTrace } from "../api/types";

export type ScoreLabel = "Relevance" | "Similarity";

/**
 * "Relevance" only when the search was reranked AND this chunk actually has a
 * rerank score; otherwise the score is a similarity (vector/keyword/fused).
 */
export function scoreLabel(chunk: { trace?: ChunkTrace | null }, reranked: boolean | null | undefined): ScoreLabel {
  return reranked === true && chunk.trace?.rerank_score != null ? "Relevance" : "Similarity";
}

/** 0..1 → integer percent, clamped. */
export function scorePercent(score: number | null | undefined): number {
  if (score == null || !Number.isFinite(score)) return 0;
  return Math.round(Math.min(1, Math.max(0, score)) * 100);
}
