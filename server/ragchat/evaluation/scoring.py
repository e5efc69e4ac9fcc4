"""Scoring ranked runs with ir-measures (pytrec_eval / trec_eval underneath), per query and averaged.

Why ir-measures: it installs from wheels here (``pytrec-eval-terrier`` ships a compiled binary, no compiler
needed) and is the common interface the IR community uses; ranx would pull numba and llvmlite (~100 MB) for
speed this app does not need (a few hundred queries per run).

A *run* maps a query id to document ids in rank order (best first, no duplicates). trec_eval sorts by score
and breaks ties by document id, so the rank order is turned into strictly decreasing scores. A query that
retrieved nothing scores 0 on every measure and still counts in the mean (trec_eval would drop it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import ir_measures
from ir_measures import RR, R, nDCG

from ragchat.evaluation.metrics import Qrels, Run

__all__ = ["mean_scores", "measure_names", "per_query_scores"]


def _measures(ks: Sequence[int]) -> dict[str, Any]:
    """Our metric names -> ir-measures measures: ndcg@10, mrr@10, recall@k."""
    found: dict[str, Any] = {"ndcg@10": nDCG @ 10, "mrr@10": RR @ 10}
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"cutoff k must be a positive integer, got {k!r}")
        found[f"recall@{k}"] = R @ k
    return found


def measure_names(ks: Sequence[int]) -> list[str]:
    return list(_measures(ks))


def per_query_scores(run: Run, qrels: Qrels, ks: Sequence[int]) -> dict[str, dict[str, float]]:
    """``{query id: {metric: value}}`` for every query in ``qrels`` (0 where the run has nothing)."""
    measures = _measures(ks)
    by_measure = {str(m): name for name, m in measures.items()}
    scored_run: dict[str, dict[str, float]] = {}
    for qid, ranked in run.items():
        if qid not in qrels or not ranked:
            continue
        if len(set(ranked)) != len(ranked):
            raise ValueError(f"duplicate document ids in the ranked list for query {qid!r}")
        scored_run[qid] = {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)}
    judged = {qid: dict(rels) for qid, rels in qrels.items() if any(v > 0 for v in rels.values())}
    result = {qid: dict.fromkeys(measures, 0.0) for qid in qrels}
    if scored_run and judged:
        for metric in ir_measures.iter_calc(list(measures.values()), judged, scored_run):
            result[metric.query_id][by_measure[str(metric.measure)]] = float(metric.value)
    return result


def mean_scores(per_query: Mapping[str, Mapping[str, float]], names: Iterable[str]) -> dict[str, float]:
    """The mean of each metric over the given queries (0 for none)."""
    names = list(names)
    n = len(per_query)
    if not n:
        return dict.fromkeys(names, 0.0)
    return {name: sum(scores[name] for scores in per_query.values()) / n for name in names}
