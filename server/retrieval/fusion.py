"""Reciprocal Rank Fusion: score = Σ 1 / (k + rank), ranks 1-based, merged by chunk id."""

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
