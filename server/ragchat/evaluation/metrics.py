"""Standard IR metrics over ranked lists of document ids, matching trec_eval / pytrec_eval / BEIR.

A *run* maps a query id to its retrieved document ids in rank order (best first, no duplicates); *qrels*
map a query id to ``{doc id: relevance}``. A document is relevant when its relevance is > 0 (trec_eval's
default ``relevance_level`` of 1 for integer judgements).

- ``ndcg@k``: trec_eval ``ndcg_cut.k``. Gain is the relevance value ("linear" gain, BEIR's convention),
  the document at 1-based rank ``r`` is discounted by ``log2(r + 1)``, and the ideal DCG is computed from
  the query's judged documents sorted by relevance, descending, cut at ``k``. Non-positive gains add nothing.
- ``mrr@k``: ``1 / rank`` of the first relevant document within the top ``k``, else 0 (BEIR's ``MRR@k``).
- ``recall@k``: trec_eval ``recall.k``: relevant documents in the top ``k`` / relevant documents judged.
- ``precision@k``: trec_eval ``P.k``: relevant documents in the top ``k`` / ``k``, even if fewer than ``k``
  documents were retrieved.

A query with no relevant judgement scores 0 on every metric.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "DEFAULT_KS",
    "Qrels",
    "Run",
    "dedup_keep_first",
    "evaluate",
    "mrr_at_k",
    "ndcg_at_k",
    "percentiles",
    "precision_at_k",
    "recall_at_k",
]

Run = Mapping[str, Sequence[str]]
Qrels = Mapping[str, Mapping[str, int]]

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 100)
METRIC_NAMES: tuple[str, ...] = ("ndcg", "mrr", "recall", "precision")


def dedup_keep_first(ids: Iterable[str]) -> list[str]:
    """Drop repeated ids, keeping each id at its first (best) position.

    Use it to turn ranked chunks into ranked documents, so a relevant document counts once.
    """
    return list(dict.fromkeys(ids))


def ndcg_at_k(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """nDCG@k with linear gain and ``log2(rank + 1)`` discount, as trec_eval's ``ndcg_cut``."""
    _check_k(k)
    _check_unique(ranked, k)
    return _ndcg(ranked, rels, k)


def mrr_at_k(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant document within the top ``k``, else 0."""
    _check_k(k)
    _check_unique(ranked, k)
    return _mrr(ranked, rels, k)


def recall_at_k(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """Relevant documents in the top ``k`` divided by all relevant documents for the query (0 if none)."""
    _check_k(k)
    _check_unique(ranked, k)
    return _recall(ranked, rels, k)


def precision_at_k(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """Relevant documents in the top ``k`` divided by ``k``."""
    _check_k(k)
    _check_unique(ranked, k)
    return _hits(ranked, rels, k) / k


def evaluate(run: Run, qrels: Qrels, ks: Iterable[int] = DEFAULT_KS) -> dict[str, float]:
    """Mean ``ndcg@k``, ``mrr@k``, ``recall@k`` and ``precision@k`` for each ``k`` in ``ks``.

    Averages over every query in ``qrels``; a query missing from ``run`` scores 0, and run queries without
    qrels are ignored. Keys are ordered by metric, then by ``k`` as given. Values are not rounded.
    """
    ks = tuple(dict.fromkeys(ks))
    if not ks:
        raise ValueError("ks must contain at least one cutoff")
    for k in ks:
        _check_k(k)
    if not qrels:
        raise ValueError("qrels is empty: nothing to evaluate")

    totals = {f"{name}@{k}": 0.0 for name in METRIC_NAMES for k in ks}
    for qid, rels in qrels.items():
        ranked = run.get(qid)
        if not ranked:
            continue  # every metric is 0 for this query
        _check_unique(ranked, max(ks), qid=qid)
        for k in ks:
            totals[f"ndcg@{k}"] += _ndcg(ranked, rels, k)
            totals[f"mrr@{k}"] += _mrr(ranked, rels, k)
            totals[f"recall@{k}"] += _recall(ranked, rels, k)
            totals[f"precision@{k}"] += _hits(ranked, rels, k) / k
    n = len(qrels)
    return {key: total / n for key, total in totals.items()}


def percentiles(values: Sequence[float], ps: Iterable[float] = (50, 95, 99)) -> dict[str, float]:
    """Percentiles with linear interpolation (numpy's default method); keys ``"p50"`` etc.

    Empty input gives 0.0 for every percentile.
    """
    ordered = sorted(float(v) for v in values)
    result: dict[str, float] = {}
    for p in ps:
        if not 0 <= p <= 100:
            raise ValueError(f"percentile must be within [0, 100], got {p}")
        result[f"p{p:g}"] = _interpolate(ordered, p) if ordered else 0.0
    return result


def _interpolate(ordered: Sequence[float], p: float) -> float:
    """Value at fractional index ``(n - 1) * p / 100`` of a sorted, non-empty sequence."""
    position = (len(ordered) - 1) * p / 100
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    fraction = position - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * fraction


def _dcg(gains: Iterable[float]) -> float:
    """Sum of ``gain / log2(rank + 1)`` over 1-based ranks; non-positive gains contribute nothing."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1) if gain > 0)


def _ndcg(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    ideal = _dcg(sorted((rel for rel in rels.values() if rel > 0), reverse=True)[:k])
    if ideal <= 0:
        return 0.0
    return _dcg(rels.get(doc_id, 0) for doc_id in ranked[:k]) / ideal


def _mrr(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    for rank, doc_id in enumerate(ranked[:k], start=1):
        if rels.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def _recall(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    num_relevant = sum(1 for rel in rels.values() if rel > 0)
    return _hits(ranked, rels, k) / num_relevant if num_relevant else 0.0


def _hits(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> int:
    """Number of relevant documents in the top ``k``."""
    return sum(1 for doc_id in ranked[:k] if rels.get(doc_id, 0) > 0)


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"cutoff k must be a positive integer, got {k!r}")


def _check_unique(ranked: Sequence[str], k: int, qid: str | None = None) -> None:
    """Reject duplicate ids in the top ``k``: they would count a relevant document twice."""
    top = ranked[:k]
    if len(set(top)) != len(top):
        where = f" for query {qid!r}" if qid is not None else ""
        raise ValueError(f"duplicate document ids in ranked list{where}; deduplicate with dedup_keep_first()")
