"""Fusing the vector and keyword lists, merged by chunk id, each list's rank and score kept for the trace.

`FUSION=score` (the default): a convex combination of min-max normalised scores. `rrf`: Reciprocal Rank
Fusion, score = Σ 1 / (k + rank), ranks 1-based. `weighted_rrf`: RRF with VECTOR_WEIGHT : 1 - VECTOR_WEIGHT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Fused:
    id: int
    score: float
    vector_rank: int | None = None
    vector_score: float | None = None
    keyword_rank: int | None = None
    keyword_score: float | None = None


def rrf(
    vector: Sequence[tuple[int, float]],
    keyword: Sequence[tuple[int, float]],
    *,
    k: int = 60,
    weights: tuple[float, float] = (1.0, 1.0),
) -> list[Fused]:
    """Fuse two ranked lists of (id, score); each list's rank and score stay on the result for the trace."""
    fused: dict[int, Fused] = {}
    for rank, (chunk_id, score) in enumerate(vector, start=1):
        entry = fused.setdefault(chunk_id, Fused(chunk_id, 0.0))
        if entry.vector_rank is None:
            entry.vector_rank, entry.vector_score = rank, score
            entry.score += weights[0] / (k + rank)
    for rank, (chunk_id, score) in enumerate(keyword, start=1):
        entry = fused.setdefault(chunk_id, Fused(chunk_id, 0.0))
        if entry.keyword_rank is None:
            entry.keyword_rank, entry.keyword_score = rank, score
            entry.score += weights[1] / (k + rank)
    return sorted(fused.values(), key=lambda f: (-f.score, f.id))


def _minmax(items: Sequence[tuple[int, float]]) -> dict[int, float]:
    if not items:
        return {}
    scores = [s for _, s in items]
    lo, hi = min(scores), max(scores)
    span = hi - lo
    out: dict[int, float] = {}
    for chunk_id, score in items:
        out.setdefault(chunk_id, 1.0 if span == 0 else (score - lo) / span)
    return out


def score_fusion(
    vector: Sequence[tuple[int, float]], keyword: Sequence[tuple[int, float]], *, vector_weight: float = 0.5
) -> list[Fused]:
    """Convex combination of min-max normalised scores (a chunk missing from a list scores 0 there)."""
    v_norm, k_norm = _minmax(vector), _minmax(keyword)
    fused = rrf(vector, keyword)  # for the ranks and raw scores of the trace
    for entry in fused:
        entry.score = vector_weight * v_norm.get(entry.id, 0.0) + (1 - vector_weight) * k_norm.get(entry.id, 0.0)
    return sorted(fused, key=lambda f: (-f.score, f.id))


def fuse(
    vector: Sequence[tuple[int, float]],
    keyword: Sequence[tuple[int, float]],
    *,
    method: str = "rrf",
    k: int = 60,
    vector_weight: float = 0.5,
) -> list[Fused]:
    """`rrf` (weights 1:1), `weighted_rrf` (vector_weight : 1 - vector_weight, scaled to sum 2) or `score`."""
    if method == "score":
        return score_fusion(vector, keyword, vector_weight=vector_weight)
    if method == "weighted_rrf":
        return rrf(vector, keyword, k=k, weights=(2 * vector_weight, 2 * (1 - vector_weight)))
    return rrf(vector, keyword, k=k)
