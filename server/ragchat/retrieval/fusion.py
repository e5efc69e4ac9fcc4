"""Fusing the vector and keyword lists, merged by chunk id, each list's rank and score kept for the trace.

`FUSION=relative` (the default): `w · cosine + (1 - w) · BM25 / top BM25`, w = FUSION_VECTOR_WEIGHT
(default 0.75 for this method). Neither term depends on how long a list is or on its worst hit: the cosine is
absolute and the BM25 is relative to the best keyword hit only, so a chunk that is third of three keyword
hits with a BM25 close to the top keeps a keyword term close to 1 (min-max gave it 0). A chunk missing from
a list gets the most it could have scored there: the list's last score when the list is full (`depth`
hits, so the chunk was cut off), else 0 (it did not match at all).

`score`: a convex combination of min-max normalised scores (weight default 0.5). `rrf`: Reciprocal Rank
Fusion, Σ 1 / (k + rank), ranks 1-based. `weighted_rrf`: RRF with w : 1 - w (default 0.5).

Every method's fused score is in 0..1 (RRF divided by its best possible value, a chunk first in both lists).
Ties are broken by the better of the chunk's two ranks, then by its strength in both lists (cosine / top
cosine + BM25 / top BM25); the chunk id only orders chunks that are equal on all of these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ragchat.settings import RetrievalSettings

FusionMethod = Literal["relative", "rrf", "weighted_rrf", "score"]
DEFAULT_VECTOR_WEIGHT: dict[str, float] = {"relative": 0.75, "score": 0.5, "weighted_rrf": 0.5, "rrf": 0.5}


@dataclass
class Fused:
    id: int
    score: float
    vector_rank: int | None = None
    vector_score: float | None = None
    keyword_rank: int | None = None
    keyword_score: float | None = None
    strength: float = 0.0  # cosine / top cosine + BM25 / top BM25: breaks ties only

    def order(self) -> tuple[float, int, float, int]:
        """Sort key: fused score, then the better of the two ranks, then the strength (all best first)."""
        best_rank = min(r for r in (self.vector_rank, self.keyword_rank, 1 << 30) if r is not None)
        return (-self.score, best_rank, -self.strength, self.id)


def _top(items: Sequence[tuple[int, float]]) -> float:
    return max((s for _, s in items), default=0.0)


def merge(vector: Sequence[tuple[int, float]], keyword: Sequence[tuple[int, float]]) -> list[Fused]:
    """Both lists merged by chunk id (score 0), each chunk's first rank and score in each list kept."""
    fused = _merge(vector, keyword)
    top_v, top_k = _top(vector), _top(keyword)
    for entry in fused:
        if entry.vector_score is not None and top_v > 0:
            entry.strength += max(0.0, entry.vector_score) / top_v
        if entry.keyword_score is not None and top_k > 0:
            entry.strength += max(0.0, entry.keyword_score) / top_k
    return fused


def _merge(vector: Sequence[tuple[int, float]], keyword: Sequence[tuple[int, float]]) -> list[Fused]:
    fused: dict[int, Fused] = {}
    for rank, (chunk_id, score) in enumerate(vector, start=1):
        entry = fused.setdefault(chunk_id, Fused(chunk_id, 0.0))
        if entry.vector_rank is None:
            entry.vector_rank, entry.vector_score = rank, score
    for rank, (chunk_id, score) in enumerate(keyword, start=1):
        entry = fused.setdefault(chunk_id, Fused(chunk_id, 0.0))
        if entry.keyword_rank is None:
            entry.keyword_rank, entry.keyword_score = rank, score
    return list(fused.values())


def vector_only(vector: Sequence[tuple[int, float]]) -> list[Fused]:
    """Vector search: the score is the cosine similarity, in the arm's order."""
    return [Fused(i, s, vector_rank=r, vector_score=s) for r, (i, s) in enumerate(vector, 1)]


def keyword_only(keyword: Sequence[tuple[int, float]]) -> list[Fused]:
    """Keyword search: the score is BM25 / the best hit's BM25 (0..1), in the arm's order."""
    top = max((s for _, s in keyword), default=0.0)
    return [
        Fused(i, s / top if top > 0 else 0.0, keyword_rank=r, keyword_score=s) for r, (i, s) in enumerate(keyword, 1)
    ]


def rrf(
    vector: Sequence[tuple[int, float]],
    keyword: Sequence[tuple[int, float]],
    *,
    k: int = 60,
    weights: tuple[float, float] = (1.0, 1.0),
) -> list[Fused]:
    """Σ weight / (k + rank) over the lists a chunk is in (unscaled), best first."""
    fused = merge(vector, keyword)
    for entry in fused:
        if entry.vector_rank is not None:
            entry.score += weights[0] / (k + entry.vector_rank)
        if entry.keyword_rank is not None:
            entry.score += weights[1] / (k + entry.keyword_rank)
    return sorted(fused, key=Fused.order)


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
    fused = merge(vector, keyword)
    for entry in fused:
        entry.score = vector_weight * v_norm.get(entry.id, 0.0) + (1 - vector_weight) * k_norm.get(entry.id, 0.0)
    return sorted(fused, key=Fused.order)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def relative_fusion(
    vector: Sequence[tuple[int, float]],
    keyword: Sequence[tuple[int, float]],
    *,
    vector_weight: float = DEFAULT_VECTOR_WEIGHT["relative"],
    depth: int | None = None,
) -> list[Fused]:
    """`w · cosine + (1 - w) · BM25 / top BM25`, cosine clipped to 0..1. A chunk missing from a list that
    holds `depth` hits scores that list's last score there (it was cut off below it), else 0."""
    top, n = _top(keyword), depth or 0
    v_floor = _clip(vector[-1][1]) if n > 0 and len(vector) >= n else 0.0
    k_floor = _clip(keyword[-1][1] / top) if n > 0 and top > 0 and len(keyword) >= n else 0.0
    fused = merge(vector, keyword)
    for entry in fused:
        cosine = v_floor if entry.vector_score is None else _clip(entry.vector_score)
        bm25 = k_floor if entry.keyword_score is None else (entry.keyword_score / top if top > 0 else 0.0)
        entry.score = vector_weight * cosine + (1 - vector_weight) * _clip(bm25)
    return sorted(fused, key=Fused.order)


def fuse(
    vector: Sequence[tuple[int, float]],
    keyword: Sequence[tuple[int, float]],
    *,
    method: str = "relative",
    k: int = 60,
    vector_weight: float | None = None,
    depth: int | None = None,
) -> list[Fused]:
    """Best first, each `score` in 0..1. `relative`, `score`, `rrf` (weights 1:1, divided by 2 / (k + 1)) or
    `weighted_rrf` (vector_weight : 1 - vector_weight, divided by 1 / (k + 1)). `vector_weight` None: the
    method's default; `depth`: how many hits each arm was asked for (`relative` only)."""
    if vector_weight is None:
        vector_weight = DEFAULT_VECTOR_WEIGHT.get(method, 0.5)
    if method == "relative":
        return relative_fusion(vector, keyword, vector_weight=vector_weight, depth=depth)
    if method == "score":
        return score_fusion(vector, keyword, vector_weight=vector_weight)
    weights = (vector_weight, 1 - vector_weight) if method == "weighted_rrf" else (1.0, 1.0)
    fused = rrf(vector, keyword, k=k, weights=weights)
    best = sum(weights) / (k + 1)
    for entry in fused:
        entry.score = min(1.0, entry.score / best) if best > 0 else 0.0
    return fused


def vector_weight(s: RetrievalSettings, configs: Sequence[str]) -> float | None:
    """The fusion's vector weight for a scope whose chunks use `configs` (text-search configurations): the
    configured one, or FUSION_VECTOR_WEIGHT_OTHER_LANGUAGES when the scope has text in some language and none of
    it in a language the embedding model covers (EMBED_LANGUAGES; `simple`, the unknown language, decides
    nothing): the model's vectors of text it does not understand rank worse than the keyword arm."""
    other = s.fusion_vector_weight_other_languages
    if other is None:
        return s.fusion_vector_weight
    return other if other_languages(s, configs) else s.fusion_vector_weight


def other_languages(s: RetrievalSettings, configs: Sequence[str]) -> bool:
    """Is the scope's text (chunks analysed with `configs`) in some language, none of it in a language the
    embedding model covers (EMBED_LANGUAGES; `*`: any; `simple`, the unknown language, decides nothing)?"""
    covered = {c.strip() for c in s.embed_languages.split(",") if c.strip()}
    if "*" in covered:
        return False
    known = set(configs) - {"simple"}
    return bool(known) and not known & covered
